"""``value_class``: how the model classes built per binlog event are declared.

The data model is immutable (docs: code-style, item 4). For most classes that is a frozen,
slotted dataclass. The classes made several times per binlog event (headers, entries, row
changes, rows, records, store events) are immutable for the type checker instead: a frozen
dataclass's ``__init__`` and every other way of building one pass through
``object.__setattr__`` or a slot descriptor call per field, 373 ns for a Header against 107 ns
for the same class unfrozen (Python 3.11), and a one-row transaction makes a dozen of them in
each process. ``value_class`` gives a slotted dataclass, hashed and compared by its fields like
a frozen one, that mypy treats as frozen (``dataclass_transform(frozen_default=True)``):
assigning a field is a type error, so it is refused in CI rather than at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def value_class(cls: type[T]) -> type[T]:
    """``cls`` as a slotted dataclass with field-wise ``__eq__`` and ``__hash__``, frozen for
    the type checker only (module docstring)."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
