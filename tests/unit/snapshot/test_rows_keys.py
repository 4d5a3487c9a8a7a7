"""``describe_table``'s key choice and the key values of selected rows, from scripted
``information_schema`` answers (bytes, as a connection with binary results gives them)."""

from __future__ import annotations

from decimal import Decimal
from types import TracebackType
from typing import Any

import pytest

from bridge.parse.binlog.values import DecodeOptions
from bridge.snapshot.columns import chunking_key
from bridge.snapshot.rows import (
    SnapshotTable,
    TableWithoutKey,
    UnsupportedSnapshotColumn,
    chunk_rows,
    decode_key,
    describe_table,
    encode_key,
    key_values,
    row_data,
    window_keys,
)
from bridge.snapshot.window import key_of

OPTIONS = DecodeOptions()


def column(
    name: str,
    data_type: str,
    column_type: str = "",
    *,
    key: str = "",
    nullable: bool = True,
    collation: str | None = None,
    octets: int | None = None,
    precision: int | None = None,
    scale: int | None = None,
    fsp: int | None = None,
) -> tuple[Any, ...]:
    """One information_schema.COLUMNS row as describe_table selects it."""
    text = column_type or data_type
    ids = {"latin1_swedish_ci": 8, "utf8mb4_general_ci": 45}
    return tuple(
        v.encode() if isinstance(v, str) else v
        for v in (
            name,
            data_type,
            text,
            key,
            "YES" if nullable else "NO",
            collation,
            ids.get(collation or ""),
            octets,
            precision,
            scale,
            fsp,
            "",
        )
    )


class ScriptedConnection:
    """Answers describe_table's two queries: the COLUMNS rows, then the unique index rows
    (index name, column name or None for an expression, prefix length or None)."""

    def __init__(
        self, columns: list[tuple[Any, ...]], indexes: list[tuple[Any, ...]], version: str
    ) -> None:
        self.columns = columns
        self.indexes = indexes
        self.version = version
        self._result: list[tuple[Any, ...]] = []

    def get_server_info(self) -> str:
        return self.version

    def cursor(self) -> ScriptedConnection:
        return self

    def __enter__(self) -> ScriptedConnection:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        assert params == ("db", "t")
        if "information_schema.COLUMNS" in sql:
            self._result = self.columns
        else:
            assert "information_schema.STATISTICS" in sql
            self._result = [
                tuple(v.encode() if isinstance(v, str) else v for v in row) for row in self.indexes
            ]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._result


MARIADB = "10.11.19-MariaDB-log"
MYSQL = "9.7.4"


def described(
    columns: list[tuple[Any, ...]], indexes: list[tuple[Any, ...]], version: str = MARIADB
) -> SnapshotTable:
    table = describe_table(ScriptedConnection(columns, indexes, version), "db", "t", OPTIONS)
    assert table is not None
    return table


def test_a_table_without_a_usable_key_is_refused_in_one_line() -> None:
    columns = [
        column("a", "int", "int(11)"),
        column(
            "t", "varchar", "varchar(20)", nullable=False, collation="latin1_swedish_ci", octets=20
        ),
        column("n", "int", "int(11)", nullable=False),
    ]
    indexes = [
        ("a", "a", None),  # unique but nullable
        ("t", "t", 4),  # a prefix of t
        ("functional", None, None),  # an expression (MySQL functional key part)
    ]
    with pytest.raises(TableWithoutKey) as raised:
        described(columns, indexes)
    assert str(raised.value) == (
        "table db.t has no primary key (nor a unique index on NOT NULL columns): add one, or "
        "narrow snapshot.tables"
    )
    # The negative case: the same table with n unique is chunked by n.
    assert described(columns, [*indexes, ("n_key", "n", None)]).key_columns == ("n",)


def test_a_table_that_is_gone_is_none() -> None:
    conn = ScriptedConnection([], [], MARIADB)
    assert describe_table(conn, "db", "t", OPTIONS) is None


def test_the_primary_key_wins_in_index_order_and_flags_is_key() -> None:
    columns = [
        column(
            "a",
            "varchar",
            "varchar(8)",
            key="PRI",
            nullable=False,
            collation="utf8mb4_general_ci",
            octets=32,
        ),
        column("n", "int", "int(11)"),
        column("b", "bigint", "bigint(20)", key="PRI", nullable=False),
        column("u", "int", "int(11)", key="UNI"),
    ]
    indexes = [("PRIMARY", "b", None), ("PRIMARY", "a", None), ("u", "u", None)]
    table = described(columns, indexes)
    assert table.key_columns == ("b", "a")
    assert table.key_positions == (2, 0)
    assert [c.is_key for c in table.meta.columns] == [True, False, True, False]
    row = row_data(table, (b"k", 1, 2, None))
    assert [(c.name, c.value, c.is_key, c.mysql_type) for c in row.after] == [
        ("a", "k", True, "varchar(8)"),
        ("n", "1", False, "int(11)"),
        ("b", "2", True, "bigint(20)"),
        ("u", "", False, "int(11)"),
    ]
    assert key_values(table, (b"k", 1, 2, None)) == (2, "k")


def test_a_chunk_decodes_as_its_rows_one_by_one_and_keys_as_their_columns() -> None:
    # A composite key out of column order, NULLs, an empty key string and a NULL-only row:
    # one multi-row body, one decoder call, and the same rows as decoding each alone.
    columns = [
        column("a", "varchar", "varchar(8)", key="PRI", nullable=False,
               collation="utf8mb4_general_ci", octets=32),
        column("n", "int", "int(11)"),
        column("b", "bigint", "bigint(20)", key="PRI", nullable=False),
        column("u", "int", "int(11)", key="UNI"),
    ]  # fmt: skip
    table = described(columns, [("PRIMARY", "b", None), ("PRIMARY", "a", None)])
    raws = [(b"k", 1, 2, None), (b"", None, -7, 9), ("ü".encode(), 2**31 - 1, 0, None)]
    chunk, image_bytes = chunk_rows(table, raws)
    assert image_bytes == len(table.write_body(raws))
    assert list(chunk) == [row_data(table, raw) for raw in raws]
    assert [row.after for row in chunk] == [row_data(table, raw).after for raw in raws]
    assert window_keys(table, chunk) == [key_of(row.after, table.key_columns) for row in chunk]
    assert window_keys(table, chunk) == [("2", "k"), ("-7", ""), ("0", "ü")]
    assert chunk_rows(table, []) == ((), 0)
    with pytest.raises(ValueError, match="3 values for 4 columns"):
        chunk_rows(table, [(b"k", 1, 2, None), (b"x", 1, 2)])


def test_the_smallest_unique_not_null_index_then_its_name() -> None:
    not_null = {"a", "b", "c"}
    wide = [("wide", "a", None), ("wide", "b", None)]
    assert chunking_key([*wide, ("z_one", "c", None), ("y_one", "b", None)], not_null) == ("b",)
    assert chunking_key(wide, not_null) == ("a", "b")
    assert chunking_key(wide, {"a"}) is None


def test_key_values_of_binary_text_decimal_bit_and_timestamp_keys() -> None:
    columns = [
        column("bn", "binary", "binary(4)", key="PRI", nullable=False, octets=4),
        column(
            "l",
            "varchar",
            "varchar(4)",
            key="PRI",
            nullable=False,
            collation="latin1_swedish_ci",
            octets=4,
        ),
        column("m", "decimal", "decimal(30,10)", key="PRI", nullable=False, precision=30, scale=10),
        column("b", "bit", "bit(12)", key="PRI", nullable=False, precision=12),
        column("ts", "timestamp", "timestamp(3)", key="PRI", nullable=False, fsp=3),
        column("f", "float", "float"),
    ]
    indexes = [("PRIMARY", name, None) for name in ("ts", "bn", "l", "m", "b")]
    table = described(columns, indexes, MYSQL)
    assert table.select_list == (
        "`bn`, `l`, CAST(`m` AS CHAR), `b`, UNIX_TIMESTAMP(`ts`), CAST(`f` AS DOUBLE), "
        "CAST(`ts` AS CHAR)"
    )
    assert table.key_positions == (6, 0, 1, 2, 3)
    raw = (
        b"a\x00\x00\x00",
        "é".encode("cp1252"),
        b"12345678901234567890.0000000001",
        b"\x0f\xff",
        b"1730611800.500",
        1.5,
        b"2024-11-03 05:30:00.500",
    )
    values = key_values(table, raw)
    assert values == (
        "2024-11-03 05:30:00.500",
        b"a\x00\x00\x00",  # the whole BINARY(4): compared as bytes
        "é",  # text: compared in the column's collation
        Decimal("12345678901234567890.0000000001"),
        4095,
    )
    encoded = encode_key(values)
    assert all(isinstance(kind, str) and isinstance(text, str) for kind, text in encoded)
    assert decode_key(encoded) == values
    row = {c.name: c.value for c in row_data(table, raw).after}
    assert row["ts"].endswith(".500")
    assert row["b"] == "4095"


@pytest.mark.parametrize(
    "values", [(0,), (-(1 << 63), (1 << 64) - 1), (b"", b"\x00\xff"), ("", "😀"), (0.1, -2.5e-300)]
)
def test_encoded_keys_round_trip(values: tuple[Any, ...]) -> None:
    assert decode_key(encode_key(values)) == values


@pytest.mark.parametrize("data", [[["int", "x"]], [["nope", "1"]], [["bytes", "!!"]], [1]])
def test_decode_key_refuses_what_encode_key_never_wrote(data: Any) -> None:
    with pytest.raises(ValueError, match="not a snapshot key"):
        decode_key(data)


def test_enum_labels_from_column_type_and_a_type_no_snapshot_reads() -> None:
    columns = [
        column("id", "int", "int(11)", key="PRI", nullable=False),
        column("e", "enum", "enum('a','it''s','b\\\\s','')", collation="utf8mb4_general_ci"),
    ]
    table = described(columns, [("PRIMARY", "id", None)])
    assert table.meta.columns[1].enum_values == ("a", "it's", "b\\s", "")
    assert [c.value for c in row_data(table, (1, 3)).after] == ["1", "b\\s"]
    with pytest.raises(UnsupportedSnapshotColumn, match="column `u` of type uuid"):
        described([*columns, column("u", "uuid")], [("PRIMARY", "id", None)])
