"""canal-bridge: MySQL/MariaDB binlog change-data-capture to Kafka with canal's semantics."""

__version__ = "0.1.0"
