"""Positions and ranges for the meta tests."""

from __future__ import annotations

from bridge.position import EntryPosition, LogIdentity, LogPosition, PositionRange

IDENTITY = LogIdentity("127.0.0.1:3306", 1234)


def pos(offset: int, file: str = "mysql-bin.000001", **kw: object) -> LogPosition:
    return LogPosition(
        IDENTITY,
        EntryPosition(
            journal_name=file,
            position=offset,
            server_id=1,
            timestamp=1_700_000_000_000 + offset,
            **kw,  # type: ignore[arg-type]
        ),
    )


def span(start: int, end: int, ack: int | None = None) -> PositionRange:
    return PositionRange(pos(start), pos(end), None if ack is None else pos(ack))
