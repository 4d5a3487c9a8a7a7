"""Every config key a message names exists: advice that names a key validate rejects (as the
purged-binlog error once said ``start.on_purged``) sends the user in a circle.

The scan reads every string literal of ``bridge/`` that is a sentence (log lines, error
messages; docstrings and comments are not advice) and resolves each ``section.key[.key]``
through the config model: the process-wide sections against ``BridgeConfig``, a destination's
against ``DestinationConfig``. A key under a free-form mapping (``kafka.producer.*``) stops the
walk there.
"""

from __future__ import annotations

import ast
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bridge.config import BridgeConfig, DestinationConfig

BRIDGE = Path(__file__).resolve().parents[2] / "bridge"
KEY = re.compile(
    r"(?<![\w./-])(?:destinations\[\]\.)?"
    r"(kafka|meta|admin|zookeeper|source|start|filter|store|mq)((?:\.[a-z_]+)+)(?![\w(])"
)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def sentences() -> Iterator[tuple[str, str]]:
    """(where, text) for every string literal in bridge/ that reads as a sentence."""
    for path in sorted(BRIDGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
                and " " in node.value
            ):
                yield f"{path.relative_to(BRIDGE.parent)}:{node.lineno}", node.value


def named_keys() -> list[tuple[str, str]]:
    found = {(m[1] + m[2], where) for where, text in sentences() for m in KEY.finditer(text)}
    return sorted(found)


def _model_of(annotation: Any) -> Any:
    """The model (or mapping) inside ``X | None`` / ``tuple[X, ...]``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _model_of(inner[0]) if len(inner) == 1 else annotation
    if typing.get_origin(annotation) is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    return annotation


def resolves(key: str) -> bool:
    first, *rest = key.split(".")
    model: Any = BridgeConfig if first in BridgeConfig.model_fields else DestinationConfig
    for part in [first, *rest]:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return typing.get_origin(model) is dict  # a free-form mapping: any key
        if part not in model.model_fields:
            return False
        model = _model_of(model.model_fields[part].annotation)
    return True


def test_the_scan_finds_the_advice_it_is_meant_to_check() -> None:
    keys = {key for key, _ in named_keys()}
    assert {"source.ssl.ca", "mq.oversize", "store.buffer_size", "meta.store"} <= keys


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("source.ssl.verify_identity", True),
        ("kafka.producer.message.max.bytes", True),
        ("mq.partition_hash", True),
        ("start.on_purged", False),  # the key the purged-binlog error once named
        ("source.ssl.verify", False),
        ("meta.directory", False),
    ],
)
def test_resolution_can_fail(key: str, expected: bool) -> None:
    assert resolves(key) is expected


def test_every_key_a_message_names_exists() -> None:
    unknown = [f"{where}: {key}" for key, where in named_keys() if not resolves(key)]
    assert unknown == []
