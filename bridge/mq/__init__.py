"""The MQ layer: canal's FlatMessage, topic/partition routing, the records to produce, the
Kafka producer and the per-destination worker that moves batches to Kafka."""

from bridge.mq.exceptions import (
    BrokerRejectedTooLarge,
    DeliveryCancelled,
    DeliveryFailed,
    MqError,
    ProducerSetupFailed,
    RecordTooLarge,
    TopicLookupFailed,
)
from bridge.mq.flat_message import (
    FlatMessage,
    SourcedMessage,
    build_flat_messages,
    partition_message,
    split_rows,
)
from bridge.mq.producer import KafkaProducer, RecordSender, TopicInspector, connection_settings
from bridge.mq.records import (
    OutgoingRecord,
    RecordBuilder,
    binlog_headers,
    message_key,
)
from bridge.mq.routing import (
    CanalPartitionRouter,
    CanalTopicRouter,
    PartitionRouter,
    TopicPartitions,
    TopicRouter,
    java_string_hash,
    partition_of,
    record_key,
)
from bridge.mq.tail import format_record, tail
from bridge.mq.worker import MqWorker, WorkerProgress, WorkerSettings

__all__ = [
    "BrokerRejectedTooLarge",
    "CanalPartitionRouter",
    "CanalTopicRouter",
    "DeliveryCancelled",
    "DeliveryFailed",
    "FlatMessage",
    "KafkaProducer",
    "MqError",
    "MqWorker",
    "OutgoingRecord",
    "PartitionRouter",
    "ProducerSetupFailed",
    "RecordBuilder",
    "RecordSender",
    "RecordTooLarge",
    "SourcedMessage",
    "TopicInspector",
    "TopicLookupFailed",
    "TopicPartitions",
    "TopicRouter",
    "WorkerProgress",
    "WorkerSettings",
    "binlog_headers",
    "build_flat_messages",
    "connection_settings",
    "format_record",
    "java_string_hash",
    "message_key",
    "partition_message",
    "partition_of",
    "record_key",
    "split_rows",
    "tail",
]
