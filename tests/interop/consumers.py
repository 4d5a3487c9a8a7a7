"""The real consumers (tests/interop/java: canal's client, Flink's canal-json), built once with
Maven and run as a child process that prints what the consumer handed over as JSON lines.

The build lands in ``var/cache/interop/<hash of the module's sources>/``, so a repeat run (and
every later session until the Java sources change) reuses it; Maven's repository is
``var/cache/m2``, the one deploy/local/install.sh fills, and runs offline once this module's
artifacts are in it. Without Java or Maven the tests skip, saying what to install, unless
``CANAL_BRIDGE_REQUIRE_JAVA_INTEROP=1`` (deploy/local/test.sh sets it), where they fail.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

MODULE = Path(__file__).with_name("java")
ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", ROOT / "var")) / "cache"
REQUIRE = "CANAL_BRIDGE_REQUIRE_JAVA_INTEROP"


def _sources_digest() -> str:
    """A hash of everything that decides the build: the pom and each source file, by path."""
    digest = hashlib.sha256()
    for path in sorted([MODULE / "pom.xml", *(MODULE / "src").rglob("*.java")]):
        digest.update(str(path.relative_to(MODULE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _missing_tools() -> str | None:
    for tool, package in (("java", "openjdk-17-jre-headless"), ("mvn", "maven")):
        if shutil.which(tool) is None:
            return (
                f"{tool} is not installed (apt-get install {package}, or deploy/local/install.sh)"
            )
    return None


def _skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def build() -> Path:
    """The consumers' jar (its manifest names ``lib/*.jar`` beside it), built if not cached."""
    missing = _missing_tools()
    if missing:
        _skip_or_fail(missing)
    digest = _sources_digest()
    built = CACHE / "interop" / digest
    jar = built / "interop-consumers.jar"
    if jar.is_file():
        return jar
    # The repository is warm once a build of these sources succeeded online; later builds
    # (e.g. after a Java-only edit, same pom) run offline, never touching the network.
    pom_digest = hashlib.sha256((MODULE / "pom.xml").read_bytes()).hexdigest()[:16]
    warm = CACHE / "m2" / f".interop-pom-{pom_digest}"
    partial = CACHE / "interop" / f"{digest}.partial-{uuid.uuid4().hex[:6]}"
    command = [
        "mvn",
        "-q",
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={CACHE / 'm2'}",
        f"-Dinterop.build.dir={partial}",
        *(["-o"] if warm.exists() else []),
        "-f",
        str(MODULE / "pom.xml"),
        "package",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        pytest.fail(
            f"building {MODULE} failed ({' '.join(command)}):\n{done.stdout}{done.stderr}",
            pytrace=False,
        )
    warm.touch()
    for leftover in ("classes", "generated-sources", "maven-archiver", "maven-status"):
        shutil.rmtree(partial / leftover, ignore_errors=True)
    try:
        partial.rename(built)
    except OSError:  # another session finished the same build first
        shutil.rmtree(partial, ignore_errors=True)
    return jar


@dataclass(frozen=True)
class ConsumerRun:
    """What one consumer run printed: one dict per line, its exit status and its stderr."""

    status: int
    lines: list[dict[str, Any]]
    error: str

    def rows(self) -> list[dict[str, Any]]:
        """The row changes, DDL left out."""
        return [line for line in self.lines if not line.get("isDdl")]


def run(jar: Path, *args: str, timeout_s: float = 180) -> ConsumerRun:
    done = subprocess.run(
        ["java", "-jar", str(jar), *args],
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    lines = [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return ConsumerRun(done.returncode, lines, done.stderr.decode(errors="replace").strip())
