"""The root of every error canal-bridge raises on purpose.

    BridgeError
    ├── ConfigError, config.InvalidConfig      a bad destinations.yaml, every problem with its path
    ├── parse.ParseError
    │   ├── SourceUnreachable                  network, closed port, replica id in use (retried)
    │   ├── SourceMisconfigured                binlog off, not ROW, not FULL image, same server_id
    │   ├── SourceAccessDenied                 bad credentials or missing replication privileges
    │   ├── BinlogPurged                       the start position is gone from the source (1236)
    │   └── SchemaMismatch                     a rows event does not fit its table definition
    ├── sink.SinkError                         InvalidFilter, SinkStopped, ...
    ├── store.StoreError                       StoreStopped, BatchTooLarge, AckOutOfRange, ...
    ├── meta.MetaError                         BatchOutOfOrder / UnknownBatch (canal's messages),
    │                                          CorruptMetaFile, MetaStoreUnavailable, ...
    ├── instance.InstanceError                 InstanceFailed (a destination's fatal error)
    ├── mq.MqError                             DeliveryFailed, RecordTooLarge, TopicLookupFailed
    ├── ha.HaError                             CoordinatorUnavailable, FencedOut
    └── admin.AdminError                       AdminListenFailed

Library errors (pymysql, confluent-kafka, kazoo) are translated at the boundary with
``raise ... from exc`` so that the message says what is wrong and how to fix it.
"""


class BridgeError(Exception):
    """Base class: every deliberate canal-bridge error derives from it."""


class ConfigError(BridgeError):
    """The configuration file is invalid; the message names the path of each problem."""
