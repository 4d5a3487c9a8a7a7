"""A JVM's first logged error, in one line with where it came from: what bench.compare
records when a compared system cannot run."""

from __future__ import annotations

from pathlib import Path

from bench.compare.systems import JavaProcess

DEBEZIUM_LOG = """\
2026-11-29 10:46:15,700 INFO  [io.deb.con.bin] (main) Connected
2026-11-29 10:46:15,718 ERROR [io.deb.pip.ErrorHandler] (coordinator) Producer failure: \
java.lang.NumberFormatException: For input string: "tag"
\tat java.base/java.lang.Long.parseLong(Long.java:709)
\tat com.github.shyiko.mysql.binlog.GtidSet.<init>(GtidSet.java:61)
2026-11-29 10:46:16,166 ERROR [io.deb.emb] (pool) Engine has failed
"""
CANAL_LOG = (
    "10:46:15.718 [destination = bench] ERROR c.a.o.c.p.i.m.MysqlEventParser - dump failed\n"
)


def test_the_first_error_and_its_first_frame_outside_the_jdk(tmp_path: Path) -> None:
    log = tmp_path / "debezium.log"
    log.write_text(DEBEZIUM_LOG)

    assert JavaProcess(log).diagnosis() == (
        'Producer failure: java.lang.NumberFormatException: For input string: "tag" '
        "(at com.github.shyiko.mysql.binlog.GtidSet.<init>(GtidSet.java:61))"
    )


def test_logs_are_searched_in_order_and_a_clean_log_gives_none(tmp_path: Path) -> None:
    console, server = tmp_path / "canal.log", tmp_path / "canal-server.log"
    console.write_text("started\n")
    server.write_text(CANAL_LOG)
    process = JavaProcess(console)

    assert process.diagnosis() is None
    process.logs.append(server)
    assert process.diagnosis() == "dump failed"
