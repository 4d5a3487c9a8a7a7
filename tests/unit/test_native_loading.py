"""Which compiled module ``bridge.native`` uses: a build older than the code is left out with
a warning (the pure-Python path runs) rather than failing at its first missing function."""

from __future__ import annotations

import importlib
import logging
import types

import pytest

from bridge import native


def _module_offering(names: tuple[str, ...]) -> types.ModuleType:
    module = types.ModuleType("canal_bridge_native")
    for name in names:
        setattr(module, name, object())
    return module


def test_a_build_that_offers_every_function_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _module_offering(native.OFFERED)
    monkeypatch.setattr(importlib, "import_module", lambda name: built)
    assert native._load() is built


def test_an_older_build_is_left_out_loudly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert "rows_event_parts" in native.OFFERED
    older = _module_offering(tuple(n for n in native.OFFERED if n != "rows_event_parts"))
    monkeypatch.setattr(importlib, "import_module", lambda name: older)
    with caplog.at_level(logging.WARNING, logger="bridge.native"):
        assert native._load() is None
    assert "lacks rows_event_parts" in caplog.text
    assert "deploy/local/install.sh native" in caplog.text


def test_switched_off_it_is_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANAL_BRIDGE_NATIVE", "0")
    assert native._load() is None
