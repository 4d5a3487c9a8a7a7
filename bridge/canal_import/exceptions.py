"""Errors of ``bridge.canal_import``: a canal ``conf/`` folder it cannot import.

    BridgeError
    └── ConfigError
        └── CanalImportError
            ├── CanalConfUnreadable   no canal.properties, a listed destination without its
            │                         instance.properties, a file that is not text
            └── UnsupportedServerMode canal.serverMode is another broker (rocketMQ, ...)

Both are refusals: nothing is written, the CLI prints the one line and exits 2. Messages name
files and keys, never a value that may be a secret.
"""

from __future__ import annotations

from pathlib import Path

from bridge.exceptions import ConfigError


class CanalImportError(ConfigError):
    """Base class of the refusals of ``import-canal``."""


class CanalConfUnreadable(CanalImportError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class UnsupportedServerMode(CanalImportError):
    def __init__(self, path: Path, mode: str) -> None:
        super().__init__(
            f"{path}: canal.serverMode = {mode}: canal-bridge writes to Kafka only (no RocketMQ, "
            "RabbitMQ or Pulsar); import a conf whose canal.serverMode is kafka or tcp"
        )
        self.path = path
        self.mode = mode
