"""``import_canal``: a canal ``conf/`` folder as the tree of an equivalent destinations.yaml.

Steps:

1. read canal.properties and the instance.properties of every destination canal would start;
2. refuse a ``canal.serverMode`` that writes to another broker (rocketMQ, rabbitMQ, pulsarMQ);
   ``tcp`` (canal's shipped default) imports, with a note that consumers move to Kafka;
3. map the server-wide keys (kafka, meta, zookeeper, admin), then each destination;
4. list every key no mapping read: with a value, with the reason it has no place
   (``unmapped.reason_for``); left empty, as setting nothing.

Secrets (the source password, the Kafka SASL password) become ``${VAR}`` references; their
values are never read into the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.canal_import.canal_server import admin_section, meta_section, zookeeper_section
from bridge.canal_import.conf_dir import CanalConf, read_conf
from bridge.canal_import.destination import destination_entry
from bridge.canal_import.exceptions import UnsupportedServerMode
from bridge.canal_import.findings import Findings, Note
from bridge.canal_import.kafka import kafka_section
from bridge.canal_import.properties import Settings
from bridge.canal_import.unmapped import reason_for
from bridge.canal_import.values import Reader

TCP_MODE = (
    "tcp: canal served its own clients over TCP; canal-bridge writes the same messages to Kafka "
    "(the mq and kafka settings below): read them with canal's KafkaCanalConnector or any Kafka "
    "consumer (docs/consumers.md)"
)


@dataclass(frozen=True)
class CanalImport:
    conf: Path
    config: dict[str, Any]  # destinations.yaml's tree; secrets as EnvReference
    findings: Findings


def import_canal(path: Path) -> CanalImport:
    """Map the conf folder at ``path``; ``CanalImportError`` when it cannot be imported."""
    conf = read_conf(path)  # Step 1
    findings = Findings()
    server = Reader(Settings([conf.server], fixed=_where(conf)), findings)
    mode = server.text("canal.serverMode") or "tcp"
    if mode.lower() not in ("kafka", "tcp"):  # Step 2
        raise UnsupportedServerMode(path / "canal.properties", mode)
    if mode.lower() == "tcp":
        findings.changed.append(Note("canal.properties", "canal.serverMode", TCP_MODE))
    config: dict[str, Any] = {  # Step 3
        "kafka": kafka_section(server.settings, findings),
        "meta": meta_section(server, conf.path, list(conf.instances)),
        "admin": admin_section(server),
    }
    zookeeper = zookeeper_section(server)
    if zookeeper is not None:
        config["zookeeper"] = zookeeper
    slave_ids: set[int] = set()
    config["destinations"] = [
        destination_entry(name, _instance_reader(conf, name, findings), server, slave_ids)
        for name in conf.instances
    ]
    _list_unread(conf, findings)  # Step 4
    return CanalImport(conf.path, config, findings)


def _instance_reader(conf: CanalConf, name: str, findings: Findings) -> Reader:
    """The destination's view: its instance.properties over canal.properties, as canal's
    Spring context resolves them, with ``canal.instance.destination`` set to its name."""
    layers = [conf.instances[name], conf.server]
    fixed = {**_where(conf), "canal.instance.destination": name}
    return Reader(Settings(layers, fixed=fixed), findings)


def _where(conf: CanalConf) -> dict[str, str]:
    """``canal.conf.dir`` is where canal found the instance folders: the folder imported, so
    paths built on it (``canal.file.data.dir = ${canal.conf.dir}``) point there."""
    return {"canal.conf.dir": str(conf.path)}


def _list_unread(conf: CanalConf, findings: Findings) -> None:
    for file in (conf.server, *conf.instances.values()):
        for key in file.unread():
            if file.values[key].strip():
                findings.unmapped.append(Note(file.label, key, reason_for(key)))
            else:
                findings.empty.append(f"{file.label}: {key}")
