"""The built image, run the way deploy/docker/build.sh left it: buildah with the project's vfs
storage under var/cache/containers and chroot isolation (no Docker engine, no daemon).

``buildah run`` shares the host's PID numbers here (chroot isolation has no PID namespace), so
a test can signal the container's main process directly, as a container runtime signals PID 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", ROOT / "var"))
STORAGE = VAR_DIR / "cache" / "containers"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"localhost/canal-bridge:{VERSION}"
ARCHIVE = VAR_DIR / "image" / f"canal-bridge-{VERSION}.oci.tar"


def buildah(*args: str) -> list[str]:
    return [
        "buildah",
        "--root",
        str(STORAGE / "storage"),
        "--runroot",
        str(STORAGE / "run"),
        "--storage-driver",
        "vfs",
        *args,
    ]


def missing() -> str | None:
    """Why the image cannot be run here, or None when it can."""
    if shutil.which("buildah") is None:
        return "buildah is not installed (apt-get install buildah)"
    if os.geteuid() != 0:
        return "running the image with buildah's chroot isolation needs root"
    if not (STORAGE / "storage").is_dir():
        return f"no image storage in {STORAGE}: run deploy/docker/build.sh"
    found = subprocess.run(
        buildah("inspect", "--type", "image", IMAGE), capture_output=True, check=False
    )
    if found.returncode != 0:
        return f"no image {IMAGE} in {STORAGE}: run deploy/docker/build.sh"
    return None


def image_config() -> dict[str, Any]:
    """The image's OCI description: ``config`` (entrypoint, cmd, user, labels...) and the
    manifest's annotations."""
    done = subprocess.run(
        buildah("inspect", "--type", "image", IMAGE),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data = json.loads(done.stdout)
    return {"config": data["OCIv1"]["config"], "annotations": data.get("ImageAnnotations") or {}}


@dataclass
class Container:
    """A working container of the image; volumes are ``host path -> container path``."""

    volumes: dict[Path, str]
    name: str = field(default_factory=lambda: f"canal-bridge-smoke-{uuid.uuid4().hex[:8]}")
    rootfs: Path | None = None

    def create(self) -> Container:
        subprocess.run(
            buildah("from", "--quiet", "--name", self.name, IMAGE),
            capture_output=True,
            timeout=120,
            check=True,
        )
        mounted = subprocess.run(
            buildah("mount", self.name), capture_output=True, text=True, timeout=60, check=True
        )
        self.rootfs = Path(mounted.stdout.strip())
        return self

    def remove(self) -> None:
        subprocess.run(buildah("rm", self.name), capture_output=True, timeout=120, check=False)

    def command(self, argv: Sequence[str]) -> list[str]:
        """``buildah run`` of ``argv`` on the host network, as the image's user."""
        mounts = [f"--volume={host}:{inside}" for host, inside in self.volumes.items()]
        return buildah(
            "run", "--isolation", "chroot", "--network", "host", *mounts, self.name, "--", *argv
        )

    def run(self, argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )

    def start(self, argv: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                self.command(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """path -> (mtime_ns, size) of every file in the root file system, folders by name
        only (buildah touches /run for its mount points), to show that a run wrote nothing
        outside its volumes (they are not mounted between runs)."""
        assert self.rootfs is not None
        found: dict[str, tuple[int, int]] = {}
        for folder, dirs, files in os.walk(self.rootfs):
            for name in dirs:
                found[os.path.relpath(os.path.join(folder, name), self.rootfs)] = (0, 0)
            for name in files:
                path = os.path.join(folder, name)
                stat = os.lstat(path)
                found[os.path.relpath(path, self.rootfs)] = (stat.st_mtime_ns, stat.st_size)
        return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before children."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop(0)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except FileNotFoundError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except FileNotFoundError:
                continue
            found.extend(int(c) for c in children)
            pending.extend(int(c) for c in children)
    return found


def main_process(launcher: int, entrypoint: str) -> int | None:
    """The container's main process: the first process below ``buildah run`` that is Python
    running ``entrypoint`` (the image's ENTRYPOINT, a console script); buildah's own helper
    carries the command in its arguments too, but is not Python."""
    for pid in descendants(launcher):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        names = [os.path.basename(a.decode()) for a in argv[:2]]
        if len(names) == 2 and names[0].startswith("python") and names[1] == entrypoint:
            return pid
    return None
