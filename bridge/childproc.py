"""Helper processes of the bridge: how one is started, talks in frames and dies with its parent.

The binlog reader (``bridge.parse.child``) and the snapshot reader (``bridge.snapshot.child``)
run in processes of their own so that their decoding uses a second core (a Python process runs
Python code on one core at a time). Both are ``python -m <module>`` with this package first on
the import path, in a session of their own (a signal to the bridge's process group does not
reach them: the bridge stops them itself), killed when the thread that started them ends
(Linux ``PR_SET_PDEATHSIG``, set once a child is told what to do; before that, a child started
ahead ends when its stdin does), and both speak in frames: a kind byte, a length, a payload. A
failure crosses as a frame of kind ``ERROR`` holding the pickled error, raised again on the
parent's side as itself (``BridgeError`` subclasses pickle with their attributes).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import pickle
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

ERROR = b"x"
PIPE_BYTES = 1 << 20  # Linux's default pipe-max-size for unprivileged processes
_F_SETPIPE_SZ = 1031
_FRAME = struct.Struct(">cI")  # kind, payload length
_PR_SET_PDEATHSIG = 1
KILL_WAIT_S = 10.0


def spawn(module: str) -> subprocess.Popen[bytes]:
    """``python -m module`` with pipes on stdin and stdout, in a session of its own (out of
    the terminal's process group: Ctrl-C or a signal to the group reaches the bridge, which
    stops the child itself, rather than both at once)."""
    return subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_environment(),
        start_new_session=True,
    )


def child_environment() -> dict[str, str]:
    """This process's environment, with the folder holding this ``bridge`` package first on
    the child's import path (the parent may have found it through its working directory)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def widen_pipe(stream: IO[bytes]) -> None:
    """Let the child run further ahead of us than a pipe's default 64 KiB (Linux), so that a
    pause here (the worker holding the GIL, a full store) does not stop its work at once."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or over pipe-max-size
        fcntl.fcntl(stream.fileno(), _F_SETPIPE_SZ, PIPE_BYTES)


def write_frame(stream: IO[bytes], kind: bytes, payload: bytes) -> None:
    stream.write(_FRAME.pack(kind, len(payload)))
    stream.write(payload)
    stream.flush()


def write_error(stream: IO[bytes], exc: BaseException) -> None:
    """``exc`` as an ``ERROR`` frame; one that does not pickle still reports its text."""
    try:
        payload = pickle.dumps((exc, type(exc).__name__, str(exc)))
    except Exception:
        payload = pickle.dumps((None, type(exc).__name__, str(exc)))
    write_frame(stream, ERROR, payload)


def read_frame(stream: IO[bytes]) -> tuple[bytes, bytes] | None:
    """The next ``(kind, payload)``, or None when the stream ended (the other side is gone)."""
    head = _read_exactly(stream, _FRAME.size)
    if head is None:
        return None
    kind, length = _FRAME.unpack(head)
    payload = _read_exactly(stream, length)
    if payload is None:
        return None
    return kind, payload


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def error_from(payload: bytes, unknown: Callable[[str], BaseException]) -> BaseException:
    """The error of an ``ERROR`` frame as itself, or ``unknown("Type: text")`` when it did not
    pickle."""
    error, type_name, text = pickle.loads(payload)
    if isinstance(error, BaseException):
        return error
    return unknown(f"{type_name}: {text}")


def end(child: subprocess.Popen[bytes], wait_s: float = KILL_WAIT_S) -> int | None:
    """Kill the child if it still runs, reap it and return its exit code (None if it was not
    gone within ``wait_s``)."""
    if child.poll() is None:
        child.kill()
    try:
        return child.wait(wait_s)
    except subprocess.TimeoutExpired:
        return None
    finally:
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def die_with_parent(parent_pid: int) -> None:
    """Be killed when the thread that started us ends (Linux), and leave if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)


def frames_out() -> IO[bytes]:
    """The child's side: stdout as the frame stream, and a stray print sent to stderr, never
    into the frames."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return out
