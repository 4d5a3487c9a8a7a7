"""The schema history: every row decoded with the table definition it was written under.

``definitions`` is the model, ``apply`` applies a DDL statement to it, ``capture`` reads it
from a live source, ``history`` is what a binlog reader decodes with, ``recorder`` and
``store`` keep it durable beside the destination's cursor (docs/schema-history.md).
"""

from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition
from bridge.schema.exceptions import (
    SchemaError,
    SchemaHistoryDamaged,
    SchemaHistoryGap,
    UnreadableDdl,
)

__all__ = [
    "ColumnDefinition",
    "Dialect",
    "SchemaError",
    "SchemaHistoryDamaged",
    "SchemaHistoryGap",
    "Schemas",
    "TableDefinition",
    "UnreadableDdl",
]
