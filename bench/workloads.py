"""The benchmark workloads, loaded into a fresh schema of the source server (bench/source.py).

(a) mixed: 200k inserts in 1,000-row statements, then 100k single-row updates and 50k
    single-row deletes, 1,000 statements per transaction, on the wide table;
(b) 1M narrow rows in 1,000-row transactions;
(c) one 500k-row transaction (wide table);
(d) 100k one-row transactions (wide table);
a-realistic: (a)'s statements with random values of many shapes (bench/realistic.py);
a-compressed (MySQL only): (a) with ``binlog_transaction_compression=ON``, so each transaction
    is one zstd-compressed TRANSACTION_PAYLOAD event;
json-partial (MySQL only): 100k rows with a JSON document, then 200k single-row JSON_SET /
    JSON_REPLACE updates with ``binlog_row_value_options=PARTIAL_JSON``, so the updates are
    PARTIAL_UPDATE_ROWS events whose after images hold JSON diffs.

Sizes are multiplied by ``scale`` (``--scale 0.1`` for quick iterations). Statements go to the
server 1,000 at a time as one multi-statement query, so that loading is not the slow part.
The session variables a workload needs are set by its loader on its own connection, so the
server's settings stay as the other benchmarks and the tests expect them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench import realistic
from bench.source import FLAVORS, Connection, Flavor, SourceServer, source_server
from bridge.parse.source import master_position as _source_end

WIDE_TABLE = (
    "CREATE TABLE {schema}.{table} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, qty INT, "
    "note VARCHAR(64), price DECIMAL(12,2), at DATETIME(6), doc JSON)"
)
NARROW_TABLE = "CREATE TABLE {schema}.{table} (id BIGINT NOT NULL PRIMARY KEY, v INT)"
STATEMENTS_PER_QUERY = 1000


def connect(database: str | None = None, source: SourceServer | None = None) -> Connection:
    """An admin connection to ``source`` (the local MariaDB by default)."""
    return (source or source_server()).connect(database)


def wide_values(i: int) -> str:
    """One row of the wide table (explicit id ``i``), as SQL."""
    return (
        f"({i},{i * 7 % 100000},'order note {i} \u2713',{(i * 13) % 1000000}.{i % 100:02d},"
        f"'2024-05-17 12:{i % 60:02d}:{i * 7 % 60:02d}.{i % 1000000:06d}',"
        f'\'{{"sku": "A-{i}", "tags": ["x", "y"], "n": {i % 97}}}\')'
    )


def narrow_values(i: int) -> str:
    return f"({i},{i * 31 % 1000003})"


def multi_insert(schema: str, table: str, rows: range, values: Callable[[int], str]) -> str:
    return f"INSERT INTO {schema}.{table} VALUES " + ",".join(values(i) for i in rows)


def run_many(conn: Connection, statements: list[str]) -> None:
    """Send ``statements`` as one multi-statement query and drain every result."""
    with conn.cursor() as cur:
        cur.execute(";".join(statements))
        while cur.nextset():
            pass


@dataclass(frozen=True)
class PacedLoad:
    """What ``load_paced`` did: per row id (from 1; index 0 unused) the wall-clock
    milliseconds when its COMMIT returned, the load's duration and how far it fell behind."""

    commit_ms: list[float]
    seconds: float
    max_behind_s: float

    @property
    def rows(self) -> int:
        return len(self.commit_ms) - 1


def load_paced(conn: Connection, schema: str, rate: float, total: int, txn_rows: int) -> PacedLoad:
    """Commit rows 1 to ``total`` of the wide ``orders`` table at ``rate`` rows per second,
    ``txn_rows`` per transaction, each transaction due at its place in the schedule (a late
    one is sent at once: the schedule is not shifted, so a slow spell is caught up). The live
    benchmarks take a row's commit time from here, the loader's clock right after COMMIT, to
    measure how long the row takes to reach what they watch."""
    commit_ms: list[float] = [0.0] * (total + 1)
    began = time.monotonic()
    behind = 0.0
    for first in range(1, total + 1, txn_rows):
        due = began + (first - 1) / rate
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        else:
            behind = max(behind, now - due)
        rows = range(first, min(first + txn_rows, total + 1))
        run_many(conn, ["BEGIN", multi_insert(schema, "orders", rows, wide_values), "COMMIT"])
        committed = time.time() * 1000
        for i in rows:
            commit_ms[i] = committed
    return PacedLoad(commit_ms, time.monotonic() - began, behind)


def _chunks(total: int, size: int) -> Iterator[range]:
    for start in range(1, total + 1, size):
        yield range(start, min(start + size, total + 1))


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    table: str
    ddl: str
    row_changes: Callable[[float], int]
    load: Callable[[Connection, str, float], None]
    servers: tuple[Flavor, ...] = FLAVORS  # the source servers that can log it
    baseline: str | None = None  # the workload a report sets it beside
    # Whether plain mysql-replication (1.0) can decode its binlog for the floor: it skips
    # TRANSACTION_PAYLOAD events, so it sees no row of a compressed transaction.
    replication_floor: bool = True


def refusal(workload: Workload, flavor: Flavor) -> str | None:
    """Why ``workload`` cannot run on a ``flavor`` server, in one line; None when it can."""
    if flavor in workload.servers:
        return None
    return (
        f"workload {workload.name} needs {' or '.join(workload.servers)} (it sets a session "
        f"variable {flavor} does not have): use --source {workload.servers[0]}"
    )


def refusals(names: list[str], flavor: Flavor) -> list[str]:
    """The refusal of each named workload ``flavor`` cannot run, in order."""
    return [line for name in names if (line := refusal(WORKLOADS[name], flavor)) is not None]


def _n(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def _mixed(
    conn: Connection,
    schema: str,
    scale: float,
    values: Callable[[int], str],
    update: Callable[[int], str],
) -> None:
    """(a)'s statements: inserts of ``values`` rows, updates setting ``update(k)``, deletes."""
    deletes = _n(50_000, scale)
    _insert_and_update(
        conn, schema, "orders", (_n(200_000, scale), values), (_n(100_000, scale), update)
    )
    # Deletes take keys the updates may have touched too; each deletes one existing row.
    for keys in _chunks(deletes, STATEMENTS_PER_QUERY):
        sql = [f"DELETE FROM {schema}.orders WHERE id={k * 4 - 1}" for k in keys]
        run_many(conn, ["BEGIN", *sql, "COMMIT"])


def _insert_and_update(
    conn: Connection,
    schema: str,
    table: str,
    inserts: tuple[int, Callable[[int], str]],
    updates: tuple[int, Callable[[int], str]],
) -> None:
    """``inserts`` (count, ``values``): rows with ids 1..count in multi-row INSERTs; then
    ``updates`` (count, ``update``): one-row UPDATEs setting ``update(k)`` on ids spread over
    the inserted ones, 1,000 per transaction."""
    inserted, values = inserts
    count, update = updates
    for rows in _chunks(inserted, 1000):
        run_many(conn, [multi_insert(schema, table, rows, values)])
    for keys in _chunks(count, STATEMENTS_PER_QUERY):
        sql = [
            f"UPDATE {schema}.{table} SET {update(k)} WHERE id={(k * 7919) % inserted + 1}"
            for k in keys
        ]
        run_many(conn, ["BEGIN", *sql, "COMMIT"])


def _load_mixed(conn: Connection, schema: str, scale: float) -> None:
    _mixed(conn, schema, scale, wide_values, _mixed_update)


def _mixed_update(k: int) -> str:
    return f"qty=qty+1, note='updated {k}', price=price+1.25"


def _load_compressed(conn: Connection, schema: str, scale: float) -> None:
    run_many(conn, ["SET SESSION binlog_transaction_compression = ON"])
    _load_mixed(conn, schema, scale)


def _load_realistic(conn: Connection, schema: str, scale: float) -> None:
    # One generator for the whole load, in statement order: the same scale, the same rows.
    rng = random.Random(realistic.SEED)
    _mixed(
        conn,
        schema,
        scale,
        lambda i: realistic.row_values(rng, i),
        lambda _k: realistic.update_set(rng),
    )


JSON_TABLE = "CREATE TABLE {schema}.{table} (id BIGINT NOT NULL PRIMARY KEY, qty INT, doc JSON)"
# The server logs a diff only where it is smaller than the document: the pad keeps the
# documents (about 0.5 KB) well above the size of one change.
JSON_PAD = "p" * 240


def json_values(i: int) -> str:
    """One row of the JSON table (explicit id ``i``), as SQL."""
    doc = (
        f'{{"sku": "A-{i}", "status": "new", "n": {i % 97}, "tags": ["x", "y", "z"], '
        f'"address": {{"street": "{i} Main Street", "city": "Springfield", '
        f'"zip": "Z-{i % 1000:04d}"}}, '
        f'"pad": "{JSON_PAD}"}}'
    )
    return f"({i},{i % 1000},'{doc}')"


def json_update(k: int) -> str:
    """The SET of update ``k``: JSON_SET of two members, or JSON_REPLACE of a nested one."""
    if k % 2:
        return f"doc = JSON_SET(doc, '$.n', {k % 97}, '$.status', 'paid')"
    # k and k + 100,000 update the same row: the zip must differ too, or the second update
    # changes nothing and the server logs no row for it.
    return f"doc = JSON_REPLACE(doc, '$.address.zip', 'Z-{k:06d}')"


def _load_json_partial(conn: Connection, schema: str, scale: float) -> None:
    run_many(conn, ["SET SESSION binlog_row_value_options = 'PARTIAL_JSON'"])
    _insert_and_update(
        conn, schema, "docs", (_n(100_000, scale), json_values), (_n(200_000, scale), json_update)
    )


def _mixed_changes(scale: float) -> int:
    return _n(200_000, scale) + _n(100_000, scale) + _n(50_000, scale)


def _load_narrow(conn: Connection, schema: str, scale: float) -> None:
    batch: list[str] = []
    for rows in _chunks(_n(1_000_000, scale), 1000):
        batch.append(multi_insert(schema, "narrow", rows, narrow_values))
        if len(batch) == 20:
            run_many(conn, batch)
            batch = []
    if batch:
        run_many(conn, batch)


def _load_big_transaction(conn: Connection, schema: str, scale: float) -> None:
    statements = [
        multi_insert(schema, "orders", rows, wide_values)
        for rows in _chunks(_n(500_000, scale), 1000)
    ]
    with conn.cursor() as cur:
        cur.execute("BEGIN")
        for sql in statements:
            cur.execute(sql)
        cur.execute("COMMIT")


def _load_single_row_transactions(conn: Connection, schema: str, scale: float) -> None:
    for rows in _chunks(_n(100_000, scale), STATEMENTS_PER_QUERY):
        run_many(conn, [multi_insert(schema, "orders", range(i, i + 1), wide_values) for i in rows])


WORKLOADS: dict[str, Workload] = {
    "a": Workload(
        "a",
        "mixed: 200k inserts (1,000-row statements), 100k updates, 50k deletes",
        "orders",
        WIDE_TABLE,
        _mixed_changes,
        _load_mixed,
    ),
    "b": Workload(
        "b",
        "1M narrow rows in 1,000-row transactions",
        "narrow",
        NARROW_TABLE,
        lambda scale: _n(1_000_000, scale),
        _load_narrow,
    ),
    "c": Workload(
        "c",
        "one 500k-row transaction (wide rows)",
        "orders",
        WIDE_TABLE,
        lambda scale: _n(500_000, scale),
        _load_big_transaction,
    ),
    "d": Workload(
        "d",
        "100k one-row transactions (wide rows)",
        "orders",
        WIDE_TABLE,
        lambda scale: _n(100_000, scale),
        _load_single_row_transactions,
    ),
    "a-realistic": Workload(
        "a-realistic",
        "(a) with random values: strings of 0-200 characters (latin, CJK, emoji), "
        "DECIMAL(20,6), DATETIME(6), JSON (half NULL), BLOB, ENUM",
        "orders",
        realistic.TABLE,
        _mixed_changes,
        _load_realistic,
        baseline="a",
    ),
    "a-compressed": Workload(
        "a-compressed",
        "(a) with binlog_transaction_compression=ON (zstd TRANSACTION_PAYLOAD events)",
        "orders",
        WIDE_TABLE,
        _mixed_changes,
        _load_compressed,
        servers=("mysql",),
        baseline="a",
        replication_floor=False,
    ),
    "json-partial": Workload(
        "json-partial",
        "100k rows with a 0.5 KB JSON document (1,000-row statements), then 200k single-row "
        "JSON_SET / JSON_REPLACE updates logged as PARTIAL_JSON diffs",
        "docs",
        JSON_TABLE,
        lambda scale: _n(100_000, scale) + _n(200_000, scale),
        _load_json_partial,
        servers=("mysql",),
    ),
}
# The workloads ``--all`` runs: the four the figures have been recorded with since the start.
CORE = ("a", "b", "c", "d")


def create_schema(conn: Connection, schema: str, workload: Workload) -> None:
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {schema}")
        cur.execute(f"CREATE DATABASE {schema}")
        cur.execute(workload.ddl.format(schema=schema, table=workload.table))


def load_fresh(
    workload: Workload, schema: str, scale: float, source: SourceServer | None = None
) -> tuple[tuple[str, int], tuple[str, int]]:
    """Loads ``workload`` into a fresh ``schema`` of ``source`` (MariaDB by default); the
    binlog positions before and after."""
    conn = connect(source=source)
    try:
        create_schema(conn, schema, workload)
        start = master_position(conn)
        workload.load(conn, schema, scale)
        return start, master_position(conn)
    finally:
        conn.close()


def master_position(conn: Connection) -> tuple[str, int]:
    """The binlog's current end, by the statement the server knows (MariaDB, MySQL 8 or 9)."""
    end = _source_end(conn)
    assert end.journal_name is not None and end.position is not None
    return end.journal_name, end.position
