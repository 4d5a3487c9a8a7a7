"""Prometheus metrics of every destination, collected from snapshots at scrape time.

No counter is incremented on the hot path: ``BridgeCollector.collect`` asks the ``Observed``
for its snapshots and turns them into metric families. Counters restart from 0 when a
destination's worker is replaced (an HA hand-over); Prometheus treats that as a reset.
Names and meanings are documented in docs/operations.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
)
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bridge import __version__
from bridge.admin.base import DestinationSnapshot, Observed

PREFIX = "canal_bridge"
STATES = ("starting", "running", "standby", "stopped", "failed")
_FILE_INDEX = re.compile(r"(\d+)$")

# (name, help, value from a snapshot's worker progress)
_COUNTERS = (
    ("rows", "Row changes delivered to Kafka (acked batches).", "rows_sent"),
    ("messages", "Kafka records produced and confirmed (acked batches).", "messages_sent"),
    ("bytes", "Bytes of the records produced and confirmed (key + value).", "bytes_sent"),
    ("batches_acked", "Batches delivered and acked.", "batches_acked"),
    (
        "batches_rolled_back",
        "Batches rolled back (delivery failed, or cancelled on stop) to be sent again.",
        "batches_rolled_back",
    ),
    ("delivery_errors", "Batches whose delivery Kafka did not confirm.", "failures"),
    (
        "dead_letter_records",
        "Records sent to the dead-letter topic instead of their own (mq.oversize "
        "dead_letter:<topic>; acked batches); each one is also logged.",
        "dead_letter_records",
    ),
)


class BridgeCollector(Collector):
    def __init__(self, observed: Observed) -> None:
        self._observed = observed

    def describe(self) -> Iterable[Metric]:
        return []  # families depend on the destinations: collect() at registration is skipped

    def collect(self) -> Iterator[Metric]:
        snapshots = list(self._observed.snapshots())
        yield from _counters(snapshots)
        yield from _gauges(snapshots)
        yield from _snapshot_families(snapshots)
        yield from _schema_families(snapshots)


def _family_gauge(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=["destination"])


def _counters(snapshots: list[DestinationSnapshot]) -> Iterator[Metric]:
    for name, documentation, field in _COUNTERS:
        family = CounterMetricFamily(f"{PREFIX}_{name}", documentation, labels=["destination"])
        for snapshot in snapshots:
            if snapshot.progress is not None:
                family.add_metric([snapshot.destination], getattr(snapshot.progress, field))
        yield family


def _gauges(snapshots: list[DestinationSnapshot]) -> Iterator[Metric]:
    gauges = {
        "store_items": "Entries in the store not yet acked.",
        "store_bytes": "Bytes (binlog event sizes) of the entries in the store not yet acked.",
        "store_capacity_items": "Entries the store can hold (store.buffer_size).",
        "store_capacity_bytes": "Bytes the store can hold in MEMSIZE mode.",
        "lag_seconds": "Seconds the oldest change not yet delivered is behind now "
        "(near 0 when idle: heartbeats).",
        "cursor_file_index": "Number of the acked cursor's binlog file (mysql-bin.000042: 42).",
        "cursor_offset": "Offset in that binlog file of the acked cursor.",
        "ha_active": "1 when this process runs the destination, 0 when it stands by.",
        "consecutive_failures": "Delivery failures since the last acked batch.",
    }
    families = {name: _family_gauge(name, text) for name, text in gauges.items()}
    state = GaugeMetricFamily(
        f"{PREFIX}_destination_state",
        "1 for the destination's current state, 0 for the others.",
        labels=["destination", "state"],
    )
    for s in snapshots:
        labels = [s.destination]
        families["ha_active"].add_metric(labels, 1 if s.role == "active" else 0)
        for word in STATES:
            state.add_metric([s.destination, word], 1 if s.state == word else 0)
        if s.store is not None:
            families["store_items"].add_metric(labels, s.store.items)
            families["store_bytes"].add_metric(labels, s.store.bytes)
            families["store_capacity_items"].add_metric(labels, s.store.capacity_items)
            families["store_capacity_bytes"].add_metric(labels, s.store.capacity_bytes)
        if s.lag_s is not None:
            families["lag_seconds"].add_metric(labels, s.lag_s)
        if s.cursor is not None and s.cursor.journal_name and s.cursor.position is not None:
            index = _FILE_INDEX.search(s.cursor.journal_name)
            if index is not None:
                families["cursor_file_index"].add_metric(labels, int(index.group(1)))
            families["cursor_offset"].add_metric(labels, s.cursor.position)
        if s.progress is not None:
            families["consecutive_failures"].add_metric(labels, s.progress.consecutive_failures)
    yield from families.values()
    yield state
    info = GaugeMetricFamily(f"{PREFIX}_build_info", "canal-bridge version.", labels=["version"])
    info.add_metric([__version__], 1)
    yield info


def _snapshot_families(snapshots: list[DestinationSnapshot]) -> Iterator[Metric]:
    """The progress of each destination's snapshot (docs/snapshots.md), while this process
    runs one or has run one; absent for a destination without."""
    rows = CounterMetricFamily(
        f"{PREFIX}_snapshot_rows",
        "Snapshot rows put into the store, since the snapshot began (a resumed one counts "
        "the rows acked before the restart).",
        labels=["destination"],
    )
    done = _family_gauge(
        "snapshot_tables_done", "Tables of the snapshot done (read, skipped or dropped)."
    )
    total = _family_gauge("snapshot_tables_total", "Tables the snapshot plan holds.")
    backfilled = _family_gauge(
        "snapshot_tables_backfilled",
        "Tables of the plan the filter newly selected at the destination's start.",
    )
    for s in snapshots:
        if s.snapshot is None:
            continue
        labels = [s.destination]
        rows.add_metric(labels, s.snapshot.rows)
        done.add_metric(labels, s.snapshot.tables_done)
        total.add_metric(labels, s.snapshot.tables_total)
        backfilled.add_metric(labels, s.snapshot.tables_backfilled)
    yield from (rows, done, total, backfilled)


def _schema_families(snapshots: list[DestinationSnapshot]) -> Iterator[Metric]:
    """The schema history of each destination (docs/schema-history.md)."""
    tables = _family_gauge("schema_history_tables", "Table definitions the history holds.")
    records = _family_gauge(
        "schema_history_records", "DDL records kept after the history's base (compacted)."
    )
    drifted = _family_gauge(
        "schema_drift_tables",
        "Tables whose live definition differed from the history at the last check.",
    )
    recorded = CounterMetricFamily(
        f"{PREFIX}_schema_ddl_recorded",
        "DDL statements read and kept in the history by this process.",
        labels=["destination"],
    )
    mismatches = CounterMetricFamily(
        f"{PREFIX}_schema_mismatches",
        "Stops on a TABLE_MAP or DDL the history could not account for (never a misnamed row).",
        labels=["destination"],
    )
    for s in snapshots:
        if s.schema is None:
            continue
        labels = [s.destination]
        tables.add_metric(labels, s.schema.tables)
        records.add_metric(labels, s.schema.records)
        drifted.add_metric(labels, s.schema.drifted)
        recorded.add_metric(labels, s.schema.ddl_recorded)
        mismatches.add_metric(labels, s.schema.mismatches)
    yield from (tables, records, drifted, recorded, mismatches)


def build_registry(observed: Observed) -> CollectorRegistry:
    """A private registry: the bridge's metrics plus the process, platform and GC ones."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BridgeCollector(observed))
    for standard in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(standard)
    return registry
