"""Log output: plain lines for people, JSON lines for log pipelines.

Records may carry ``destination`` and ``position`` (pass them in ``extra=``); both formats show
them. Where a record lacks them, ``ContextFilter`` fills them in cheaply at log time: the
destination from the thread's name (``mq-<destination>``, ``parser-<destination>``), the
position from the lookup the runner registers (the destination's acked cursor).

Secrets never reach a log record: configuration objects hold them as ``SecretStr`` and only
the client constructors unwrap them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

_CONTEXT_FIELDS = ("destination", "position")
_THREAD_PREFIXES = ("mq-", "parser-")

PositionLookup = Callable[[str], str | None]
_lookups: dict[str, PositionLookup] = {}


def set_position_lookup(lookup: PositionLookup | None) -> None:
    """Register how to find a destination's current position for log records (None: off)."""
    if lookup is None:
        _lookups.pop("position", None)
    else:
        _lookups["position"] = lookup


class ContextFilter(logging.Filter):
    """Adds ``destination`` and ``position`` to records logged on a destination's threads."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "destination", None) is None:
            thread = record.threadName or ""
            for prefix in _THREAD_PREFIXES:
                if thread.startswith(prefix):
                    record.destination = thread[len(prefix) :]
                    break
        destination = getattr(record, "destination", None)
        lookup = _lookups.get("position")
        if destination and lookup is not None and getattr(record, "position", None) is None:
            try:
                position = lookup(str(destination))
            except Exception:
                position = None
            if position is not None:
                record.position = position
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in _CONTEXT_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                payload[field] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        # Imported here, not with the module: plain logs never use it, and every helper
        # process (the binlog reader's) imports this module at its start.
        import orjson

        return orjson.dumps(payload, default=str).decode()


class PlainFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-5s %(name)s: %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = [
            f"{field}={value}"
            for field in _CONTEXT_FIELDS
            if (value := getattr(record, field, None)) is not None
        ]
        return f"{text} [{' '.join(context)}]" if context else text


def configure_logging(log_format: str = "plain", level: int = logging.INFO) -> None:
    if log_format not in ("plain", "json"):
        raise ValueError(f"log format must be plain or json, not {log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("kazoo").setLevel(logging.WARNING)


def configured_format() -> str:
    """The format ``configure_logging`` set ("plain" if it was not called), for a child
    process that must log the same way."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler.formatter, JsonFormatter):
            return "json"
    return "plain"
