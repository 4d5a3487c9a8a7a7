"""Regenerate the Python modules of canal's protobuf schema from our ``.proto`` files.

The generated ``*_pb2.py`` (and their ``.pyi`` type stubs) are committed, so installing
canal-bridge needs only the ``protobuf`` runtime; the generator is a dev dependency
(``grpcio-tools``, which ships protoc, and ``mypy-protobuf``, pinned in pyproject.toml so that
``tests/unit/mq/test_canal_protocol.py`` can check the committed files are what they make).

    var/venv/bin/python -m bridge.mq.canal_protocol.generate [OUTPUT_DIR]

Writes next to the ``.proto`` files unless OUTPUT_DIR is given; fails with protoc's message.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = ("entry_protocol.proto", "canal_packet.proto")


def generate(output: Path = HERE) -> list[Path]:
    """Run protoc over our ``.proto`` files into ``output``; returns the files written."""
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found next to this Python: pip install -e '.[dev]'")
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"-I{HERE}",
        f"--python_out={output}",
        f"--mypy_out={output}",
        *PROTOS,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"protoc failed: {done.stderr.strip() or done.stdout.strip()}")
    stems = [name.removesuffix(".proto") + "_pb2" for name in PROTOS]
    return [output / f"{stem}{suffix}" for stem in stems for suffix in (".py", ".pyi")]


if __name__ == "__main__":
    for path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)
