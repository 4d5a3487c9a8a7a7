"""The configured TIMESTAMP zone: names and fixed offsets (the config accepts both)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

from bridge.parse.source import parse_time_zone


@pytest.mark.parametrize(
    ("text", "offset"),
    [("+00:00", 0), ("+08:00", 8 * 3600), ("-03:30", -(3 * 3600 + 1800)), ("+05:45", 20700)],
)
def test_fixed_offsets(text: str, offset: int) -> None:
    zone = parse_time_zone(text)
    assert zone.utcoffset(None) == dt.timedelta(seconds=offset)


def test_zone_names() -> None:
    assert parse_time_zone("Asia/Shanghai") == zoneinfo.ZoneInfo("Asia/Shanghai")
