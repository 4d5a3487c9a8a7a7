"""Value checks shared by the configuration models: addresses, topics, regexes, rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
)

from bridge.config.rules import NamePattern, RuleSyntaxError

T = TypeVar("T")

ProducerValue = str | int | float | bool


# --- value checks shared by the models --------------------------------------------------------

_KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_OFFSET = re.compile(r"[+-]\d{2}:\d{2}")
SECRET_WORDS = ("password", "secret")


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (IPv6 as ``[::1]:3306``) into its parts; ValueError if malformed."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"expected host:port with a port in 1..65535, got {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def address(value: str) -> str:
    split_address(value)
    return value.strip()


def address_list(value: str) -> str:
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ValueError("expected host:port[,host:port...]")
    for item in items:
        split_address(item)
    return ",".join(items)


def topic_name(value: str) -> str:
    if not _KAFKA_TOPIC.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"{value!r} is not a valid Kafka topic name (letters, digits, . _ -)")
    return value


def regex_list(value: str) -> str:
    """canal filter syntax: comma-separated regexes, each matched against ``schema.table``."""
    for item in (part.strip() for part in value.split(",")):
        if item:
            _compile(item, item)
    return value


def field_filter(value: str) -> str:
    """canal's field filter: ``schema.table:col1/col2,schema2.table2:col``."""
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        pattern, sep, columns = item.rpartition(":")
        if not sep or not pattern or not [c for c in columns.split("/") if c.strip()]:
            raise ValueError(f"expected 'schema.table:col1/col2', got {item!r}")
        _compile(pattern, item)
    return value


def _compile(pattern: str, item: str) -> None:
    try:
        NamePattern.compile(pattern, item)
    except RuleSyntaxError as exc:
        raise ValueError(str(exc)) from exc


def rules(build: Callable[[str], object]) -> Callable[[str], str]:
    """A validator that compiles a routing rule with ``build``, reporting its syntax errors."""

    def check(value: str) -> str:
        try:
            build(value)
        except RuleSyntaxError as exc:
            raise ValueError(str(exc)) from exc
        return value

    return check


def time_zone_name(value: str | None) -> str | None:
    if value is None or _OFFSET.fullmatch(value):
        return value
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {value!r} (use +08:00 or Asia/Shanghai)") from exc
    return value


Address = Annotated[str, AfterValidator(address)]
Topic = Annotated[str, AfterValidator(topic_name)]
