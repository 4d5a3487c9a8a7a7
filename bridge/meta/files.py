"""Crash-safe file replacement: a reader sees the old file or the new one, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a kill -9 or power loss at any instant leaves either
    the previous content or the new one.

    1. Write a temp file in the same directory (same filesystem, so the rename is atomic).
    2. fsync it, so its content is on disk before it gets the name.
    3. ``os.replace`` it over ``path``.
    4. fsync the directory, so the rename itself is durable.

    A crash before step 3 leaves a stray ``<name>.*.tmp`` that ``remove_temp_files`` deletes.
    """
    directory = path.parent
    fd, temp_name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as temp:  # Step 1
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())  # Step 2
        os.replace(temp_name, path)  # Step 3
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_directory(directory)  # Step 4


def remove_temp_files(path: Path) -> list[Path]:
    """Delete leftovers of interrupted ``write_atomic(path, ...)`` calls; returns them."""
    leftovers = sorted(path.parent.glob(f"{path.name}.*{TEMP_SUFFIX}"))
    for leftover in leftovers:
        leftover.unlink(missing_ok=True)
    return leftovers


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
