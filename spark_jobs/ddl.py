"""What the mirror can do with an ALTER TABLE: the clauses in it that change columns.

``parse_alter`` splits an ``ALTER TABLE`` statement into clauses and reads each one as
``AddColumn`` (name, declared type, the value rows existing at the time of the DDL get, where
it goes), ``DropColumn``, ``RenameColumn``, ``ChangeColumn`` (``CHANGE`` and ``MODIFY``: the
new name, declared type and place) or ``OtherClause`` (recorded by the mirror, not applied:
indexes, keys, table options, ...). Pure Python; nothing here raises on odd SQL, it just says
``OtherClause``.

The value existing rows get follows MySQL: the ``DEFAULT`` literal; NULL for a nullable column
without one; for ``NOT NULL`` without a default the implicit default (0, '', the first ENUM
label, the zero date). A default that is an expression (``CURRENT_TIMESTAMP``, ``(uuid())``)
or a generated column cannot be reproduced: ``AddColumn.fill_known`` is false.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ALTER = re.compile(
    r"^\s*alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?"
    r"(?:`(?:[^`]|``)+`|[\w$]+)(?:\s*\.\s*(?:`(?:[^`]|``)+`|[\w$]+))?\s+(?P<rest>.*)$",
    re.I | re.S,
)
_COMMENTS = re.compile(r"/\*(?!!).*?\*/|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)", re.S)
_VERSIONED = re.compile(r"/\*!\d*\s*(.*?)\*/", re.S)
# Words after ADD / DROP that name something other than a column.
_NOT_COLUMN = {
    "index",
    "key",
    "unique",
    "primary",
    "constraint",
    "fulltext",
    "spatial",
    "foreign",
    "partition",
    "check",
    "period",
    "system",
    "default",
}
_ZERO_TEXT = {
    "date": "0000-00-00",
    "datetime": "0000-00-00 00:00:00",
    "timestamp": "0000-00-00 00:00:00",
    "time": "00:00:00",
    "year": "0000",
}
_NUMERIC = {
    "tinyint",
    "smallint",
    "mediumint",
    "int",
    "integer",
    "bigint",
    "decimal",
    "numeric",
    "dec",
    "fixed",
    "float",
    "double",
    "real",
    "bit",
    "bool",
    "boolean",
}


# Where a clause puts a column: None (the end for ADD, where it was for CHANGE/MODIFY), ""
# (FIRST) or the name of the column it goes after.
Position = str | None


@dataclass(frozen=True, slots=True)
class AddColumn:
    name: str
    mysql_type: str
    fill: str | None
    """canal-style text of the value rows existing at the DDL get (None: NULL)."""
    fill_known: bool = True
    position: Position = None


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class ChangeColumn:
    """``CHANGE old new type ...`` or ``MODIFY name type ...`` (``old`` == ``new``)."""

    old: str
    new: str
    mysql_type: str
    position: Position = None


@dataclass(frozen=True, slots=True)
class OtherClause:
    text: str


AlterClause = AddColumn | DropColumn | RenameColumn | ChangeColumn | OtherClause


def parse_alter(sql: str) -> list[AlterClause] | None:
    """The clauses of an ``ALTER TABLE`` statement; None when ``sql`` is not one."""
    text = _VERSIONED.sub(r"\1", _COMMENTS.sub(" ", sql or "")).strip().rstrip(";")
    match = _ALTER.match(text)
    if not match:
        return None
    return [clause for part in _split_top_level(match["rest"], ",") for clause in _clauses(part)]


def _clauses(text: str) -> list[AlterClause]:
    tokens = _tokens(text)
    words = [t.lower() for t in tokens]
    if not words:
        return []
    if words[0] == "add":
        rest = _skip(tokens, 1, ("column",), ("if", "not", "exists"))
        explicit = len(words) > 1 and words[1] == "column"
        if rest < len(tokens) and tokens[rest].startswith("("):
            inner = tokens[rest][1:-1]
            return [_column(part) for part in _split_top_level(inner, ",")]
        if rest < len(tokens) and (explicit or words[rest] not in _NOT_COLUMN):
            return [_column(" ".join(tokens[rest:]))]
    if words[0] == "drop":
        explicit = len(words) > 1 and words[1] == "column"
        rest = _skip(tokens, 1, ("column",), ("if", "exists"))
        if rest == len(tokens) - 1 and (explicit or words[rest] not in _NOT_COLUMN):
            return [DropColumn(_unquote(tokens[rest]))]
    if words[:2] == ["rename", "column"] and len(words) == 5 and words[3] == "to":
        return [RenameColumn(_unquote(tokens[2]), _unquote(tokens[4]))]
    if words[0] in ("change", "modify"):
        rest = _skip(tokens, 1, ("column",), ("if", "exists"))
        old = _unquote(tokens[rest]) if words[0] == "change" and rest < len(tokens) else None
        changed = _column(" ".join(tokens[rest + (old is not None) :]))
        if isinstance(changed, AddColumn):
            name = changed.name if old is None else old
            return [ChangeColumn(name, changed.name, changed.mysql_type, changed.position)]
    return [OtherClause(text.strip())]


def _column(definition: str) -> AlterClause:
    """A column definition ``name type [attributes]`` -> AddColumn (OtherClause if unreadable)."""
    tokens = _tokens(definition)
    if len(tokens) < 2 or not re.match(r"[a-zA-Z]", tokens[1]):
        return OtherClause(definition.strip())
    name = _unquote(tokens[0])
    base = tokens[1].lower()
    index = 2
    if base == "double" and index < len(tokens) and tokens[index].lower() == "precision":
        index += 1
    type_text = base
    if index < len(tokens) and tokens[index].startswith("("):
        type_text += tokens[index]
        index += 1
    while index < len(tokens) and tokens[index].lower() in ("unsigned", "signed", "zerofill"):
        if tokens[index].lower() != "signed":
            type_text += " " + tokens[index].lower()
        index += 1
    rest, position = _position(tokens[index:])
    attributes = [t.lower() for t in rest]
    fill, known = _fill(base, type_text, rest, attributes)
    return AddColumn(
        name=name, mysql_type=type_text, fill=fill, fill_known=known, position=position
    )


def _position(tokens: list[str]) -> tuple[list[str], Position]:
    """A column definition's attributes without its trailing ``FIRST`` / ``AFTER name``."""
    if tokens and tokens[-1].lower() == "first":
        return tokens[:-1], ""
    if len(tokens) >= 2 and tokens[-2].lower() == "after":
        return tokens[:-2], _unquote(tokens[-1])
    return tokens, None


def _fill(
    base: str, type_text: str, tokens: list[str], attributes: list[str]
) -> tuple[str | None, bool]:
    if "as" in attributes or "generated" in attributes:
        return None, False
    if "default" in attributes:
        at = attributes.index("default") + 1
        if at >= len(tokens):
            return None, False
        return _literal(tokens[at])
    not_null = any(
        attributes[i] == "not" and i + 1 < len(attributes) and attributes[i + 1] == "null"
        for i in range(len(attributes))
    )
    if not not_null:
        return None, True
    if base in _NUMERIC:
        return "0", True
    if base in _ZERO_TEXT:
        return _ZERO_TEXT[base], True
    if base == "enum":
        labels = _split_top_level(type_text[type_text.index("(") + 1 : -1], ",")
        return (_string(labels[0]) if labels else ""), True
    return "", True


def _literal(token: str) -> tuple[str | None, bool]:
    """A DEFAULT's text as canal would render the value; (None, False) for an expression."""
    lowered = token.lower()
    if lowered == "null":
        return None, True
    if token[:1] in ("'", '"'):
        return _string(token), True
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", lowered):
        return token, True
    if re.fullmatch(r"b'[01]*'", lowered):
        return str(int(lowered[2:-1] or "0", 2)), True
    if lowered in ("true", "false"):
        return ("1" if lowered == "true" else "0"), True
    if re.fullmatch(r"x'[0-9a-f]*'", lowered):
        return bytes.fromhex(lowered[2:-1]).decode("latin-1"), True
    return None, False  # an expression: CURRENT_TIMESTAMP, (uuid()), ...


def _string(token: str) -> str:
    quote = token[0]
    body = token[1:-1]
    body = body.replace(quote * 2, quote)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "0": "\0"}.get(m[1], m[1]), body)


def _unquote(name: str) -> str:
    if name.startswith("`") and name.endswith("`") and len(name) >= 2:
        return name[1:-1].replace("``", "`")
    return name


def _skip(tokens: list[str], start: int, *optional: tuple[str, ...]) -> int:
    index = start
    for words in optional:
        candidate = [t.lower() for t in tokens[index : index + len(words)]]
        if candidate == list(words):
            index += len(words)
    return index


def _tokens(text: str) -> list[str]:
    """Words, quoted strings and balanced parenthesised groups (each one token)."""
    tokens: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
            continue
        end = _end_of_token(text, index)
        # A type and its arguments, a function and its call: `decimal(10,2)` -> two tokens.
        tokens.append(text[index:end])
        index = end
    return tokens


def _end_of_token(text: str, start: int) -> int:
    char = text[start]
    if char in "'\"`":
        index = start + 1
        while index < len(text):
            if text[index] == "\\" and char != "`":
                index += 2
                continue
            if text[index] == char:
                if index + 1 < len(text) and text[index + 1] == char:
                    index += 2
                    continue
                return index + 1
            index += 1
        return len(text)
    if char == "(":
        depth, index = 0, start
        while index < len(text):
            c = text[index]
            if c in "'\"`":
                index = _end_of_token(text, index)
                continue
            depth += c == "("
            depth -= c == ")"
            index += 1
            if depth == 0:
                return index
        return len(text)
    if char in ",;=":
        return start + 1
    index = start
    while index < len(text) and not text[index].isspace() and text[index] not in "(),;'\"`=":
        index += 1
    if index == start:  # a lone ")" or other stray character
        return start + 1
    if char in "bBxX" and index == start + 1 and index < len(text) and text[index] == "'":
        return _end_of_token(text, index)  # b'0101', x'ff'
    return index


def _split_top_level(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    start = index = 0
    while index < len(text):
        char = text[index]
        if char in "'\"`(":
            index = _end_of_token(text, index)
            continue
        if char == separator:
            parts.append(text[start:index])
            start = index + 1
        index += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]
