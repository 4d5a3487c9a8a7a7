"""Errors of the sink: bad filter definitions and a stopped sink."""

from __future__ import annotations

from bridge.exceptions import BridgeError


class SinkError(BridgeError):
    """Base class of every error raised by ``bridge.sink``."""


class InvalidFilter(SinkError):
    """A table or field filter cannot be compiled; raised when it is built, never mid-stream."""

    def __init__(self, item: str, reason: str) -> None:
        super().__init__(f"invalid filter {item!r}: {reason}")
        self.item = item
        self.reason = reason


class MaskedKeyColumn(SinkError):
    """``columns.mask`` or ``columns.hash`` names a key column and ``columns.mask_keys`` is not
    set: the destination stops rather than key and partition records by masked values."""

    def __init__(self, table: str, column: str) -> None:
        super().__init__(
            f"{table}.{column} is a key column that columns.mask or columns.hash names: record "
            "keys and partitions would follow the masked value; set columns.mask_keys: true to "
            "accept that, or leave the column out of the rule"
        )
        self.table = table
        self.column = column


class MissingKeyColumn(SinkError):
    """A column ``mq.key_columns`` names is not in its table (at start, after a DDL, or in a
    row): the destination stops rather than key records by fewer columns."""

    def __init__(self, table: str, column: str) -> None:
        super().__init__(
            f"{table} has no column {column}, which mq.key_columns names as its key: add the "
            "column back or change mq.key_columns"
        )
        self.table = table
        self.column = column


class SinkStopped(SinkError):
    """The sink was stopped while (or before) putting entries into the store."""

    def __init__(self) -> None:
        super().__init__("event sink is not running; entries were not stored")


class SinkAlreadyStarted(SinkError):
    def __init__(self) -> None:
        super().__init__("event sink is already running; stop() it before start()")
