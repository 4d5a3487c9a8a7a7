"""deploy/monitoring: the alerts and the Grafana dashboard name only metrics the bridge exports,
every alert has a promtool test that makes it fire, and ``promtool check rules`` / ``promtool
test rules`` pass (promtool from PATH or var/cache/go/bin, built by deploy/local/install.sh
promtool; skipped without it unless CANAL_BRIDGE_REQUIRE_PROMTOOL=1, which test.sh sets)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.admin import BridgeCollector, DestinationSnapshot

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "prometheus-rules.yaml"
RULE_TESTS = MONITORING / "tests" / "rules.test.yaml"
DASHBOARD = MONITORING / "grafana-dashboard.json"
# Series Prometheus makes itself, not the bridge.
PROMETHEUS_OWN = frozenset({"up"})
_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "group_left", "group_right"})


class _NoDestinations:
    def snapshots(self) -> Sequence[DestinationSnapshot]:
        return []


def exported_metrics() -> set[str]:
    """Every sample name the bridge's collector writes (counters with ``_total``)."""
    names = set()
    for family in BridgeCollector(_NoDestinations()).collect():
        names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return names


def metric_names(expr: str) -> set[str]:
    """Names a PromQL expression selects: identifiers that are not functions, keywords,
    label names (before ``=``/``!=``/``=~``, or in ``by (...)``), durations or quoted text."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"\{[^}]*\}", "{}", text)  # matchers
    names = set()
    for match in _IDENTIFIER.finditer(text):
        word = match.group()
        rest = text[match.end() :].lstrip()
        if rest.startswith("(") or word in _KEYWORDS:
            continue  # a function or an operator
        if word.startswith("$") or text[match.start() - 1 : match.start()] == "$":
            continue  # a Grafana variable
        names.add(word)
    return names


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            exprs.append(re.sub(r"^label_values\((\w+),.*\)$", r"\1", variable["definition"]))
    return exprs


def test_metric_names_finds_selectors_and_nothing_else() -> None:
    expr = (
        'sum by (destination) (rate(canal_bridge_rowz_total{destination=~"$destination"}'
        "[$__rate_interval])) / on (instance) group_left up and canal_bridge_lag_seconds > 3"
    )
    assert metric_names(expr) == {"canal_bridge_rowz_total", "up", "canal_bridge_lag_seconds"}


def test_alerts_and_dashboard_name_only_exported_metrics() -> None:
    exported = exported_metrics() | PROMETHEUS_OWN
    assert {"canal_bridge_rows_total", "canal_bridge_lag_seconds"} <= exported
    exprs = [rule["expr"] for rule in _rules()] + _dashboard_exprs()
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        assert names <= exported, (sorted(names - exported), expr)


def test_dashboard_covers_what_an_operator_watches() -> None:
    """Rows/s, lag, batches, failed sends, store fill and HA role, per destination."""
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    used = set().union(*(metric_names(e) for e in _dashboard_exprs()))
    assert {
        "canal_bridge_rows_total",
        "canal_bridge_lag_seconds",
        "canal_bridge_batches_acked_total",
        "canal_bridge_delivery_errors_total",
        "canal_bridge_store_items",
        "canal_bridge_store_capacity_items",
        "canal_bridge_ha_active",
        "canal_bridge_destination_state",
    } <= used
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert "$destination" in target["expr"], (panel["title"], target["expr"])
            assert set(re.findall(r"\$(\w+)", target["expr"])) <= variables | {"__rate_interval"}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_every_alert_is_documented_and_made_to_fire_by_a_promtool_test() -> None:
    alerts = {rule["alert"] for rule in _rules()}
    assert {
        "CanalBridgeTargetDown",
        "CanalBridgeDestinationDown",
        "CanalBridgeDestinationNotReady",
        "CanalBridgeLagHigh",
        "CanalBridgeDeliveryFailing",
        "CanalBridgeCursorStuck",
    } <= alerts
    fired = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    assert alerts == fired
    operations = (ROOT / "docs" / "operations.md").read_text()
    assert all(f"`{alert}`" in operations for alert in alerts)
    for rule in _rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def _promtool() -> str:
    var = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", ROOT / "var"))
    found = shutil.which("promtool") or shutil.which("promtool", path=str(var / "cache/go/bin"))
    if found is None:
        reason = "promtool is not installed: deploy/local/install.sh promtool (needs Go)"
        if os.environ.get("CANAL_BRIDGE_REQUIRE_PROMTOOL") == "1":
            pytest.fail(f"CANAL_BRIDGE_REQUIRE_PROMTOOL=1 but {reason}")
        pytest.skip(reason)
    return found


@pytest.mark.parametrize(
    "args", [["check", "rules", str(RULES)], ["test", "rules", str(RULE_TESTS)]], ids=str
)
def test_promtool(args: list[str]) -> None:
    done = subprocess.run(
        [_promtool(), *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr
