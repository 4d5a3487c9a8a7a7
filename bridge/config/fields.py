"""Value checks shared by the configuration models: addresses, topics, regexes, rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, GetCoreSchemaHandler
from pydantic_core import core_schema

from bridge.config.rules import NamePattern, RuleSyntaxError

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


def truncate_rule(value: str) -> str:
    """``columns.truncate``: ``schema.table:col1=N/col2=M,...`` (N >= 1 characters)."""
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        pattern, sep, columns = item.rpartition(":")
        parts = [c.strip() for c in columns.split("/") if c.strip()]
        if not sep or not pattern or not parts:
            raise ValueError(f"expected 'schema.table:column=length', got {item!r}")
        for part in parts:
            column, eq, length = part.partition("=")
            if not eq or not column.strip() or not length.strip().isdigit() or not int(length):
                raise ValueError(
                    f"expected column=length with a length of at least 1, got {part!r} in {item!r}"
                )
        _compile(pattern, item)
    return value


def _compile(pattern: str, item: str) -> None:
    try:
        NamePattern.compile(pattern, item)
    except RuleSyntaxError as exc:
        raise ValueError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class CanalRule:
    """Field metadata, ``Annotated[DdlPolicy, CanalRule(DdlPolicy.parse)]``: the field holds
    the parsed rule, written in canal's syntax (a string, parsed once by ``parse``, whose
    syntax errors become the field's problem) or given parsed; it serializes back to canal's
    syntax (the rule types' ``str``)."""

    parse: Callable[[str], object]

    def __get_pydantic_core_schema__(
        self, source: type[object], _handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        parse = self.parse

        def validate(value: object) -> object:
            if isinstance(value, source):
                return value
            if not isinstance(value, str):
                raise ValueError("must be a string")
            try:
                return parse(value)
            except RuleSyntaxError as exc:
                raise ValueError(str(exc)) from exc

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema()
            ),
        )


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
