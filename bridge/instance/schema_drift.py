"""Now and then, once the stream has caught up, the schema history is compared with the live
tables: a difference means a DDL reached the tables without reaching the binlog
(``sql_log_bin=0``, a replica's own change) or the history was edited. It is reported (a log
line when the set of drifted tables changes, the ``schema_drift_tables`` metric), not acted
on: the check of every TABLE_MAP stops the destination before a row of such a table could be
misnamed (``bridge.parse.binlog.table_meta``), and ``canal-bridge schema reload`` is the fix.

The comparison is made at one position: the live definitions are read between two equal
binlog positions, and compared only once the destination has read up to there, with the
history as it stands then. Names, declared types and primary keys are compared.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from bridge.config import DestinationConfig
from bridge.parse.source import master_position, open_connection
from bridge.position import EntryPosition
from bridge.schema.capture import read_definitions, read_dialect
from bridge.schema.definitions import TableDefinition
from bridge.schema.recorder import SchemaRecorder

log = logging.getLogger(__name__)

READ_UP_WAIT_S = 10.0


class DriftWatch:
    def __init__(
        self,
        config: DestinationConfig,
        recorder: SchemaRecorder,
        read_up_to: Callable[[], EntryPosition | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``read_up_to``: where the destination has read (its last transaction boundary)."""
        self._config = config
        self._recorder = recorder
        self._read_up_to = read_up_to
        self._clock = clock
        self._period_s = config.schema_history.drift_check_s
        self._last = clock()
        self._thread: threading.Thread | None = None
        self.drifted: tuple[str, ...] = ()
        self.checks = 0

    def caught_up(self) -> None:
        """The stream is caught up: check, if a period has passed and no check runs."""
        if not self._period_s or self._clock() - self._last < self._period_s:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._last = self._clock()
        self._thread = threading.Thread(
            target=self._check_logged, name=f"schema-drift-{self._config.name}", daemon=True
        )
        self._thread.start()

    def _check_logged(self) -> None:
        try:
            self.check()
        except Exception as exc:  # a check that fails is tried at the next period
            log.warning("destination %s: schema drift check failed: %s", self._config.name, exc)

    def check(self) -> bool:
        """Compare once; False when the comparison could not be made at one position."""
        stored = self._recorder.stored()
        if stored is None:
            return False
        names = list(self._recorder.replay(stored).schemas.tables)
        with open_connection(self._config.source) as conn:
            dialect = read_dialect(conn)
            before = master_position(conn)
            live = read_definitions(conn, dialect, names)
            after = master_position(conn)
        if before.sort_key() != after.sort_key() or not self._read_up(before):
            return False
        stored = self._recorder.stored()
        assert stored is not None
        held = self._recorder.replay(stored).schemas
        drifted = tuple(
            sorted(
                table.full_name
                for key, table in held.tables.items()
                if _differs(table, live.tables.get(key))
            )
        )
        self.checks += 1
        if drifted != self.drifted:
            if drifted:
                log.warning(
                    "destination %s: the schema history differs from the live definition of "
                    "%s (a DDL that did not reach the binlog?); rows of these tables stop the "
                    "destination when they do not fit; fix with canal-bridge schema reload",
                    self._config.name,
                    ", ".join(drifted),
                )
            else:
                log.info("destination %s: the schema history matches the live tables again")
        self.drifted = drifted
        return True

    def _read_up(self, position: EntryPosition) -> bool:
        deadline = self._clock() + READ_UP_WAIT_S
        while True:
            read = self._read_up_to()
            if read is not None and read.sort_key() >= position.sort_key():
                return True
            if self._clock() > deadline:
                return False
            time.sleep(0.1)


def _differs(held: TableDefinition, live: TableDefinition | None) -> bool:
    """Whether a live table is not what the history holds (gone, other columns, another key)."""
    if live is None:
        return True
    shape = [(c.name.lower(), c.column_type) for c in held.columns]
    live_shape = [(c.name.lower(), c.column_type) for c in live.columns]
    keys = [k.lower() for k in held.primary_key]
    return shape != live_shape or keys != [k.lower() for k in live.primary_key]
