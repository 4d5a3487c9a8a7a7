"""Imports point down: the configuration is a leaf everything reads, the binlog reader knows
nothing of the output format, and the output format nothing of the binlog reader. Every import
of every module under bridge/ counts, including those inside functions and under
``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

BRIDGE = Path(__file__).resolve().parents[2] / "bridge"

# leaf package -> the only bridge packages it may import
LEAVES: dict[str, tuple[str, ...]] = {
    "bridge.config": ("bridge.config", "bridge.exceptions"),
}
# package -> packages it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "bridge.parse": (
        "bridge.mq",
        "bridge.sink",
        "bridge.store",
        "bridge.instance",
        "bridge.ha",
        "bridge.admin",
        "bridge.runner",
    ),
    "bridge.mq": ("bridge.parse", "bridge.ha", "bridge.runner"),
    # The instance gets its output format injected (RowsEncoder.ahead), never imports it.
    "bridge.instance": ("bridge.mq", "bridge.ha", "bridge.admin", "bridge.runner"),
    "bridge.entry": ("bridge.parse", "bridge.mq", "bridge.instance"),
    # The schema history is below the binlog reader: definitions, DDL and their storage.
    "bridge.schema": (
        "bridge.parse",
        "bridge.mq",
        "bridge.sink",
        "bridge.store",
        "bridge.instance",
        "bridge.ha",
        "bridge.admin",
        "bridge.runner",
    ),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(BRIDGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "bridge" and node.level == 0:
            names.update(f"bridge.{alias.name}" for alias in node.names)  # from bridge import x
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def forbidden_edges() -> list[str]:
    edges = []
    for path in sorted(BRIDGE.rglob("*.py")):
        module = _module_name(path)
        for package, banned in FORBIDDEN.items():
            if not _within(module, package):
                continue
            edges += [
                f"{module} -> {name}"
                for name in sorted(_imports(path))
                if any(_within(name, b) for b in banned)
            ]
        for leaf, allowed in LEAVES.items():
            if not _within(module, leaf):
                continue
            edges += [
                f"{module} -> {name}"
                for name in sorted(_imports(path))
                if _within(name, "bridge") and not any(_within(name, a) for a in allowed)
            ]
    return edges


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_cycles() -> list[str]:
    """Packages under bridge/ (and top-level modules) that reach themselves by imports."""
    edges: dict[str, set[str]] = {}
    for path in sorted(BRIDGE.rglob("*.py")):
        source = _package(_module_name(path))
        for name in _imports(path):
            if _within(name, "bridge") and name != "bridge" and _package(name) != source:
                edges.setdefault(source, set()).add(_package(name))
    cycles = []
    for start in sorted(edges):
        seen, todo = set(), list(edges[start])
        while todo:
            package = todo.pop()
            if package not in seen:
                seen.add(package)
                todo.extend(edges.get(package, ()))
        if start in seen:
            cycles.append(start)
    return cycles


def test_no_module_imports_upwards() -> None:
    assert forbidden_edges() == []


def test_packages_import_one_another_without_cycles() -> None:
    """Not even under ``TYPE_CHECKING``: a cycle there is a layer boundary in the wrong place."""
    assert package_cycles() == []


def test_the_walk_sees_imports_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from bridge.mq.records import x\n"
        "def f():\n    import bridge.sink\n"
    )
    assert {"bridge.mq.records", "bridge.sink"} <= _imports(source)


def test_the_walk_sees_submodules_imported_from_the_package(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("from bridge import native, mq\n")
    assert {"bridge.native", "bridge.mq"} <= _imports(source)


# What the reader processes import: their child modules, and the module the pickled
# ``AheadEncoding`` of their spec names. The configuration's models and the Kafka client
# cost each such process ~20 MB (docs/benchmarks.md, eleventh session).
READER_PROCESS_MODULES = ("bridge.parse.child", "bridge.snapshot.child", "bridge.mq.rendering")
NOT_IN_READER_PROCESSES = ("pydantic", "yaml", "confluent_kafka", "kazoo", "aiohttp")


def test_reader_processes_load_neither_the_configuration_nor_the_kafka_client() -> None:
    probe = (
        "import sys\n"
        f"for name in {READER_PROCESS_MODULES!r}:\n"
        "    __import__(name)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} | set(sys.modules))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert [name for name in NOT_IN_READER_PROCESSES if name in loaded] == []
    assert [name for name in loaded if _within(name, "bridge.config")] == []
