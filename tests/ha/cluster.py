"""HA processes of one test: ``canal-bridge run`` children sharing a config with a ZooKeeper
section, and a ZooKeeper client to see which of them runs the destination. Used by the fail-over
tests and the chaos suite."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import yaml
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bridge.ha import RunningInfo
from bridge.ha.registration import local_ip
from tests.e2e.bridge_process import BridgeProcess


def ha_cluster(config: Path, zk_hosts: str, session_s: float) -> Cluster:
    """Turn a plain config (``write_config``) into an HA one under a fresh ZooKeeper root (cursor
    in ZooKeeper, flushed every 200 ms) and return the cluster that starts its processes."""
    settings = yaml.safe_load(config.read_text())
    root = f"/ha-test/{uuid.uuid4().hex[:8]}"
    settings["meta"] = {"store": "zookeeper", "flush_period_ms": 200}
    settings["zookeeper"] = {
        "hosts": zk_hosts,
        "session_timeout_ms": int(session_s * 1000),
        "root": root,
    }
    config.write_text(yaml.safe_dump(settings))
    return Cluster(config, zk_hosts, root, settings["destinations"][0]["name"])


class Cluster:
    """The processes of one test and a ZooKeeper client to see who runs the destination."""

    def __init__(self, config: Path, zk_hosts: str, root: str, destination: str) -> None:
        self.config = config
        self.root = root
        self.destination = destination
        self.processes: list[BridgeProcess] = []
        self.zk = KazooClient(zk_hosts)
        self.zk.start(10)

    def start(self, config: Path | None = None) -> BridgeProcess:
        """Start one more process (on ``config``, a copy of the cluster's that differs in how it
        reaches ZooKeeper, say) and wait until it joined the election."""
        process = BridgeProcess(config or self.config).start()
        self.processes.append(process)
        process.wait_for_output("HA on", 30)
        return process

    def running(self) -> RunningInfo | None:
        try:
            data, _ = self.zk.get(f"{self.root}/destinations/{self.destination}/running")
        except NoNodeError:
            return None
        except Exception:  # ZooKeeper is down in one of the tests
            return None
        return RunningInfo.loads(data)

    def runs(self, process: BridgeProcess) -> bool:
        info = self.running()
        return info is not None and info.address == address_of(process)

    def close(self) -> None:
        for process in self.processes:
            if process.process is not None and process.process.poll() is None:
                process.signal(signal.SIGCONT)
            process.kill()
        self.zk.stop()
        self.zk.close()


def address_of(process: BridgeProcess) -> str:
    """How a process names itself in the running node: <ip>:<pid>."""
    assert process.process is not None
    return f"{local_ip()}:{process.process.pid}"
