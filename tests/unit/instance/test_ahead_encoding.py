"""Where the binlog reader's process encodes rows events ahead of their batch: only with the
compiled FlatMessage encoder, only where nothing after the reader reads row images, only well
below the record limit. And when it leaves the transaction BEGINs out: when the destination's
format makes nothing of them."""

from __future__ import annotations

import functools
from typing import Any, cast

import pytest

from bridge import native
from bridge.config import parse_config
from bridge.config.models import DestinationConfig
from bridge.entry import AheadEncoding
from bridge.instance.instance import ahead_where_allowed
from bridge.mq.flat_encoder import RENDER_HEADROOM, RenderedRows
from bridge.mq.formats import rows_encoder
from bridge.mq.records import RECORD_OVERHEAD
from bridge.mq.rendering import EventRenderer, render_rows
from bridge.runner import runner
from tests.unit.test_config import base, with_

# The encoder only asks whether a compiled module is there when it says what may go ahead.
STAND_IN = cast(native.Compiled, object())


def ahead(
    data: dict[str, Any] | None = None,
    max_record_bytes: int = 1_000_000,
    compiled: native.Compiled | None = STAND_IN,
) -> AheadEncoding | None:
    config: DestinationConfig = parse_config(data or base(), environ={}).destinations[0]
    encoder = rows_encoder(config.mq, max_record_bytes, compiled=compiled)
    return ahead_where_allowed(config, encoder.ahead())


def test_rendered_up_to_the_record_limit_less_headroom() -> None:
    encoding = ahead()
    assert encoding is not None
    parts = (2, b"head", b"middle", b"tail", b"key")
    assert encoding.revive(*parts) == RenderedRows(*parts)
    limit = {"limit": 1_000_000 - RECORD_OVERHEAD - RENDER_HEADROOM}
    assert isinstance(encoding.encode, functools.partial)
    assert (encoding.encode.func, encoding.encode.keywords) == (render_rows, limit)
    assert encoding.encode_event == EventRenderer(limit["limit"])


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("destinations.0.filter.field", "shop.orders:id/qty"),
        ("destinations.0.filter.black_field", "shop.orders:note"),
        ("destinations.0.mq.partition_hash", "shop.orders:id"),
    ],
)
def test_not_where_row_images_are_read_afterwards(path: str, value: str) -> None:
    assert ahead(with_(path, value)) is None


def test_not_when_the_record_limit_leaves_no_room() -> None:
    assert ahead(max_record_bytes=RECORD_OVERHEAD + RENDER_HEADROOM) is None


def test_not_without_the_compiled_path() -> None:
    assert ahead(compiled=None) is None


@pytest.mark.parametrize(
    ("flat_message", "begins"), [(True, False), (False, True)], ids=["FlatMessage", "protobuf"]
)
def test_the_binlog_reader_keeps_the_begins_only_for_a_format_that_writes_them(
    monkeypatch: pytest.MonkeyPatch, flat_message: bool, begins: bool
) -> None:
    # A FlatMessage is made of rows alone; canal's protobuf Message carries the markers.
    data = with_("destinations.0.mq.flat_message", flat_message)
    config = parse_config(with_("meta.store", "memory", data), environ={})
    destination = config.destinations[0]
    built: dict[str, Any] = {}
    monkeypatch.setattr(runner, "Instance", lambda *_, **options: built.update(options))
    runner.build_instance(config, destination, rows_encoder(destination.mq, 1_000_000))
    assert built["begins"] is begins
