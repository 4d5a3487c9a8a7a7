"""The MQ layer: canal's FlatMessage, topic/partition routing and the records to produce."""

from bridge.mq.exceptions import MqError, RecordTooLarge, RuleSyntaxError
from bridge.mq.flat_message import (
    FlatMessage,
    SourcedMessage,
    build_flat_messages,
    partition_message,
    split_rows,
)
from bridge.mq.records import (
    DdlPolicy,
    OutgoingRecord,
    OversizePolicy,
    RecordBuilder,
    binlog_headers,
    message_key,
)
from bridge.mq.routing import (
    CanalPartitionRouter,
    CanalTopicRouter,
    HashRule,
    PartitionRouter,
    TopicPartitions,
    TopicRouter,
    java_string_hash,
    partition_of,
    record_key,
)

__all__ = [
    "CanalPartitionRouter",
    "CanalTopicRouter",
    "DdlPolicy",
    "FlatMessage",
    "HashRule",
    "MqError",
    "OutgoingRecord",
    "OversizePolicy",
    "PartitionRouter",
    "RecordBuilder",
    "RecordTooLarge",
    "RuleSyntaxError",
    "SourcedMessage",
    "TopicPartitions",
    "TopicRouter",
    "binlog_headers",
    "build_flat_messages",
    "java_string_hash",
    "message_key",
    "partition_message",
    "partition_of",
    "record_key",
    "split_rows",
]
