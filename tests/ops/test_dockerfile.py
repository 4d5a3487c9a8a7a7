"""deploy/docker: a structural lint of the Dockerfile (no Docker engine here to build it) and
the lock it installs, which must pin exactly what the project venv has installed."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    return instructions[last_from:]


def test_base_image_is_a_pinned_slim_python_matching_the_venv() -> None:
    instructions = _instructions()
    args = dict(arg.split("=", 1) for op, arg in instructions if op == "ARG" and "=" in arg)
    image = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", image), image
    version = ".".join(map(str, sys.version_info[:2]))
    assert image.startswith(f"python:{version}."), (image, version)
    froms = [arg.split()[0] for op, arg in instructions if op == "FROM"]
    assert froms[0] == "${RUST_IMAGE}" and re.fullmatch(
        r"rust:\d+\.\d+-slim-\w+", args["RUST_IMAGE"]
    )
    assert froms[1:] and all(f == "${PYTHON_IMAGE}" for f in froms[1:])


def test_the_compiled_hot_path_is_built_and_installed_with_the_bridge() -> None:
    instructions = _instructions()
    assert ("COPY", "native /src/native") in instructions
    runs = [arg for op, arg in instructions if op == "RUN"]
    assert any("maturin build --release" in r and "--out /wheels" in r for r in runs)
    assert ("COPY", "--from=native /wheels /wheels") in instructions
    assert any("--no-deps . /wheels/*.whl" in r for r in runs)


def test_final_stage_runs_canal_bridge_as_a_non_root_user() -> None:
    stage = _final_stage()
    users = [arg for op, arg in stage if op == "USER"]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), user
    ops = [op for op, _ in stage]
    assert ops.index("ENTRYPOINT") > len(ops) - 1 - ops[::-1].index("USER")
    entrypoint = json.loads(next(arg for op, arg in stage if op == "ENTRYPOINT"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entrypoint == ["canal-bridge"] and "canal-bridge" in scripts
    cmd = json.loads(next(arg for op, arg in stage if op == "CMD"))
    assert cmd[0] == "run" and "--config" in cmd
    # No RUN after the user switch could need root; the app's dirs are owned by the user.
    run_steps = " ".join(arg for op, arg in stage if op == "RUN")
    assert "useradd" in run_steps and f"--uid {user}" in run_steps
    assert "chown" in run_steps


def test_copied_paths_exist_and_the_lock_is_installed_before_the_code() -> None:
    instructions = _instructions()
    copies = [shlex.split(arg) for op, arg in instructions if op == "COPY"]
    for args in copies:
        if any(a.startswith("--from") for a in args):
            continue
        for source in args[:-1]:
            assert (ROOT / source).exists(), source
    runs = [arg for op, arg in instructions if op == "RUN"]
    assert any("-r requirements.lock" in r for r in runs)
    assert any("--no-deps ." in r for r in runs)


def _load_lock_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("docker_lock", DOCKER / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lock_pins_exactly_the_runtime_closure_installed_in_the_venv() -> None:
    lock = _load_lock_module()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    expected = lock.runtime_closure(list(project["dependencies"]))
    lines = [
        line
        for line in (DOCKER / "requirements.lock").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    pinned = dict(line.split("==", 1) for line in lines)
    assert all("==" in line for line in lines)
    assert pinned == expected, "stale lock: run var/venv/bin/python deploy/docker/lock.py"
    for requirement in project["dependencies"]:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pinned, name
