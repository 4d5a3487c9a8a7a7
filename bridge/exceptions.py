"""The root of every error canal-bridge raises on purpose.

    BridgeError
    ├── ConfigError                 bridge.config: a bad destinations.yaml
    ├── parse.exceptions.ParseError
    │   ├── SourceMisconfigured     binlog off, not ROW, not FULL image, same server_id, ...
    │   ├── SourceAccessDenied      bad credentials or missing replication privileges
    │   ├── BinlogPurged            the start position is gone from the source (errno 1236)
    │   └── SchemaMismatch          a rows event does not fit the known table definition
    ├── store.exceptions.StoreError
    ├── meta.exceptions.MetaError   out-of-order / unknown batch ids (canal's messages)
    └── mq.exceptions.MqError       delivery failures, oversize records

Library errors (pymysql, confluent-kafka, kazoo) are translated at the boundary with
``raise ... from exc`` so that the message says what is wrong and how to fix it.
"""


class BridgeError(Exception):
    """Base class: every deliberate canal-bridge error derives from it."""


class ConfigError(BridgeError):
    """The configuration file is invalid; the message names the path of each problem."""
