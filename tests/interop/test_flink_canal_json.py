"""Flink's ``canal-json`` format (``CanalJsonDeserializationSchema`` from
``org.apache.flink:flink-json`` 1.20, the class behind ``'format' = 'canal-json'``) turns a topic
``canal-bridge run`` wrote into the changelog the source's changes make: +I for an INSERT,
-U/+U for an UPDATE (the before image completed from the unchanged columns), -D for a DELETE.

Two settings make that work, and both are proven here: ``mq.binary_encoding: base64`` (Flink
decodes a BYTES field from base64), and DDL kept out of the data topic (``mq.ddl:
topic:<name>``), because with Flink's default ``canal-json.ignore-parse-errors = false`` a DDL
record other than CREATE fails the job."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.e2e.bridge_process import read_to_end
from tests.interop import consumers
from tests.interop.conftest import Stream
from tests.interop.source import FLINK_FIELDS, FLINK_ROW, TABLE, Change, flink_text, spelled

pytestmark = pytest.mark.services

DDL_TOPIC = f"interop-ddl-{uuid.uuid4().hex[:8]}"


def _changelog(changes: list[Change]) -> list[dict[str, object]]:
    """The changelog Flink should emit for the source's changes."""
    kinds = {"INSERT": [("+I", "after")], "DELETE": [("-D", "before")]}
    kinds["UPDATE"] = [("-U", "before"), ("+U", "after")]
    return [
        {"kind": kind, "row": spelled(getattr(change, image), flink_text, FLINK_FIELDS)}
        for change in changes
        for kind, image in kinds[change.type]
    ]


def _flink(
    jar: Path, bootstrap: str, topic: str, ignore_parse_errors: bool
) -> consumers.ConsumerRun:
    return consumers.run(
        jar, "flink", bootstrap, topic, FLINK_ROW, str(ignore_parse_errors).lower()
    )


def test_changelog_equals_the_source_changes_with_ddl_routed_away(
    stream: Stream, consumers_jar: Path, kafka_bootstrap: str
) -> None:
    streamed = stream(ddl=f"topic:{DDL_TOPIC}", binary_encoding="base64")
    run = _flink(consumers_jar, kafka_bootstrap, streamed.topic, ignore_parse_errors=False)
    assert run.status == 0, run.error
    assert run.lines == _changelog(streamed.changes)
    ddl = [m for _, _, _, m in read_to_end(kafka_bootstrap, DDL_TOPIC)]
    assert [(m["isDdl"], m["type"], m["table"]) for m in ddl] == [(True, "ALTER", TABLE)]


def test_inline_ddl_fails_flink_unless_parse_errors_are_ignored(
    stream: Stream, consumers_jar: Path, kafka_bootstrap: str
) -> None:
    """The negative case: the same workload with the DDL inline stops Flink at the ALTER
    record by default; ``canal-json.ignore-parse-errors = true`` skips it and the changelog
    is whole again."""
    streamed = stream(binary_encoding="base64")
    failed = _flink(consumers_jar, kafka_bootstrap, streamed.topic, ignore_parse_errors=False)
    assert failed.status == 1, failed.lines
    assert 'Unknown "type" value "ALTER"' in failed.error, failed.error
    expected = _changelog(streamed.changes)
    assert failed.lines == expected[: len(failed.lines)] != expected  # stopped at the DDL

    ignored = _flink(consumers_jar, kafka_bootstrap, streamed.topic, ignore_parse_errors=True)
    assert ignored.status == 0, ignored.error
    assert ignored.lines == expected
