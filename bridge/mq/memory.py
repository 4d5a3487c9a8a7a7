"""A broker in memory, for tests (``broker: memory``): records are kept, confirmed at once.

Shipped with the sender seam (``bridge.mq.senders``) so that a user's tests can run the real
bridge, config file and all, without Kafka, and read what it sent::

    config = load_config("destinations.yaml")  # with broker: memory
    runner = Runner(config)
    runner.start()
    ...  # write rows to the source
    senders = runner.senders
    assert isinstance(senders, MemorySenders)
    records = senders.wait_for("example", 3)  # the destination's first 3 records
    runner.stop()

Every record a destination's worker hands over is kept, in order, and its batch confirmed at
once: nothing is ever refused, lost or delivered twice, and exactly-once delivery is plain
at-least-once here (no cursor is committed with the records). The records outlive the
destination's sender: a restarted destination appends to the same list.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from bridge.config import BridgeConfig, DestinationConfig
from bridge.meta import MetaManager
from bridge.mq.exceptions import DeliveryCancelled, DeliveryFailed
from bridge.mq.producer import Confirm, RecordSender, confirmed
from bridge.mq.records import BatchCursor, OutgoingRecord


class MemorySender:
    """One destination's sender: appends each batch to its list; the confirm has nothing to
    wait for."""

    def __init__(self, records: list[OutgoingRecord], changed: threading.Condition) -> None:
        self._records = records
        self._changed = changed
        self.closed = False

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        """Keeps ``records``; raises DeliveryFailed once closed, DeliveryCancelled when
        ``cancel`` is already set (as a Kafka sender would, nothing of the batch is kept)."""
        if self.closed:
            topic = records[0].topic if records else ""
            raise DeliveryFailed("closed", topic, "the memory sender is closed", fatal=True)
        if cancel is not None and cancel.is_set() and records:
            raise DeliveryCancelled(records[0].topic, len(records))
        with self._changed:
            self._records.extend(records)
            self._changed.notify_all()
        return confirmed

    def close(self, timeout_s: float = 5.0) -> None:
        self.closed = True


class MemorySenders:
    """The ``memory`` broker's sender factory: one list of records per destination."""

    def __init__(self, max_record_bytes: int) -> None:
        self._max_record_bytes = max_record_bytes
        self._changed = threading.Condition()
        self._sent: dict[str, list[OutgoingRecord]] = {}

    @classmethod
    def from_config(cls, config: BridgeConfig) -> MemorySenders:
        """The record size limit is the ``kafka`` section's (``message.max.bytes``), so that
        ``mq.oversize`` applies as it would in production."""
        return cls(config.kafka.max_message_bytes)

    @property
    def max_record_bytes(self) -> int:
        return self._max_record_bytes

    def sender(self, destination: DestinationConfig) -> RecordSender:
        with self._changed:
            records = self._sent.setdefault(destination.name, [])
        return MemorySender(records, self._changed)

    def cursor(self, destination: DestinationConfig, meta: MetaManager) -> BatchCursor | None:
        return None  # no transactions: every delivery is at-least-once

    def records(self, destination: str) -> list[OutgoingRecord]:
        """What ``destination`` sent so far, in the order its worker handed it over."""
        with self._changed:
            return list(self._sent.get(destination, ()))

    def wait_for(
        self, destination: str, count: int, timeout_s: float = 10.0
    ) -> list[OutgoingRecord]:
        """The first ``count`` records of ``destination``, once sent; TimeoutError naming how
        many came when fewer did within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while len(sent := self._sent.get(destination, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"destination {destination}: {len(sent)} of {count} records sent "
                        f"within {timeout_s} s"
                    )
                self._changed.wait(left)
            return list(sent[:count])

    def clear(self) -> None:
        """Forgets every record sent so far (between the steps of a test)."""
        with self._changed:
            for sent in self._sent.values():
                sent.clear()
