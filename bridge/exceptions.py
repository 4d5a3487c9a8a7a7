"""The root of every error canal-bridge raises on purpose.

    BridgeError
    ├── ActionRefused                        an operator's action refused in this state
    ├── ConfigError, config.InvalidConfig      a bad destinations.yaml, every problem with its path;
    │   ├── config.rules.RuleSyntaxError       a malformed routing rule or policy
    │   └── canal_import.CanalImportError      a canal conf/ that import-canal cannot read
    ├── parse.ParseError
    │   ├── SourceUnreachable                  network, closed port, replica id in use (retried)
    │   ├── SourceMisconfigured                binlog off, not ROW, not FULL image, same server_id
    │   ├── SourceAccessDenied                 bad credentials or missing replication privileges
    │   ├── BinlogPurged                       the start position is gone from the source (1236)
    │   ├── BinlogPositionUnreadable           the file is there, the offset is not an event's
    │   ├── SchemaMismatch                     a rows event does not fit its table definition
    │   ├── UnsupportedBinlogEvent             an event type refused or unknown (never skipped)
    │   └── CorruptPayload                     a compressed transaction that does not unpack
    ├── sink.SinkError                         InvalidFilter, SinkStopped, ...
    ├── store.StoreError                       StoreStopped, BatchTooLarge, AckOutOfRange, ...
    ├── meta.MetaError                         BatchOutOfOrder / UnknownBatch (canal's messages),
    │                                          CorruptMetaFile, MetaStoreUnavailable, ...
    ├── snapshot.SnapshotError                 TableWithoutKey, UnsupportedSnapshotColumn
    ├── instance.InstanceError                 InstanceFailed (a destination's fatal error),
    │                                          DamagedCursor (a cursor the source cannot read)
    ├── mq.MqError                             DeliveryFailed, RecordTooLarge, TopicLookupFailed
    ├── ha.HaError                             CoordinatorUnavailable, FencedOut
    └── admin.AdminError                       AdminListenFailed, AdminSetupFailed

Library errors (pymysql, confluent-kafka, kazoo) are translated at the boundary with
``raise ... from exc`` so that the message says what is wrong and how to fix it.
"""

from __future__ import annotations

from typing import Any


class BridgeError(Exception):
    """Base class: every deliberate canal-bridge error derives from it.

    Errors pickle with their message and attributes whatever their ``__init__`` takes, so
    that one raised in the binlog reader's process is raised again, the same, in the
    instance's (``bridge.parse.child``).
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return _restore_error, (type(self), self.args, self.__dict__)


def _restore_error(
    cls: type[BridgeError], args: tuple[Any, ...], state: dict[str, Any]
) -> BridgeError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(BridgeError):
    """The configuration file is invalid; the message names the path of each problem."""


class ActionRefused(BridgeError):
    """An operator's action (admin API, console) that cannot be done in the destination's
    present state: moving the cursor of a running destination, to a purged position, ... The
    message says why and what to do instead; nothing was changed."""
