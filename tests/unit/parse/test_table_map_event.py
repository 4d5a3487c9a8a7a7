"""TABLE_MAP bodies built by hand from the server's layout (``bridge.parse.binlog.table_map``).

The encoders here follow MySQL's writer (``Table_map_log_event::write_data_body`` and the
``save_field_metadata`` of each field), not the decoder, so a shared misreading cannot pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.table_map import ColumnDef, collation_name, decode_table_map
from bridge.parse.binlog.table_meta import build_table_meta

from .rowbytes import packed_int

# Optional metadata field types.
SIGNEDNESS, DEFAULT_CHARSET, COLUMN_CHARSET, COLUMN_NAME = 1, 2, 3, 4
SET_STR_VALUE, ENUM_STR_VALUE, GEOMETRY_TYPE, SIMPLE_PRIMARY_KEY = 5, 6, 7, 8
PRIMARY_KEY_WITH_PREFIX, ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET = 9, 10, 11
COLUMN_VISIBILITY, VECTOR_DIMENSIONALITY = 12, 13


lenenc = packed_int


def packed(*values: int) -> bytes:
    return b"".join(lenenc(v) for v in values)


def strings(*values: bytes) -> bytes:
    return b"".join(lenenc(len(v)) + v for v in values)


def bits_msb_first(flags: list[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i // 8] |= 0x80 >> (i % 8)
    return bytes(out)


def char_metadata(real_type: int, length: int) -> bytes:
    """Field_string::save_field_metadata: the real type with the length's bits 8-9 folded into
    its bits 4-5 (inverted), then the length's low byte."""
    return bytes([real_type ^ ((length & 0x300) >> 4), length & 0xFF])


@dataclass
class Body:
    """A TABLE_MAP body: (type code, metadata bytes) per column, then TLV fields."""

    columns: list[tuple[int, bytes]]
    fields: list[tuple[int, bytes]] = field(default_factory=list)
    table_id: int = 0x0000_1234_5678
    id_size: int = 6
    flags: int = 1
    schema: bytes = b"shop"
    table: bytes = b"orders"
    nullable: list[bool] | None = None

    def __bytes__(self) -> bytes:
        count = len(self.columns)
        nullable = self.nullable if self.nullable is not None else [True] * count
        null_bits = bytearray((count + 7) // 8)
        for i, flag in enumerate(nullable):
            if flag:
                null_bits[i // 8] |= 1 << (i % 8)
        metadata = b"".join(meta for _, meta in self.columns)
        return (
            self.table_id.to_bytes(self.id_size, "little")
            + self.flags.to_bytes(2, "little")
            + lenenc(len(self.schema))
            + self.schema
            + b"\0"
            + lenenc(len(self.table))
            + self.table
            + b"\0"
            + lenenc(count)
            + bytes(code for code, _ in self.columns)
            + lenenc(len(metadata))
            + metadata
            + bytes(null_bits)
            + self.optional()
        )

    def optional(self) -> bytes:
        return b"".join(bytes([kind]) + lenenc(len(value)) + value for kind, value in self.fields)


def test_post_header_fields_names_and_null_bitmap() -> None:
    body = Body([(T.LONG, b""), (T.LONG, b"")], nullable=[False, True], flags=7)
    table = decode_table_map(bytes(body))
    assert (table.table_id, table.flags, table.schema, table.table) == (
        0x0000_1234_5678,
        7,
        "shop",
        "orders",
    )
    assert table.null_bitmask == b"\x02"
    assert table.columns == (ColumnDef(T.LONG), ColumnDef(T.LONG))
    assert table.has_names is False
    assert table.primary_key == ()


def test_a_six_byte_post_header_means_a_four_byte_table_id() -> None:
    body = bytes(Body([(T.LONG, b"")], table_id=0xDEADBEEF, id_size=4))
    assert decode_table_map(body, post_header_len=6).table_id == 0xDEADBEEF
    assert decode_table_map(body, post_header_len=6).schema == "shop"


def test_a_longer_post_header_is_skipped_after_the_flags() -> None:
    plain = bytes(Body([(T.LONG, b"")]))
    longer = plain[:8] + b"\xaa\xbb" + plain[8:]
    assert decode_table_map(longer, post_header_len=10) == decode_table_map(plain)


def test_a_post_header_shorter_than_known_is_refused() -> None:
    with pytest.raises(ValueError, match="post-header length 7"):
        decode_table_map(bytes(Body([(T.LONG, b"")])), post_header_len=7)


def test_names_are_length_encoded_not_seven_bit_varints() -> None:
    """A 64-character CJK name is 192 bytes: one length byte 0xC0 (a 7-bit varint reader would
    take it for a continuation byte)."""
    name = "列" * 64
    body = Body([(T.LONG, b"")], fields=[(COLUMN_NAME, strings(name.encode()))])
    body.table = "表".encode() * 64
    table = decode_table_map(bytes(body))
    assert table.columns[0].name == name
    assert table.table == "表" * 64
    assert table.has_names is True


@pytest.mark.parametrize(
    ("length", "first_byte"),
    [(10, 0xFE), (255, 0xFE), (256, 0xEE), (300, 0xEE), (600, 0xDE), (1020, 0xCE)],
)
def test_char_lengths_above_255_bytes_fold_into_the_real_type(length: int, first_byte: int) -> None:
    metadata = char_metadata(T.STRING, length)
    assert metadata[0] == first_byte
    column = decode_table_map(bytes(Body([(T.STRING, metadata)]))).columns[0]
    assert (column.type, column.max_length, column.size) == (T.STRING, length, 0)


def test_enum_and_set_are_logged_as_char_with_their_real_type() -> None:
    body = Body([(T.STRING, bytes([T.ENUM, 2])), (T.STRING, bytes([T.SET, 8]))])
    enum, set_ = decode_table_map(bytes(body)).columns
    assert (enum.type, enum.size, enum.max_length) == (T.ENUM, 2, 0)
    assert (set_.type, set_.size, set_.max_length) == (T.SET, 8, 0)


def test_every_metadata_layout() -> None:
    body = Body(
        [
            (T.FLOAT, b"\x04"),
            (T.DOUBLE, b"\x08"),
            (T.VARCHAR, (1200).to_bytes(2, "little")),
            (T.BIT, bytes([3, 1])),  # BIT(11): 11 % 8, 11 // 8
            (T.NEWDECIMAL, bytes([65, 30])),
            (T.TIME2, b"\x03"),
            (T.BLOB, b"\x03"),
            (T.JSON, b"\x04"),
            (T.GEOMETRY, b"\x04"),
            (T.VECTOR, b"\x04"),
            (T.BLOB_COMPRESSED, b"\x02"),
            (T.VARCHAR_COMPRESSED, (101).to_bytes(2, "little")),
            (T.LONG, b""),
            (T.YEAR, b""),
        ]
    )
    columns = decode_table_map(bytes(body)).columns
    assert [c.size for c in columns[:2]] == [4, 8]
    assert columns[2].max_length == 1200
    assert columns[3].bits == 11
    assert (columns[4].precision, columns[4].decimals) == (65, 30)
    assert columns[5].fsp == 3
    assert [c.length_size for c in columns[6:11]] == [3, 4, 4, 4, 2]
    assert columns[11].max_length == 101
    assert [c.type for c in columns] == [code for code, _ in body.columns]
    assert all(
        (c.max_length, c.length_size, c.size, c.precision, c.bits, c.fsp) == (0,) * 6
        for c in columns[12:]
    )


def test_a_column_count_above_250_is_length_encoded() -> None:
    body = Body([(T.TINY, b"")] * 299 + [(T.VARCHAR, b"\x10\x00")])
    assert bytes(body)[22:25] == b"\xfc\x2c\x01"  # after ids, flags and names
    table = decode_table_map(bytes(body))
    assert len(table.columns) == 300
    assert table.columns[-1].max_length == 16
    assert len(table.null_bitmask) == 38


def test_signedness_counts_numeric_columns_only_year_included() -> None:
    columns = [
        (T.YEAR, b""),
        (T.VARCHAR, b"\x08\x00"),
        (T.LONG, b""),
        (T.TINY, b""),
        (T.DOUBLE, b"\x08"),
    ]
    # numeric columns: YEAR, LONG, TINY, DOUBLE
    signedness = bits_msb_first([True, False, True, False])
    table = decode_table_map(bytes(Body(columns, fields=[(SIGNEDNESS, signedness)])))
    assert [c.unsigned for c in table.columns] == [True, False, False, True, False]


def test_default_charset_with_exceptions_counts_character_columns() -> None:
    columns = [(T.LONG, b""), (T.VARCHAR, b"\x08\x00"), (T.BLOB, b"\x02"), (T.STRING, b"\xfe\x04")]
    fields = [(DEFAULT_CHARSET, packed(255, 2, 8))]  # third character column: latin1
    table = decode_table_map(bytes(Body(columns, fields=fields)))
    assert [c.charset_id for c in table.columns] == [None, 255, 255, 8]
    assert [c.collation_name for c in table.columns] == [
        None,
        "utf8mb4_0900_ai_ci",
        "utf8mb4_0900_ai_ci",
        "latin1_swedish_ci",
    ]


def test_mariadb_counts_geometry_among_character_columns() -> None:
    columns = [(T.GEOMETRY, b"\x04"), (T.VARCHAR, b"\x08\x00")]
    body = bytes(Body(columns, fields=[(COLUMN_CHARSET, packed(63, 28))]))
    geometry, text = decode_table_map(body, mariadb=True).columns
    assert (geometry.collation_name, text.collation_name) == ("binary", "gbk_chinese_ci")
    with pytest.raises(
        ValueError, match=r"shop\.orders: .* cover 2 columns, the table has 1 .* is mariadb= right"
    ):
        decode_table_map(body)  # MySQL counts one character column here


def test_mysql_geometry_and_json_have_no_charset() -> None:
    columns = [(T.GEOMETRY, b"\x04"), (T.JSON, b"\x04"), (T.VARCHAR, b"\x08\x00")]
    table = decode_table_map(bytes(Body(columns, fields=[(COLUMN_CHARSET, packed(33))])))
    assert [c.collation_name for c in table.columns] == [None, None, "utf8mb3_general_ci"]


def test_enum_and_set_labels_are_decoded_in_their_column_charset() -> None:
    columns = [
        (T.STRING, bytes([T.ENUM, 1])),
        (T.STRING, bytes([T.SET, 1])),
        (T.STRING, bytes([T.ENUM, 1])),
    ]
    fields = [
        (
            ENUM_STR_VALUE,
            packed(2) + strings("é".encode("cp1252"), b"b") + packed(1) + strings(b""),
        ),
        (SET_STR_VALUE, packed(2) + strings("中".encode("gbk"), "文".encode("gbk"))),
        (ENUM_AND_SET_COLUMN_CHARSET, packed(8, 28, 45)),
    ]
    enum, set_, empty = decode_table_map(bytes(Body(columns, fields=fields))).columns
    assert enum.enum_values == ("é", "b")  # plain labels: no placeholder for index 0
    assert set_.set_values == ("中", "文")
    assert empty.enum_values == ("",)
    assert (enum.set_values, set_.enum_values) == ((), ())
    assert [enum.collation_name, set_.collation_name] == ["latin1_swedish_ci", "gbk_chinese_ci"]


def test_primary_keys_keep_their_order_and_prefixed_parts_count() -> None:
    columns = [(T.LONG, b""), (T.VARCHAR, b"\x40\x00"), (T.LONG, b"")]
    simple = decode_table_map(bytes(Body(columns, fields=[(SIMPLE_PRIMARY_KEY, packed(2, 0))])))
    assert simple.primary_key == (2, 0)
    assert [c.is_primary for c in simple.columns] == [True, False, True]
    prefixed = Body(columns, fields=[(PRIMARY_KEY_WITH_PREFIX, packed(1, 10, 0, 0))])
    table = decode_table_map(bytes(prefixed))
    assert table.primary_key == (1, 0)
    assert [c.is_primary for c in table.columns] == [True, True, False]


def test_visibility_geometry_types_and_vector_dimensions() -> None:
    columns = [(T.LONG, b""), (T.VECTOR, b"\x04"), (T.GEOMETRY, b"\x04"), (T.VECTOR, b"\x04")]
    fields = [
        (COLUMN_VISIBILITY, bits_msb_first([True, False, True, True])),
        (GEOMETRY_TYPE, packed(1)),
        (VECTOR_DIMENSIONALITY, packed(3, 16383)),
    ]
    table = decode_table_map(bytes(Body(columns, fields=fields)))
    assert [c.visible for c in table.columns] == [True, False, True, True]
    assert [c.geometry_type for c in table.columns] == [0, 0, 1, 0]
    assert [c.vector_dimensions for c in table.columns] == [0, 3, 0, 16383]


def test_unknown_optional_fields_are_skipped() -> None:
    columns = [(T.LONG, b""), (T.VARCHAR, b"\x08\x00")]
    known = [(COLUMN_NAME, strings(b"id", b"note")), (DEFAULT_CHARSET, packed(45))]
    with_unknown = [(200, b"\x01\x02\x03"), known[0], (14, bytes(300)), known[1], (99, b"")]
    assert decode_table_map(bytes(Body(columns, fields=with_unknown))) == decode_table_map(
        bytes(Body(columns, fields=known))
    )


def test_a_body_cut_anywhere_before_the_optional_metadata_is_refused_by_name() -> None:
    body = Body(
        [(T.LONG, b""), (T.STRING, char_metadata(T.STRING, 400)), (T.NEWDECIMAL, bytes([10, 2]))],
        fields=[(COLUMN_NAME, strings(b"a", b"b", b"c"))],
    )
    full = bytes(body)
    optional_at = len(full) - len(body.optional())
    what = re.compile(
        r"^TABLE_MAP(?: of shop\.orders)?: the body is truncated: (table id|flags|schema name|"
        r"the NUL after the schema name|table name|the NUL after the table name|column count|"
        r"column types|metadata size|column metadata|NULL bitmap) needs \d+ bytes at offset \d+,"
        r" \d+ left$"
    )
    for cut in range(optional_at):
        with pytest.raises(ValueError, match=what):
            decode_table_map(full[:cut])
    decode_table_map(full[:optional_at])  # the optional metadata is optional


def test_a_cut_inside_an_optional_field_is_refused() -> None:
    full = bytes(Body([(T.LONG, b"")], fields=[(COLUMN_NAME, strings(b"abc"))]))
    with pytest.raises(ValueError, match="truncated: optional metadata 4 needs 4 bytes"):
        decode_table_map(full[:-1])


def test_metadata_left_over_means_a_column_type_we_do_not_know() -> None:
    body = bytes(Body([(T.LONG, b"\x01\x02")]))
    with pytest.raises(ValueError, match="2 bytes more than its 1 columns' types need"):
        decode_table_map(body)


def test_metadata_cut_short_names_the_column() -> None:
    # The block declares 1 byte where the VARCHAR needs 2.
    body = bytes(Body([(T.VARCHAR, b"\x08")]))
    with pytest.raises(ValueError, match=r"column 0 \(type 15\): metadata is truncated"):
        decode_table_map(body)


def test_lists_that_do_not_match_the_columns_are_refused() -> None:
    columns = [(T.LONG, b""), (T.LONG, b"")]
    with pytest.raises(ValueError, match="COLUMN_NAME lists 1 columns, the table has 2"):
        decode_table_map(bytes(Body(columns, fields=[(COLUMN_NAME, strings(b"a"))])))
    with pytest.raises(ValueError, match="SIGNEDNESS has 0 bits for 2 columns"):
        decode_table_map(bytes(Body(columns, fields=[(SIGNEDNESS, b"")])))
    with pytest.raises(ValueError, match=r"primary key names columns \[5\] of 2"):
        decode_table_map(bytes(Body(columns, fields=[(SIMPLE_PRIMARY_KEY, packed(5))])))


def test_an_invalid_length_encoding_is_refused() -> None:
    body = bytearray(bytes(Body([(T.LONG, b"")])))
    body[8] = 0xFB  # the schema name's length: 0xFB is NULL in the protocol, not a length
    with pytest.raises(ValueError, match="schema name at offset 8 is 0xfb"):
        decode_table_map(bytes(body))


@pytest.mark.parametrize(
    ("collation_id", "mariadb", "name"),
    [
        (8, False, "latin1_swedish_ci"),
        (33, False, "utf8mb3_general_ci"),
        (63, True, "binary"),
        (224, False, "utf8mb4_unicode_ci"),
        (245, False, "utf8mb4_croatian_ci"),
        (245, True, "utf8mb4_croatian_mysql561_ci"),
        (255, False, "utf8mb4_0900_ai_ci"),
        (278, False, "utf8mb4_0900_as_cs"),
        (309, False, "utf8mb4_0900_bin"),
        (323, False, "utf8mb4_mn_cyrl_0900_as_cs"),
        (608, True, "utf8mb4_croatian_ci"),
        (1070, True, "utf8mb4_nopad_bin"),
        (1248, True, "utf8mb4_unicode_nopad_ci"),
        (2304, True, "utf8mb4_uca1400_ai_ci"),
        (2304 + 8 * 24 + 7, True, "utf8mb4_uca1400_croatian_nopad_as_cs"),
        (3072 + 8 * 9 + 2, True, "utf32_uca1400_turkish_as_ci"),
        (2048 + 8 * 21, True, None),  # an unassigned UCA 14.0.0 tailoring
        (3328, True, None),
        (1000, False, None),
    ],
)
def test_collation_names(collation_id: int, mariadb: bool, name: str | None) -> None:
    assert collation_name(collation_id, mariadb=mariadb) == name


def test_an_unknown_collation_keeps_its_id_and_counts_as_binary() -> None:
    columns = [(T.VARCHAR, b"\x08\x00")]
    column = decode_table_map(bytes(Body(columns, fields=[(COLUMN_CHARSET, packed(1000))])))
    assert (column.columns[0].charset_id, column.columns[0].collation_name) == (1000, None)


def test_build_table_meta_reads_the_decoded_columns() -> None:
    body = Body(
        [(T.LONG, b""), (T.VARCHAR, (256).to_bytes(2, "little")), (T.NEWDECIMAL, bytes([10, 2]))],
        fields=[
            (SIGNEDNESS, bits_msb_first([True, False])),
            (DEFAULT_CHARSET, packed(255)),
            (COLUMN_NAME, strings(b"id", b"note", b"price")),
            (SIMPLE_PRIMARY_KEY, packed(0)),
        ],
        nullable=[False, True, True],
    )
    table = decode_table_map(bytes(body))
    meta = build_table_meta(table.schema, table.table, table.columns, table.null_bitmask, None)
    assert [(c.name, c.mysql_type, c.is_key, c.nullable) for c in meta.columns] == [
        ("id", "int(10) unsigned", True, False),
        ("note", "varchar(64)", False, True),
        ("price", "decimal(10,2)", False, True),
    ]
