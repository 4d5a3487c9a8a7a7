"""Positional constructors that skip a frozen, slotted class's ``__init__``: the one way the
code bypasses a dataclass initializer.

A frozen dataclass ``__init__`` pays ``object.__setattr__`` per field; the parser builds a
Header and an Entry per binlog event and a Column per value, so it uses constructors that set
the slot descriptors directly (about twice as fast). The generated function takes every field,
in field order (or the ``names`` given, for a slotted subclass whose own slots are not
dataclass fields), and runs no validation: callers pass every value, already of the right type.
tests/unit/parse/test_rows.py proves such a constructor equal to the dataclass's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar, cast

T = TypeVar("T")


def slotted_constructor(cls: type[T], names: Sequence[str] = ()) -> Callable[..., T]:
    """``make(field1, field2, ...)`` building a ``cls`` without running its ``__init__``;
    ``names`` (default: the dataclass fields) are the slots it sets, in argument order."""
    names = list(names) or [f.name for f in fields(cast(Any, cls))]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    lines = [f"def make({', '.join(names)}):", "    obj = new(cls)"]
    for i, name in enumerate(names):
        namespace[f"set{i}"] = getattr(cls, name).__set__
        lines.append(f"    set{i}(obj, {name})")
    lines.append("    return obj")
    exec("\n".join(lines), namespace)  # our own generated source
    make: Callable[..., T] = namespace["make"]
    return make
