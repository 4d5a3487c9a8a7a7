"""Fencing: no send and no ack for a destination whose running node this session lacks."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bridge.ha import (
    HEADER_NODE,
    Election,
    FencedOut,
    FencedSender,
    FencedService,
    RunningInfo,
    ZkFence,
    ZkLayout,
    ZkSession,
)
from bridge.ha.fencing import IDLE_WAIT_FRACTION
from bridge.instance.api import Message
from bridge.meta import ClientIdentity
from bridge.mq.exceptions import DeliveryCancelled
from bridge.mq.producer import Confirm
from bridge.mq.records import OutgoingRecord
from tests.doubles import FakeHost, FakeSender
from tests.ha.conftest import eventually
from tests.ha.zookeeper_server import ThrowawayZooKeeper

D = "orders"
CLIENT = ClientIdentity(D)


class FakeService:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.idle_waits: list[float | None] = []

    def subscribe(self, client: ClientIdentity) -> None:
        self.calls.append("subscribe")

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        self.calls.append("get")
        self.idle_waits.append(idle_wait_s)
        return Message(-1, ())

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        self.calls.append(f"ack {batch_id}")

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        self.calls.append(f"rollback {batch_id}")

    def wake(self, client: ClientIdentity) -> None:
        self.calls.append("wake")


RECORD = OutgoingRecord("t", 0, b"k", b"{}", (("binlog.file", b"mysql-bin.000001"),))


def _own(session: ZkSession, layout: ZkLayout, fence: ZkFence, since: float | None = None) -> None:
    fence.grant(D, time.monotonic() if since is None else since)
    session.client.create(layout.running(D), b"{}", ephemeral=True, makepath=True)


def test_owner_sends_and_acks_with_its_header(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    session = new_session()
    fence = ZkFence(session, layout)
    _own(session, layout, fence)
    service, sender = FakeService(), FakeSender()
    FencedSender(sender, fence, D, "10.0.0.1:42").start([RECORD])()
    FencedService(service, fence).ack(CLIENT, 1)
    assert service.calls == ["ack 1"]
    assert sender.records[0].headers == (
        ("binlog.file", b"mysql-bin.000001"),
        (HEADER_NODE, b"10.0.0.1:42"),
    )


def test_an_idle_get_waits_well_within_the_lease(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    session = new_session()
    fence = ZkFence(session, layout)
    _own(session, layout, fence)
    service = FakeService()
    fenced = FencedService(service, fence)
    fenced.get_without_ack(CLIENT, 10, 0.1, idle_wait_s=3600)
    fenced.get_without_ack(CLIENT, 10, 0.1, idle_wait_s=0.001)
    fenced.get_without_ack(CLIENT, 10, 0.1)
    assert service.idle_waits == [fence.lease_s * IDLE_WAIT_FRACTION, 0.001, None]


def test_not_granted_is_refused_but_rollback_passes(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    fence = ZkFence(new_session(), layout)
    service, sender = FakeService(), FakeSender()
    fenced = FencedService(service, fence)
    for call in (
        lambda: fenced.get_without_ack(CLIENT, 10),
        lambda: fenced.ack(CLIENT, 1),
        lambda: FencedSender(sender, fence, D, "a:1").start([RECORD]),
    ):
        with pytest.raises(FencedOut, match="no longer owns"):
            call()
    fenced.rollback(CLIENT, 1)
    assert service.calls == ["rollback 1"] and sender.records == []


def test_node_of_another_session_is_refused_and_revokes(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    ours, theirs = new_session(), new_session()
    fence = ZkFence(ours, layout)
    theirs.client.create(layout.running(D), b"{}", ephemeral=True, makepath=True)
    fence.grant(D, time.monotonic())  # a stale belief: ZooKeeper says otherwise
    with pytest.raises(FencedOut, match="belongs to session"):
        fence.verify(D)
    assert not fence.granted(D)
    assert not fence.holds(D)


def test_a_lease_runs_out_without_renewal_and_verify_renews_it(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    """A process frozen past its lease is refused on waking, before asking ZooKeeper."""
    session = new_session()
    now = [1000.0]
    fence = ZkFence(session, layout, clock=lambda: now[0])
    _own(session, layout, fence, now[0])
    now[0] += fence.lease_s * 0.9
    fence.check_fresh(D)  # past half the lease: verified against ZooKeeper, renewed
    now[0] += fence.lease_s * 0.9
    fence.check(D)
    now[0] += fence.lease_s
    with pytest.raises(FencedOut, match="lease ran out"):
        FencedService(FakeService(), fence).get_without_ack(CLIENT, 10)


class FreezingSender(FakeSender):
    """Produces the first record, then "freezes" past the lease, then tries the rest."""

    def __init__(self, now: list[float], jump: float) -> None:
        super().__init__()
        self.now, self.jump = now, jump
        self.purged = False

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        handed: list[OutgoingRecord] = []
        self.sent.append(handed)
        for index, record in enumerate(records):
            handed.append(record)
            if index == 0:
                self.now[0] += self.jump
        assert cancel is not None
        return functools.partial(self._confirm, records, cancel)

    def _confirm(self, records: Sequence[OutgoingRecord], cancel: threading.Event) -> None:
        if len(self.records) < len(records) or cancel.is_set():
            self.purged = True
            raise DeliveryCancelled(records[0].topic, len(records) - len(self.records))


def test_frozen_mid_send_hands_nothing_more_over(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> None:
    session = new_session()
    now = [1000.0]
    fence = ZkFence(session, layout, clock=lambda: now[0])
    _own(session, layout, fence, now[0])
    sender = FreezingSender(now, jump=fence.lease_s * 2)
    with pytest.raises(FencedOut, match="during a send"):
        FencedSender(sender, fence, D, "a:1").start([RECORD, RECORD, RECORD])()
    assert len(sender.records) == 1 and sender.purged


def test_node_gone_is_refused(new_session: Callable[..., ZkSession], layout: ZkLayout) -> None:
    session = new_session()
    fence = ZkFence(session, layout)
    _own(session, layout, fence)
    session.client.delete(layout.running(D))
    with pytest.raises(FencedOut, match="is gone"):
        FencedService(FakeService(), fence).ack(CLIENT, 1)


def test_connection_loss_fences_at_once_and_stops_the_destination(tmp_path: Path) -> None:
    """ZooKeeper going away: SUSPENDED revokes every grant before anything else happens; the
    election then stops the destination; once back, it is run again."""
    with ThrowawayZooKeeper(tmp_path / "zk") as zk:
        session = ZkSession(zk.hosts, 4000)
        session.start()
        layout = ZkLayout("/otter/canal")
        fence = ZkFence(session, layout)
        host = FakeHost()
        election = Election(
            session, layout, RunningInfo("10.0.0.1:1", 1), [D], host=host, fence=fence
        )
        election.start()
        try:
            eventually(lambda: D in host.running, 10, "the destination started")
            fence.verify(D)
            zk.stop(kill=True)
            eventually(lambda: not fence.granted(D), 10, "the grant revoked")
            with pytest.raises(FencedOut):
                fence.check(D)
            eventually(lambda: D not in host.running, 5, "the destination stopped")
            zk.start()
            eventually(lambda: D in host.running, 15, "the destination running again")
            fence.verify(D)
        finally:
            election.stop()
            session.stop()
