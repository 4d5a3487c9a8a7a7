"""canal's rule syntax: rule lists, name patterns (MQMessageUtils, AviaterRegexFilter), the
routing rules made of them, and the DDL and oversize policies.

Every routing setting (dynamic topic, partition hash, topic partition counts) is a list of
items separated by ``,`` or ``;``. Each item carries a *name pattern*: a plain name when it
holds none of canal's regex metacharacters (``.`` is not one of them, so ``shop.orders`` is a
plain name), otherwise a Perl-style regex, case-insensitive, anchored at both ends and tested
against the lowercased name.

This is syntax only, parsed once: the configuration model holds the parsed types
(``DynamicTopic``, ``PartitionHash``, ``TopicPartitionCounts``, ``DdlPolicy``,
``OversizePolicy``), so a bad rule fails at load, never mid-stream, and ``bridge.mq``'s routers
apply them as they are. ``str()`` of each gives canal's syntax back (for ``import-canal`` and
error messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bridge.exceptions import ConfigError


class RuleSyntaxError(ConfigError):
    """A rule (dynamic topic, partition hash, topic partitions, ddl, oversize) is malformed."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"{reason} (in rule {rule!r})")
        self.rule = rule
        self.reason = reason


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


@dataclass(frozen=True, slots=True)
class TopicRule:
    """One ``canal.mq.dynamicTopic`` item: ``topic:pattern``, or a bare pattern."""

    topic: str | None  # None: a bare pattern, the matched name is the topic
    pattern: NamePattern
    on_table: bool  # a regex with a literal "\." is tested against schema.table only

    def __str__(self) -> str:
        return self.pattern.text if self.topic is None else f"{self.topic}:{self.pattern.text}"


@dataclass(frozen=True, slots=True)
class DynamicTopic:
    """``canal.mq.dynamicTopic`` (``mq.dynamic_topic``): its items, in order; none: every
    entry goes to the static topic."""

    rules: tuple[TopicRule, ...] = ()

    @classmethod
    def parse(cls, text: str) -> DynamicTopic:
        return cls(parse_dynamic_topic(text))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __str__(self) -> str:
        return ",".join(str(rule) for rule in self.rules)


def parse_dynamic_topic(text: str) -> tuple[TopicRule, ...]:
    """The items of a dynamic-topic rule list, in order."""
    return tuple(_topic_rule(item) for item in split_rules(text))


def _topic_rule(item: str) -> TopicRule:
    topic: str | None = None
    pattern = item
    if ":" in item:
        topic, pattern = (part.strip() for part in item.split(":", 1))
        if not topic:
            raise RuleSyntaxError(item, "empty topic name before ':'")
    compiled = NamePattern.compile(pattern, item)
    return TopicRule(topic, compiled, compiled.is_regex and "\\." in pattern)


@dataclass(frozen=True, slots=True)
class TopicPartitionCounts:
    """``canal.mq.dynamicTopicPartitionNum`` (``mq.dynamic_topic_partitions``): the partition
    count of the topics each pattern matches, first match wins."""

    rules: tuple[tuple[NamePattern, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> TopicPartitionCounts:
        return cls(parse_partition_counts(text))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __str__(self) -> str:
        return ",".join(f"{pattern.text}:{count}" for pattern, count in self.rules)


def parse_partition_counts(text: str) -> tuple[tuple[NamePattern, int], ...]:
    """``canal.mq.dynamicTopicPartitionNum`` items: ``topic-pattern:count``.

    canal silently ignores malformed items (no ``:``, non-numeric count); we reject them.
    """
    counts: list[tuple[NamePattern, int]] = []
    for item in split_rules(text):
        cut = item.rfind(":")
        if cut <= 0:
            raise RuleSyntaxError(item, "expected 'topic-pattern:count'")
        count = item[cut + 1 :].strip()
        if not count.isdigit() or int(count) < 1:
            raise RuleSyntaxError(item, "the partition count must be an integer >= 1")
        counts.append((NamePattern.compile(item[:cut].strip(), item), int(count)))
    return tuple(counts)


@dataclass(frozen=True, slots=True)
class HashRule:
    """What a matched partition-hash rule hashes: the table, the primary key or named columns."""

    by_table: bool = False
    by_pk: bool = False
    columns: tuple[str, ...] = ()

    def __str__(self) -> str:
        """What follows the pattern in canal's syntax ('' for a by-table rule)."""
        if self.by_table:
            return ""
        return "$pk$" if self.by_pk else "^".join(self.columns)


@dataclass(frozen=True, slots=True)
class PartitionHash:
    """``canal.mq.partitionHash`` (``mq.partition_hash``): per table pattern, what its rows
    are hashed by, first match wins; none: every row goes to ``mq.partition``."""

    rules: tuple[tuple[NamePattern, HashRule], ...] = ()

    @classmethod
    def parse(cls, text: str) -> PartitionHash:
        return cls(parse_partition_hash(text))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __str__(self) -> str:
        return ",".join(
            f"{pattern.text}:{rule}" if str(rule) else pattern.text for pattern, rule in self.rules
        )


def parse_partition_hash(text: str) -> tuple[tuple[NamePattern, HashRule], ...]:
    """``canal.mq.partitionHash`` items: ``pattern`` (by table), ``pattern:$pk$`` or
    ``pattern:c1^c2`` (key columns, each counted once, case-insensitively)."""
    return tuple(_hash_rule(item) for item in split_rules(text))


def _hash_rule(item: str) -> tuple[NamePattern, HashRule]:
    cut = item.rfind(":")
    if cut == 0:
        raise RuleSyntaxError(item, "empty table pattern before ':'")
    if cut < 0:
        return NamePattern.compile(item, item), HashRule(by_table=True)
    keys = item[cut + 1 :].strip()
    pattern = NamePattern.compile(item[:cut].strip(), item)
    if keys.lower() == "$pk$":
        return pattern, HashRule(by_pk=True)
    columns: list[str] = []
    for column in (part.strip() for part in keys.split("^")):
        if column and column.lower() not in (c.lower() for c in columns):
            columns.append(column)
    if not columns:
        raise RuleSyntaxError(item, "no key columns after ':' (use c1^c2 or $pk$)")
    return pattern, HashRule(columns=tuple(columns))


@dataclass(frozen=True, slots=True)
class DdlPolicy:
    """Where DDL goes: ``inline`` (its table's topic, canal: partition 0), ``topic:<name>``
    (partition 0 of a dedicated topic) or ``skip``."""

    mode: Literal["inline", "topic", "skip"] = "inline"
    topic: str = ""

    @classmethod
    def parse(cls, text: str) -> DdlPolicy:
        text = text.strip()
        if text == "inline":
            return cls(mode="inline")
        if text == "skip":
            return cls(mode="skip")
        if text.startswith("topic:") and text[6:].strip():
            return cls(mode="topic", topic=text[6:].strip())
        raise RuleSyntaxError(text, "expected 'inline', 'skip' or 'topic:<name>'")

    def __str__(self) -> str:
        return f"topic:{self.topic}" if self.mode == "topic" else self.mode


@dataclass(frozen=True, slots=True)
class OversizePolicy:
    """What to do with a record over the size limit: ``fail`` (stop, say why), ``split``
    (rows over several records) or ``dead_letter:<topic>`` (send a row-less notice there)."""

    mode: Literal["fail", "split", "dead_letter"] = "fail"
    topic: str = ""

    @classmethod
    def parse(cls, text: str) -> OversizePolicy:
        text = text.strip()
        if text == "fail":
            return cls(mode="fail")
        if text == "split":
            return cls(mode="split")
        prefix = "dead_letter:"
        if text.startswith(prefix) and text[len(prefix) :].strip():
            return cls(mode="dead_letter", topic=text[len(prefix) :].strip())
        raise RuleSyntaxError(text, "expected 'fail', 'split' or 'dead_letter:<topic>'")

    def __str__(self) -> str:
        return f"dead_letter:{self.topic}" if self.mode == "dead_letter" else self.mode
