"""The schema history's files as JSON: definitions, dialects and DDL records.

One shape for every store, so a history moves between a file and ZooKeeper unchanged. A column
is a short list (name, type, nullable, charset, generated, invisible): a destination with
10,000 tables of 20 columns writes and reads its base in well under a second.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bridge.schema.definitions import ColumnDefinition, Dialect, Schemas, TableDefinition


class HistoryCodecError(ValueError):
    """A history document that does not have the expected shape."""


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a history record belongs in the binlog: the event's file and offset (and the
    GTID of its transaction, for messages)."""

    journal: str
    offset: int
    gtid: str = ""

    def sort_key(self) -> tuple[str, int]:
        return (self.journal, self.offset)

    def __str__(self) -> str:
        return f"{self.journal}:{self.offset}"


@dataclass(frozen=True, slots=True)
class DdlRecord:
    """One statement of the history's log: a DDL read at ``mark`` under ``schema`` (the
    session's current database), or, with ``table`` set, a definition re-read from the
    source (``canal-bridge schema reload``), which replaces the table's from ``mark`` on."""

    mark: Mark
    schema: str
    sql: str = ""
    table: TableDefinition | None = None


def table_to_json(table: TableDefinition) -> dict[str, Any]:
    return {
        "schema": table.schema,
        "name": table.name,
        "charset": table.charset,
        "primary_key": list(table.primary_key),
        "columns": [
            [c.name, c.column_type, c.nullable, c.charset, c.generated, c.invisible]
            for c in table.columns
        ],
    }


def table_from_json(data: dict[str, Any]) -> TableDefinition:
    try:
        return TableDefinition(
            schema=str(data["schema"]),
            name=str(data["name"]),
            columns=tuple(
                ColumnDefinition(
                    str(name), str(ctype), bool(nullable), charset, bool(gen), bool(inv)
                )
                for name, ctype, nullable, charset, gen, inv in data["columns"]
            ),
            primary_key=tuple(str(k) for k in data["primary_key"]),
            charset=data.get("charset"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise HistoryCodecError(f"a table definition without {exc}") from exc


def schemas_to_json(schemas: Schemas) -> dict[str, Any]:
    return {
        "dialect": asdict(schemas.dialect),
        "databases": dict(schemas.databases),
        "tables": [table_to_json(t) for t in schemas.tables.values()],
    }


def schemas_from_json(data: dict[str, Any]) -> Schemas:
    try:
        schemas = Schemas(Dialect(**data["dialect"]), dict(data["databases"]), {})
    except (KeyError, TypeError) as exc:
        raise HistoryCodecError(f"definitions without a valid {exc}") from exc
    for item in data.get("tables", ()):
        table = table_from_json(item)
        schemas.tables[schemas.key(table.schema, table.name)] = table
    return schemas


def mark_to_json(mark: Mark) -> dict[str, Any]:
    return {"journal": mark.journal, "offset": mark.offset, "gtid": mark.gtid}


def mark_from_json(data: dict[str, Any]) -> Mark:
    try:
        return Mark(str(data["journal"]), int(data["offset"]), str(data.get("gtid") or ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise HistoryCodecError(f"a position without a valid {exc}") from exc


def record_to_json(record: DdlRecord) -> dict[str, Any]:
    data: dict[str, Any] = {"at": mark_to_json(record.mark), "schema": record.schema}
    if record.table is not None:
        data["table"] = table_to_json(record.table)
    else:
        data["sql"] = record.sql
    return data


def record_from_json(data: dict[str, Any]) -> DdlRecord:
    try:
        table = data.get("table")
        return DdlRecord(
            mark_from_json(data["at"]),
            str(data["schema"]),
            str(data.get("sql", "")),
            table_from_json(table) if table is not None else None,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise HistoryCodecError(f"a DDL record without a valid {exc}") from exc
