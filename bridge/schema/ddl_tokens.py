"""Tokens of a DDL statement as the server's lexer sees them, and a cursor to read them.

The schema history reads the statements the binlog carries (``QUERY`` events), written by
people and tools: comments of every kind, ``/*!NNNNN ... */`` comments whose content the
server runs (so it counts here too; MariaDB's ``/*M!NNNNN ... */`` only on MariaDB), backtick
names with doubled backticks, strings in single or double quotes with backslash escapes.

Keywords are never quoted names: a token's ``upper`` is its uppercased text for bare words
and punctuation, and empty for quoted names and strings, so ```` `select` ```` is a name
wherever a keyword is tested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["word", "name", "string", "number", "punct"]

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<line>(?:\#|--(?=\s|$))[^\n]*)
  | (?P<versioned>/\*(?P<mariadb>M)?!\d*)
  | (?P<comment>/\*.*?(?:\*/|\Z))
  | (?P<close>\*/)
  | (?P<name>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<number>(?:\d+\.\d*|\d+)(?:[eE][-+]?\d+)?(?![\w$])|\.\d+(?:[eE][-+]?\d+)?)
  | (?P<word>[\w$\u0080-\uffff]+)
  | (?P<punct><=>|<<|>>|<=|>=|<>|!=|:=|\|\||&&|\S)
    """,
    re.X | re.S,
)
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_ESCAPE = re.compile(r"\\(.)", re.S)


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str  # names and strings unquoted and unescaped
    upper: str  # uppercased text of words and punctuation; "" for names and strings


class UnterminatedStatement(ValueError):
    """A quote or comment that never closes."""


def tokenize(sql: str, mariadb: bool = False) -> list[Token]:
    """The statement's tokens; comments dropped, versioned comments' content kept (MariaDB's
    ``/*M!`` form only when ``mariadb``)."""
    tokens: list[Token] = []
    position, end, open_versioned = 0, len(sql), 0
    while position < end:
        match = _TOKEN.match(sql, position)
        if match is None:  # pragma: no cover - the last alternative matches any character
            raise UnterminatedStatement(sql[position:])
        position = match.end()
        kind = match.lastgroup
        if kind in ("space", "line", "comment"):
            continue
        if kind == "versioned":
            if match.group("mariadb") and not mariadb:
                close = sql.find("*/", position)
                position = end if close < 0 else close + 2
            else:
                open_versioned += 1
            continue
        if kind == "close" and open_versioned:
            open_versioned -= 1
            continue
        text = match.group()
        if kind == "name":
            tokens.append(Token("name", text[1:-1].replace("``", "`"), ""))
        elif kind == "string":
            tokens.append(Token("string", _unquote(text), ""))
        elif kind == "number":
            tokens.append(Token("number", text, text))
        elif kind == "word":
            tokens.append(Token("word", text, text.upper()))
        else:
            if text in ("'", '"', "`"):
                raise UnterminatedStatement(sql[match.start() :])
            tokens.append(Token("punct", text, text))
    return tokens


def _unquote(text: str) -> str:
    quote, body = text[0], text[1:-1]
    body = body.replace(quote * 2, quote)
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


class Cursor:
    """Reads tokens front to back. ``peek`` and ``accept`` compare keywords (bare words and
    punctuation, uppercase); ``identifier`` takes a bare word or a quoted name."""

    __slots__ = ("_tokens", "index")

    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self.index = 0

    def peek(self, ahead: int = 0) -> str:
        at = self.index + ahead
        return self._tokens[at].upper if at < len(self._tokens) else ""

    def token(self, ahead: int = 0) -> Token | None:
        at = self.index + ahead
        return self._tokens[at] if at < len(self._tokens) else None

    @property
    def done(self) -> bool:
        return self.index >= len(self._tokens) or (
            self._tokens[self.index].upper == ";" and self.index == len(self._tokens) - 1
        )

    def accept(self, *words: str) -> bool:
        """Consume the keywords when the next tokens are exactly these."""
        for ahead, word in enumerate(words):
            if self.peek(ahead) != word:
                return False
        self.index += len(words)
        return True

    def accept_any(self, *words: str) -> str:
        """Consume and return the next keyword when it is one of ``words``; "" otherwise."""
        word = self.peek()
        if word and word in words:
            self.index += 1
            return word
        return ""

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise SyntaxError(f"expected {' '.join(words)} at {self.where()}")

    def next(self) -> Token:
        token = self.token()
        if token is None:
            raise SyntaxError("unexpected end of statement")
        self.index += 1
        return token

    def identifier(self) -> str:
        token = self.token()
        if token is None or token.kind not in ("word", "name", "string"):
            raise SyntaxError(f"expected a name at {self.where()}")
        self.index += 1
        return token.text

    def skip_group(self) -> None:
        """Skip a parenthesized group (the cursor is on its ``(``), nested groups included."""
        self.expect("(")
        depth = 1
        while depth:
            word = self.next().upper
            if word == "(":
                depth += 1
            elif word == ")":
                depth -= 1

    def skip_to_end(self) -> None:
        self.index = len(self._tokens)

    def where(self) -> str:
        shown = " ".join(t.text for t in self._tokens[self.index : self.index + 6])
        return repr(shown) if shown else "the end"
