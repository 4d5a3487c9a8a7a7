"""Record shaping through the real bridge and broker: change kinds left out (``filter.skip``),
tombstones after deletes (``mq.tombstones``), masked, hashed and truncated columns
(``columns``), key columns (``mq.key_columns``).

One server: what is shaped is the bridge's own doing, the same whatever the source."""

from __future__ import annotations

import hashlib
import io
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import KafkaConfig
from bridge.meta.codec import loads_meta_file
from bridge.mq.routing import java_string_hash
from bridge.mq.tail import tail
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import (
    BridgeProcess,
    create_topic,
    read_records_to_end,
    read_to_end,
    write_config,
)

pytestmark = pytest.mark.services

MARKER = 999


def shaped_config(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    bootstrap: str,
    schema: str,
    *,
    filters: dict[str, Any] | None = None,
    columns: dict[str, Any] | None = None,
    **mq: Any,
) -> tuple[str, Path]:
    """A topic and a config streaming ``schema`` to it, with ``filters`` added to the
    destination's filter section and ``columns`` as its column shaping."""
    topic = f"shape-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, mq.get("partitions", 1))
    path = write_config(tmp_path / "destinations.yaml", mysql, bootstrap, schema, topic, **mq)
    config = yaml.safe_load(path.read_text())
    config["destinations"][0]["filter"].update(filters or {})
    if columns:
        config["destinations"][0]["columns"] = columns
    path.write_text(yaml.safe_dump(config))
    return topic, path


def execute(mysql: MysqlEndpoint, *statements: str) -> tuple[str, int]:
    """Run ``statements`` (autocommit); returns the binlog end after them."""
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
            cur.execute("SHOW MASTER STATUS")
            file, position = cur.fetchone()[:2]
    finally:
        conn.close()
    return str(file), int(position)


def until_marker(bridge: BridgeProcess, bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every message of ``topic`` once the row with id ``MARKER`` arrived."""
    deadline = time.monotonic() + 60
    while True:
        messages = [message for *_, message in read_to_end(bootstrap, topic)]
        if any(
            row.get("id") == str(MARKER)
            for message in messages
            for row in message.get("data") or ()
        ):
            return messages
        assert time.monotonic() < deadline, f"the marker never arrived:\n{bridge.output()}"
        time.sleep(0.3)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[list[BridgeProcess]]:
    """Bridges a test starts; killed at its end if still running."""
    bridges: list[BridgeProcess] = []
    yield bridges
    for bridge in bridges:
        bridge.kill()


def start(
    config: Path, running: list[BridgeProcess], env: dict[str, str] | None = None
) -> BridgeProcess:
    bridge = BridgeProcess(config, env or {}).start()
    running.append(bridge)
    bridge.wait_for_output("reading")
    return bridge


def acked(tmp_path: Path) -> tuple[str, int]:
    """The destination's acked cursor, as its meta file holds it."""
    (meta,) = (tmp_path / "meta").glob("*/meta.dat")
    _, clients = loads_meta_file(meta.read_bytes())
    ((_, cursor),) = clients
    assert cursor is not None
    return cursor.position.journal_name or "", cursor.position.position or 0


def test_skipped_kinds_are_not_produced_and_the_cursor_moves_past_them(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    table = f"`{scratch_schema}`.t"
    execute(mysql, f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(20))")
    topic, config = shaped_config(
        tmp_path, mysql, kafka_bootstrap, scratch_schema, filters={"skip": ["delete", "ddl"]}
    )
    execute(mysql, f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    bridge = start(config, running)
    # A transaction of skipped changes only: like one of filtered tables it is empty, and
    # canal's rule passes an empty transaction at once when none passed in the last 5 s of
    # binlog time, so the acked cursor moves past it within seconds.
    end = execute(mysql, f"DELETE FROM {table} WHERE id = 2")
    deadline = time.monotonic() + 30
    while acked(tmp_path) < end:
        assert time.monotonic() < deadline, f"cursor {acked(tmp_path)} not past {end}"
        time.sleep(0.2)
    execute(
        mysql,
        f"UPDATE {table} SET note = 'c' WHERE id = 1",
        f"DELETE FROM {table} WHERE id = 1",
        f"ALTER TABLE {table} ADD COLUMN extra INT",
        f"INSERT INTO {table} VALUES ({MARKER}, 'm', 1)",
    )
    messages = until_marker(bridge, kafka_bootstrap, topic)
    assert [m["type"] for m in messages] == ["UPDATE", "INSERT"]


def test_without_skip_every_kind_is_produced(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    table = f"`{scratch_schema}`.t"
    execute(mysql, f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(20))")
    topic, config = shaped_config(tmp_path, mysql, kafka_bootstrap, scratch_schema)
    bridge = start(config, running)
    execute(
        mysql,
        f"INSERT INTO {table} VALUES (2, 'b')",
        f"DELETE FROM {table} WHERE id = 2",
        f"ALTER TABLE {table} ADD COLUMN extra INT",
        f"INSERT INTO {table} VALUES ({MARKER}, 'm', 1)",
    )
    messages = until_marker(bridge, kafka_bootstrap, topic)
    assert [m["type"] for m in messages] == ["INSERT", "DELETE", "ALTER", "INSERT"]
    assert all(messages)  # no tombstone unless asked for


def test_tombstones_follow_each_deleted_row_in_its_delete_transaction(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    """Exactly-once: a tombstone at the offset right after its DELETE (a transaction's
    commit marker takes an offset, so none lies between them), same key and partition."""
    table = f"`{scratch_schema}`.t"
    execute(mysql, f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(20))")
    topic, config = shaped_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        tombstones=True,
        delivery="exactly_once",
        offsets_topic=f"shape-offsets-{uuid.uuid4().hex[:8]}",
        partitions=3,
        partition_hash=r".*\..*:$pk$",
    )
    bridge = start(config, running)
    ids = range(1, 7)
    execute(
        mysql,
        f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, 'n')" for i in ids),
        f"DELETE FROM {table} WHERE id < 7",  # one rows event of six rows
        f"INSERT INTO {table} VALUES ({MARKER}, 'm')",
    )
    until_marker(bridge, kafka_bootstrap, topic)
    records = read_records_to_end(kafka_bootstrap, topic)
    deletes = [r for r in records if r.message.get("type") == "DELETE"]
    tombstones = [r for r in records if not r.message]
    assert len(deletes) == len(tombstones) == len(ids)  # a message per deleted row
    inserted = {r.key: r.partition for r in records if r.message.get("type") == "INSERT"}
    for delete in deletes:
        (tombstone,) = [
            t
            for t in tombstones
            if (t.partition, t.offset) == (delete.partition, delete.offset + 1)
        ]
        assert tombstone.key == delete.key and delete.key is not None
        assert inserted.get(delete.key, delete.partition) == delete.partition
        assert tombstone.headers["binlog.position"] == delete.headers["binlog.position"]
    assert sorted(t.key or b"" for t in tombstones) == sorted(
        f"{scratch_schema}.t:{i}".encode() for i in ids
    )
    # canal-bridge tail reads them (read_committed) and names their keys.
    out = io.StringIO()
    kafka = KafkaConfig(bootstrap_servers=kafka_bootstrap)
    assert tail(kafka, topic, from_beginning=True, max_messages=len(records), out=out) == len(
        records
    )
    lines = [line for line in out.getvalue().splitlines() if " TOMBSTONE key=" in line]
    assert sorted(line.split("key=")[1] for line in lines) == sorted(
        f"{scratch_schema}.t:{i}" for i in ids
    )


SALT = "e2e-pepper-51"
SHAPED = {
    "mask": r"t_.*\.users:email",
    "hash": r"t_.*\.users:ssn",
    "hash_salt": "${PII_SALT}",
    "truncate": r"t_.*\.users:bio=3",
}


def users_table(mysql: MysqlEndpoint, schema: str) -> str:
    table = f"`{schema}`.users"
    execute(
        mysql,
        f"CREATE TABLE {table} (id INT PRIMARY KEY, email VARCHAR(64), ssn CHAR(11), bio TEXT)",
    )
    return table


def test_columns_are_masked_hashed_and_truncated_in_data_and_old(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    table = users_table(mysql, scratch_schema)
    topic, config = shaped_config(tmp_path, mysql, kafka_bootstrap, scratch_schema, columns=SHAPED)
    bridge = start(config, running, {"PII_SALT": SALT})
    execute(
        mysql,
        f"INSERT INTO {table} VALUES (1, 'a@x.io', '123-45-6789', 'hello'), (2, NULL, NULL, NULL)",
        f"UPDATE {table} SET email = 'b@x.io', ssn = '987-65-4321', bio = 'world' WHERE id = 1",
        f"INSERT INTO {table} VALUES ({MARKER}, 'm', 'm', 'm')",
    )
    insert, update, _ = until_marker(bridge, kafka_bootstrap, topic)
    assert insert["data"] == [
        {"id": "1", "email": "********", "ssn": sha("123-45-6789"), "bio": "hel"},
        {"id": "2", "email": None, "ssn": None, "bio": None},
    ]
    assert update["data"] == [
        {"id": "1", "email": "********", "ssn": sha("987-65-4321"), "bio": "wor"}
    ]
    assert update["old"] == [{"ssn": sha("123-45-6789"), "bio": "hel"}]
    assert insert["mysqlType"]["email"] == "varchar(64)" and insert["sqlType"]["bio"] == 2005
    assert SALT not in bridge.output()


def test_a_masked_key_column_is_refused_at_start_in_one_line(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    table = users_table(mysql, scratch_schema)
    columns = {"mask": r"t_.*\.users:id/email"}
    topic, config = shaped_config(tmp_path, mysql, kafka_bootstrap, scratch_schema, columns=columns)
    bridge = start(config, running)
    execute(mysql, f"INSERT INTO {table} VALUES (1, 'a@x.io', NULL, NULL)")
    bridge.wait_for_output("columns.mask_keys: true", timeout_s=30)
    (line,) = [line for line in bridge.output().splitlines() if "is a key column" in line]
    assert f"{scratch_schema}.users.id is a key column" in line
    assert read_to_end(kafka_bootstrap, topic) == []


def events_table(mysql: MysqlEndpoint, schema: str) -> str:
    table = f"`{schema}`.events"
    execute(mysql, f"CREATE TABLE {table} (tenant INT, seq INT, what VARCHAR(20))")
    return table


def test_key_columns_key_and_place_a_keyless_tables_rows_until_ddl_drops_one(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    table = events_table(mysql, scratch_schema)
    topic, config = shaped_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        partitions=3,
        partition_hash=r".*\..*:$pk$",
        key_columns=r"t_.*\.events:tenant/seq",
    )
    bridge = start(config, running)
    execute(
        mysql,
        *(f"INSERT INTO {table} VALUES ({t}, {s}, 'x')" for t in (1, 2) for s in (1, 2, 3)),
        f"INSERT INTO {table} VALUES ({MARKER}, {MARKER}, 'm')",
    )
    deadline = time.monotonic() + 60
    while len(read_to_end(kafka_bootstrap, topic)) < 7:
        assert time.monotonic() < deadline, bridge.output()
        time.sleep(0.3)
    execute(
        mysql,
        f"ALTER TABLE {table} DROP COLUMN seq",
        f"INSERT INTO {table} VALUES (5, 'after')",
    )
    bridge.wait_for_output("which mq.key_columns names", timeout_s=30)
    (line,) = [line for line in bridge.output().splitlines() if "mq.key_columns" in line]
    assert f"{scratch_schema}.events has no column seq" in line
    records = [r for r in read_records_to_end(kafka_bootstrap, topic) if r.message]
    assert len(records) == 7  # the rows before the DDL; neither it nor anything after it
    for record in records:
        (row,) = record.message["data"]
        assert record.key == f'{scratch_schema}.events:["{row["tenant"]}","{row["seq"]}"]'.encode()
        assert record.message["pkNames"] == ["tenant", "seq"]
        hashed = java_string_hash(scratch_schema) ^ java_string_hash(row["tenant"])
        assert record.partition == abs(hashed ^ java_string_hash(row["seq"])) % 3


def test_a_key_column_the_table_lacks_is_refused_at_start(
    tmp_path: Path,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    running: list[BridgeProcess],
) -> None:
    events_table(mysql, scratch_schema)
    _, config = shaped_config(
        tmp_path,
        mysql,
        kafka_bootstrap,
        scratch_schema,
        key_columns=r"t_.*\.events:tenant/region",
    )
    bridge = BridgeProcess(config).start()
    running.append(bridge)
    bridge.wait_for_output("which mq.key_columns names", timeout_s=30)
    assert f"{scratch_schema}.events has no column region" in bridge.output()


def sha(value: str) -> str:
    return hashlib.sha256((SALT + value).encode()).hexdigest()
