"""The interop tests skip where Java or Maven is missing, but only where that is allowed:
``CANAL_BRIDGE_REQUIRE_JAVA_INTEROP=1`` (deploy/local/test.sh) turns the skip into a failure,
so a machine that lost its JDK cannot pass the suite by skipping the real consumers."""

from __future__ import annotations

import shutil

import pytest

from tests.interop import consumers


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "java" else real_which(tool))


def test_missing_java_skips_naming_the_package(
    no_java: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(consumers.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install openjdk-17-jre-headless"):
        consumers.build()


def test_missing_java_fails_when_required(no_java: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(consumers.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="CANAL_BRIDGE_REQUIRE_JAVA_INTEROP=1 but java"):
        consumers.build()
