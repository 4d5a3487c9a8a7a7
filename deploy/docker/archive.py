"""Make buildah's OCI archive of the image loadable by every common tool, in place.

    python deploy/docker/archive.py var/image/canal-bridge-0.1.0.oci.tar canal-bridge:0.1.0

buildah writes an OCI image layout (``oci-layout``, ``index.json``, ``blobs/sha256/*``), which
``podman load`` reads. Two entries are added, as ``docker save`` (Docker 25+) writes them:

- ``manifest.json``, the Docker archive manifest (config and layers point into ``blobs/``),
  which ``docker load`` of every Docker version reads;
- the ``io.containerd.image.name`` annotation in ``index.json`` (``docker.io/library/<name>``),
  the name ``ctr import`` gives the image.

Blobs are not touched, so the digests stay what buildah computed. Fails with one line if the
archive holds no single image manifest.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any


def _json_member(name: str, value: Any) -> tuple[tarfile.TarInfo, bytes]:
    data = json.dumps(value, separators=(",", ":")).encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


def _blob(digest: str) -> str:
    algorithm, hexdigest = digest.split(":", 1)
    return f"blobs/{algorithm}/{hexdigest}"


def rewrite(archive: Path, name: str) -> None:
    """Add ``manifest.json`` and the containerd name to ``archive`` (an OCI archive)."""
    with tarfile.open(archive) as source:
        members = {m.name.removeprefix("./"): m for m in source.getmembers()}

        def read(path: str) -> Any:
            member = source.extractfile(members[path])
            if member is None:
                sys.exit(f"{archive}: {path} is not a file")
            return json.load(member)

        if "index.json" not in members:
            sys.exit(f"{archive}: no index.json, not an OCI archive")
        index = read("index.json")
        if len(index.get("manifests", [])) != 1:
            sys.exit(f"{archive}: expected one image in index.json")
        entry = index["manifests"][0]
        manifest = read(_blob(entry["digest"]))
        repo, _, tag = name.rpartition(":")
        full = f"docker.io/library/{repo}:{tag}" if "/" not in repo else name
        entry.setdefault("annotations", {})["io.containerd.image.name"] = full
        docker_manifest = [
            {
                "Config": _blob(manifest["config"]["digest"]),
                "RepoTags": [name],
                "Layers": [_blob(layer["digest"]) for layer in manifest["layers"]],
            }
        ]
        partial = archive.with_suffix(".partial")
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as target:
            for path, member in members.items():
                if path in ("index.json", "manifest.json"):
                    continue
                target.addfile(member, source.extractfile(member) if member.isfile() else None)
            for info, data in (
                _json_member("index.json", index),
                _json_member("manifest.json", docker_manifest),
            ):
                target.addfile(info, io.BytesIO(data))
    partial.replace(archive)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: archive.py ARCHIVE NAME:TAG")
    rewrite(Path(sys.argv[1]), sys.argv[2])


if __name__ == "__main__":
    main()
