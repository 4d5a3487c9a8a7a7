"""Shared pieces of the operations tests: free ports, HTTP scrapes, metric parsing, configs."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, timeout_s: float = 5.0) -> tuple[int, str]:
    """(status, body) of a GET; HTTP errors are answers too, not exceptions; status 0 when
    nothing answers (not listening yet)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except (urllib.error.URLError, ConnectionError) as exc:
        return 0, str(exc)


def send(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """(status, JSON document) of a request with ``body``; HTTP errors are answers too."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``base``/metrics keyed by (sample name, sorted labels)."""
    status, body = get(f"{base}/metrics")
    assert status == 200, body
    samples = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def metric(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def wait_until(
    condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.2
) -> Any:
    """Poll ``condition`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"{what} within {timeout_s}s (last: {last!r})")


def set_admin(config: Path, listen: str | None) -> None:
    """Rewrite the ``admin.listen`` of a config written by tests.e2e.bridge_process."""
    data: dict[str, Any] = yaml.safe_load(config.read_text())
    data["admin"] = {"listen": listen}
    config.write_text(yaml.safe_dump(data))
