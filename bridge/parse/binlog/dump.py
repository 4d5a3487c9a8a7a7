"""The binlog dump connection, owned end to end: connect, negotiate, register, request the dump.

A replica asks for the binlog in four steps (MySQL's ``COM_REGISTER_SLAVE`` and
``COM_BINLOG_DUMP`` / ``COM_BINLOG_DUMP_GTID`` protocol, MariaDB's variant of it):

1. Connect with the source account (PyMySQL: TLS, caching_sha2_password and its RSA key
   exchange are PyMySQL's).
2. Tell the server what we read: ``@master_binlog_checksum`` (events then carry CRC32 if the
   server writes them), ``@master_heartbeat_period`` (idle streams send heartbeats),
   ``@mariadb_slave_capability=4`` (MariaDB then sends GTID events as they are, not rewritten
   into BEGIN queries) and, for a MariaDB GTID start, ``@slave_connect_state``.
3. ``COM_REGISTER_SLAVE`` with our ``slave_id`` (SHOW REPLICAS lists us; a second replica with
   the same id is refused by MariaDB).
4. The dump command: from a file and position, or (MySQL) from a GTID set: every transaction
   not in the set is sent; or (MariaDB) from the connect state set in step 2.

From then on the connection carries binlog events only; ``EventReader`` frames them. PyMySQL
has no public API for sending a replication command or reading its raw input: those few
private uses (``PYMYSQL_PRIVATE_NAMES``) live here, in ``EventReader`` and in
``SourceConnection`` only, and a unit test fails by name if a PyMySQL upgrade removes one.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.parse.access import Source
from bridge.parse.binlog.framing import EventReader
from bridge.parse.binlog.gtid import is_mariadb_gtid_set, parse_gtid_set
from bridge.parse.exceptions import SourceMisconfigured
from bridge.parse.source import SourceConnection, connection_settings

COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP = 0x12
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_THROUGH_GTID = 0x04
FIRST_EVENT_POSITION = 4
MAX_HEARTBEAT_S = 4294967  # the server's limit for @master_heartbeat_period, in seconds
# The pymysql internals this module and EventReader use (checked by a unit test).
PYMYSQL_PRIVATE_NAMES = (
    "_write_bytes",
    "_read_packet",
    "_next_seq_id",
    "_rfile",
    "_sock",
    "_create_ssl_ctx",  # bridge.parse.source.SourceConnection
)


@dataclass(frozen=True, slots=True)
class DumpRequest:
    """Where the dump starts: a file and position, or a GTID set (MySQL ``uuid:1-5,...`` or
    MariaDB ``0-1-42,...``). ``blocking=False`` ends the stream at the current end of the
    binlog (a scan); otherwise the server waits for new events."""

    slave_id: int
    journal_name: str = ""
    position: int = FIRST_EVENT_POSITION
    gtid: str = ""
    blocking: bool = True
    heartbeat_s: float | None = None
    mariadb: bool = False


class DumpConnection:
    """One open dump: ``reader`` yields its events; ``checksum`` says whether they end with a
    CRC32. ``close()`` may be called from another thread to end a blocked read."""

    def __init__(
        self,
        source: Source,
        request: DumpRequest,
        before_read: Callable[[bool], None] | None = None,
    ) -> None:
        self._conn: Any = SourceConnection(**connection_settings(source))
        try:
            self.checksum = _negotiate(self._conn, request)
            _send(self._conn, COM_REGISTER_SLAVE, _registration(request.slave_id))
            self._conn._read_packet()  # type: ignore[no-untyped-call]  # OK, or an error raised
            _send(self._conn, *_dump_command(self._conn, request))
        except BaseException:
            self.close()
            raise
        self.reader = EventReader(self._conn, before_read)

    def close(self) -> None:
        """Closes the socket at once (also unblocking a read in another thread)."""
        conn = self._conn
        with contextlib.suppress(Exception):
            sock = conn._sock
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            conn.close()


def _negotiate(conn: Any, request: DumpRequest) -> bool:
    """Step 2. Returns whether events carry a checksum."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@global.binlog_checksum")
        row = cur.fetchone()
        checksum = row is not None and str(row[0]).upper() not in ("NONE", "")
        if checksum:
            cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        if request.heartbeat_s:
            period = min(request.heartbeat_s, MAX_HEARTBEAT_S)
            cur.execute("SET @master_heartbeat_period = %s", (int(period * 1_000_000_000),))
        # MySQL ignores this variable; MariaDB then sends GTID events as they are.
        cur.execute("SET @mariadb_slave_capability = 4")
        if request.mariadb and request.gtid and not request.journal_name:
            cur.execute("SET @slave_connect_state = %s", (request.gtid,))
            cur.execute("SET @slave_gtid_strict_mode = 1")
            cur.execute("SET @slave_gtid_ignore_duplicates = 0")
    return checksum


def _registration(slave_id: int) -> bytes:
    """COM_REGISTER_SLAVE's body: server id, then empty host, user and password (each a
    length byte), port 0, replication rank 0, master id 0."""
    return struct.pack("<I", slave_id) + b"\0\0\0" + struct.pack("<HII", 0, 0, 0)


def _dump_command(conn: Any, request: DumpRequest) -> tuple[int, bytes]:
    """Step 4: the command and its body."""
    flags = 0 if request.blocking else BINLOG_DUMP_NON_BLOCK
    if request.journal_name:
        body = struct.pack("<IHI", request.position, flags, request.slave_id)
        return COM_BINLOG_DUMP, body + request.journal_name.encode()
    if request.mariadb:
        # The connect state (step 2) says where; the file name is empty.
        return COM_BINLOG_DUMP, struct.pack("<IHI", FIRST_EVENT_POSITION, flags, request.slave_id)
    if not request.gtid:
        raise ValueError("a dump starts at a file and position, or at a GTID set")
    if is_mariadb_gtid_set(request.gtid):
        raise SourceMisconfigured(
            f"the start GTID {request.gtid!r} is a MariaDB GTID but the source is MySQL: "
            "clear the saved cursor or give a MySQL GTID set (uuid:1-N)"
        )
    encoded = parse_gtid_set(request.gtid).encode()
    body = struct.pack("<HII", flags | BINLOG_THROUGH_GTID, request.slave_id, 0)
    body += struct.pack("<QI", FIRST_EVENT_POSITION, len(encoded)) + encoded
    return COM_BINLOG_DUMP_GTID, body


def _send(conn: Any, command: int, body: bytes) -> None:
    """Writes one command packet (sequence 0); the reply is read by the caller."""
    payload = bytes([command]) + body
    conn._next_seq_id = 0
    conn._write_bytes(struct.pack("<I", len(payload))[:3] + b"\0" + payload)
    conn._next_seq_id = 1
