"""One version: pyproject.toml's, which ``canal-bridge --version``, the metrics' build_info and
the image tag (deploy/docker/build.sh reads pyproject.toml) all show."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

import bridge
from bridge.cli import app

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_command_line_prints_pyprojects_version() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"canal-bridge {declared}"
    assert bridge.__version__ == declared


def test_the_changelog_names_the_version() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    changelog = (PYPROJECT.parent / "CHANGELOG.md").read_text()
    assert f"## [{declared}]" in changelog
