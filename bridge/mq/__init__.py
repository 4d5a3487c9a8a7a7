"""The MQ layer: canal's FlatMessage, topic/partition routing, the records to produce, the
Kafka producer and the per-destination worker that moves batches to Kafka.

Import from the modules themselves. This package imports nothing, so that a process that
needs one light module (a reader's process rendering rows, ``bridge.mq.rendering``) does not
load the Kafka client, the worker and the configuration with it.
"""
