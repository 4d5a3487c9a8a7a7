"""One log line per record sent to the dead-letter topic (``mq.oversize: dead_letter:<topic>``).

A dead-lettered change is data the consumers of the real topic never see, so it must not pass
silently: the line names the table, the change type, the sizes, the topic and
partition the record was meant for and where it is in the binlog. Never row values, and not
the record key either (built from primary-key values): only a short hash of it, enough to
tell records apart or to check a suspected key, not to read one. The count is the
``canal_bridge_dead_letter_records_total`` metric (counted when the batch is acked); this line
is written when the record is built, so a batch sent again after a failure logs it again.
"""

from __future__ import annotations

import hashlib
import logging

log = logging.getLogger(__name__)


def key_hash(key: bytes) -> str:
    """8 hex digits of BLAKE2b over the record key: stable across processes and runs."""
    return hashlib.blake2b(key, digest_size=4).hexdigest()


def log_dead_letter(
    *,
    table: str,
    change: str,
    size: int,
    limit: int,
    topic: str,
    partition: int,
    key: bytes,
    dead_letter_topic: str,
    binlog: str,
) -> None:
    log.warning(
        "%s %s record of %d bytes (limit %d) for %s[%d] sent to dead-letter topic %s "
        "instead (key hash %s, binlog %s)",
        table,
        change,
        size,
        limit,
        topic,
        partition,
        dead_letter_topic,
        key_hash(key),
        binlog,
    )
