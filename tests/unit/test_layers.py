"""What the reader processes import. (How the packages import one another is checked by
import-linter's contracts in pyproject.toml, which deploy/local/test.sh runs as
``lint-imports``.)"""

from __future__ import annotations

import pickle
import subprocess
import sys

from bridge.schema.definitions import Schemas
from bridge.schema.history import SchemaHistory
from bridge.sink import TableFilter

# What the reader processes import: their child modules, the module the pickled
# ``AheadEncoding`` of their spec names, and what the pickled schema history brings (the
# destination's table filter). The configuration's models and the Kafka client cost each such
# process ~20 MB.
READER_PROCESS_MODULES = ("bridge.parse.child", "bridge.snapshot.child", "bridge.mq.rendering")
NOT_IN_READER_PROCESSES = ("pydantic", "yaml", "confluent_kafka", "kazoo", "aiohttp")


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_reader_processes_load_neither_the_configuration_nor_the_kafka_client() -> None:
    history = pickle.dumps(SchemaHistory(Schemas(), selected=TableFilter(r"shop\..*")))
    probe = (
        "import pickle, sys\n"
        f"for name in {READER_PROCESS_MODULES!r}:\n"
        "    __import__(name)\n"
        f"pickle.loads({history!r})\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} | set(sys.modules))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert [name for name in NOT_IN_READER_PROCESSES if name in loaded] == []
    assert [name for name in loaded if _within(name, "bridge.config")] == []
