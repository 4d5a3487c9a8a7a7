"""Where the binlog reader process renders records (``render_limit``): only with the compiled
path, only where nothing after it reads row images, only well below the record limit."""

from __future__ import annotations

from typing import Any

import pytest

from bridge import native
from bridge.config import parse_config
from bridge.config.models import DestinationConfig
from bridge.instance.instance import RENDER_HEADROOM, render_limit
from bridge.mq.records import RECORD_OVERHEAD
from tests.unit.test_config import base, with_


def destination(data: dict[str, Any] | None = None) -> DestinationConfig:
    return parse_config(data or base(), environ={}).destinations[0]


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in module: ``render_limit`` only asks whether one is loaded."""
    monkeypatch.setattr(native, "module", object())


@pytest.mark.usefixtures("compiled")
def test_rendered_up_to_the_record_limit_less_headroom() -> None:
    assert render_limit(destination(), 1_000_000) == 1_000_000 - RECORD_OVERHEAD - RENDER_HEADROOM


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("destinations.0.filter.field", "shop.orders:id/qty"),
        ("destinations.0.filter.black_field", "shop.orders:note"),
        ("destinations.0.mq.partition_hash", "shop.orders:id"),
    ],
)
def test_not_where_row_images_are_read_afterwards(path: str, value: str) -> None:
    assert render_limit(destination(with_(path, value)), 1_000_000) is None


@pytest.mark.usefixtures("compiled")
def test_not_when_the_record_limit_leaves_no_room() -> None:
    assert render_limit(destination(), RECORD_OVERHEAD + RENDER_HEADROOM) is None


def test_not_without_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "module", None)
    assert render_limit(destination(), 1_000_000) is None
