"""The election with a fake host: one runner per destination, takeover, spreading, failures."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

from bridge.ha import Election, RunningInfo, ZkFence, ZkLayout, ZkSession
from tests.doubles import FakeHost
from tests.ha.conftest import eventually


class Member:
    def __init__(self, session: ZkSession, layout: ZkLayout, address: str, names: list[str]):
        self.session = session
        self.host = FakeHost()
        self.fence = ZkFence(session, layout)
        self.election = Election(
            session,
            layout,
            RunningInfo(address, 7),
            names,
            host=self.host,
            fence=self.fence,
            balance_delay_s=0.5,
            retry_delay_s=30,
        )


@pytest.fixture
def members(
    new_session: Callable[..., ZkSession], layout: ZkLayout
) -> Iterator[Callable[..., Member]]:
    started: list[Member] = []

    def make(address: str, names: list[str]) -> Member:
        member = Member(new_session(), layout, address, names)
        member.election.start()
        started.append(member)
        return member

    yield make
    for member in started:
        member.election.stop()


def test_alone_it_runs_everything_and_registers_in_canals_layout(
    members: Callable[..., Member], layout: ZkLayout
) -> None:
    a = members("10.0.0.1:11111", ["d1", "d2"])
    eventually(lambda: a.host.running == {"d1", "d2"}, 10, "both destinations started")
    client = a.session.client
    data, stat = client.get(layout.running("d1"))
    assert json.loads(data) == {"active": True, "address": "10.0.0.1:11111", "cid": 7}
    assert stat.ephemeralOwner == a.session.session_id
    assert client.get_children(layout.cluster) == ["10.0.0.1:11111"]
    assert client.get_children(layout.destination_cluster("d2")) == ["10.0.0.1:11111"]
    assert a.fence.holds("d1") and a.fence.holds("d2")


def test_one_runs_the_other_takes_over_when_it_goes(members: Callable[..., Member]) -> None:
    a = members("10.0.0.1:1", ["d1"])
    eventually(lambda: "d1" in a.host.running, 10, "a runs d1")
    b = members("10.0.0.1:2", ["d1"])
    eventually(lambda: b.election.registration.live_servers() == 2, 5, "b registered")
    assert b.host.running == set()
    a.election.stop()  # gives d1 up: node deleted
    took = eventually(lambda: "d1" in b.host.running, 5, "b takes d1 over")
    assert took < 2
    assert a.host.running == set()


def test_destinations_spread_across_processes(members: Callable[..., Member]) -> None:
    names = ["d1", "d2", "d3", "d4"]
    a = members("10.0.0.1:1", names)
    eventually(lambda: len(a.host.running) == 4, 10, "a runs all four")
    b = members("10.0.0.1:2", names)
    eventually(lambda: len(a.host.running) == 2 and len(b.host.running) == 2, 15, "two each")
    assert a.host.running.isdisjoint(b.host.running)


def test_a_failed_destination_is_given_up_for_another_process(
    members: Callable[..., Member], layout: ZkLayout
) -> None:
    a = members("10.0.0.1:1", ["d1"])
    eventually(lambda: "d1" in a.host.running, 10, "a runs d1")
    b = members("10.0.0.1:2", ["d1"])
    eventually(lambda: b.election.registration.live_servers() == 2, 5, "b registered")
    a.host.errors["d1"] = RuntimeError("binlog purged")
    eventually(lambda: "d1" in b.host.running, 10, "b takes the failed destination")
    assert "d1" not in a.host.running
    assert isinstance(a.election.failures["d1"], RuntimeError)


def test_a_changed_destination_set_is_raced_for_given_up_and_rebalanced(
    members: Callable[..., Member], layout: ZkLayout
) -> None:
    a = members("10.0.0.1:1", ["d1", "d2"])
    eventually(lambda: a.host.running == {"d1", "d2"}, 10, "a runs both")
    b = members("10.0.0.1:2", ["d1", "d2"])
    eventually(lambda: len(b.host.running) == 1, 15, "b takes its share of one")
    for member in (a, b):  # every process applies the same file
        member.election.set_destinations(["d1", "d2", "d3", "d4"])
    eventually(
        lambda: len(a.host.running) == 2 and len(b.host.running) == 2, 15, "two each of four"
    )
    for member in (a, b):
        member.election.set_destinations(["d3", "d4"])
    eventually(
        lambda: (
            a.host.running | b.host.running == {"d3", "d4"}
            and len(a.host.running) == len(b.host.running) == 1
        ),
        15,
        "the removed ones stopped, one each of the two left",
    )
    client = a.session.client
    for removed in ("d1", "d2"):
        assert client.exists(layout.running(removed)) is None  # given up: no running node
        assert client.get_children(layout.destination_cluster(removed)) == []  # unregistered
    assert sorted(client.get_children(layout.destination_cluster("d3"))) == [
        "10.0.0.1:1",
        "10.0.0.1:2",
    ]
