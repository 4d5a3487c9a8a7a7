"""MariaDB -> canal-bridge (a child process) -> Kafka, set up for the Spark jobs' tests."""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import yaml

from tests.conftest import MysqlEndpoint
from tests.e2e.bridge_process import BridgeProcess, consume, create_topic, write_config

PARTITIONS = 3

EVERYTHING = """CREATE TABLE {schema}.everything (
  id INT PRIMARY KEY,
  ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  b BIGINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(40,10),
  bt BIT(10), y YEAR, dt DATE, tm TIME(3), dtm DATETIME(3), ts TIMESTAMP(6) NULL,
  c CHAR(5), vc VARCHAR(40), tx TEXT, bn BINARY(4), vb VARBINARY(8), bl BLOB,
  en ENUM('a','b','c'), st SET('x','y','z'), js JSON
)"""
PAIRS = """CREATE TABLE {schema}.pairs (
  region VARCHAR(8), n INT, version INT NOT NULL, note VARCHAR(40), PRIMARY KEY (region, n)
)"""
MARKER = "CREATE TABLE {schema}.marker (id INT PRIMARY KEY, at DATETIME(6))"


def connect(mysql: MysqlEndpoint) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=mysql.admin_user,
        password=mysql.admin_password,
        autocommit=True,
        charset="utf8mb4",
    )


def bridge_config(
    directory: Path, mysql: MysqlEndpoint, kafka_bootstrap: str, schema: str, topic: str
) -> Path:
    """tests/e2e's config, keyed by primary key over PARTITIONS, TIMESTAMPs rendered in UTC."""
    path = write_config(
        directory / "destinations.yaml",
        mysql,
        kafka_bootstrap,
        schema,
        topic,
        partitions=PARTITIONS,
        partition_hash=r".*\..*:$pk$",
    )
    config = yaml.safe_load(path.read_text())
    config["destinations"][0]["timestamp_time_zone"] = "UTC"
    path.write_text(yaml.safe_dump(config))
    return path


def new_topic(kafka_bootstrap: str, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, PARTITIONS)
    return topic


@contextmanager
def running_bridge(config: Path) -> Iterator[BridgeProcess]:
    """A started bridge reading the binlog; killed (by PID) if still running at the end."""
    bridge = BridgeProcess(config).start()
    try:
        bridge.wait_for_output("reading")
        yield bridge
    finally:
        bridge.kill()


def stop_bridge(bridge: BridgeProcess) -> None:
    """SIGTERM and wait: everything acknowledged by then is in Kafka."""
    import signal

    bridge.signal(signal.SIGTERM)
    assert bridge.wait(60) == 0, bridge.output()


def wait_for(
    kafka_bootstrap: str, topic: str, found: Callable[[dict[str, Any]], bool], timeout_s: float
) -> int:
    """Read the topic until a FlatMessage satisfies ``found``; returns the records read."""
    deadline = time.monotonic() + timeout_s
    count = 0
    for partition, _, _, message in consume(kafka_bootstrap, topic):
        assert time.monotonic() < deadline, f"not found in {topic} within {timeout_s}s"
        if partition < 0:
            continue
        count += 1
        if found(message):
            return count
    raise AssertionError("unreachable")


def mark(mysql: MysqlEndpoint, schema: str, marker_id: int) -> Callable[[dict[str, Any]], bool]:
    """Insert a marker row; returns the test for its message."""
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {schema}.marker VALUES (%s, NOW(6))", (marker_id,))
    conn.close()
    return lambda m: (
        m.get("table") == "marker"
        and any(row.get("id") == str(marker_id) for row in m.get("data") or ())
    )


# ------------------------------------------------------------------------------ workload


class Workload:
    """Seeded random changes over every type family: inserts, updates of random columns (NULLs
    included), deletes, primary-key changes, multi-row statements and transactions."""

    def __init__(self, mysql: MysqlEndpoint, schema: str, seed: int = 6) -> None:
        self.mysql = mysql
        self.schema = schema
        self.random = random.Random(seed)
        self.ids: set[int] = set()
        self.pairs: set[tuple[str, int]] = set()
        self.next_id = 1

    def create_tables(self) -> None:
        conn = connect(self.mysql)
        with conn.cursor() as cur:
            for ddl in (EVERYTHING, PAIRS, MARKER):
                cur.execute(ddl.format(schema=self.schema))
        conn.close()

    def run(self, operations: int, pause_s: float) -> None:
        conn = connect(self.mysql)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION sql_mode = ''")  # zero dates allowed
                cur.execute("SET SESSION time_zone = '+00:00'")
                for _ in range(40):
                    self._insert(cur)
                for n in range(30):
                    self._insert_pair(cur, self.random.choice(["us", "eu", "ap"]), n)
                for _ in range(operations):
                    self._step(cur)
                    time.sleep(pause_s)
        finally:
            conn.close()

    def _step(self, cur: Any) -> None:
        r = self.random
        choice = r.random()
        if choice < 0.25 or not self.ids:
            self._insert(cur)
        elif choice < 0.55:
            self._update(cur, r.choice(sorted(self.ids)))
        elif choice < 0.63:
            old = r.choice(sorted(self.ids))
            cur.execute(f"DELETE FROM {self.schema}.everything WHERE id = %s", (old,))
            self.ids.discard(old)
        elif choice < 0.71:
            old, new = r.choice(sorted(self.ids)), self._new_id()
            cur.execute(
                f"UPDATE {self.schema}.everything SET id = %s, vc = %s WHERE id = %s",
                (new, f"moved from {old}", old),
            )
            self.ids.discard(old)
            self.ids.add(new)
        elif choice < 0.78:
            low = r.choice(sorted(self.ids))
            cur.execute(
                f"UPDATE {self.schema}.everything SET i = i + 1, dec1 = dec1 / 2 "
                "WHERE id BETWEEN %s AND %s",
                (low, low + 6),
            )
        elif choice < 0.86:
            self._pair_step(cur)
        else:
            cur.execute("BEGIN")
            for _ in range(r.randint(2, 5)):
                self._update(cur, r.choice(sorted(self.ids)))
            if self.ids and r.random() < 0.5:  # delete and re-insert one key
                key = r.choice(sorted(self.ids))
                cur.execute(f"DELETE FROM {self.schema}.everything WHERE id = %s", (key,))
                self.ids.discard(key)
                self._insert(cur, key)
            cur.execute("COMMIT")

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _insert(self, cur: Any, key: int | None = None) -> None:
        key = key if key is not None else self._new_id()
        values = {name: make() for name, make in self._columns().items()}
        names = ", ".join(["id", *values])
        marks = ", ".join(["%s"] * (len(values) + 1))
        cur.execute(
            f"INSERT INTO {self.schema}.everything ({names}) VALUES ({marks})",
            (key, *values.values()),
        )
        self.ids.add(key)

    def _update(self, cur: Any, key: int) -> None:
        columns = self._columns()
        chosen = self.random.sample(sorted(columns), self.random.randint(1, 6))
        assignments = ", ".join(f"{c} = %s" for c in chosen)
        cur.execute(
            f"UPDATE {self.schema}.everything SET {assignments} WHERE id = %s",
            (*[columns[c]() for c in chosen], key),
        )

    def _insert_pair(self, cur: Any, region: str, n: int) -> None:
        if (region, n) in self.pairs:
            return
        cur.execute(f"INSERT INTO {self.schema}.pairs VALUES (%s, %s, 0, %s)", (region, n, f"p{n}"))
        self.pairs.add((region, n))

    def _pair_step(self, cur: Any) -> None:
        r = self.random
        if not self.pairs:
            return
        region, n = r.choice(sorted(self.pairs))
        kind = r.random()
        if kind < 0.4:  # composite key change, across partitions
            target = r.choice(["us", "eu", "ap", "sa"])
            if (target, n) in self.pairs:
                return
            cur.execute(
                f"UPDATE {self.schema}.pairs SET region = %s, version = version + 1 "
                "WHERE region = %s AND n = %s",
                (target, region, n),
            )
            self.pairs.discard((region, n))
            self.pairs.add((target, n))
        elif kind < 0.8:
            cur.execute(
                f"UPDATE {self.schema}.pairs SET version = version + 1, note = %s "
                "WHERE region = %s AND n = %s",
                (r.choice([None, "x", "ü"]), region, n),
            )
        else:
            cur.execute(
                f"DELETE FROM {self.schema}.pairs WHERE region = %s AND n = %s", (region, n)
            )
            self.pairs.discard((region, n))

    def _columns(self) -> dict[str, Callable[[], Any]]:
        r = self.random

        def maybe(make: Callable[[], Any]) -> Callable[[], Any]:
            return lambda: None if r.random() < 0.15 else make()

        def some_bytes(low: int, high: int) -> bytes:
            return bytes(r.randrange(256) for _ in range(r.randint(low, high)))

        def moment() -> dt.datetime:
            return dt.datetime(2001, 1, 1) + dt.timedelta(
                seconds=r.randrange(1_000_000_000), microseconds=r.randrange(1_000_000)
            )

        def time_text() -> str:
            micros = r.randrange(-838 * 3_600_000_000, 838 * 3_600_000_000)
            sign = "-" if micros < 0 else ""
            seconds, fraction = divmod(abs(micros), 1_000_000)
            minutes, seconds = divmod(seconds, 60)
            return f"{sign}{minutes // 60}:{minutes % 60:02d}:{seconds:02d}.{fraction // 1000:03d}"

        return {
            "ti": maybe(lambda: r.randint(-128, 127)),
            "tu": maybe(lambda: r.randint(0, 255)),
            "si": maybe(lambda: r.randint(-32768, 32767)),
            "mi": maybe(lambda: r.randint(0, 16777215)),
            "i": maybe(lambda: r.randint(-(2**31), 2**31 - 1000)),
            "iu": maybe(lambda: r.randint(0, 2**32 - 1)),
            "b": maybe(lambda: r.randint(-(2**63), 2**63 - 1)),
            "bu": maybe(lambda: r.choice([0, 2**64 - 1, r.randint(2**63, 2**64 - 1)])),
            "f": maybe(lambda: r.choice([1.1, -3.5e10, 0.0, 123.456, 1e-7])),
            "d": maybe(lambda: r.uniform(-1e12, 1e12)),
            "dec1": maybe(lambda: Decimal(r.randint(-99_999_999, 99_999_999)) / 100),
            "dec2": maybe(lambda: Decimal(f"{r.randint(0, 10**29)}.{r.randint(0, 10**10):010d}")),
            "bt": maybe(lambda: r.randint(0, 1023)),
            "y": maybe(lambda: r.choice([0, 1901, 2024, 2155])),
            "dt": maybe(lambda: r.choice(["0000-00-00", moment().date().isoformat()])),
            "tm": maybe(time_text),
            "dtm": maybe(
                lambda: r.choice(["0000-00-00 00:00:00", moment().isoformat(sep=" ")[:23]])
            ),
            "ts": maybe(lambda: r.choice(["0000-00-00 00:00:00", moment().isoformat(sep=" ")])),
            "c": maybe(lambda: r.choice(["", "a", "abcde", "ü€"])),
            "vc": maybe(lambda: r.choice(["", "plain", "ünïcödé 😀", 'it\'s "q"', "\\n"])),
            "tx": maybe(lambda: "text " * r.randint(0, 30)),
            "bn": maybe(lambda: some_bytes(0, 4)),
            "vb": maybe(lambda: some_bytes(0, 8)),
            "bl": maybe(lambda: some_bytes(0, 60)),
            "en": maybe(lambda: r.choice(["a", "b", "c"])),
            "st": maybe(lambda: ",".join(r.sample(["x", "y", "z"], r.randint(0, 3)))),
            "js": maybe(lambda: json.dumps({"k": r.randint(0, 9), "l": [1, 2.5, None], "s": "ü"})),
        }


def run_in_thread(target: Callable[[], None]) -> threading.Thread:
    failures: list[BaseException] = []

    def guarded() -> None:
        try:
            target()
        except BaseException as exc:
            failures.append(exc)
            raise

    thread = threading.Thread(target=guarded, daemon=True)
    thread.failures = failures  # type: ignore[attr-defined]
    thread.start()
    return thread
