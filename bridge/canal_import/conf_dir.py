"""canal's ``conf/`` folder: ``canal.properties`` and the instance folders canal would start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bridge.canal_import.exceptions import CanalConfUnreadable
from bridge.canal_import.properties import PropertiesFile, load_properties

SERVER_FILE = "canal.properties"
INSTANCE_FILE = "instance.properties"
# Folders canal's auto-scan never takes for an instance.
_NOT_INSTANCES = frozenset({"spring"})


@dataclass
class CanalConf:
    path: Path
    server: PropertiesFile
    instances: dict[str, PropertiesFile]  # destination -> its instance.properties


def read_conf(path: Path) -> CanalConf:
    """The server file and every destination's file; ``CanalConfUnreadable`` when the folder,
    its canal.properties or a listed destination's instance.properties is missing."""
    if not path.is_dir():
        raise CanalConfUnreadable(path, "not a folder; pass canal's conf/ folder with --conf")
    server = _read(path / SERVER_FILE, SERVER_FILE, "pass canal's conf/ folder with --conf")
    instances = {
        name: _read(
            path / name / INSTANCE_FILE,
            f"{name}/{INSTANCE_FILE}",
            f"canal.destinations lists {name!r}: add its folder or remove it from the list",
        )
        for name in destinations(path, server)
    }
    if not instances:
        raise CanalConfUnreadable(
            path / SERVER_FILE,
            "no destination: canal.destinations is empty and no folder holds an "
            "instance.properties",
        )
    return CanalConf(path.resolve(), server, instances)


def destinations(path: Path, server: PropertiesFile) -> list[str]:
    """``canal.destinations`` and, with ``canal.auto.scan`` on (canal's default), every other
    folder holding an instance.properties, which canal's scan starts too."""
    listed = server.values.get("canal.destinations", "")
    names = [name.strip() for name in listed.split(",") if name.strip()]
    server.read.add("canal.destinations")
    scan = server.values.get("canal.auto.scan", "true").strip().lower() != "false"
    server.read.add("canal.auto.scan")
    if scan:
        names += sorted(
            folder.name
            for folder in path.iterdir()
            if folder.is_dir()
            and folder.name.lower() not in _NOT_INSTANCES
            and folder.name not in names
            and (folder / INSTANCE_FILE).is_file()
        )
    return names


def _read(file: Path, label: str, fix: str) -> PropertiesFile:
    if not file.is_file():
        raise CanalConfUnreadable(file, f"no such file; {fix}")
    try:
        return load_properties(file, label)
    except OSError as exc:
        raise CanalConfUnreadable(file, f"cannot read it: {exc.strerror}") from None
