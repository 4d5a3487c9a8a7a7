"""The probes' rules on fake snapshots (no services): wedged loops, stale windows, roles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bridge.admin import DestinationSnapshot, HaRoles, Probes
from bridge.admin.metrics import BridgeCollector
from bridge.mq.worker import WorkerProgress
from bridge.position import EntryPosition
from tests.doubles import FakeClock


class FakeObserved:
    def __init__(self, *snapshots: DestinationSnapshot) -> None:
        self.current = list(snapshots)

    def snapshots(self) -> Sequence[DestinationSnapshot]:
        return self.current


RUNNING = DestinationSnapshot(
    "d1",
    "active",
    "running",
    progress=WorkerProgress("d1", state="running", batches_acked=3),
    source_event_ms=1_700_000_000_000,
    beat_age_s=0.1,
    stale_after_s=30,
)


def test_a_worker_loop_that_stops_coming_round_is_wedged() -> None:
    observed = FakeObserved(RUNNING)
    probes = Probes(observed, wedge_after_s=120)
    assert probes.health().ok
    observed.current = [replace(RUNNING, beat_age_s=121)]
    result = probes.health()
    assert not result.ok and result.body() == "not ok\nd1 wedged\n"
    # A blocking get (beat age None) or a stopped worker is never "wedged".
    observed.current = [replace(RUNNING, beat_age_s=None), replace(RUNNING, state="stopped")]
    assert probes.health().ok


def test_no_progress_for_the_stale_window_means_stalled() -> None:
    clock = FakeClock()
    observed = FakeObserved(RUNNING)
    probes = Probes(observed, clock=clock)
    assert probes.readiness().body() == "ok\nd1 ready\n"
    clock.now += 29
    assert probes.readiness().ok
    clock.now += 2
    assert probes.readiness().body() == "not ok\nd1 stalled\n"
    # A heartbeat (newer source event time) or an ack counts as progress again.
    observed.current = [replace(RUNNING, source_event_ms=RUNNING.source_event_ms + 1000)]
    assert probes.readiness().ok
    clock.now += 31
    assert not probes.readiness().ok
    progress = replace(RUNNING.progress, batches_acked=4)  # type: ignore[type-var]
    observed.current = [replace(observed.current[0], progress=progress)]
    assert probes.readiness().ok


def test_states_and_roles_map_to_status_words() -> None:
    observed = FakeObserved(
        replace(RUNNING, destination="a", source_event_ms=0),
        replace(RUNNING, destination="b", state="failed"),
        replace(RUNNING, destination="c", role="standby", state="standby"),
    )
    result = Probes(observed).readiness()
    assert result.details == (("a", "starting"), ("b", "failed"), ("c", "standby"))
    assert not result.ok


def test_ha_roles_default_to_active() -> None:
    roles = HaRoles()
    assert roles.get("x") == "active"
    roles.set("x", "standby")
    assert roles.get("x") == "standby"
    roles.clear("x")
    assert roles.get("x") == "active"


def test_collector_exports_cursor_file_index_and_offset() -> None:
    snapshot = replace(RUNNING, cursor=EntryPosition("mysql-bin.000042", 1234), lag_s=0.5)
    families = {f.name: f for f in BridgeCollector(FakeObserved(snapshot)).collect()}
    assert families["canal_bridge_cursor_file_index"].samples[0].value == 42
    assert families["canal_bridge_cursor_offset"].samples[0].value == 1234
    assert families["canal_bridge_lag_seconds"].samples[0].value == 0.5
    assert families["canal_bridge_rows"].type == "counter"
