"""canal's MQ worker (CanalMQStarter.worker) for one destination: get, build, send, ack.

Per-key order holds because a key always maps to the same partition, batches are sent one at
a time, and a failed batch is rolled back and sent again before anything after it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from bridge.backoff import Backoff
from bridge.config import DestinationConfig
from bridge.entry import Entry
from bridge.instance.api import CanalService, Message
from bridge.meta import ClientIdentity
from bridge.meta.base import MQ_CLIENT_ID
from bridge.mq.exceptions import DeliveryCancelled, DeliveryFailed
from bridge.mq.producer import Confirm, RecordSender
from bridge.mq.records import BatchCursor, OutgoingRecord, RecordBuilder, RowsEncoder
from bridge.position import EntryPosition, position_of

log = logging.getLogger(__name__)

WorkerState = Literal["new", "running", "stopped", "failed"]


class OutletGuard(Protocol):
    """Wraps a worker's two outlets, the get/ack service and the sender, without touching the
    worker: HA fencing (``bridge.ha.FencedOutlets``) checks ownership before each get, send and
    ack."""

    def service(self, service: CanalService) -> CanalService: ...

    def sender(self, sender: RecordSender, destination: str) -> RecordSender: ...


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """How one worker paces itself; ``for_destination`` takes them from the config."""

    batch_size: int = 1024
    # None: what is there now; <= 0: block for a full batch; > 0: wait that long.
    get_timeout_s: float | None = 0.1
    # None: the producer's default (its message timeout plus a grace).
    send_timeout_s: float | None = None
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 30.0
    # An empty get returns at most this often, whatever the get timeout (canal sleeps 100 ms).
    idle_interval_s: float = 0.1
    # Nothing there and nothing in flight: the get first waits up to this long for an entry
    # (woken by the put, or by stop()), so an idle destination's loop comes round every few
    # seconds rather than every get timeout (each round costs ~150 us of CPU in wake-ups:
    # with 100 idle destinations in a process, 1 s was 1.5-2 % of a core). The lag gauge
    # does not wait for it (an empty store reads as caught up).
    idle_wait_s: float = 5.0
    progress_log_interval_s: float = 10.0
    close_timeout_s: float = 5.0
    client_id: int = MQ_CLIENT_ID
    # mq.oversize's dead-letter topic: acked records sent there are counted apart.
    dead_letter_topic: str | None = None

    @classmethod
    def for_destination(cls, destination: DestinationConfig) -> WorkerSettings:
        timeout_ms = destination.get_timeout_ms
        oversize = destination.mq.oversize
        return cls(
            batch_size=destination.batch_size,
            get_timeout_s=None if timeout_ms is None else timeout_ms / 1000,
            dead_letter_topic=oversize.topic if oversize.mode == "dead_letter" else None,
        )


@dataclass(frozen=True, slots=True)
class WorkerProgress:
    """A snapshot of what one worker has done; ``lag_s`` needs the current time."""

    destination: str
    state: WorkerState = "new"
    rows_sent: int = 0
    messages_sent: int = 0
    batches_acked: int = 0
    # Bytes of the acked records (key + value), and batches rolled back (failed or cancelled).
    bytes_sent: int = 0
    batches_rolled_back: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    # Acked records that went to the dead-letter topic instead of their own.
    dead_letter_records: int = 0
    # Where the last acked batch ended in the binlog, and the time of its last event (ms).
    last_position: EntryPosition | None = None
    last_event_time_ms: int | None = None
    # Event time (ms) of the first entry of the batch being sent; None between batches.
    pending_since_ms: int | None = None
    # The last get came back empty: everything available has been sent.
    caught_up: bool = False
    last_error: str | None = None

    def lag_s(self, now_ms: int) -> float | None:
        """Seconds between the last acked event and ``now_ms`` (None before the first ack)."""
        if self.last_event_time_ms is None:
            return None
        return max(0.0, (now_ms - self.last_event_time_ms) / 1000)

    @property
    def cursor(self) -> str:
        position = self.last_position
        if position is None:
            return "-"
        return f"{position.journal_name}:{position.position}"


class MqWorker:
    """Moves one destination's batches to Kafka, at least once, in order.

    1. Subscribe; then, until stopped: get a batch without ack. With nothing in flight the
       get first waits up to ``idle_wait_s`` for an entry; an empty get is followed by the
       next one (at least ``idle_interval_s`` apart).
    2. Build the batch's records (``RecordBuilder``: one FlatMessage per rows event split by
       partition, DDL and oversize per policy). ``RecordTooLarge`` (oversize policy ``fail``)
       stops this destination: the batch is rolled back and the error raised, never retried.
    3. Start sending the records (the producer hands them to librdkafka, whose threads send
       them) and, while Kafka confirms them, get what is there now (no waiting: that would
       delay the confirmation) and build it; it is sent only once the previous batch is
       confirmed and acked (so batches still reach Kafka one at a time, in order). With
       nothing there, confirm at once. Once every delivery is confirmed, ack the
       batch and reset the back-off. ``DeliveryFailed``: roll back (the failed batch and the
       one built after it), wait an exponential back-off with jitter, then get again, so the
       same data is produced again (at-least-once). A broker rejecting a record as too large
       (``BrokerRejectedTooLarge``) stops the destination.
    4. ``stop()`` sets a flag and wakes an idle get: a get in progress returns within its
       timeout, a send in progress is cancelled within ``FLUSH_SLICE_S``, a back-off wait
       ends at once; the in-flight batch is rolled back. ``run()`` is ``try: loop finally:
       cleanup(failed)``, and cleanup closes the producer, which the worker owns (waiting at
       most ``close_timeout_s`` for records still in flight).
    """

    def __init__(
        self,
        client: ClientIdentity,
        service: CanalService,
        builder: RecordBuilder,
        producer: RecordSender,
        settings: WorkerSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        wait: Callable[[float], object] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.settings = settings or WorkerSettings()
        self._service = service
        self._builder = builder
        self._producer = producer
        self._clock = clock
        self._wall_clock = wall_clock
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._backoff = Backoff(self.settings.backoff_initial_s, self.settings.backoff_max_s, rng)
        self._lock = threading.Lock()
        self._progress = WorkerProgress(client.destination)
        # Batches got and neither acked nor rolled back, oldest first (at most two: the one
        # being sent and the one built meanwhile).
        self._outstanding: list[int] = []
        self._sending: _Send | None = None  # the batch on its way to Kafka, not yet settled
        self._thread: threading.Thread | None = None
        self._last_log = clock()
        self._beat = clock()
        self._rows_at_last_log = 0
        self.error: BaseException | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Run the worker on a thread of its own; ``error`` holds what stopped it, if anything."""
        if self._thread is not None or self._progress.state != "new":
            raise RuntimeError(f"MQ worker of {self.client.destination} was already started")
        self._thread = threading.Thread(
            target=self._run_catching, name=f"mq-{self.client.destination}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to finish; it rolls back an in-flight batch and returns (see step 4)."""
        self._stopping.set()
        self._service.wake(self.client)

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the thread started by ``start()``; True once it has ended."""
        if self._thread is not None:
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    @property
    def running(self) -> bool:
        return self._progress.state == "running"

    def progress(self) -> WorkerProgress:
        with self._lock:
            return self._progress

    @property
    def last_beat(self) -> float:
        """When (``clock()``) the loop last came round; health probes spot a wedged loop."""
        return self._beat

    def run(self) -> None:
        """The worker loop on the calling thread, until ``stop()`` or an error (re-raised)."""
        with self._lock:
            if self._progress.state != "new":
                raise RuntimeError(f"MQ worker of {self.client.destination} was already run")
            self._progress = replace(self._progress, state="running")
        failed = True
        try:
            self._loop()
            failed = False
        except BaseException as exc:
            self._update(last_error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self._cleanup(failed=failed)

    def _run_catching(self) -> None:
        try:
            self.run()
        except BaseException as exc:
            self.error = exc
            log.error("MQ worker of %s stopped: %s", self.client.destination, exc)

    # --- the loop -----------------------------------------------------------------------------

    def _loop(self) -> None:
        # Step 1
        self._service.subscribe(self.client)
        log.info("MQ worker of %s started", self.client.destination)
        while not self._stopping.is_set():
            started = self._beat = self._clock()
            idle = self._sending is None
            message = self._service.get_without_ack(
                self.client,
                self.settings.batch_size,
                # With a batch in flight, what is there now: waiting for more would hold back
                # its confirmation (and, delivering exactly once, its commit).
                self.settings.get_timeout_s if idle else None,
                idle_wait_s=self.settings.idle_wait_s if idle else None,
            )
            self._beat = self._clock()
            self._log_progress_now_and_then()
            if message.batch_id == -1:  # canal's empty message: nothing was there
                if not idle and not self._settle():
                    continue
                self._update(caught_up=True)
                if idle:  # after a settle the next get waits for entries: nothing to pace
                    self._pace(started)
                continue
            self._outstanding.append(message.batch_id)
            if self._stopping.is_set():
                return  # cleanup rolls the batches back
            # Step 2, while the previous batch (if any) is being confirmed
            try:
                records = self._builder.build(message.entries, message.batch_id, self._now_ms())
            except BaseException:
                if self._sending is not None:
                    self._settle()  # the batch before still gets its ack
                raise
            if self._sending is not None and not self._settle():
                continue  # rolled back, this batch with it
            first_time = message.entries[0].header.execute_time if message.entries else 0
            with self._lock:
                self._progress = replace(
                    self._progress, caught_up=False, pending_since_ms=first_time or None
                )
            # Step 3
            self._sending = _Send(message, records, self._start(records))

    def _start(self, records: Sequence[OutgoingRecord]) -> Confirm:
        """The producer's ``start``; what it raises is raised where the batch is settled, as
        a failure found while confirming would be."""
        try:
            return self._producer.start(records, self.settings.send_timeout_s, self._stopping)
        except BaseException as exc:
            return functools.partial(_raise, exc)

    def _settle(self) -> bool:
        """Wait for the batch being sent; ack it (True), or roll back what is outstanding
        (False). Errors other than a failed or cancelled delivery stop the worker."""
        sending = self._sending
        assert sending is not None
        self._sending = None
        try:
            sending.confirm()
        except DeliveryCancelled:
            return False  # Step 4: stopping; cleanup rolls the batches back
        except DeliveryFailed as exc:
            self._retry_later(sending.message.batch_id, exc)
            return False
        self._service.ack(self.client, sending.message.batch_id)
        self._builder.acked(sending.message.batch_id)
        self._outstanding.remove(sending.message.batch_id)
        self._backoff.reset()
        self._acked(sending.message.entries, sending.records)
        return True

    def _retry_later(self, batch_id: int, exc: DeliveryFailed) -> None:
        self._service.rollback(self.client, batch_id)
        self._builder.rolled_back()
        self._outstanding.clear()
        delay = self._backoff.next()
        with self._lock:
            progress = self._progress
            self._progress = replace(
                progress,
                failures=progress.failures + 1,
                consecutive_failures=progress.consecutive_failures + 1,
                batches_rolled_back=progress.batches_rolled_back + 1,
                pending_since_ms=None,
                last_error=str(exc),
            )
        log.warning(
            "%s: batch %d not delivered (%s); rolled back, sending again in %.2f s",
            self.client.destination,
            batch_id,
            exc,
            delay,
        )
        self._wait(delay)

    def _pace(self, started: float) -> None:
        """Keep an idle loop from spinning when the get returns at once."""
        left = self.settings.idle_interval_s - (self._clock() - started)
        if left > 0:
            self._wait(left)

    def _cleanup(self, *, failed: bool) -> None:
        if self._sending is not None:
            self._stopping.set()  # cancels the send (when the loop ended on an error)
            # Rolled back below, whatever the confirm raises (as the sending thread's errors
            # were never raised here).
            with contextlib.suppress(BaseException):
                self._sending.confirm()
            self._sending = None
        if self._outstanding:
            batch_id = self._outstanding[0]  # rolling back the oldest drops every later one
            self._outstanding.clear()
            self._builder.rolled_back()
            try:
                self._service.rollback(self.client, batch_id)
                with self._lock:
                    p = self._progress
                    self._progress = replace(
                        p, batches_rolled_back=p.batches_rolled_back + 1, pending_since_ms=None
                    )
            except Exception:
                # Already stopping; the cursor is untouched, so the batch is sent after restart.
                log.warning(
                    "%s: rolling back batch %d failed",
                    self.client.destination,
                    batch_id,
                    exc_info=True,
                )
        try:
            self._producer.close(self.settings.close_timeout_s)
        finally:
            self._update(state="failed" if failed else "stopped")
            progress = self.progress()
            log.info(
                "MQ worker of %s %s: %d rows, %d messages, %d batches acked, cursor %s",
                self.client.destination,
                progress.state,
                progress.rows_sent,
                progress.messages_sent,
                progress.batches_acked,
                progress.cursor,
            )

    # --- progress -----------------------------------------------------------------------------

    def _acked(self, entries: Sequence[Entry], records: Sequence[OutgoingRecord]) -> None:
        # A DDL's change has no rows; summed in C (a batch of one-row transactions holds
        # a thousand entries).
        rows = sum(map(len, map(_ROW_DATAS, filter(None, map(_ROW_CHANGE, entries)))))
        last = entries[-1] if entries else None
        dead_topic = self.settings.dead_letter_topic
        dead = sum(1 for r in records if r.topic == dead_topic) if dead_topic else 0
        with self._lock:
            p = self._progress
            self._progress = replace(
                p,
                rows_sent=p.rows_sent + rows,
                messages_sent=p.messages_sent + len(records),
                bytes_sent=p.bytes_sent + _record_bytes(records),
                batches_acked=p.batches_acked + 1,
                pending_since_ms=None,
                consecutive_failures=0,
                dead_letter_records=p.dead_letter_records + dead,
                last_position=position_of(last) if last is not None else p.last_position,
                last_event_time_ms=(
                    last.header.execute_time
                    if last is not None and last.header.execute_time > 0
                    else p.last_event_time_ms
                ),
            )

    def _update(
        self,
        *,
        state: WorkerState | None = None,
        caught_up: bool | None = None,
        last_error: str | None = None,
    ) -> None:
        with self._lock:
            p = self._progress
            self._progress = replace(
                p,
                state=p.state if state is None else state,
                caught_up=p.caught_up if caught_up is None else caught_up,
                last_error=p.last_error if last_error is None else last_error,
            )

    def _log_progress_now_and_then(self) -> None:
        now = self._clock()
        elapsed = now - self._last_log
        if elapsed < self.settings.progress_log_interval_s:
            return
        progress = self.progress()
        rate = (progress.rows_sent - self._rows_at_last_log) / elapsed if elapsed > 0 else 0.0
        self._last_log, self._rows_at_last_log = now, progress.rows_sent
        lag = progress.lag_s(self._now_ms())
        if progress.caught_up:
            behind = "caught up"
        elif lag is None:
            behind = "lag -"
        else:
            behind = f"lag {lag:.1f} s"
        log.info(
            "%s: %.1f rows/s, %s, cursor %s, %d batches acked, %d failed sends",
            self.client.destination,
            rate,
            behind,
            progress.cursor,
            progress.batches_acked,
            progress.failures,
        )

    def _now_ms(self) -> int:
        return int(self._wall_clock() * 1000)


@dataclass(frozen=True, slots=True)
class _Send:
    """The batch on its way to Kafka: ``confirm`` waits for it and raises what failed."""

    message: Message
    records: Sequence[OutgoingRecord]
    confirm: Confirm


def _raise(exc: BaseException) -> None:
    raise exc


def _record_bytes(records: Sequence[OutgoingRecord]) -> int:
    """Key and value bytes of ``records`` (the progress's ``bytes_sent``), summed in C: a
    snapshot batch holds thousands."""
    return sum(map(len, map(_KEY, records))) + sum(map(len, map(_VALUE, records)))


_KEY, _VALUE = operator.attrgetter("key"), operator.attrgetter("value")
_ROW_CHANGE, _ROW_DATAS = operator.attrgetter("row_change"), operator.attrgetter("row_datas")


def build_worker(
    destination: DestinationConfig,
    service: CanalService,
    sender: RecordSender,
    guard: OutletGuard | None = None,
    *,
    encoder: RowsEncoder,
    cursor: BatchCursor | None = None,
) -> MqWorker:
    """The worker of ``destination`` (plain and HA mode alike): its record builder over the
    destination's ``encoder`` (with the exactly-once ``cursor`` if given), ``sender`` (made
    by the destination's ``SenderFactory``; the worker owns and closes it), and both outlets
    wrapped by ``guard`` if given."""
    settings = WorkerSettings.for_destination(destination)
    builder = RecordBuilder(encoder, cursor)
    if guard is not None:
        service, sender = guard.service(service), guard.sender(sender, destination.name)
    client = ClientIdentity(destination.name, settings.client_id)
    return MqWorker(client, service, builder, sender, settings)
