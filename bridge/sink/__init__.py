"""Between parser and store: transaction grouping, table/field filters, backpressured puts."""

from bridge.sink.base import EventSink
from bridge.sink.exceptions import InvalidFilter, SinkAlreadyStarted, SinkError, SinkStopped
from bridge.sink.filters import ColumnPredicate, FieldFilter, TableFilter
from bridge.sink.sink import EntrySink, SinkOptions
from bridge.sink.transaction_buffer import FlushCallback, TransactionBuffer

__all__ = [
    "ColumnPredicate",
    "EntrySink",
    "EventSink",
    "FieldFilter",
    "FlushCallback",
    "InvalidFilter",
    "SinkAlreadyStarted",
    "SinkError",
    "SinkOptions",
    "SinkStopped",
    "TableFilter",
    "TransactionBuffer",
]
