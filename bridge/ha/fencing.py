"""Fencing: a process that may have lost a destination neither produces nor acks for it.

Ownership is a lease. ZooKeeper expires a session no sooner than a session timeout after
the last request it received, so a read started at ``t`` that shows the running node as ours
proves that no standby can take the destination before ``t + session timeout``. The fence
grants ``lease_s`` (half the session timeout) from such a read; the election renews it every
round, ``verify`` on every send and ack. Checks, all raising ``FencedOut``:

* ``check`` (local, instant): the session is CONNECTED, the election granted us the
  destination, and the lease has not run out. The connection listener revokes every grant on
  SUSPENDED/LOST; a process that was frozen (SIGSTOP, a long GC-like pause) wakes up with an
  expired lease, since the monotonic clock kept running.
* ``verify`` (one ZooKeeper read): ``check``, then the running node exists and its
  ``ephemeralOwner`` is our session. Done before every send and every ack.
* while a batch is handed over and while its delivery is confirmed, the producer's cancel
  flag reads as set once the lease runs out, and the records are handed over one by one only
  while it holds: a process frozen in the middle of a send wakes up, stops handing records
  over, purges those still queued in librdkafka and fails the send with ``FencedOut``. (In
  between, the worker gets and builds the next batch without waiting, and confirms at once
  when nothing is there.)

The worker itself is unchanged: ``FencedService`` wraps the get/ack API it uses and
``FencedSender`` its producer. ``FencedOut`` ends the worker like any other error; the
in-flight batch is rolled back locally (rollback is never fenced: it only touches memory) and
the new owner sends it again from the cursor in ZooKeeper.

Left open: records already written to the broker connection when the process froze still
reach Kafka (they carry their original timestamps, and the new owner sends them again);
only Kafka's transactional producer (epoch fencing) could refuse those.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import overload

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from bridge.ha.exceptions import FencedOut
from bridge.ha.paths import ZkLayout
from bridge.ha.session import REQUEST_TIMEOUT_S, ZkSession
from bridge.instance.api import CanalService, Message
from bridge.meta import ClientIdentity
from bridge.mq.exceptions import DeliveryCancelled
from bridge.mq.producer import Confirm, RecordSender
from bridge.mq.records import OutgoingRecord

log = logging.getLogger(__name__)

# Header naming the process (its registered address) that produced a record.
HEADER_NODE = "bridge.node"
# The share of the session timeout an ownership proof lasts (see the module docstring).
LEASE_FRACTION = 0.5
# The longest idle wait of a get, as a share of the lease (check_fresh verifies at half).
IDLE_WAIT_FRACTION = 0.25


class ZkFence:
    """The destinations this process may act for, as granted by the election, with leases."""

    def __init__(
        self,
        session: ZkSession,
        layout: ZkLayout,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._layout = layout
        self._clock = clock
        self.lease_s = session.session_timeout_s * LEASE_FRACTION
        self._lease_until: dict[str, float] = {}
        self._lock = threading.Lock()

    def grant(self, destination: str, since: float) -> None:
        """Ours, as a ZooKeeper request started at ``since`` (monotonic) showed."""
        with self._lock:
            self._lease_until[destination] = since + self.lease_s

    def renew(self, destination: str, since: float) -> None:
        """Extend a granted lease after another proof started at ``since``."""
        with self._lock:
            if destination in self._lease_until:
                until = max(self._lease_until[destination], since + self.lease_s)
                self._lease_until[destination] = until

    def revoke(self, destination: str) -> None:
        with self._lock:
            self._lease_until.pop(destination, None)

    def revoke_all(self) -> None:
        with self._lock:
            self._lease_until.clear()

    def granted(self, destination: str) -> bool:
        with self._lock:
            return destination in self._lease_until

    def valid(self, destination: str) -> bool:
        """``check`` as a yes/no."""
        try:
            self.check(destination)
        except FencedOut:
            return False
        return True

    def check(self, destination: str) -> None:
        if not self._session.connected:
            raise FencedOut(destination, "the ZooKeeper session is not connected")
        with self._lock:
            until = self._lease_until.get(destination)
        if until is None:
            raise FencedOut(destination, "this process no longer owns it")
        late = self._clock() - until
        if late >= 0:
            raise FencedOut(
                destination, f"its ownership lease ran out {late:.1f}s ago (was it frozen?)"
            )

    def verify(self, destination: str) -> None:
        self.check(destination)
        path = self._layout.running(destination)
        started = self._clock()
        try:
            _, stat = self._session.client.get_async(path).get(timeout=REQUEST_TIMEOUT_S)
        except NoNodeError:
            self.revoke(destination)
            raise FencedOut(destination, f"{path} is gone") from None
        except (KazooException, KazooTimeoutError) as exc:
            raise FencedOut(destination, f"cannot verify {path}: {type(exc).__name__}") from exc
        session_id = self._session.session_id
        if stat.ephemeralOwner != session_id:
            self.revoke(destination)
            raise FencedOut(
                destination, f"{path} belongs to session 0x{stat.ephemeralOwner:x}, not ours"
            )
        self.renew(destination, started)

    def check_fresh(self, destination: str) -> None:
        """``check``, with a ``verify`` once half the lease is gone, so that an idle worker
        keeps its lease even when the election loop is busy."""
        self.check(destination)
        with self._lock:
            left = self._lease_until.get(destination, 0.0) - self._clock()
        if left < self.lease_s / 2:
            self.verify(destination)

    def holds(self, destination: str) -> bool:
        """``verify`` as a yes/no: the ZooKeeper meta store writes cursors only then."""
        try:
            self.verify(destination)
        except FencedOut as exc:
            log.debug("%s", exc)
            return False
        return True


class FencedService:
    """The worker's ``CanalService``: ``ack`` only after ``verify``; gets refused once
    revoked; ``rollback`` always passes (it only rewinds memory)."""

    def __init__(self, service: CanalService, fence: ZkFence) -> None:
        self._service = service
        self._fence = fence

    def subscribe(self, client: ClientIdentity) -> None:
        self._fence.check(client.destination)
        self._service.subscribe(client)

    def get_without_ack(
        self,
        client: ClientIdentity,
        batch_size: int,
        timeout_s: float | None = None,
        *,
        idle_wait_s: float | None = None,
    ) -> Message:
        self._fence.check_fresh(client.destination)
        if idle_wait_s is not None:
            # An idle worker's get renews the lease (check_fresh): it must come round well
            # within the lease, whatever its idle wait.
            idle_wait_s = min(idle_wait_s, self._fence.lease_s * IDLE_WAIT_FRACTION)
        return self._service.get_without_ack(client, batch_size, timeout_s, idle_wait_s=idle_wait_s)

    def ack(self, client: ClientIdentity, batch_id: int) -> None:
        self._fence.verify(client.destination)
        self._service.ack(client, batch_id)

    def rollback(self, client: ClientIdentity, batch_id: int | None = None) -> None:
        self._service.rollback(client, batch_id)

    def wake(self, client: ClientIdentity) -> None:
        self._service.wake(client)  # never fenced: it only ends a wait


class _LeaseCancel(threading.Event):
    """The producer's cancel flag: set when the worker stops, or once the lease ran out."""

    def __init__(self, outer: threading.Event | None, holds: Callable[[], bool]) -> None:
        super().__init__()
        self._outer = outer
        self._holds = holds
        self.fenced = False

    def is_set(self) -> bool:
        if self._outer is not None and self._outer.is_set():
            return True
        if not self._holds():
            self.fenced = True
        return self.fenced


class _WhileHeld(Sequence[OutgoingRecord]):
    """The batch's records, handed out by iteration only while the lease holds."""

    def __init__(self, records: Sequence[OutgoingRecord], cancel: _LeaseCancel) -> None:
        self._records = records
        self._cancel = cancel

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> OutgoingRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[OutgoingRecord]: ...

    def __getitem__(self, index: int | slice) -> OutgoingRecord | Sequence[OutgoingRecord]:
        return self._records[index]

    def __iter__(self) -> Iterator[OutgoingRecord]:
        for record in self._records:
            if self._cancel.is_set():
                return  # the rest stays unsent: the producer reports the batch cancelled
            yield record


class FencedSender:
    """The worker's producer: a batch is handed to Kafka only after ``verify`` and only while
    the lease holds; each record gets a ``bridge.node`` header naming this process."""

    def __init__(
        self, sender: RecordSender, fence: ZkFence, destination: str, node_address: str
    ) -> None:
        self._sender = sender
        self._fence = fence
        self._destination = destination
        self._header = (HEADER_NODE, node_address.encode())

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        self._fence.verify(self._destination)
        tagged = [replace(r, headers=(*r.headers, self._header)) for r in records]
        guard = _LeaseCancel(cancel, lambda: self._fence.valid(self._destination))
        confirm = self._sender.start(_WhileHeld(tagged, guard), timeout_s, guard)
        return functools.partial(self._confirm, confirm, guard)

    def _confirm(self, confirm: Confirm, guard: _LeaseCancel) -> None:
        try:
            confirm()
        except DeliveryCancelled as exc:
            if guard.fenced:
                raise FencedOut(self._destination, "its lease ran out during a send") from exc
            raise

    def close(self, timeout_s: float = 5.0) -> None:
        self._sender.close(timeout_s)


class FencedOutlets:
    """The worker builder's ``OutletGuard`` in HA mode: the service becomes a
    ``FencedService``, the sender a ``FencedSender`` tagging records with this node."""

    def __init__(self, fence: ZkFence, node_address: str) -> None:
        self._fence = fence
        self._node_address = node_address

    def service(self, service: CanalService) -> CanalService:
        return FencedService(service, self._fence)

    def sender(self, sender: RecordSender, destination: str) -> RecordSender:
        return FencedSender(sender, self._fence, destination, self._node_address)
