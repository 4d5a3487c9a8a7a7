"""The chaos load: every key carries a version chain the verifier can check from the topic alone.

Each key's row holds ``gen`` (its generation: 1 for the first INSERT, one more after each
re-INSERT) and ``version`` (0 at INSERT, previous + 1 at each UPDATE). A DELETE ends a
generation and carries its last version (the before image), so a key's changes in commit order
are INSERT (g, 0), UPDATE (g, 1) .. (g, n), DELETE (g, n), INSERT (g + 1, 0), ... Any gap, repeat
or step back in that order shows in the topic without a log of what was written.

Changes go in multi-row transactions of random size, each sent as one multi-statement query (one
round trip: the long suite writes 500k changes on a shared 2-core machine). The in-memory state
advances only after COMMIT returned, so a failed transaction leaves it as the table is.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pymysql
from pymysql.constants import CLIENT

TABLE = "chain"

Connect = Callable[[], pymysql.connections.Connection]  # type: ignore[type-arg]


@dataclass(frozen=True)
class Source:
    """Where the load writes: a server reachable by an account that may create and write."""

    host: str
    port: int
    user: str
    password: str

    def connect(self) -> pymysql.connections.Connection:  # type: ignore[type-arg]
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            autocommit=True,
            charset="utf8mb4",
            client_flag=CLIENT.MULTI_STATEMENTS,
            max_allowed_packet=64 * 1024 * 1024,
        )


@dataclass
class KeyState:
    gen: int = 0
    version: int = 0
    alive: bool = False


class ChainLoad:
    """Writes ``keys`` version chains into ``schema``.``chain``; ``committed`` counts the row
    changes whose transaction committed (the verifier's expected total)."""

    def __init__(self, source: Source, schema: str, keys: int, seed: int = 19) -> None:
        self.source = source
        self.schema = schema
        self.keys = keys
        self.committed = 0
        self._state = {key: KeyState() for key in range(keys)}
        self._rng = random.Random(seed)

    def create_table(self) -> None:
        conn = self.source.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{self.schema}`")
                cur.execute(
                    f"CREATE TABLE `{self.schema}`.{TABLE} (id INT PRIMARY KEY, gen INT NOT NULL, "
                    "version INT NOT NULL, payload LONGTEXT)"
                )
        finally:
            conn.close()

    def run(
        self,
        changes: int,
        max_txn_rows: int = 5,
        pause_s: float = 0.0,
        stop: threading.Event | None = None,
    ) -> int:
        """Commit about ``changes`` row changes (whole transactions); returns how many."""
        conn = self.source.connect()
        done = 0
        try:
            while done < changes and not (stop is not None and stop.is_set()):
                done += self._transaction(conn, self._rng.randint(1, max_txn_rows))
                if pause_s:
                    time.sleep(pause_s)
        finally:
            conn.close()
        return done

    def _transaction(self, conn: pymysql.connections.Connection, rows: int) -> int:  # type: ignore[type-arg]
        planned: dict[int, KeyState] = {}
        statements = ["BEGIN"]
        for _ in range(rows):
            key = self._rng.randrange(self.keys)
            now = planned.get(key, self._state[key])
            after, statement = self._change(key, now)
            planned[key] = after
            statements.append(statement)
        statements.append("COMMIT")
        with conn.cursor() as cur:
            cur.execute(";".join(statements))
            while cur.nextset():
                pass
        self._state.update(planned)
        self.committed += rows
        return rows

    def _change(self, key: int, now: KeyState) -> tuple[KeyState, str]:
        table = f"`{self.schema}`.{TABLE}"
        if not now.alive:
            after = KeyState(now.gen + 1, 0, True)
            return after, (
                f"INSERT INTO {table} VALUES ({key}, {after.gen}, 0, 'k{key}-g{after.gen}')"
            )
        if self._rng.random() < 0.1:
            return KeyState(now.gen, now.version, False), f"DELETE FROM {table} WHERE id = {key}"
        after = KeyState(now.gen, now.version + 1, True)
        return after, (
            f"UPDATE {table} SET version = {after.version}, "
            f"payload = 'k{key}-g{after.gen}-v{after.version}' WHERE id = {key}"
        )

    def write_large(self, key: int, size: int) -> None:
        """Three transactions on ``key`` (outside the chain keys): INSERT, an UPDATE whose
        payload is ``size`` bytes, a small UPDATE after it."""
        assert key >= self.keys, "the large row's key must not be one of the load's"
        conn = self.source.connect()
        table = f"`{self.schema}`.{TABLE}"
        try:
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO {table} VALUES (%s, 1, 0, 'small')", (key,))
                cur.execute(
                    f"UPDATE {table} SET version = 1, payload = REPEAT('x', %s) WHERE id = %s",
                    (size, key),
                )
                cur.execute(
                    f"UPDATE {table} SET version = 2, payload = 'small' WHERE id = %s", (key,)
                )
        finally:
            conn.close()
        self.committed += 3


def source_state(source: Source, schema: str) -> dict[tuple[str, str], tuple[int, int]]:
    """The table as it stands: (table, id) -> (gen, version) of every row."""
    conn = source.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, gen, version FROM `{schema}`.{TABLE}")
            return {(TABLE, str(i)): (int(g), int(v)) for i, g, v in cur.fetchall()}
    finally:
        conn.close()
