"""The mirror follows column DDL that arrives in a backlog, and equals the source afterwards.

The bridge streams a table into the mirror, is stopped, and while it is down the table gets
rows, updates and deletes around ``DROP COLUMN``, ``RENAME COLUMN``, ``CHANGE`` (a new name
and a wider type), ``MODIFY ... FIRST`` and a ``MODIFY`` from text to a number. The binlog
carries no column names (the servers' default row metadata): the bridge names them from its
schema history. One mirror batch then holds rows on both sides of every DDL; reconcile must
find the mirror identical to the source. The negative case: the same mirror with one rename
undone is reported different.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_jobs.mirror import DDL_LOG, MirrorJob
from spark_jobs.mirror_table import MirrorTable, current, quote
from spark_jobs.stream import StreamOptions
from tests.conftest import MysqlEndpoint
from tests.spark.mirroring import await_query, reconcile_table
from tests.spark.pipeline import (
    bridge_config,
    connect,
    mark,
    new_topic,
    running_bridge,
    stop_bridge,
    wait_for,
)

pytestmark = pytest.mark.services

BACKLOG = [
    "INSERT INTO t VALUES (4, 'a4', 4, 'c4', 40, '44')",
    "UPDATE t SET b = 10 WHERE id = 1",
    "ALTER TABLE t DROP COLUMN a",
    "INSERT INTO t VALUES (5, 5, 'c5', 50, '55')",
    "ALTER TABLE t RENAME COLUMN b TO bb",
    "UPDATE t SET bb = 20 WHERE id = 2",
    "INSERT INTO t (id, bb, c, n, code) VALUES (6, 6, 'c6', 60, '66')",
    "ALTER TABLE t CHANGE COLUMN n wide BIGINT",
    "UPDATE t SET wide = 3000000000 WHERE id = 3",
    "ALTER TABLE t MODIFY c VARCHAR(20) FIRST",
    "DELETE FROM t WHERE id = 4",
    "INSERT INTO t (c, id, bb, wide, code) VALUES ('c7', 7, 7, 70, '77')",
    "ALTER TABLE t MODIFY code INT",
    "UPDATE t SET code = code + 1 WHERE id = 5",
    "INSERT INTO t (c, id, bb, wide, code) VALUES ('c8', 8, 8, 80, 88)",
]


@pytest.mark.usefixtures("nameless_binlog")
def test_a_backlog_of_column_ddl_leaves_the_mirror_equal_to_the_source(
    spark: SparkSession,
    mysql: MysqlEndpoint,
    kafka_bootstrap: str,
    scratch_schema: str,
    tmp_path: Path,
) -> None:
    schema = scratch_schema
    conn = connect(mysql)
    with conn.cursor() as cur:
        cur.execute(f"USE {schema}")
        cur.execute(
            "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b INT, c VARCHAR(10), n INT, "
            "code VARCHAR(5))"
        )
        cur.execute("CREATE TABLE marker (id INT PRIMARY KEY, at DATETIME(6))")
    topic = new_topic(kafka_bootstrap, "spark-backlog-ddl")
    (tmp_path / "bridge").mkdir()
    config = bridge_config(tmp_path / "bridge", mysql, kafka_bootstrap, schema, topic)
    mirror, checkpoint = tmp_path / "mirror", tmp_path / "cp"
    options = StreamOptions(
        bootstrap_servers=kafka_bootstrap,
        checkpoint=str(checkpoint),
        topics=topic,
        available_now=True,
    )

    with running_bridge(config) as bridge:
        with conn.cursor() as cur:
            for key in (1, 2, 3):
                cur.execute(
                    f"INSERT INTO {schema}.t VALUES (%s, %s, %s, %s, %s, %s)",
                    (key, f"a{key}", key, f"c{key}", key * 10, f"{key}{key}"),
                )
        wait_for(kafka_bootstrap, topic, mark(mysql, schema, 1), timeout_s=60)
        stop_bridge(bridge)
    await_query(MirrorJob(options, str(mirror)).start(spark))

    with conn.cursor() as cur:  # the backlog, written while the bridge is down
        cur.execute(f"USE {schema}")
        for statement in BACKLOG:
            cur.execute(statement)
    with running_bridge(config) as bridge:
        wait_for(kafka_bootstrap, topic, mark(mysql, schema, 2), timeout_s=90)
        stop_bridge(bridge)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION",
            (schema,),
        )
        source_columns = [r[0] for r in cur.fetchall()]
    conn.close()

    await_query(MirrorJob(options, str(mirror)).start(spark))

    table = MirrorTable(spark, str(mirror), schema, "t")
    frame = current(spark.read.format("delta").load(table.path))
    assert frame.columns == source_columns == ["c", "id", "bb", "wide", "code"]
    assert dict(frame.dtypes)["wide"] == "bigint" and dict(frame.dtypes)["code"] == "int"
    code, report = reconcile_table(spark, mirror, f"{schema}.t", mysql)
    assert code == 0, report
    outcomes = [
        (r.outcome, r.detail)
        for r in spark.read.format("delta").load(str(mirror / DDL_LOG)).collect()
        if r.table == "t"
    ]
    assert ("applied", "rename b to bb") in outcomes
    assert ("applied", "change n to wide bigint") in outcomes
    assert not [o for o in outcomes if o[0] == "failed"], outcomes
    state = table.state
    assert state is not None and [n for n, _ in state.columns] == source_columns
    assert dict(state.columns)["wide"] == "bigint" and state.primary_key == ["id"]

    # The negative case: a mirror that did not follow the rename is not equal to the source.
    spark.sql(f"ALTER TABLE delta.{quote(table.path)} RENAME COLUMN bb TO b")
    code, report = reconcile_table(spark, mirror, f"{schema}.t", mysql)
    assert code != 0
    assert "only in the source: ['bb']" in report and "only in the mirror: ['b']" in report
