"""canal 1.1.8's shipped ``conf/`` (tests/fixtures/canal-conf) copied for a test, with keys set.

Keys are set the way Java's ``Properties`` lets a later line win: appended to the file, so the
shipped text stays as it is above them. Values are written as they would appear in the file
(properties escapes: ``\\\\.`` for a regex's ``\\.``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

SHIPPED_CONF = Path(__file__).resolve().parent / "fixtures" / "canal-conf"

# The edit canal's Kafka quick start asks for (the shipped file says tcp, which imports too).
KAFKA_MODE = {"canal.serverMode": "kafka"}


def canal_conf(
    tmp_path: Path,
    server: dict[str, str] | None = None,
    instance: dict[str, str] | None = None,
    *,
    kafka_mode: bool = False,
) -> Path:
    """A copy of the shipped conf/ under ``tmp_path``; ``server`` keys go to canal.properties,
    ``instance`` keys to example/instance.properties."""
    conf = tmp_path / "conf"
    shutil.copytree(SHIPPED_CONF, conf)
    set_keys(conf / "canal.properties", {**(KAFKA_MODE if kafka_mode else {}), **(server or {})})
    set_keys(conf / "example" / "instance.properties", instance or {})
    return conf


def set_keys(path: Path, keys: dict[str, str]) -> None:
    if keys:
        with path.open("a", encoding="latin-1") as out:
            out.write("\n" + "".join(f"{key} = {value}\n" for key, value in keys.items()))
