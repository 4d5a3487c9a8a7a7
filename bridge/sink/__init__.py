"""Between parser and store: transaction grouping, table/field filters, column shaping,
backpressured puts."""

from bridge.sink.base import EventSink
from bridge.sink.exceptions import (
    InvalidFilter,
    MaskedKeyColumn,
    MissingKeyColumn,
    SinkAlreadyStarted,
    SinkError,
    SinkStopped,
)
from bridge.sink.filters import ColumnPredicate, FieldFilter, TableFilter
from bridge.sink.keys import KeyColumns
from bridge.sink.shaping import ColumnShaper
from bridge.sink.sink import EntrySink, SinkOptions
from bridge.sink.transaction_buffer import FlushCallback, TransactionBuffer

__all__ = [
    "ColumnPredicate",
    "ColumnShaper",
    "EntrySink",
    "EventSink",
    "FieldFilter",
    "FlushCallback",
    "InvalidFilter",
    "KeyColumns",
    "MaskedKeyColumn",
    "MissingKeyColumn",
    "SinkAlreadyStarted",
    "SinkError",
    "SinkOptions",
    "SinkStopped",
    "TableFilter",
    "TransactionBuffer",
]
