"""canal's routing-rule syntax: rule lists and name patterns (MQMessageUtils, AviaterRegexFilter).

Every routing setting (dynamic topic, partition hash, topic partition counts) is a list of
items separated by ``,`` or ``;``. Each item carries a *name pattern*: a plain name when it
holds none of canal's regex metacharacters (``.`` is not one of them, so ``shop.orders`` is a
plain name), otherwise a Perl-style regex, case-insensitive, anchored at both ends and tested
against the lowercased name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridge.mq.exceptions import RuleSyntaxError

# canal's MQMessageUtils.isWildCard: any of these makes a pattern a regex.
_WILDCARD_CHARS = frozenset("*?+|(){}[]\\$^")


def split_rules(text: str) -> list[str]:
    """Split a rule list on ``,`` or ``;``, dropping empty items, like canal.

    Unlike canal we also strip blanks around items, so ``a, b`` means ``a`` and ``b``
    (canal would look for a table named `` b`` and never match it).
    """
    return [item.strip() for item in text.replace(",", ";").split(";") if item.strip()]


def is_wildcard(pattern: str) -> bool:
    """Whether canal treats ``pattern`` as a regex rather than a plain name."""
    return any(char in _WILDCARD_CHARS for char in pattern)


@dataclass(frozen=True, slots=True)
class NamePattern:
    """One canal name pattern: a plain name (case-insensitive equality) or an anchored regex."""

    text: str
    regex: re.Pattern[str] | None

    @classmethod
    def compile(cls, text: str, rule: str) -> NamePattern:
        """Compile ``text``; a regex that does not compile raises RuleSyntaxError."""
        if not text:
            raise RuleSyntaxError(rule, "empty name pattern")
        if not is_wildcard(text):
            return cls(text, None)
        try:
            return cls(text, re.compile(text, re.IGNORECASE))
        except re.error as exc:
            raise RuleSyntaxError(rule, f"bad regex {text!r}: {exc}") from exc

    @property
    def is_regex(self) -> bool:
        return self.regex is not None

    def matches(self, name: str) -> bool:
        """canal semantics: equalsIgnoreCase for names, whole-name regex match otherwise.

        As in canal's AviaterRegexFilter, a regex matches an empty name.
        """
        if self.regex is None:
            return self.text.lower() == name.lower()
        if not name:
            return True
        return self.regex.fullmatch(name.lower()) is not None
