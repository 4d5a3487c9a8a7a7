"""canal-bridge: MySQL/MariaDB binlog change-data-capture to Kafka with canal's semantics."""

from typing import Any


def __getattr__(name: str) -> Any:
    """``bridge.__version__``: the installed distribution's, which pyproject.toml sets and the
    image is tagged with (one version everywhere); read on first use, not at every import
    (the binlog reader's process imports this package at each start)."""
    if name == "__version__":
        from importlib.metadata import version

        return version("canal-bridge")
    raise AttributeError(f"module 'bridge' has no attribute {name!r}")
