"""Rows written before DDL reach Kafka under the names they were written with, though the binlog
carries no names (``binlog_row_metadata`` MINIMAL on MySQL, NO_LOG on MariaDB).

The bridge streams a table, is stopped (or killed), and while it is down the table gets rows,
then ``DROP COLUMN``, ``ADD COLUMN ... AFTER``, ``RENAME COLUMN``, ``MODIFY ... FIRST``, a
gh-ost-style and a pt-online-schema-change-style table swap, with rows between each. Restarted, it
must deliver every row as it was written. With ``FULL`` metadata the same backlog checks the
history against the binlog's names. The negative case: the same backlog with the history taken
away is refused in one line, and with ``schema_history.recover: live`` (today's definitions) the
check of each TABLE_MAP against the definitions catches the misnaming and stops before any row
is sent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
import yaml

from tests.conftest import MysqlEndpoint, connect_admin, nameless, row_metadata
from tests.e2e.bridge_process import BridgeProcess, create_topic, read_to_end, write_config
from tests.ha.cluster import ha_cluster

pytestmark = [pytest.mark.services, pytest.mark.both_servers]

Connection = pymysql.connections.Connection  # type: ignore[type-arg]
Row = dict[str, str | None]
# The table the backlog tests start with.
COLUMNS = "id INT PRIMARY KEY, a VARCHAR(10), b INT, c VARCHAR(10)"


class Writer:
    """Writes the rows and remembers each as written: id -> {column: text}."""

    def __init__(self, mysql: MysqlEndpoint, schema: str) -> None:
        self.conn = connect_admin(mysql)  # a new session: it takes the global row metadata
        self.schema = schema
        self.written: dict[str, Row] = {}
        self.next_id = 1

    def run(self, *statements: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute(f"USE `{self.schema}`")
            for statement in statements:
                cur.execute(statement)

    def insert(self, table: str, count: int, **columns: str) -> None:
        """``count`` rows; each value a template with ``{n}`` for the row's id."""
        for _ in range(count):
            n = self.next_id
            self.next_id += 1
            row: Row = {"id": str(n), **{c: t.format(n=n) for c, t in columns.items()}}
            names = ", ".join(f"`{c}`" for c in row)
            values = ", ".join(f"'{v}'" for v in row.values())
            self.run(f"INSERT INTO `{table}` ({names}) VALUES ({values})")
            self.written[str(n)] = row


def _config(tmp_path: Path, mysql: MysqlEndpoint, kafka: str, schema: str, topic: str) -> Path:
    path = write_config(tmp_path / "destinations.yaml", mysql, kafka, schema, topic)
    config = yaml.safe_load(path.read_text())
    config["destinations"][0]["filter"]["regex"] = schema + r"\.t"
    path.write_text(yaml.safe_dump(config))
    return path


def _table_and_topic(
    tmp_path: Path, mysql: MysqlEndpoint, kafka: str, schema: str, *, name: str, columns: str
) -> tuple[Path, str, Writer]:
    """Table ``t`` with ``columns``, a one-partition topic ``schema-<name>-<schema>`` and a
    config streaming the table to it: (config, topic, writer)."""
    topic = f"schema-{name}-{schema}"
    create_topic(kafka, topic, 1)
    writer = Writer(mysql, schema)
    writer.run(f"CREATE TABLE t ({columns})")
    return _config(tmp_path, mysql, kafka, schema, topic), topic, writer


def _inserted(kafka: str, topic: str) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    for _, _, _, message in read_to_end(kafka, topic):
        if message.get("isDdl") or message["type"] != "INSERT" or message["table"] != "t":
            continue
        for row in message["data"]:
            rows[str(row["id"])] = row
    return rows


def _wait_for(kafka: str, topic: str, ids: set[str], bridge: BridgeProcess) -> dict[str, Row]:
    deadline = time.monotonic() + 90
    while True:
        rows = _inserted(kafka, topic)
        if ids <= set(rows):
            return rows
        assert bridge.process is not None and bridge.process.poll() is None, bridge.output()
        assert time.monotonic() < deadline, f"missing {sorted(ids - set(rows))}: {bridge.output()}"
        time.sleep(0.5)


def _backlog(writer: Writer) -> None:
    """Every kind of column change the history must follow, rows before and after each."""
    writer.insert("t", 5, a="a{n}", b="{n}", c="c{n}")
    writer.run("ALTER TABLE t DROP COLUMN a")
    writer.insert("t", 5, b="{n}", c="c{n}")
    writer.run("ALTER TABLE t ADD COLUMN d VARCHAR(10) AFTER id")
    writer.insert("t", 5, d="d{n}", b="{n}", c="c{n}")
    writer.run("ALTER TABLE t RENAME COLUMN b TO bb")
    writer.insert("t", 5, d="d{n}", bb="{n}", c="c{n}")
    writer.run("ALTER TABLE t MODIFY c VARCHAR(20) FIRST")
    writer.insert("t", 5, c="c{n}", d="d{n}", bb="{n}")
    # gh-ost's swap: the ghost table is built beside, then renamed over the original.
    writer.run(
        "CREATE TABLE _t_gho LIKE t",
        "ALTER TABLE _t_gho ADD COLUMN e INT AFTER c, DROP COLUMN d",
        "INSERT INTO _t_gho (c, bb, id) SELECT c, bb, id FROM t",
        "RENAME TABLE t TO _t_del, _t_gho TO t",
        "DROP TABLE _t_del",
    )
    writer.insert("t", 5, c="c{n}", e="{n}", bb="{n}")
    # pt-online-schema-change's: a new table, triggers copying changes, the copy, the swap.
    writer.run(
        "CREATE TABLE `_t_new` LIKE t",
        "ALTER TABLE `_t_new` CHANGE COLUMN bb b2 BIGINT, ADD COLUMN f VARCHAR(8) FIRST",
        "CREATE TRIGGER `pt_osc_t_ins` AFTER INSERT ON t FOR EACH ROW "
        "REPLACE INTO `_t_new` (c, e, b2, id) VALUES (NEW.c, NEW.e, NEW.bb, NEW.id)",
        "INSERT LOW_PRIORITY IGNORE INTO `_t_new` (c, e, b2, id) SELECT c, e, bb, id FROM t",
        "RENAME TABLE t TO `_t_old`, `_t_new` TO t",
        "DROP TRIGGER IF EXISTS `pt_osc_t_ins`",
        "DROP TABLE IF EXISTS `_t_old`",
    )
    writer.insert("t", 5, f="f{n}", c="c{n}", e="{n}", b2="{n}")


def _start(config: Path) -> BridgeProcess:
    bridge = BridgeProcess(config).start()
    bridge.wait_for_output("reading", 60)
    return bridge


def _first_run(
    tmp_path: Path, mysql: MysqlEndpoint, kafka: str, schema: str, *, kill: bool
) -> tuple[Path, str, Writer]:
    """Stream one row, stop the bridge, write the backlog: (config, topic, writer)."""
    config, topic, writer = _table_and_topic(
        tmp_path, mysql, kafka, schema, name="run", columns=COLUMNS
    )
    bridge = _start(config)
    try:
        writer.insert("t", 1, a="a{n}", b="{n}", c="c{n}")
        _wait_for(kafka, topic, {"1"}, bridge)
        if kill:
            bridge.kill()
        else:
            bridge.signal(signal.SIGTERM)
            assert bridge.wait(60) == 0, bridge.output()
    finally:
        bridge.kill()
    _backlog(writer)
    return config, topic, writer


# Without names the history names the columns (after a clean stop and after kill -9); with
# them (FULL) the history is checked against them.
@pytest.mark.parametrize(
    ("metadata", "stop"), [("nameless", "sigterm"), ("nameless", "kill -9"), ("FULL", "sigterm")]
)
def test_a_backlog_across_ddl_keeps_every_row_under_its_names(  # noqa: PLR0917  (fixtures)
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    metadata: str,
    stop: str,
) -> None:
    with row_metadata(mysql, nameless(mysql) if metadata == "nameless" else "FULL"):
        config, topic, writer = _first_run(
            tmp_path, mysql, kafka_bootstrap, scratch_schema, kill=stop == "kill -9"
        )
        _restart_and_check(config, kafka_bootstrap, topic, writer)


def test_a_rewind_before_several_ddl_decodes_with_the_definitions_of_then(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    nameless_binlog: None,
) -> None:
    """The cursor is lost and the destination starts again at its first position, before
    every DDL of the backlog: the history, which began there, still covers it."""
    config, topic, writer = _first_run(tmp_path, mysql, kafka_bootstrap, scratch_schema, kill=False)
    settings: dict[str, Any] = yaml.safe_load(config.read_text())
    destination = settings["destinations"][0]["name"]
    at = json.loads((tmp_path / "meta" / destination / "schema.dat").read_text())["at"]
    (tmp_path / "meta" / destination / "meta.dat").unlink()
    settings["destinations"][0]["start"] = {"journal_name": at["journal"], "position": at["offset"]}
    rewound = f"{topic}-again"
    create_topic(kafka_bootstrap, rewound, 1)
    settings["destinations"][0]["mq"]["topic"] = rewound
    config.write_text(yaml.safe_dump(settings))
    _restart_and_check(config, kafka_bootstrap, rewound, writer)


def _restart_and_check(config: Path, kafka: str, topic: str, writer: Writer) -> None:
    """Start the bridge, wait for every row written, and check each is as written."""
    bridge = _start(config)
    try:
        delivered = _wait_for(kafka, topic, set(writer.written), bridge)
    finally:
        bridge.kill()
    _assert_as_written(delivered, writer)


def _assert_as_written(delivered: dict[str, Row], writer: Writer) -> None:
    wrong = {n: (delivered[n], row) for n, row in writer.written.items() if delivered[n] != row}
    assert not wrong, f"{len(wrong)} of {len(writer.written)} rows misnamed: {wrong}"


def test_without_the_history_the_backlog_is_refused_or_caught_misnamed(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    nameless_binlog: None,
) -> None:
    config, topic, writer = _first_run(tmp_path, mysql, kafka_bootstrap, scratch_schema, kill=False)
    destination = yaml.safe_load(config.read_text())["destinations"][0]["name"]
    for name in ("schema.dat", "schema.log"):
        (tmp_path / "meta" / destination / name).unlink()
    refused = BridgeProcess(config).start()
    try:
        refused.wait(60)
    finally:
        refused.kill()
    assert "no table definitions for the rows to read" in refused.output()
    assert f"{scratch_schema}.t" in refused.output()
    assert set(_inserted(kafka_bootstrap, topic)) == {"1"}  # nothing guessed, nothing sent

    # Today's definitions, asked for: the first rows of the backlog do not fit them, and the
    # check at each TABLE_MAP stops the destination there rather than misname them.
    settings: dict[str, Any] = yaml.safe_load(config.read_text())
    settings["destinations"][0]["schema_history"] = {"recover": "live"}
    config.write_text(yaml.safe_dump(settings))
    caught = BridgeProcess(config).start()
    try:
        assert caught.wait(90) != 0, caught.output()
    finally:
        caught.kill()
    assert "may be misnamed" in caught.output()
    assert "the history does not describe the table here" in caught.output()
    delivered = _inserted(kafka_bootstrap, topic)
    assert all(delivered[n] == writer.written[n] for n in delivered), delivered
    assert set(delivered) == {"1"}


def test_a_take_over_decodes_the_backlog_with_the_history_kept_in_zookeeper(  # noqa: PLR0917
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    zookeeper_hosts: str,
    scratch_schema: str,
    nameless_binlog: None,
) -> None:
    """The active process is killed; DDL and rows pile up; the process that takes over has
    no file of its own and must decode the backlog with the history in ZooKeeper (a capture
    of its own would be refused: the backlog changed the table)."""
    config, topic, writer = _table_and_topic(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, name="ha", columns=COLUMNS
    )
    cluster = ha_cluster(config, zookeeper_hosts, session_s=4)
    try:
        first = cluster.start()
        first.wait_for_output("reading", 60)
        writer.insert("t", 1, a="a{n}", b="{n}", c="c{n}")
        _wait_for(kafka_bootstrap, topic, {"1"}, first)
        first.kill()
        _backlog(writer)
        second = cluster.start()
        delivered = _wait_for(kafka_bootstrap, topic, set(writer.written), second)
        assert "schema history begun" not in second.output(), second.output()
    finally:
        cluster.close()
    _assert_as_written(delivered, writer)


def test_a_change_outside_the_binlog_stops_the_destination_until_reloaded(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    nameless_binlog: None,
) -> None:
    """An ALTER run with sql_log_bin=0 never reaches the history: the next row of the table
    does not fit its definition and the destination stops, naming the table; ``schema show``
    prints the definition it had, ``schema reload`` takes today's, and a restart delivers
    the rows under their names."""
    config, topic, writer = _table_and_topic(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        name="reload",
        columns="id INT PRIMARY KEY, a VARCHAR(10)",
    )
    bridge = _start(config)
    try:
        writer.insert("t", 1, a="a{n}")
        _wait_for(kafka_bootstrap, topic, {"1"}, bridge)
        writer.run(
            "SET SESSION sql_log_bin = 0",
            "ALTER TABLE t ADD COLUMN z INT AFTER id",
            "SET SESSION sql_log_bin = 1",
        )
        writer.insert("t", 2, z="{n}", a="a{n}")
        assert bridge.wait(60) != 0
    finally:
        bridge.kill()
    assert "the history does not describe the table here" in bridge.output()
    assert set(_inserted(kafka_bootstrap, topic)) == {"1"}

    shown = _cli("schema", "show", "--config", str(config), "--destination", _name(config))
    assert shown.returncode == 0, shown.stderr
    assert f"{scratch_schema}.t" in shown.stdout and "  z  " not in shown.stdout
    table = f"{scratch_schema}.t"
    reloaded = _cli(
        "schema",
        "reload",
        "--config",
        str(config),
        "--destination",
        _name(config),
        "--table",
        table,
    )
    assert reloaded.returncode == 0, reloaded.stderr
    assert "reloaded from the source" in reloaded.stdout

    _restart_and_check(config, kafka_bootstrap, topic, writer)


def _name(config: Path) -> str:
    return str(yaml.safe_load(config.read_text())["destinations"][0]["name"])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CANAL_PASSWORD": os.environ.get("CANAL_BRIDGE_MYSQL_PASSWORD", "canal")}
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_a_kill_9_between_each_ddl_and_its_rows_loses_no_name(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    nameless_binlog: None,
) -> None:
    """The running bridge reads a DDL, keeps it in its history, and is killed before the rows
    written after it; restarted, it reads them with the definition the DDL made."""
    config, topic, writer = _table_and_topic(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, name="kill", columns=COLUMNS
    )
    log = tmp_path / "meta" / _name(config) / "schema.log"
    steps = [
        ("ALTER TABLE t DROP COLUMN a", {"b": "{n}", "c": "c{n}"}),
        ("ALTER TABLE t ADD COLUMN d VARCHAR(10) AFTER id", {"d": "d{n}", "b": "{n}", "c": "c{n}"}),
        ("ALTER TABLE t RENAME COLUMN b TO bb", {"d": "d{n}", "bb": "{n}", "c": "c{n}"}),
        ("ALTER TABLE t MODIFY c VARCHAR(20) FIRST", {"c": "c{n}", "d": "d{n}", "bb": "{n}"}),
    ]
    bridge = _start(config)
    try:
        writer.insert("t", 2, a="a{n}", b="{n}", c="c{n}")
        for ddl, columns in steps:
            writer.run(ddl)
            deadline = time.monotonic() + 30
            while not (log.exists() and ddl in log.read_text()):
                assert time.monotonic() < deadline, f"{ddl!r} not recorded: {bridge.output()}"
                time.sleep(0.05)
            bridge.kill()
            writer.insert("t", 2, **columns)
            bridge = _start(config)
        delivered = _wait_for(kafka_bootstrap, topic, set(writer.written), bridge)
    finally:
        bridge.kill()
    _assert_as_written(delivered, writer)
