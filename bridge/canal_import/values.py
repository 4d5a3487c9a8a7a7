"""Typed reads of canal settings: canal's own default when a key is absent or empty, and a
problem (never an exception) when a value does not convert, so one import lists them all."""

from __future__ import annotations

from bridge.canal_import.findings import Findings
from bridge.canal_import.properties import Settings

# Defaults canal applies when a key is absent (Spring placeholders in canal's instance XML,
# canal's MQProperties); the import writes them out, as canal-bridge's own defaults differ.
CANAL_DEFAULTS: dict[str, str] = {
    "canal.instance.dbUsername": "retl",
    "canal.instance.filter.regex": r".*\..*",
    "canal.instance.memory.buffer.size": "16384",
    "canal.instance.memory.buffer.memunit": "1024",
    "canal.instance.memory.batch.mode": "MEMSIZE",
    "canal.instance.transaction.size": "1024",
    "canal.instance.fallbackIntervalInSeconds": "60",
    "canal.instance.get.ddl.isolation": "false",
    "canal.instance.parser.parallel": "true",
    "canal.instance.gtidon": "false",
    "canal.instance.enableDruid": "false",
    "canal.instance.master.sslMode": "DISABLED",
    "canal.auto.reset.latest.pos.mode": "false",
    "canal.mq.partition": "0",
    "canal.mq.partitionsNum": "1",
    "canal.mq.canalBatchSize": "50",
    "canal.mq.canalGetTimeout": "100",
    "canal.mq.flatMessage": "true",
    "canal.mq.database.hash": "true",
    "canal.file.data.dir": "../conf",
    "canal.file.flush.period": "1000",
    "canal.zookeeper.flush.period": "1000",
    "canal.metrics.pull.port": "11112",
    "canal.instance.global.spring.xml": "classpath:spring/file-instance.xml",
    "canal.serverMode": "tcp",
    "canal.auto.scan": "true",
}


class Reader:
    """Reads one ``Settings`` view, recording conversion problems in ``findings``."""

    def __init__(self, settings: Settings, findings: Findings) -> None:
        self.settings = settings
        self.findings = findings

    def text(self, key: str) -> str | None:
        value = self.settings.get(key)
        return value if value is not None else CANAL_DEFAULTS.get(key)

    def integer(self, key: str) -> int | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            self._bad(key, value, "an integer")
            return None

    def flag(self, key: str) -> bool | None:
        value = self.text(key)
        if value is None:
            return None
        if value.lower() not in ("true", "false"):
            self._bad(key, value, "true or false")
            return None
        return value.lower() == "true"

    def origin(self, key: str) -> str:
        return self.settings.origin(key)

    def _bad(self, key: str, value: str, expected: str) -> None:
        self.findings.bad_value(self.origin(key), key, value, expected)
