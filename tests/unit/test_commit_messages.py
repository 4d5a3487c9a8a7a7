"""The commit-message check test.sh runs: what it refuses and what it lets pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "local" / "check_commits.py"
spec = importlib.util.spec_from_file_location("check_commits", SCRIPT)
assert spec is not None and spec.loader is not None
check_commits = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_commits)


def test_a_short_imperative_subject_with_a_body_passes() -> None:
    assert check_commits.problems("Add the schema history\n\nWhy it is needed.") == []


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("x" * 73, "subject of 73 characters"),
        ("Added the schema history", "say what the commit does"),
        ("Fixing the mirror", "say what the commit does"),
        ("Add the schema history.", "ends with a period"),
        ("Add the schema history\nwhy, without a blank line", "no blank line"),
        ("", "empty subject"),
    ],
)
def test_what_the_convention_refuses(message: str, problem: str) -> None:
    assert any(problem in found for found in check_commits.problems(message))
