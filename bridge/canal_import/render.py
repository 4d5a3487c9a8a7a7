"""The imported tree as destinations.yaml text: a comment block saying what did not map and
what changed, then the YAML; and the check that ``canal-bridge validate`` accepts the text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from bridge.canal_import.findings import EnvReference
from bridge.canal_import.importer import CanalImport
from bridge.config import InvalidConfig, parse_config
from bridge.exceptions import ConfigError


def render(result: CanalImport, problems: Iterable[str] = ()) -> str:
    """The header (``problems``: what validation reported, if anything) and the YAML."""
    findings = result.findings
    lines = [
        f"destinations.yaml imported by `canal-bridge import-canal` from {result.conf}.",
        "Check it with `canal-bridge validate --config <this file>`. Values are canal's (canal's",
        "defaults where a key was absent); mq.value_mode canal and mq.key_change update keep",
        "canal's record spellings for existing consumers (docs/canal-compatibility.md).",
    ]
    all_problems = [*findings.problems, *problems]
    if all_problems:
        lines += ["", f"PROBLEMS ({len(all_problems)}): fix these first"]
        lines += [f"  {problem}" for problem in all_problems]
    if findings.env:
        lines += ["", "Environment variables to set (secrets are never copied):"]
        lines += [f"  {name}: {what}" for name, what in findings.env.items()]
    if findings.changed:
        lines += ["", f"Mapped with a changed meaning ({len(findings.changed)}):"]
        lines += [f"  {note.line()}" for note in findings.changed]
    if findings.unmapped:
        lines += ["", f"Not mapped ({len(findings.unmapped)}):"]
        lines += [f"  {note.line()}" for note in findings.unmapped]
    if findings.empty:
        lines += ["", f"Left empty in canal, so setting nothing ({len(findings.empty)}):"]
        lines += [f"  {key}" for key in findings.empty]
    header = "\n".join(f"# {line}".rstrip() for line in lines)
    body = yaml.safe_dump(_for_yaml(result.config), sort_keys=False, allow_unicode=True, width=100)
    return f"{header}\n\n{body}"


def _for_yaml(value: Any) -> Any:
    """Secrets as ``${VAR}``; any other ``${`` is canal's literal text, written ``$${`` so
    that loading does not take it for a variable."""
    if isinstance(value, EnvReference):
        return str(value)
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, dict):
        return {key: _for_yaml(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_for_yaml(item) for item in value]
    return value


def validation_problems(result: CanalImport, text: str) -> list[str]:
    """What ``canal-bridge validate`` would report for ``text`` once the environment
    variables the import names are set (to stand-ins here: their values are not known)."""
    stand_ins = dict.fromkeys(result.findings.env, "set-at-run-time")
    try:
        parse_config(yaml.safe_load(text), source="imported", environ=stand_ins)
    except InvalidConfig as exc:
        return list(exc.problems)
    except ConfigError as exc:
        return [str(exc)]
    return []
