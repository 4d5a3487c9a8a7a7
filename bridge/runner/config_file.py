"""The configuration file of a running bridge: read for a reload, written by ``apply_config``.

A reload is decided by content, not by time stamps: the file is read by path each time, so an
edit in place, an editor's save-by-rename and a Kubernetes ConfigMap's symlink swap all show
as new content. A write is atomic (a temporary file in the same directory, then
``os.replace``) and keeps the file's permissions, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from bridge.exceptions import ActionRefused, ConfigError


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_text(path: Path) -> str:
    """The file's text; ``ConfigError`` (one line) when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"{path}: cannot read the file: {reason}") from None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` in one step, with the permissions it had;
    ``ActionRefused`` (one line) when the directory cannot be written (a read-only mount)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise _unwritable(path, exc) from None


def _unwritable(path: Path, exc: OSError) -> ActionRefused:
    return ActionRefused(
        f"cannot write {path} ({exc.strerror}); nothing was applied: edit the file where it "
        "is managed (a ConfigMap: apply it) and the running bridge reloads it"
    )
