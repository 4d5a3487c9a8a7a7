"""Where a destination starts reading: canal's MysqlEventParser.findStartPosition.

1. A known position (the cursor, or what the parser last stored in memory):
   - same source address: resume from it; if the source purged it, follow ``on_purged``
     (``snapshot``: the current end, and ``snapshot_needed`` tells the instance to plan a
     fresh snapshot);
   - another address (fail-over to a standby): search by its timestamp minus the fallback
     interval on the new server.
2. No known position: the configured GTID; or ``journal_name + position``;
   ``journal_name + timestamp`` (search that file); ``timestamp`` (search the binlogs from the
   newest backwards); or nothing configured: the current end (``SHOW BINARY LOG STATUS``, or
   ``SHOW MASTER STATUS`` where the server predates it: ``bridge.parse.source.binlog_status``).
3. A configured file position that is not a transaction start is moved back to the start of
   the enclosing transaction, so no rows event arrives without its TABLE_MAP.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import closing
from typing import Literal

from bridge.config import SourceConfig, StartConfig
from bridge.parse.exceptions import BinlogPurged
from bridge.parse.scan import TransactionStart, transaction_starts
from bridge.parse.source import SourceFacts, binary_logs, master_position, open_connection
from bridge.position import EntryPosition, LogPosition

log = logging.getLogger(__name__)

OnPurged = Literal["fail", "oldest", "latest", "snapshot"]


class StartPositionFinder:
    def __init__(
        self,
        source: SourceConfig,
        facts: SourceFacts,
        start: StartConfig,
        *,
        on_purged: OnPurged = "fail",
        fallback_interval_s: int = 60,
    ) -> None:
        self._source = source
        self._facts = facts
        self._start = start
        self._on_purged = on_purged
        self._fallback_ms = fallback_interval_s * 1000
        # Set by ``find`` when ``on_purged: snapshot`` chose the binlog end: the instance
        # must then plan a fresh snapshot of every table the snapshot config selects.
        self.snapshot_needed = False

    def find(self, known: LogPosition | None) -> EntryPosition:
        if known is not None:
            return self._from_known(known)
        return self._from_config()

    # ------------------------------------------------------------------ known position

    def _from_known(self, known: LogPosition) -> EntryPosition:
        position = known.position
        if known.identity.source_address != self._source.address:
            if position.timestamp is None:
                raise BinlogPurged(position, "the cursor is from another source and has no time")
            target = position.timestamp - self._fallback_ms
            log.warning(
                "source changed from %s to %s: searching the new server's binlog from %d ms "
                "(cursor time minus %d s)",
                known.identity.source_address,
                self._source.address,
                target,
                self._fallback_ms // 1000,
            )
            return self._by_timestamp(target)
        if position.journal_name and position.position is not None:
            if not self._still_there(position.journal_name):
                return self._purged(position)
            return EntryPosition(
                journal_name=position.journal_name,
                position=position.position,
                server_id=position.server_id,
                gtid=position.gtid,
                timestamp=position.timestamp,
            )
        if position.gtid:
            return EntryPosition(gtid=position.gtid)
        return self._from_config()

    def _still_there(self, journal_name: str) -> bool:
        with open_connection(self._source) as conn:
            return journal_name in {name for name, _ in binary_logs(conn)}

    def _purged(self, position: EntryPosition) -> EntryPosition:
        if self._on_purged == "fail":
            raise BinlogPurged(position, "its binlog file is no longer listed by SHOW BINARY LOGS")
        with open_connection(self._source) as conn:
            if self._on_purged == "oldest":
                name = binary_logs(conn)[0][0]
                chosen = EntryPosition(journal_name=name, position=4)
            else:
                chosen = master_position(conn, self._facts.server)
        if self._on_purged == "snapshot":
            self.snapshot_needed = True
            log.warning(
                "binlog position %s:%s was purged from %s; on_purged=snapshot, so reading "
                "starts at the binlog end %s:%s and every table the snapshot config selects "
                "is snapshotted again (rows changed in between arrive as snapshot rows; rows "
                "deleted in between are NOT delivered as deletes)",
                position.journal_name,
                position.position,
                self._source.address,
                chosen.journal_name,
                chosen.position,
            )
            return chosen
        log.error(
            "binlog position %s:%s was purged from %s; on_purged=%s, so reading starts at "
            "%s:%s: changes in between are NOT delivered",
            position.journal_name,
            position.position,
            self._source.address,
            self._on_purged,
            chosen.journal_name,
            chosen.position,
        )
        return chosen

    # ------------------------------------------------------------------ configured start

    def _from_config(self) -> EntryPosition:
        start = self._start
        if start.gtid:
            return EntryPosition(gtid=start.gtid)
        if start.journal_name and start.position is not None:
            if not self._still_there(start.journal_name):
                return self._purged(
                    EntryPosition(journal_name=start.journal_name, position=start.position)
                )
            return self._realign(start.journal_name, start.position)
        if start.journal_name and start.timestamp is not None:
            found = self._first_start_at_or_after(start.journal_name, start.timestamp)
            return found or self._end_of(start.journal_name)
        if start.timestamp is not None:
            return self._by_timestamp(start.timestamp)
        with open_connection(self._source) as conn:
            return master_position(conn, self._facts.server)

    def _starts(self, journal_name: str) -> closing[Generator[TransactionStart, None, None]]:
        """The file's transaction starts, read as iterated: a search that stops early closes
        the scan rather than read the file to its end."""
        return closing(transaction_starts(self._source, self._facts, journal_name))

    def first_transaction_ms(self, journal_name: str) -> int | None:
        """When the file's first transaction started (ms), None for a file without one: how
        far back the source's binlog reaches, for a search by time."""
        first = self._first_start(journal_name)
        return None if first is None else first.timestamp_s * 1000

    def _first_start(self, journal_name: str) -> TransactionStart | None:
        with self._starts(journal_name) as starts:
            return next((s for s in starts if not s.end_of_file), None)

    def _realign(self, journal_name: str, position: int) -> EntryPosition:
        """``position`` itself if a transaction starts there, else the enclosing one's start."""
        chosen = 4
        with self._starts(journal_name) as starts:
            for start in starts:
                if start.position > position:
                    break
                chosen = start.position
        if chosen != position:
            log.warning(
                "start position %s:%d is inside a transaction: starting at its beginning %s:%d",
                journal_name,
                position,
                journal_name,
                chosen,
            )
        return EntryPosition(journal_name=journal_name, position=chosen)

    def _first_start_at_or_after(
        self, journal_name: str, timestamp_ms: int
    ) -> EntryPosition | None:
        with self._starts(journal_name) as starts:
            for start in starts:
                if start.end_of_file:
                    return None
                if start.timestamp_s * 1000 >= timestamp_ms:
                    return EntryPosition(
                        journal_name=journal_name,
                        position=start.position,
                        timestamp=start.timestamp_s * 1000,
                    )
        return None

    def _end_of(self, journal_name: str) -> EntryPosition:
        with self._starts(journal_name) as starts:
            ends = [s for s in starts if s.end_of_file]
        return EntryPosition(journal_name=journal_name, position=ends[-1].position if ends else 4)

    def _by_timestamp(self, timestamp_ms: int) -> EntryPosition:
        """From the newest binlog backwards: the first file whose first transaction is not
        after ``timestamp_ms``, then the first transaction starting at or after it."""
        with open_connection(self._source) as conn:
            names = [name for name, _ in binary_logs(conn)]
            end = master_position(conn, self._facts.server)
        candidate_index = 0
        for index in range(len(names) - 1, -1, -1):
            first = self._first_start(names[index])
            if first is not None and first.timestamp_s * 1000 <= timestamp_ms:
                candidate_index = index
                break
        for name in names[candidate_index:]:
            found = self._first_start_at_or_after(name, timestamp_ms)
            if found is not None:
                return found
        return end
