"""deploy/docker: a structural lint of the Dockerfile (deploy/docker/build.sh builds it with
buildah, tests/image runs the result; the Docker path with the Rust stage is checked here as
text) and the lock it installs, which must pin exactly what the project venv has installed."""

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


def _stages() -> dict[str, str]:
    """stage name (or its index) -> what it is FROM."""
    froms = [arg.split() for op, arg in _instructions() if op == "FROM"]
    return {(f[2] if len(f) == 3 else str(i)): f[0] for i, f in enumerate(froms)}


def test_base_image_is_a_pinned_slim_python_matching_the_venv() -> None:
    """The default base is the public python:*-slim; build.sh passes its local Debian base
    through the same PYTHON_IMAGE argument."""
    instructions = _instructions()
    args = dict(arg.split("=", 1) for op, arg in instructions if op == "ARG" and "=" in arg)
    image = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", image), image
    version = ".".join(map(str, sys.version_info[:2]))
    assert image.startswith(f"python:{version}."), (image, version)
    stages = _stages()
    assert stages["native-build"] == "${RUST_IMAGE}"
    assert re.fullmatch(r"rust:\d+\.\d+-slim-\w+", args["RUST_IMAGE"])
    assert stages["native-prebuilt"] == "scratch"
    assert stages["native"] == "native-${NATIVE}" and args["NATIVE"] == "build"
    assert stages["build"] == "${PYTHON_IMAGE}"
    assert list(stages.values())[-1] == "${PYTHON_IMAGE}"  # the final stage
    # build.sh's choices exist in the Dockerfile.
    build = (DOCKER / "build.sh").read_text()
    assert "--build-arg NATIVE=prebuilt" in build and "--build-context wheels=" in build
    assert '--build-arg PYTHON_IMAGE="$BASE_IMAGE"' in build


def test_the_compiled_hot_path_is_built_and_installed_with_the_bridge() -> None:
    instructions = _instructions()
    assert ("COPY", "native /src/native") in instructions
    runs = [arg for op, arg in instructions if op == "RUN"]
    assert any("maturin build --release" in r and "--out /wheels" in r for r in runs)
    assert ("COPY", "--from=wheels *.whl /wheels/") in instructions
    assert ("COPY", "--from=native /wheels /wheels") in instructions
    install = next(r for r in runs if "--no-deps ." in r)
    assert "/wheels/canal_bridge_native-*.whl" in install
    assert 'python -c "import canal_bridge_native"' in install
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!native/" in ignored  # the Rust stage's COPY needs it in the context


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
