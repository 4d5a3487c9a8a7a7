"""canal-bridge's configuration: ``destinations.yaml`` loaded into frozen pydantic models.

``loading`` reads, interpolates and validates the file (every problem listed, with its path);
``models`` holds the models; ``fields`` the value checks they share; ``rules`` canal's rule
syntax (routing rules, DDL and oversize policies). A leaf: it imports nothing else of bridge
but ``bridge.exceptions``, so every layer can read it.
"""

from bridge.config.changes import ConfigChange, config_change
from bridge.config.fields import ProducerValue, split_address
from bridge.config.loading import InvalidConfig, config_from_text, load_config, parse_config
from bridge.config.models import (
    DEFAULT_MAX_RECORD_BYTES,
    AdminConfig,
    BridgeConfig,
    ColumnsConfig,
    DestinationConfig,
    FilterConfig,
    KafkaConfig,
    KafkaSasl,
    KafkaTls,
    MetaConfig,
    MqConfig,
    SchemaHistoryConfig,
    SnapshotConfig,
    SourceConfig,
    SourceTls,
    StartConfig,
    StoreConfig,
    ZooKeeperConfig,
)

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "AdminConfig",
    "BridgeConfig",
    "ColumnsConfig",
    "ConfigChange",
    "DestinationConfig",
    "FilterConfig",
    "InvalidConfig",
    "KafkaConfig",
    "KafkaSasl",
    "KafkaTls",
    "MetaConfig",
    "MqConfig",
    "ProducerValue",
    "SchemaHistoryConfig",
    "SnapshotConfig",
    "SourceConfig",
    "SourceTls",
    "StartConfig",
    "StoreConfig",
    "ZooKeeperConfig",
    "config_change",
    "config_from_text",
    "load_config",
    "parse_config",
    "split_address",
]
