"""The probes' rules on fake snapshots (no services): wedged loops, stale windows, roles, an
unreachable Kafka, the readiness log and /status."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import orjson
import pytest

from bridge.admin import (
    BrokerWatch,
    DestinationSnapshot,
    HaRoles,
    Probes,
    ReadinessLog,
    SchemaUsage,
    SnapshotUsage,
)
from bridge.admin.metrics import BridgeCollector
from bridge.admin.status_document import status_document
from bridge.mq.exceptions import TopicLookupFailed
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


class FakeReach:
    def __init__(self) -> None:
        self.reason: str | None = None

    def unreachable(self) -> str | None:
        return self.reason


def test_an_unreachable_kafka_makes_running_destinations_not_ready_with_the_reason() -> None:
    reach = FakeReach()
    standby = replace(RUNNING, destination="c", role="standby", state="standby")
    probes = Probes(FakeObserved(RUNNING, standby), broker=reach)
    assert probes.readiness().body() == "ok\nd1 ready\nc standby\n"
    reach.reason = "no Kafka metadata for 16 s (Local: Broker transport failure)"
    assert probes.readiness().body() == "not ok\nd1 kafka-unreachable\nc standby\n"
    verdict = probes.verdicts()[0]
    assert (verdict.word, verdict.reason, verdict.ready) == (
        "kafka-unreachable",
        reach.reason,
        False,
    )
    reach.reason = None
    assert probes.readiness().ok


def test_broker_watch_says_unreachable_after_the_grace_period_and_logs_each_change_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    answers: list[Exception | None] = []

    def check() -> None:
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    watch = BrokerWatch(check, grace_s=15, clock=clock)
    caplog.set_level(logging.INFO, logger="bridge.admin.reach")
    down = TopicLookupFailed("t", "Failed to get metadata: Local: Broker transport failure")
    answers += [down, down, down, down, None, None, down]
    watch.check_once()
    assert watch.unreachable() is None  # within the grace period a fresh process gets
    clock.now += 16
    watch.check_once()
    assert watch.unreachable() == (
        "no Kafka metadata for 16 s (Failed to get metadata: Local: Broker transport failure)"
    )
    clock.now += 5
    watch.check_once()
    watch.check_once()
    clock.now += 1
    watch.check_once()  # answers again
    assert watch.unreachable() is None
    watch.check_once()
    clock.now += 5
    watch.check_once()  # one failure 5 s after a success: still within the grace period
    assert watch.unreachable() is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "Kafka unreachable: no Kafka metadata for 16 s (Failed to get metadata: Local: "
            "Broker transport failure); destinations report not ready",
        ),
        ("INFO", "Kafka answers again"),
    ]


def test_readiness_log_writes_one_line_per_change(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    observed = FakeObserved(replace(RUNNING, source_event_ms=0))
    reach = FakeReach()
    log = ReadinessLog(Probes(observed, broker=reach, clock=clock))
    caplog.set_level(logging.INFO, logger="bridge.admin.probes")
    log.tick()  # starting at start-up is not news
    observed.current = [RUNNING]
    log.tick()
    log.tick()
    reach.reason = "no Kafka metadata for 15 s (x)"
    log.tick()
    log.tick()
    reach.reason = None
    log.tick()
    assert [(r.levelname, r.getMessage(), r.__dict__["destination"]) for r in caplog.records] == [
        ("INFO", "destination d1 ready", "d1"),
        (
            "WARNING",
            "destination d1 not ready: kafka-unreachable (no Kafka metadata for 15 s (x))",
            "d1",
        ),
        ("INFO", "destination d1 ready", "d1"),
    ]


def test_status_document_holds_the_reason_and_no_data() -> None:
    reach = FakeReach()
    reach.reason = "no Kafka metadata for 20 s (x)"
    snapshot = replace(RUNNING, cursor=EntryPosition("mysql-bin.000042", 1234), lag_s=0.25)
    probes = Probes(FakeObserved(snapshot), broker=reach)
    document = orjson.loads(status_document([snapshot], probes.verdicts()))
    assert document["ready"] is False
    (destination,) = document["destinations"]
    assert destination["readiness"] == "kafka-unreachable"
    assert destination["reason"] == reach.reason
    assert (destination["cursor"], destination["lag_s"]) == ("mysql-bin.000042:1234", 0.25)


def test_collector_exports_dead_letter_records() -> None:
    progress = replace(RUNNING.progress, dead_letter_records=3)  # type: ignore[type-var]
    families = {
        f.name: f
        for f in BridgeCollector(FakeObserved(replace(RUNNING, progress=progress))).collect()
    }
    family = families["canal_bridge_dead_letter_records"]
    assert family.type == "counter"
    assert [(s.labels, s.value) for s in family.samples] == [({"destination": "d1"}, 3)]


def test_a_source_the_reader_retries_makes_it_source_unreachable_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """starting -> source-unreachable once an attempt failed (the reason names the error
    class, nothing more) -> ready when entries flow; a running destination whose reader
    retries is not ready at once, without waiting for the stale window."""
    clock = FakeClock()
    observed = FakeObserved(replace(RUNNING, source_event_ms=0))
    probes = Probes(observed, clock=clock)
    log = ReadinessLog(probes)
    caplog.set_level(logging.INFO, logger="bridge.admin.probes")
    log.tick()
    assert probes.readiness().body() == "not ok\nd1 starting\n"
    observed.current = [replace(RUNNING, source_event_ms=0, source_trouble="SourceUnreachable")]
    log.tick()
    log.tick()
    verdict = probes.verdicts()[0]
    assert (verdict.word, verdict.reason) == (
        "source-unreachable",
        "the binlog reader is retrying after: SourceUnreachable",
    )
    document = orjson.loads(status_document(observed.current, probes.verdicts()))
    assert document["destinations"][0]["reason"] == verdict.reason
    observed.current = [RUNNING]
    log.tick()
    assert probes.readiness().ok
    observed.current = [replace(RUNNING, source_trouble="ParserProcessFailed")]
    assert probes.readiness().body() == "not ok\nd1 source-unreachable\n"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "destination d1 not ready: source-unreachable (the binlog reader is retrying "
            "after: SourceUnreachable)",
        ),
        ("INFO", "destination d1 ready"),
    ]


def test_collector_exports_the_snapshot_progress_of_destinations_that_have_one() -> None:
    with_snapshot = replace(
        RUNNING,
        destination="a",
        snapshot=SnapshotUsage(rows=4200, tables_done=1, tables_total=3, tables_backfilled=2),
    )
    without = replace(RUNNING, destination="b")
    families = {f.name: f for f in BridgeCollector(FakeObserved(with_snapshot, without)).collect()}
    assert families["canal_bridge_snapshot_rows"].type == "counter"
    exported = {
        name: [(s.labels, s.value) for s in families[f"canal_bridge_snapshot_{name}"].samples]
        for name in ("rows", "tables_done", "tables_total", "tables_backfilled")
    }
    assert exported == {
        "rows": [({"destination": "a"}, 4200)],
        "tables_done": [({"destination": "a"}, 1)],
        "tables_total": [({"destination": "a"}, 3)],
        "tables_backfilled": [({"destination": "a"}, 2)],
    }
    document = orjson.loads(status_document([with_snapshot, without], []))
    assert [d["snapshot"] for d in document["destinations"]] == [
        {"rows": 4200, "tables_done": 1, "tables_total": 3, "percent": 33.3},
        None,
    ]


def test_collector_exports_the_schema_history_of_destinations_that_have_one() -> None:
    usage = SchemaUsage(tables=12, records=3, ddl_recorded=5, mismatches=0, drifted=1)
    with_history = replace(RUNNING, destination="a", schema=usage)
    without = replace(RUNNING, destination="b")
    families = {f.name: f for f in BridgeCollector(FakeObserved(with_history, without)).collect()}
    exported = {
        name: [(s.labels, s.value) for s in families[f"canal_bridge_{name}"].samples]
        for name in (
            "schema_history_tables",
            "schema_history_records",
            "schema_drift_tables",
            "schema_ddl_recorded",
            "schema_mismatches",
        )
    }
    assert exported == {
        "schema_history_tables": [({"destination": "a"}, 12)],
        "schema_history_records": [({"destination": "a"}, 3)],
        "schema_drift_tables": [({"destination": "a"}, 1)],
        "schema_ddl_recorded": [({"destination": "a"}, 5)],
        "schema_mismatches": [({"destination": "a"}, 0)],
    }
    document = orjson.loads(status_document([with_history, without], []))
    assert [d["schema_history"] for d in document["destinations"]] == [
        {"tables": 12, "records": 3, "ddl_recorded": 5, "mismatches": 0, "drifted": 1},
        None,
    ]
