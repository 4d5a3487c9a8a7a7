"""Loading ``destinations.yaml`` into the models.

Loading happens in steps so that a bad file fails at once with *every* problem listed:

1. read and parse the YAML (a missing file or a syntax error is one line saying what to fix);
2. replace ``${VAR}`` / ``${VAR:-default}`` in string values (an unset variable without a
   default is one line naming it); ``$${`` stands for a literal ``${``;
3. read ``password_file`` / ``key_password_file`` keys into ``password`` / ``key_password``
   (the file's content, trailing newline removed);
4. validate the models, plus the checks across destinations (unique names and slave ids).

Problems of steps 3 and 4 are gathered and raised together as one ``InvalidConfig``, one line
per problem, each starting with its path in the file (``destinations[0].mq.partitions: ...``).
Secrets are ``SecretStr``: they never show in ``repr``/``str`` nor in error messages, and are
unwrapped only at the edge (``KafkaConfig.as_librdkafka_dict``, the source connection).
"""

from __future__ import annotations

import difflib
import os
import re
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic_core import ErrorDetails

from bridge.config.models import BridgeConfig
from bridge.exceptions import ConfigError


class InvalidConfig(ConfigError):
    """The file was read but holds problems; ``problems`` lists them, path first."""

    def __init__(self, source: str, problems: list[str]) -> None:
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(f"{source}: invalid configuration ({count}):\n{lines}")
        self.source = source
        self.problems = tuple(problems)


# --- loading ----------------------------------------------------------------------------------


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> BridgeConfig:
    """Read, interpolate and validate ``path``; ConfigError says what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file; pass the path of your destinations.yaml "
            "(config/destinations.yaml is an example to copy)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the file: {exc}") from None
    return config_from_text(text, source=str(path), environ=environ)


def config_from_text(
    text: str, *, source: str = "<config>", environ: Mapping[str, str] | None = None
) -> BridgeConfig:
    """Steps 1 to 4 for the text of a destinations.yaml: what ``load_config`` reads from a
    file, and what a running bridge is given to reload (``source`` names it in errors)."""
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        # Positions only: the line itself is not quoted, it may hold a secret.
        mark, context, start = exc.problem_mark, exc.context, exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        if context and start:
            context = f" {context} started at line {start.line + 1}, column {start.column + 1}"
        raise ConfigError(
            f"{where}: YAML syntax error: {exc.problem}{context or ''}; fix the file"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML syntax error: {type(exc).__name__}") from None
    return parse_config(data, source=source, environ=environ)


def parse_config(
    data: object, *, source: str = "<config>", environ: Mapping[str, str] | None = None
) -> BridgeConfig:
    """Steps 2 to 4 of loading, for data already parsed from YAML."""
    if data is None:
        raise ConfigError(f"{source}: the file is empty; config/destinations.yaml is an example")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with kafka, meta and destinations")
    env = os.environ if environ is None else environ
    unset: list[str] = []
    problems: list[str] = []
    data = _walk(data, (), lambda value, loc: _interpolate(value, loc, env, unset, problems))
    if unset:
        raise ConfigError(f"{source}: " + "; ".join(unset))
    data = _read_secret_files(data, (), problems)
    try:
        config = BridgeConfig.model_validate(data)
    except ValidationError as exc:
        problems += [_describe(error) for error in exc.errors()]
        config = None
    problems += _cross_checks(data)
    if problems or config is None:
        raise InvalidConfig(source, problems)
    return config


_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


def _interpolate(
    value: object,
    loc: tuple[str | int, ...],
    env: Mapping[str, str],
    unset: list[str],
    problems: list[str],
) -> object:
    if not isinstance(value, str) or "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            problems.append(f"{_path(loc)}: malformed ${{...}} reference (use ${{VAR}})")
            return ""
        found = env.get(name)
        if found:
            return found
        if default is not None:
            return default
        if found is None:
            unset.append(
                f"{_path(loc)}: environment variable {name} is not set; "
                f"export it or give a default as ${{{name}:-value}}"
            )
        return ""

    return _REFERENCE.sub(replace, value)


def _walk(
    value: object,
    loc: tuple[str | int, ...],
    visit: Callable[[object, tuple[str | int, ...]], object],
) -> object:
    if isinstance(value, dict):
        return {key: _walk(item, (*loc, str(key)), visit) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, (*loc, index), visit) for index, item in enumerate(value)]
    return visit(value, loc)


_SECRET_FILE_KEYS = ("password", "key_password", "hash_salt")


def _read_secret_files(value: object, loc: tuple[str | int, ...], problems: list[str]) -> object:
    """Replace ``password_file: path`` by ``password: <content>`` anywhere in the tree."""
    if isinstance(value, list):
        return [_read_secret_files(item, (*loc, i), problems) for i, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    result = {
        key: _read_secret_files(item, (*loc, str(key)), problems) for key, item in value.items()
    }
    for key in _SECRET_FILE_KEYS:
        file_key = f"{key}_file"
        if file_key not in result:
            continue
        file_name = result.pop(file_key)
        where = _path((*loc, file_key))
        if result.get(key) is not None:  # `password: null` next to a file is no conflict
            problems.append(f"{_path(loc)}: give either {key} or {file_key}, not both")
        elif not isinstance(file_name, str) or not file_name:
            problems.append(f"{where}: must be a file path")
        else:
            try:
                secret = Path(file_name).read_text(encoding="utf-8").rstrip("\r\n")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                problems.append(f"{where}: cannot read {file_name}: {reason}")
                continue
            if not secret:
                problems.append(f"{where}: {file_name} is empty")
            result[key] = secret
    return result


def _cross_checks(data: object) -> list[str]:
    """Problems no single destination can see: duplicate names and replica server ids; and
    a ZooKeeper meta store without a ``zookeeper`` section."""
    problems: list[str] = []
    if isinstance(data, dict):
        meta = data.get("meta")
        if (
            isinstance(meta, dict)
            and meta.get("store") == "zookeeper"
            and not data.get("zookeeper")
        ):
            problems.append(
                "meta.store: 'zookeeper' needs a zookeeper section (hosts, session_timeout_ms, "
                "root)"
            )
    destinations = data.get("destinations") if isinstance(data, dict) else None
    if not isinstance(destinations, list):
        return problems
    names: dict[object, int] = {}
    slave_ids: dict[object, int] = {}
    for index, destination in enumerate(destinations):
        if not isinstance(destination, dict):
            continue
        name = destination.get("name")
        if isinstance(name, str):
            if name in names:
                problems.append(
                    f"destinations[{index}].name: {name!r} is already used by "
                    f"destinations[{names[name]}]"
                )
            names.setdefault(name, index)
        source = destination.get("source")
        slave_id = source.get("slave_id") if isinstance(source, dict) else None
        if isinstance(slave_id, int | str) and str(slave_id).strip().isdigit():
            slave_id = int(slave_id)
            if slave_id in slave_ids:
                problems.append(
                    f"destinations[{index}].source.slave_id: {slave_id} is already used by "
                    f"destinations[{slave_ids[slave_id]}]; every replica needs its own server id"
                )
            slave_ids.setdefault(slave_id, index)
    return problems


def _path(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text or "(top level)"


_MESSAGES: dict[str, str] = {
    "missing": "required",
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
}


def _describe(error: ErrorDetails) -> str:
    """One problem line, path first; never includes the offending input (it may be a secret)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        message = _unknown_key(tuple(error["loc"]))
    elif kind in _MESSAGES:
        message = _MESSAGES[kind]
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<="}
        bound = next(iter(ctx.values()))
        message = f"must be {op.get(kind, '<')} {bound}"
    elif kind == "literal_error":
        message = f"must be one of {ctx.get('expected')}"
    elif kind == "string_pattern_mismatch":
        message = f"must match {ctx.get('pattern')}"
    else:
        message = error["msg"].removeprefix("Value error, ")
    return f"{_path(tuple(error['loc']))}: {message}"


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    """ "unknown key", with the nearest key of that section when one is close (a typo)."""
    known = _keys_at(loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f"unknown key; did you mean {close[0]}?"
    return f"unknown key; this section takes {', '.join(known)}" if known else "unknown key"


def _keys_at(loc: tuple[str | int, ...]) -> list[str]:
    """The keys the config model takes at ``loc`` (list indexes skipped)."""
    model: Any = BridgeConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if _is_model(model) else None
        if field is None:
            return []
        model = _inner_model(field.annotation)
    return list(model.model_fields) if _is_model(model) else []


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _inner_model(annotation: object) -> object:
    """The model inside ``X | None`` or ``tuple[X, ...]``; the annotation itself otherwise."""
    for arg in typing.get_args(annotation):
        if _is_model(arg):
            return arg
    return annotation
