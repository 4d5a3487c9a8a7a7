"""Rows events of the snapshot unit tests' table shop.<table> (key: id, region)."""

from __future__ import annotations

from bridge.entry import Column, Entry, EntryType, EventType, RowChange, RowData
from tests.unit.store.factories import header


def column(name: str, value: str | None, *, index: int = 0) -> Column:
    return Column(index, 4, name, False, False, value is None, value or "", "int")


def rows_event(
    offset: int, *keys: tuple[str, ...], table: str = "orders", update: bool = False
) -> Entry:
    """A rows event of shop.<table> at ``offset``: one row per key (id, region)."""
    datas = []
    for key in keys:
        image = tuple(
            column(n, v, index=i)
            for i, (n, v) in enumerate(zip(("id", "region"), key, strict=False))
        )
        if update:
            moved = (column("id", key[0] + "0"), *image[1:])
            datas.append(RowData(before=image, after=moved))
        else:
            datas.append(RowData(after=image))
        kind = EventType.UPDATE if update else EventType.INSERT
    change = RowChange(kind, row_datas=tuple(datas))
    return Entry(header(offset, 100, "shop", table, event_type=kind), EntryType.ROWDATA, change)
