"""``value_class``: the per-event model classes compare, hash and pickle by their fields as
the frozen dataclasses they replace did (their immutability is mypy's to check)."""

from __future__ import annotations

import pickle

import pytest

from bridge.entry import Column, Entry, EntryType, EventType, Header, RowChange, RowData
from bridge.model import value_class
from bridge.position import SnapshotHeader


def _entry(offset: int) -> Entry:
    header = Header("mysql-bin.000001", offset, 1, 1_700_000_000_000, "s", "t", EventType.INSERT)
    column = Column(0, 4, "id", True, True, False, "1", "int")
    change = RowChange(EventType.INSERT, row_datas=(RowData((), (column,)),))
    return Entry(header, EntryType.ROWDATA, change)


def test_equal_fields_are_equal_and_hash_alike() -> None:
    assert _entry(4) == _entry(4)
    assert hash(_entry(4)) == hash(_entry(4))
    assert _entry(4) != _entry(5)
    assert len({_entry(4), _entry(4), _entry(5)}) == 2


def test_a_value_survives_pickling() -> None:
    entry = _entry(4)
    assert pickle.loads(pickle.dumps(entry)) == entry
    snapshot = SnapshotHeader("", 0, 0, 0, "s", "t", EventType.INSERT, chunk="s.t:1")
    assert pickle.loads(pickle.dumps(snapshot)) == snapshot


def test_a_value_class_has_slots_only() -> None:
    @value_class
    class Point:
        x: int
        y: int = 0

    point = Point(1)
    assert (point.x, point.y) == (1, 0)
    assert not hasattr(point, "__dict__")
    with pytest.raises(AttributeError):
        point.z = 3  # type: ignore[attr-defined]
