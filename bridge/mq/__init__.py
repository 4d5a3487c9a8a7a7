"""The MQ layer: canal's FlatMessage, topic/partition routing, the records to produce, the
Kafka producer and the per-destination worker that moves batches to Kafka."""

from bridge.mq.exceptions import (
    BrokerRejectedTooLarge,
    BrokersRefused,
    DeliveryCancelled,
    DeliveryFailed,
    MqError,
    ProducerSetupFailed,
    RecordTooLarge,
    TopicLookupFailed,
)
from bridge.mq.flat_encoder import CompiledFlatMessageEncoder, FlatMessageEncoder
from bridge.mq.flat_message import (
    FlatMessage,
    SourcedMessage,
    build_flat_messages,
    message_key,
    partition_message,
    split_rows,
)
from bridge.mq.formats import ENCODERS, record_builder, rows_encoder
from bridge.mq.producer import KafkaProducer, RecordSender, TopicInspector, connection_settings
from bridge.mq.records import (
    OutgoingRecord,
    Placement,
    RecordBuilder,
    RowsEncoder,
    binlog_headers,
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
from bridge.mq.senders import SENDERS, KafkaSenders, SenderFactory, sender_factory
from bridge.mq.tail import format_record, tail
from bridge.mq.worker import MqWorker, OutletGuard, WorkerProgress, WorkerSettings, build_worker

__all__ = [
    "ENCODERS",
    "SENDERS",
    "BrokerRejectedTooLarge",
    "BrokersRefused",
    "CanalPartitionRouter",
    "CanalTopicRouter",
    "CompiledFlatMessageEncoder",
    "DeliveryCancelled",
    "DeliveryFailed",
    "FlatMessage",
    "FlatMessageEncoder",
    "KafkaProducer",
    "KafkaSenders",
    "MqError",
    "MqWorker",
    "OutgoingRecord",
    "OutletGuard",
    "PartitionRouter",
    "Placement",
    "ProducerSetupFailed",
    "RecordBuilder",
    "RecordSender",
    "RecordTooLarge",
    "RowsEncoder",
    "SenderFactory",
    "SourcedMessage",
    "TopicInspector",
    "TopicLookupFailed",
    "TopicPartitions",
    "TopicRouter",
    "WorkerProgress",
    "WorkerSettings",
    "binlog_headers",
    "build_flat_messages",
    "build_worker",
    "connection_settings",
    "format_record",
    "java_string_hash",
    "message_key",
    "partition_message",
    "partition_of",
    "record_builder",
    "record_key",
    "rows_encoder",
    "sender_factory",
    "split_rows",
    "tail",
]
