"""Test doubles shared by the test suite: one definition of each, imported by every test that
needs it (pure logic fakes, no services).

- ``ScriptedService``: canal's get / ack / rollback over scripted batches (the MQ worker's
  source).
- ``FakeSender``: a producer whose sends succeed or raise scripted outcomes.
- ``FakeClock``: a settable monotonic clock.
- ``FakeHost``: what the HA election starts and stops.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from bridge.entry import Entry
from bridge.instance.api import EMPTY_BATCH_ID, Message
from bridge.meta import ClientIdentity
from bridge.mq.producer import Confirm
from bridge.mq.records import OutgoingRecord


class ScriptedService:
    """canal's get / ack / rollback over a list of batches, thread-safe.

    Like canal's meta manager, a rollback makes the next get return the same entries again,
    under a new, higher batch id; acks must come in batch order. ``on_drained`` is called
    when a get finds nothing and nothing is outstanding (tests use it to stop the worker).
    A get waits as the store's does: up to a timeout > 0 for a batch, and with a timeout <= 0
    until one is there or ``wake`` came.
    """

    def __init__(
        self,
        batches: Sequence[Sequence[Entry]] = (),
        on_drained: Callable[[], None] | None = None,
    ) -> None:
        self.batches: list[tuple[Entry, ...]] = [tuple(b) for b in batches]
        self.on_drained = on_drained
        self.on_get: Callable[[Message], None] | None = None
        self.cursor = 0  # index of the first batch not acked
        self.outstanding: list[int] = []
        self.next_id = 1
        self.calls: list[tuple[str, int]] = []
        self.idle_waits: list[float | None] = []  # each get's idle_wait_s
        self.wakes = 0
        self._cond = threading.Condition()

    def push(self, *entries: Entry) -> None:
        with self._cond:
            self.batches.append(entries)
            self._cond.notify_all()

    def subscribe(self, client: ClientIdentity) -> None:
        with self._cond:
            self.calls.append(("subscribe", client.client_id))

    def _next_index(self) -> int:
        return self.cursor + len(self.outstanding)

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        with self._cond:
            # Recorded, not waited (tests/unit/store covers the store's idle wait).
            self.idle_waits.append(idle_wait_s)
            if timeout_s is not None and timeout_s > 0:
                self._cond.wait_for(lambda: self._next_index() < len(self.batches), timeout_s)
            elif timeout_s is not None:
                self._cond.wait_for(
                    lambda: self.wakes > 0 or self._next_index() < len(self.batches)
                )
            index = self._next_index()
            if index < len(self.batches):
                message = Message(self.next_id, self.batches[index])
                self.outstanding.append(self.next_id)
                self.next_id += 1
            else:
                message = Message(EMPTY_BATCH_ID, ())
            self.calls.append(("get", message.batch_id))
        drained = message.batch_id == EMPTY_BATCH_ID and not self.outstanding
        if drained and self.on_drained is not None:
            self.on_drained()
        if self.on_get is not None:
            self.on_get(message)
        return message

    def wake(self, client: ClientIdentity) -> None:
        with self._cond:
            self.wakes += 1
            self._cond.notify_all()

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        with self._cond:
            assert self.outstanding[:1] == [batch_id], f"ack {batch_id} of {self.outstanding}"
            self.outstanding.pop(0)
            self.cursor += 1
            self.calls.append(("ack", batch_id))
            self._cond.notify_all()

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        with self._cond:
            self.outstanding.clear()
            self.calls.append(("rollback", -1 if batch_id is None else batch_id))

    @property
    def acked(self) -> int:
        with self._cond:
            return self.cursor

    def wait_acked(self, count: int, timeout_s: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.cursor >= count, timeout_s)

    def count(self, kind: str) -> int:
        with self._cond:
            return sum(1 for call, _ in self.calls if call == kind)


class FakeSender:
    """A producer whose sends succeed, or raise the next scripted outcome. ``started`` and
    ``confirmed`` note when (``time.monotonic``) each batch was handed over and when its
    confirm returned."""

    def __init__(self, outcomes: Sequence[BaseException | None] = ()) -> None:
        self.outcomes = list(outcomes)
        self.sent: list[list[OutgoingRecord]] = []
        self.started: list[float] = []
        self.confirmed: list[float] = []
        self.on_send: Callable[[Sequence[OutgoingRecord]], None] | None = None
        self.closed = False

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        """Hands ``records`` over; the next scripted outcome is raised by the confirm."""
        self.started.append(time.monotonic())
        self.sent.append(list(records))
        if self.on_send is not None:
            self.on_send(records)
        outcome = self.outcomes.pop(0) if self.outcomes else None

        def confirm() -> None:
            if outcome is not None:
                raise outcome
            self.confirmed.append(time.monotonic())

        return confirm

    def close(self, timeout_s: float = 5.0) -> None:
        self.closed = True

    @property
    def records(self) -> list[OutgoingRecord]:
        """Every record handed over, in order, across batches."""
        return [record for batch in self.sent for record in batch]


class FakeClock:
    """``time.monotonic`` stand-in: returns ``now``, which the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeHost:
    """Records what the election starts and stops; ``fail`` ends a destination's worker."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.starts: list[str] = []
        self.errors: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    def start_destination(self, name: str) -> None:
        with self._lock:
            self.running.add(name)
            self.starts.append(name)
            self.errors.pop(name, None)

    def stop_destination(self, name: str) -> None:
        with self._lock:
            self.running.discard(name)

    def destination_ended(self, name: str) -> bool:
        return name in self.errors

    def destination_error(self, name: str) -> BaseException | None:
        return self.errors.get(name)
