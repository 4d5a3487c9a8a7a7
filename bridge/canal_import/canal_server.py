"""canal's server-wide settings as ``meta``, ``zookeeper`` and ``admin``.

The cursor store follows canal's instance XML: ``file-instance.xml`` keeps ``meta.dat`` files
under ``canal.file.data.dir`` and ``default-instance.xml`` keeps cursors in ZooKeeper; both
layouts are canal-bridge's too, so ``meta`` points at canal's own cursors and a destination
continues where canal acked last.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from bridge.canal_import.findings import Note
from bridge.canal_import.values import Reader

# canal's instance XML (basename) -> canal-bridge's meta.store
META_STORES = {
    "file-instance.xml": "file",
    "default-instance.xml": "zookeeper",
    "memory-instance.xml": "memory",
}
GLOBAL_XML = "canal.instance.global.spring.xml"
CANAL_ZK_ROOT = "/otter/canal"


def spring_xml_key(destination: str) -> str:
    return f"canal.instance.{destination}.spring.xml"


def meta_section(server: Reader, conf_dir: Path, destinations: list[str]) -> dict[str, Any]:
    """``meta`` from the instance XML the destinations use (per-destination overrides of the
    global one included: canal-bridge has one store for all)."""
    chosen: dict[str, str] = {}
    for name in destinations:
        key = spring_xml_key(name)
        xml = server.settings.get(key) or server.text(GLOBAL_XML) or ""
        chosen[name] = PurePosixPath(xml.removeprefix("classpath:")).name
    kinds = sorted(set(chosen.values()))
    xml = kinds[0] if len(kinds) == 1 else "file-instance.xml"
    findings = server.findings
    if len(kinds) > 1:
        findings.changed.append(
            Note(
                server.origin(GLOBAL_XML),
                GLOBAL_XML,
                f"destinations use {', '.join(kinds)}; "
                "canal-bridge has one cursor store for all: file",
            )
        )
    store = META_STORES.get(xml)
    if store is None:
        findings.changed.append(
            Note(
                server.origin(GLOBAL_XML),
                GLOBAL_XML,
                f"{xml} has no equivalent (group "
                "instances merge several sources); the import writes one source per "
                "destination with file meta",
            )
        )
        store = "file"
    meta: dict[str, Any] = {"store": store}
    if store == "file":
        data_dir = _canal_path(server.text("canal.file.data.dir") or "", conf_dir)
        meta["dir"] = str(data_dir)
        meta["flush_period_ms"] = server.integer("canal.file.flush.period")
        findings.changed.append(
            Note(
                server.origin("canal.file.data.dir"),
                "canal.file.data.dir",
                "meta.dir: canal's own <dir>/<destination>/meta.dat (the same format), so each "
                "destination continues from canal's last acked cursor: stop canal before "
                "starting canal-bridge",
            )
        )
    elif store == "zookeeper":
        meta["flush_period_ms"] = server.integer("canal.zookeeper.flush.period")
        findings.changed.append(
            Note(
                server.origin(GLOBAL_XML),
                GLOBAL_XML,
                "meta.store zookeeper: canal's cursor "
                "nodes (the same layout), so each destination continues from canal's last "
                "acked cursor: stop canal before starting canal-bridge",
            )
        )
    return meta


def _canal_path(value: str, conf_dir: Path) -> Path:
    """canal resolves relative paths from its bin/ folder, next to conf/; ``../conf`` (the
    default data dir) is the conf folder itself, whatever the folder imported is called."""
    path = Path(value)
    if path == Path("../conf"):
        return conf_dir
    if not path.is_absolute():
        path = conf_dir.parent / "bin" / path
    return path.resolve()


def zookeeper_section(server: Reader) -> dict[str, Any] | None:
    """``canal.zkServers`` (``host:port,...[/chroot]``) as hosts and root; canal's nodes are
    under ``<chroot>/otter/canal``. Its presence turns on HA, as ZooKeeper does in canal."""
    servers = server.text("canal.zkServers")
    if servers is None:
        return None
    hosts, slash, chroot = servers.partition("/")
    root = ("/" + chroot.strip("/") if slash and chroot.strip("/") else "") + CANAL_ZK_ROOT
    return {"hosts": hosts, "root": root}


def admin_section(server: Reader) -> dict[str, Any]:
    key = "canal.metrics.pull.port"
    port = server.integer(key)
    server.findings.changed.append(
        Note(
            server.origin(key),
            key,
            "admin.listen: canal-bridge's own metrics and health on "
            "127.0.0.1; use 0.0.0.0:<port> to scrape from another host",
        )
    )
    return {"listen": f"127.0.0.1:{port}" if port is not None else None}
