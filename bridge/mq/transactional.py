"""The exactly-once sender: each batch one Kafka transaction (``bridge.mq.exactly_once``).

``TransactionalKafkaProducer`` is a ``KafkaProducer`` whose ``start`` begins a transaction
and produces the records as the at-least-once producer does, and whose confirm confirms them
and commits; any failure aborts, so a batch is in Kafka whole or not at all, and the worker
rolls it back and retries as canal does. The producer initialises transactions with the
destination's ``transactional.id`` when it is made, which fences the previous owner (a
restarted or frozen process); a producer that finds itself fenced raises ``ProducerFenced``
and never writes again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from bridge.config import KafkaConfig
from bridge.mq.exceptions import DeliveryFailed, MqError
from bridge.mq.producer import Confirm, KafkaProducer, confirmed
from bridge.mq.records import OutgoingRecord

log = logging.getLogger(__name__)

# How long transaction calls (init, begin, commit, abort) may wait for the coordinator.
TRANSACTION_CALL_TIMEOUT_S = 30.0
# A commit whose outcome is not known yet (retriable error) is asked again this many times.
COMMIT_ATTEMPTS = 3
# librdkafka errors (by name) that mean another producer took over this transactional.id.
FENCED_ERRORS = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})


class ProducerFenced(MqError):
    """Another process took over the destination's transactional.id: this one must stop."""

    def __init__(self, transactional_id: str, reason: str) -> None:
        super().__init__(
            f"the producer {transactional_id} was fenced by a newer process with the same "
            f"transactional.id ({reason}); this process no longer writes for the destination"
        )
        self.transactional_id = transactional_id


class TransactionOutcomeUnknown(MqError):
    """A commit neither succeeded nor failed in time: the destination stops, and its restart
    resumes from what the offsets topic says was committed."""

    def __init__(self, transactional_id: str, reason: str) -> None:
        super().__init__(
            f"the outcome of a transaction of {transactional_id} is unknown ({reason}); the "
            "destination stops and resumes from the offsets topic's committed cursor on restart"
        )
        self.transactional_id = transactional_id


def transactional_id(destination: str) -> str:
    """Stable across restarts and hosts: the destination's name decides who is fenced."""
    return f"canal-bridge-{destination}"


class TransactionalKafkaProducer(KafkaProducer):
    """``RecordSender`` that sends each batch as one Kafka transaction."""

    def __init__(
        self,
        config: KafkaConfig,
        *,
        transactional_id: str,
        client_id: str = "canal-bridge",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transactional_id = transactional_id
        self._fenced: ProducerFenced | None = None
        self._ready: Producer | None = None
        super().__init__(config, client_id=client_id, clock=clock)
        self._initialised()  # fences the previous owner now, before anything is read

    def _new_client(self) -> Producer:
        self._settings.setdefault("transactional.id", self.transactional_id)
        return super()._new_client()

    def start(
        self,
        records: Sequence[OutgoingRecord],
        timeout_s: float | None = None,
        cancel: threading.Event | None = None,
    ) -> Confirm:
        """Begin and produce ``records`` (``KafkaProducer.start``); the returned confirm
        confirms them and commits. Nothing of a batch that raises, here or in the confirm,
        is visible to read_committed consumers."""
        if self._fenced is not None:
            raise self._fenced
        if not records:
            return confirmed
        client = self._initialised()
        self._call(client.begin_transaction)
        with self._aborting(client):
            confirm = super().start(records, timeout_s, cancel)
        return functools.partial(self._confirm_and_commit, client, confirm, records[0].topic)

    def _confirm_and_commit(self, client: Producer, confirm: Confirm, topic: str) -> None:
        with self._aborting(client):
            confirm()
        self._commit(client, topic)

    @contextlib.contextmanager
    def _aborting(self, client: Producer) -> Iterator[None]:
        """Aborts the open transaction when the block raises (re-raised; a fenced producer
        raises ``ProducerFenced`` instead)."""
        try:
            yield
        except DeliveryFailed as exc:
            self._check_fenced(exc.code, exc.reason)
            self._abort(client)
            raise
        except BaseException:
            self._abort(client)
            raise

    def _commit(self, client: Producer, topic: str) -> None:
        """Commit; an abortable failure aborts and raises DeliveryFailed (the worker sends the
        batch again), a retriable one is retried (librdkafka then reports the real outcome).
        If the outcome stays unknown the destination stops: sending the batch again could
        duplicate it, and the restart reads the truth from the offsets topic."""
        last: KafkaError | None = None
        for _ in range(COMMIT_ATTEMPTS):
            try:
                client.commit_transaction(TRANSACTION_CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                last = exc.args[0]
                self._check_fenced(last.name(), last.str())
                if last.txn_requires_abort():
                    self._abort(client)
                    raise DeliveryFailed(last.name(), topic, last.str()) from None
                if not last.retriable():
                    break
        self._discard()
        reason = "no answer" if last is None else f"{last.name()}: {last.str()}"
        raise TransactionOutcomeUnknown(self.transactional_id, reason)

    def _initialised(self) -> Producer:
        """The client with transactions initialised (a new client after a fatal error is
        initialised again: that fences the discarded one)."""
        client = self._client if self._client is not None else self._replace_client()
        if self._ready is not client:
            self._call(lambda: client.init_transactions(TRANSACTION_CALL_TIMEOUT_S))
            self._ready = client
            log.info("transactions initialised for %s", self.transactional_id)
        return client

    def _call(self, call: Callable[[], Any]) -> None:
        try:
            call()
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            self._check_fenced(err.name(), err.str())
            raise DeliveryFailed(
                err.name(), self.transactional_id, err.str(), fatal=err.fatal()
            ) from None

    def _abort(self, client: Producer) -> None:
        try:
            client.abort_transaction(TRANSACTION_CALL_TIMEOUT_S)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            self._check_fenced(err.name(), err.str())
            # The client cannot go on (fatal, or the abort timed out): a new one is made and
            # initialised for the next batch, which aborts what this one left open.
            log.warning("aborting a transaction failed (%s); the producer is replaced", err.name())
            self._discard()

    def _check_fenced(self, name: str, reason: str) -> None:
        if name in FENCED_ERRORS:
            self._fenced = ProducerFenced(self.transactional_id, f"{name}: {reason}")
            raise self._fenced
