"""Partial JSON updates: the diff format, applying diffs, and PARTIAL_UPDATE rows.

The binary JSON and the diff lists below are built by a small encoder written from MySQL's
formats (json_binary.cc, json_diff.cc), not from the decoder: it writes *small* containers,
while the decoder writes back *large* ones, so a wrong offset on either side shows. Expected
documents are written out literally; the random test compares with a plain-Python model of
``apply_json_diffs``.
"""

from __future__ import annotations

import copy
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

from bridge import native
from bridge.parse.binlog.codes import MysqlType as T
from bridge.parse.binlog.json_diff import (
    Cell,
    CorruptJsonDiff,
    DiffOp,
    JsonDiff,
    JsonDiffNotApplicable,
    PartialJsonWithoutBase,
    apply_diffs,
    parse_path,
    partial_columns,
    read_diffs,
    read_packed_int,
)
from bridge.parse.binlog.rows import RowDecoder
from bridge.parse.binlog.table_meta import ColumnMeta, TableMeta
from bridge.parse.binlog.values import TruncatedRowImage, decode_value
from tests.native_paths import compiled_module

from .rowbytes import bitmap, col, json_key_order, json_value, jsonb, lenenc, packed_int

JSON_COLUMN = col(T.JSON, "json", max_length=4)

# --------------------------------------------------------------------------- encoders


packed = packed_int


def diff_list(*diffs: tuple[int, str, Any]) -> bytes:
    """A partial column's value: (operation, path text, value; ignored for REMOVE)."""
    out = bytearray()
    for op, path, value in diffs:
        out += bytes([op]) + packed(len(path.encode())) + path.encode()
        if op != DiffOp.REMOVE:
            doc = jsonb(value)
            out += packed(len(doc)) + doc
    return struct.pack("<I", len(out)) + out


def render(doc: bytes) -> str:
    return decode_value(lenenc(doc, 4), 0, JSON_COLUMN)[0]


def rebuilt(before: Any, *diffs: tuple[int, str, Any]) -> str:
    parsed, end = read_diffs(diff_list(*diffs), 0)
    assert end == len(diff_list(*diffs))
    return render(apply_diffs(jsonb(before), parsed))


REP, INS, REM = DiffOp.REPLACE, DiffOp.INSERT, DiffOp.REMOVE

# --------------------------------------------------------------------------- the format


def test_read_diffs_operations_paths_and_values() -> None:
    raw = diff_list((REP, "$.a", 7), (INS, '$."we ird"', "x"), (REM, "$[last-1]", None))
    diffs, end = read_diffs(raw + b"tail", 0)
    assert end == len(raw)
    assert diffs == (
        JsonDiff(DiffOp.REPLACE, (b"a",), b"\x05\x07\x00"),
        JsonDiff(DiffOp.INSERT, (b"we ird",), b"\x0c\x01x"),
        JsonDiff(DiffOp.REMOVE, (Cell(1, from_end=True),)),
    )


def test_empty_diff_list_is_the_unchanged_document() -> None:
    assert read_diffs(b"\0\0\0\0", 0) == ((), 4)


def test_packed_lengths_of_long_paths_and_values() -> None:
    name, text = "k" * 300, "v" * 70_000  # 2-byte path length, 3-byte value length
    raw = diff_list((INS, f"$.{name}", text))
    assert raw[5:8] == b"\xfc" + (302).to_bytes(2, "little")
    assert rebuilt({"a": 1}, (INS, f"$.{name}", text)) == f'{{"a": 1, "{name}": "{text}"}}'
    assert read_packed_int(b"\xfd\x01\x02\x03", 0) == (0x030201, 4)
    assert read_packed_int(b"\xfe" + (1 << 40).to_bytes(8, "little"), 0) == (1 << 40, 9)


@pytest.mark.parametrize(
    ("text", "legs"),
    [
        ("$", ()),
        ("$.a.b_c[3]", (b"a", b"b_c", Cell(3))),
        ('$."a b"."x\\"y"', (b"a b", b'x"y')),
        ('$."dotted.key"[0]', (b"dotted.key", Cell(0))),
        ("$.ключ", ("ключ".encode(),)),
        ('$."\\u00e9 \\ud83d\\ude00"', ("é 😀".encode(),)),
        ("$[last]", (Cell(0, from_end=True),)),
        (" $ [ last - 2 ] . a ", (Cell(2, from_end=True), b"a")),
    ],
)
def test_paths(text: str, legs: tuple[object, ...]) -> None:
    assert parse_path(text.encode()) == legs


@pytest.mark.parametrize(
    "text", ["", "a", "$.*", "$**.a", "$[*]", "$[1 to 2]", "$[]", "$[-1]", '$."open', "$."]
)
def test_paths_naming_no_single_value_are_corrupt(text: str) -> None:
    with pytest.raises(CorruptJsonDiff, match="bad JSON diff path"):
        parse_path(text.encode())


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"\x05\0\0\0", "runs past|ends at"),  # length beyond the event
        (b"\x02\0\0\0\x07\x01", "unknown JSON diff operation 7"),
        (b"\x04\0\0\0\x00\x01$\x00", "value of 0 bytes"),
        (b"\x05\0\0\0\x00\x09$.a", "path ends at"),
        (b"\x01", "runs past"),
    ],
)
def test_corrupt_diff_lists(raw: bytes, match: str) -> None:
    with pytest.raises(CorruptJsonDiff, match=match):
        read_diffs(raw, 0)


def test_partial_bits_cover_every_json_column_in_column_order() -> None:
    json_columns = (1, 3, 4, 6, 7, 9, 10, 11, 12)  # nine: two bytes of partial_bits
    assert partial_columns(b"\x00rest", 0, json_columns) == (frozenset(), 1)
    data = b"\x01" + bitmap([True, False, False, True, False, False, False, False, True])
    assert partial_columns(data, 0, json_columns) == (frozenset({1, 6, 12}), 3)
    with pytest.raises(CorruptJsonDiff, match="unknown binlog_row_value_options"):
        partial_columns(b"\x02", 0, json_columns)
    with pytest.raises(CorruptJsonDiff, match="partial_bits"):
        partial_columns(b"\x01\x00", 0, json_columns)


# --------------------------------------------------------------------------- applying


def test_nested_replace_insert_remove() -> None:
    before = {"a": {"b": [1, {"c": "x"}]}, "z": [True, None]}
    assert (
        rebuilt(before, (REP, "$.a.b[1].c", "y"))
        == '{"a": {"b": [1, {"c": "y"}]}, "z": [true, null]}'
    )
    assert rebuilt(before, (INS, "$.a.b[1].d", 2.5), (REM, "$.z[0]", None)) == (
        '{"a": {"b": [1, {"c": "x", "d": 2.5}]}, "z": [null]}'
    )
    assert rebuilt(before, (REP, "$.a", [1, 2])) == '{"a": [1, 2], "z": [true, null]}'


def test_array_positions() -> None:
    assert rebuilt([1, 2, 3], (INS, "$[1]", 9)) == "[1, 9, 2, 3]"
    assert rebuilt([1, 2, 3], (INS, "$[10]", 9)) == "[1, 2, 3, 9]"  # JSON_SET past the end
    assert rebuilt([1, 2, 3], (INS, "$[last]", 9)) == "[1, 2, 9, 3]"
    assert rebuilt([1, 2, 3], (REP, "$[last]", "z"), (REM, "$[0]", None)) == '[2, "z"]'
    assert rebuilt([1, 2, 3], (REM, "$[last-1]", None)) == "[1, 3]"
    assert rebuilt([], (INS, "$[0]", {"k": "v"})) == '[{"k": "v"}]'


def test_new_keys_land_in_mysql_key_order() -> None:
    """MySQL stores keys by length, then bytes: "zz" goes before "ccc", "b" after "a"."""
    before = {"a": 1, "bb": 2, "ccc": 3}
    assert render(jsonb(before)) == '{"a": 1, "bb": 2, "ccc": 3}'
    assert rebuilt(before, (INS, "$.zz", 4)) == '{"a": 1, "bb": 2, "zz": 4, "ccc": 3}'
    assert rebuilt(before, (INS, "$.b", 5)) == '{"a": 1, "b": 5, "bb": 2, "ccc": 3}'
    assert rebuilt(before, (INS, "$.B", 5)) == '{"B": 5, "a": 1, "bb": 2, "ccc": 3}'
    assert (
        rebuilt(before, (INS, "$.aaaa", 0), (REM, "$.bb", None)) == '{"a": 1, "ccc": 3, "aaaa": 0}'
    )


def test_quoted_and_unicode_keys_and_values() -> None:
    before = {"é": "ü", "a b": 1}
    assert rebuilt(before, (REP, '$."a b"', "😀")) == '{"é": "ü", "a b": "😀"}'
    assert rebuilt(before, (INS, '$."x\\"y"', 1)) == '{"é": "ü", "a b": 1, "x"y": 1}'
    assert rebuilt(before, (INS, "$.ключ", "знач")) == '{"é": "ü", "a b": 1, "ключ": "знач"}'
    assert rebuilt(before, (REM, '$."\\u00e9"', None)) == '{"a b": 1}'


def test_large_documents_are_copied_around_the_change() -> None:
    """A large object (MySQL writes one when a small one would pass 64 KiB) keeps its
    untouched members, small containers among them, as they were."""
    big = {"list": list(range(20_000)), "s": "x" * 70_000, "n": {"deep": [1, 2]}}
    diffs = read_diffs(diff_list((REP, "$.n.deep[1]", 3), (INS, "$.m", "é")), 0)[0]
    after = render(apply_diffs(_as_large(big), diffs))
    assert after == render(_as_large({**big, "n": {"deep": [1, 3]}, "m": "é"}))
    assert after.startswith('{"m": "é", "n": {"deep": [1, 3]}, "s": "xxx')
    assert after.endswith('xxx", "list": [0, 1, 2, ' + ", ".join(map(str, range(3, 20_000))) + "]}")


def _as_large(value: dict[str, Any]) -> bytes:
    """A large object whose members are small documents."""
    items = sorted(value.items(), key=lambda kv: json_key_order(kv[0]))
    header = 8 + len(items) * 6 + len(items) * 5
    entries, tail = bytearray(), bytearray()
    for name, _ in items:
        entries += struct.pack("<IH", header + len(tail), len(name.encode()))
        tail += name.encode()
    for _, item in items:
        kind, data = json_value(item, large=False)
        entries += struct.pack("<BI", kind, header + len(tail))
        tail += data
    return bytes([1]) + struct.pack("<II", len(items), header + len(tail)) + entries + tail


@pytest.mark.parametrize(
    ("before", "diff", "match"),
    [
        ({"a": 1}, (REP, "$", 2), "root"),
        ({"a": 1}, (REP, "$.b", 2), "no member"),
        ({"a": 1}, (INS, "$.a", 2), "member exists"),
        ({"a": 1}, (REM, "$.b", None), "no member"),
        ({"a": 1}, (REP, "$.a.b", 2), "into a scalar"),
        ({"a": 1}, (REP, "$[0]", 2), "does not fit"),  # no auto-wrapping
        ({"a": [1]}, (REP, "$.a[1]", 2), "no element in an array of 1"),
        ({"a": [1]}, (REM, "$.a[3]", None), "no element"),
        ({"a": [1]}, (INS, "$.b[0]", 2), "not in the before image"),
        ([1], (REP, "$.a", 2), "does not fit"),
        (5, (REP, "$[0]", 2), "into a scalar"),
    ],
)
def test_diffs_that_do_not_fit_the_document(
    before: Any, diff: tuple[int, str, Any], match: str
) -> None:
    with pytest.raises(JsonDiffNotApplicable, match=match):
        rebuilt(before, diff)


def test_corrupt_before_document() -> None:
    diffs = read_diffs(diff_list((REP, "$.a", 2)), 0)[0]
    with pytest.raises(CorruptJsonDiff, match="corrupt binary JSON"):
        apply_diffs(jsonb({"a": 1})[:6], diffs)
    with pytest.raises(JsonDiffNotApplicable, match="empty"):
        apply_diffs(b"", diffs)


# ------------------------------------------------------------- random diffs against a model


def _model_apply(doc: Any, op: int, path: list[str | int], value: Any) -> None:
    parent = doc
    for leg in path[:-1]:
        parent = parent[leg]
    last = path[-1]
    if op == REM:
        del parent[last]
    elif op == INS and isinstance(parent, list):
        parent.insert(min(int(last), len(parent)), value)
    else:
        parent[last] = value


def _random_value(rng: random.Random, depth: int) -> Any:
    choice = rng.randrange(9 if depth < 3 else 6)
    scalars = [None, True, rng.randint(-40_000, 40_000), rng.random() * 100, "s" * rng.randrange(3)]
    if choice < 5:
        return scalars[choice]
    if choice == 5:
        return "ü" + str(rng.randrange(1000))
    if choice < 8:
        return {
            rng.choice("abcdéxyz") * rng.randint(1, 3): _random_value(rng, depth + 1)
            for _ in range(rng.randrange(4))
        }
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _random_diff(rng: random.Random, doc: Any) -> tuple[int, list[str | int], str, Any]:
    """A diff that fits ``doc``: (op, model path, path text, value)."""
    path: list[str | int] = []
    text, node = "$", doc
    while True:
        candidates = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if rng.random() < 0.5 or not candidates:
            break
        leg, child = rng.choice(candidates)
        if not isinstance(child, (dict, list)):
            break
        path.append(leg)
        text += f'."{leg}"' if isinstance(leg, str) else f"[{leg}]"
        node = child
    value = _random_value(rng, 2)
    if isinstance(node, dict):
        existing = [k for k in node if rng.random() < 0.7]
        if existing:
            key = rng.choice(existing)
            op = rng.choice([REP, REM])
            return op, [*path, key], f'{text}."{key}"', value
        key = rng.choice(["n", "é", "zz", "aaaa", "b"]) + str(rng.randrange(3))
        if key in node:
            return REP, [*path, key], f'{text}."{key}"', value
        return INS, [*path, key], f'{text}."{key}"', value
    op = rng.choice([REP, REM, INS]) if node else INS
    index = rng.randrange(len(node) + (3 if op == INS else 0))
    return op, [*path, index], f"{text}[{index}]", value


def _random_case(
    rng: random.Random, spell: Callable[[str], str] = lambda text: text
) -> tuple[bytes, Any, list[tuple[int, str, Any]]]:
    """A random document (its binary form), the document after 1-4 random diffs that fit
    it, and those diffs (op, path text as ``spell`` writes it, value)."""
    doc = {"root": _random_value(rng, 0), "list": [_random_value(rng, 1) for _ in range(3)]}
    before = jsonb(doc)
    diffs = []
    for _ in range(rng.randint(1, 4)):
        op, path, text, value = _random_diff(rng, doc)
        _model_apply(doc, op, path, copy.deepcopy(value))
        diffs.append((op, spell(text), value))
    return before, doc, diffs


def test_random_diffs_match_the_full_document() -> None:
    rng = random.Random(20240611)
    applied = 0
    for _ in range(400):
        before, doc, diffs = _random_case(rng)
        parsed, _ = read_diffs(diff_list(*diffs), 0)
        assert render(apply_diffs(before, parsed)) == render(jsonb(doc)), diffs
        applied += len(diffs)
    assert applied > 800


def _python_applied(before: bytes, raw: bytes) -> bytes | None:
    """What the Python path makes of the diff list ``raw``: the document, or None for an
    error."""
    try:
        diffs, _ = read_diffs(raw, 0)
        return apply_diffs(before, diffs)
    except (CorruptJsonDiff, JsonDiffNotApplicable):
        return None


def _spelled(rng: random.Random, text: str) -> str:
    """``text`` (a path) with the other spellings MySQL's parser takes: spaces between tokens,
    plain member names, ``[last]`` and ``[last - n]``."""
    text = text.replace(".", rng.choice([".", " . ", ".\t"]))
    text = text.replace("[", rng.choice(["[", "[ "])).replace("]", rng.choice(["]", " ]"]))
    if rng.random() < 0.5:
        text = text.replace('"', "")
    return text


def test_the_compiled_module_applies_what_python_applies() -> None:
    # Random documents, fitting diffs in every spelling, then the same lists damaged: the
    # compiled twin gives Python's very bytes, declines exactly where Python raises, and takes
    # every fitting list whose names need no JSON unescaping.
    compiled = compiled_module()
    rng = random.Random(20261129)
    taken = declined = 0
    for case in range(600):
        before, _, diffs = _random_case(rng, lambda text: _spelled(rng, text))
        raw = diff_list(*diffs)
        if case % 3 == 2:  # damaged: a byte changed, or the list cut short
            cut = bytearray(raw)
            at = rng.randrange(4, len(cut))
            cut[at] = rng.randrange(256)
            raw = bytes(cut[: rng.randrange(at, len(cut) + 1)])
        expected = _python_applied(before, raw)
        got = compiled.apply_json_diffs(before, raw, 4, len(raw))
        if got is None:
            declined += 1
            assert expected is None or case % 3 == 2, diffs
        else:
            taken += 1
            assert got == expected, diffs
    assert taken > 350
    assert declined > 100


def test_the_compiled_module_declines_what_only_python_reads() -> None:
    compiled = compiled_module()
    before = jsonb({"a\u00e9": 1, "b": [1, 2]})
    for path in ('$."a\\u00e9"', "$.b[last-9]", "$.b[1 to 2]", "$", "$.*"):
        raw = diff_list((REP, path, 5))
        assert compiled.apply_json_diffs(before, raw, 4, len(raw)) is None, path
    # The escaped name is Python's to read, and it applies it.
    raw = diff_list((REP, '$."a\\u00e9"', 5))
    assert render(apply_diffs(before, read_diffs(raw, 0)[0])) == '{"b": [1, 2], "aé": 5}'


# --------------------------------------------------------------------------- rows events

TABLE = TableMeta(
    "shop",
    "docs",
    (
        ColumnMeta(0, "id", T.LONG, "int", is_key=True, nullable=False),
        ColumnMeta(1, "j", T.JSON, "json", max_length=4),
        ColumnMeta(2, "note", T.VARCHAR, "varchar(64)", charset="utf-8", max_length=256),
        ColumnMeta(3, "k", T.JSON, "json", max_length=4),
    ),
)


@pytest.fixture(params=["python", "compiled"])
def reader_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The plans' readers are compiled where the module is built; rows come out the same."""
    path: str = request.param
    monkeypatch.setattr(native, "module", compiled_module() if path == "compiled" else None)
    return path


def row_image(
    present: list[bool], values: list[Any], partial: dict[int, bytes] | None = None
) -> bytes:
    """An image of the ``present`` columns; values are ints (id), str (note), JSON values,
    or None; ``partial`` maps a column index to its diff list."""
    partial = partial or {}
    chosen = [i for i, p in enumerate(present) if p]
    out = bytearray(bitmap([values[i] is None and i not in partial for i in chosen]))
    for i in chosen:
        if i in partial:
            out += partial[i]
        elif values[i] is None:
            continue
        elif i == 0:
            out += struct.pack("<i", values[i])
        elif i == 2:
            out += lenenc(values[i].encode(), 2)
        else:
            out += lenenc(jsonb(values[i]), 4)
    return bytes(out)


FULL = [True] * 4


@pytest.mark.usefixtures("reader_path")
def test_partial_update_equals_the_full_update() -> None:
    before = [7, {"a": 1, "bb": [1, 2]}, "n", ["x"]]
    after = [7, {"a": 1, "b": "new", "bb": [1, 2, 3]}, "m", ["x"]]
    diffs = diff_list((INS, "$.b", "new"), (INS, "$.bb[9]", 3))
    partial = bitmap(FULL) + bitmap(FULL)
    partial += row_image(FULL, before) + b"\x01" + bitmap([True, True])
    partial += row_image(FULL, after, {1: diffs, 3: diff_list()})
    full = bitmap(FULL) + bitmap(FULL) + row_image(FULL, before) + row_image(FULL, after)
    decoder = RowDecoder(TABLE)
    (row,) = decoder.decode("partial_update", partial, 4)
    assert row == RowDecoder(TABLE).decode("update", full, 4)[0]
    assert [(c.value, c.updated) for c in row.after] == [
        ("7", False),
        ('{"a": 1, "b": "new", "bb": [1, 2, 3]}', True),
        ("m", True),
        ('["x"]', False),
    ]


@pytest.mark.usefixtures("reader_path")
def test_rows_without_diffs_and_several_rows() -> None:
    rows = [
        ([1, {"a": 1}, "x", None], [1, {"a": 2}, "x", None], {1: diff_list((REP, "$.a", 2))}),
        ([2, [1], None, {"k": 0}], [2, [1], "y", {"k": 0}], {}),  # value_options 0
        (
            [3, {"z": [0]}, "x", [5]],
            [3, {"z": []}, "x", [6]],
            {1: diff_list((REM, "$.z[0]", None))},
        ),
    ]
    body = bitmap(FULL) + bitmap(FULL)
    full = bitmap(FULL) + bitmap(FULL)
    for old, new, diffs in rows:
        body += row_image(FULL, old)
        body += b"\x01" + bitmap([1 in diffs, 3 in diffs]) if diffs else b"\x00"
        body += row_image(FULL, new, diffs)
        full += row_image(FULL, old) + row_image(FULL, new)
    got = RowDecoder(TABLE).decode("partial_update", body, 4)
    assert got == RowDecoder(TABLE).decode("update", full, 4)
    assert [r.after[1].value for r in got] == ['{"a": 2}', "[1]", '{"z": []}']


@pytest.mark.usefixtures("reader_path")
def test_the_rebuilt_update_body_reads_as_the_full_update() -> None:
    # What the compiled writer is given: the rows' value options gone, the diffs applied.
    old, new = [4, {"a": [1, {"b": 2}]}, "x", {"k": "v"}], [4, {"a": [1, {"b": 3}]}, "y", {}]
    diffs = {1: diff_list((REP, "$.a[1].b", 3)), 3: diff_list((REM, "$.k", None))}
    body = bitmap(FULL) + bitmap(FULL)
    full = bitmap(FULL) + bitmap(FULL)
    for options in (b"\x01" + bitmap([True, True]), b"\x00"):
        body += row_image(FULL, old) + options
        body += row_image(FULL, new, diffs if options != b"\x00" else None)
        full += row_image(FULL, old) + row_image(FULL, new)
    decoder = RowDecoder(TABLE)
    before_plan, after_plan, at = decoder.images("partial_update", body, 4)
    rebuilt = decoder.update_body(body, at, before_plan, after_plan)
    assert decoder.decode("update", rebuilt, 4) == decoder.decode("update", full, 4)
    with pytest.raises(TruncatedRowImage, match=r"^table shop\.docs: "):
        decoder.update_body(body[:-3], at, before_plan, after_plan)


@pytest.mark.usefixtures("reader_path")
def test_minimal_images_without_the_json_column() -> None:
    """MINIMAL with a primary key: the before image is the key, the after image the diff."""
    key_only, json_only = [True, False, False, False], [False, True, False, False]
    body = bitmap(key_only) + bitmap(json_only) + row_image(key_only, [5, None, None, None])
    body += b"\x01" + bitmap([True, False])
    body += row_image(json_only, [None, None, None, None], {1: diff_list((REP, "$.a", 2))})
    with pytest.raises(PartialJsonWithoutBase) as caught:
        RowDecoder(TABLE).decode("partial_update", body, 4)
    message = str(caught.value)
    assert message.startswith("table shop.docs: column `j` ")
    assert "set binlog_row_image=FULL" in message
    # the same change logged with the full document decodes like any MINIMAL update
    bitmaps = bitmap(key_only) + bitmap(json_only)
    old, new = row_image(key_only, [5, None, None, None]), row_image(json_only, [0, {"a": 2}, 0, 0])
    (row,) = RowDecoder(TABLE).decode("partial_update", bitmaps + old + b"\x00" + new, 4)
    assert row == RowDecoder(TABLE).decode("update", bitmaps + old + new, 4)[0]
    assert [(c.name, c.value, c.updated) for c in row.after] == [("j", '{"a": 2}', True)]


@pytest.mark.usefixtures("reader_path")
def test_a_diff_for_a_null_or_mismatched_document() -> None:
    body = bitmap(FULL) + bitmap(FULL) + row_image(FULL, [1, None, "x", None])
    body += b"\x01" + bitmap([True, False])
    body += row_image(FULL, [1, None, "x", None], {1: diff_list((REP, "$.a", 2))})
    with pytest.raises(JsonDiffNotApplicable, match=r"table shop\.docs: column `j` is NULL"):
        RowDecoder(TABLE).decode("partial_update", body, 4)
    body = bitmap(FULL) + bitmap(FULL) + row_image(FULL, [1, {"b": 1}, "x", None])
    body += b"\x01" + bitmap([True, False])
    body += row_image(FULL, [1, None, "x", None], {1: diff_list((REP, "$.a", 2))})
    with pytest.raises(
        JsonDiffNotApplicable, match=r"table shop.docs: column `j`: JSON diff REPLACE \$\.\"a\""
    ):
        RowDecoder(TABLE).decode("partial_update", body, 4)
