"""Java ``.properties`` files as canal reads them, and the values its Spring context resolves.

canal loads ``canal.properties`` and each ``conf/<destination>/instance.properties`` with
``java.util.Properties`` and resolves ``${name:default}`` placeholders with Spring, the
instance's file taking precedence. ``Settings`` gives that view and remembers which keys were
read, so that every key no mapping read can be listed afterwards (none is dropped silently).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_PLACEHOLDER = re.compile(r"\$\{([^{}:]+)(?::([^{}]*))?\}")
# Spring resolves nested placeholders; a value referring back to itself stops here.
_MAX_DEPTH = 10


@dataclass
class PropertiesFile:
    """One file's keys in file order; ``label`` names it in messages (``example/instance...``)."""

    label: str
    values: dict[str, str]
    read: set[str] = field(default_factory=set)

    def unread(self) -> list[str]:
        return [key for key in self.values if key not in self.read]


def parse_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load``: comments (# !), continuation lines, ``=``/``:``/blank
    separators and backslash escapes; a later duplicate key wins, as in Java."""
    values: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        values[_unescape(key)] = _unescape(value)
    return values


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _split(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=: \t\f":
            break
        index += 1
    key, rest = line[:index], line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):  # one separator, blanks around it
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[index + 2 : index + 6]):
            out.append(chr(int(text[index + 2 : index + 6], 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)


def load_properties(path: Path, label: str) -> PropertiesFile:
    """Read ``path`` (ISO-8859-1 like Java's ``Properties.load(InputStream)``, which canal uses;
    ``\\uXXXX`` escapes carry anything else)."""
    return PropertiesFile(label, parse_properties(path.read_text(encoding="latin-1")))


class Settings:
    """What canal's Spring context sees: the first layer holding a key wins, values are
    stripped (Spring's number conversion trims too), ``${name:default}`` is resolved, and an
    empty value counts as not set. ``get`` marks the key read in every layer holding it."""

    def __init__(
        self, layers: Sequence[PropertiesFile], fixed: Mapping[str, str] | None = None
    ) -> None:
        self.layers = tuple(layers)
        self._fixed = dict(fixed or {})

    def get(self, key: str) -> str | None:
        for layer in self.layers:
            if key in layer.values:
                layer.read.add(key)
        value = self._lookup(key)
        return value if value else None

    def origin(self, key: str) -> str:
        """The label of the file a key's value comes from (for messages)."""
        for layer in self.layers:
            if key in layer.values:
                return layer.label
        return self.layers[0].label  # absent: the most specific file is where to add it

    def _lookup(self, key: str, depth: int = 0) -> str | None:
        if key in self._fixed:
            return self._fixed[key]
        for layer in self.layers:
            if key in layer.values:
                return self._resolve(layer.values[key].strip(), depth)
        return None

    def _resolve(self, value: str, depth: int) -> str:
        if depth >= _MAX_DEPTH or "${" not in value:
            return value

        def replace(match: re.Match[str]) -> str:
            found = self._lookup(match.group(1).strip(), depth + 1)
            if found is not None:
                return found
            return match.group(2) if match.group(2) is not None else match.group(0)

        return _PLACEHOLDER.sub(replace, value)
