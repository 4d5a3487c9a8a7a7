"""The container image deploy/docker/build.sh built, run for real against the local services.

The image runs with buildah (chroot isolation, host network) the way Kubernetes runs it
(deploy/k8s/base): config mounted at /etc/canal-bridge, the password from a mounted secret
file, the meta volume at /var/lib/canal-bridge/meta, /tmp a volume; its own ENTRYPOINT and CMD.

Skipped when buildah or the image is missing, unless CANAL_BRIDGE_REQUIRE_IMAGE=1
(deploy/local/test.sh sets it after building the image), which turns the skip into a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import tarfile
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from bridge.meta.file_store import FileCursorStore
from tests.conftest import MysqlEndpoint, connect_admin
from tests.e2e.bridge_process import consume, create_topic
from tests.image import container
from tests.image.container import Container
from tests.ops.helpers import free_port, get, scrape, wait_until

CONFIG_PATH = "/etc/canal-bridge/destinations.yaml"
SECRETS = "/run/secrets/canal-bridge"
META = "/var/lib/canal-bridge/meta"
USER_ID = 10001
ROWS = 300
SIZE_LIMIT = 250 * 1000 * 1000  # bytes, the target (pyspark is not in the image)


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    reason = container.missing()
    if reason is not None:
        if os.environ.get("CANAL_BRIDGE_REQUIRE_IMAGE") == "1":
            pytest.fail(f"CANAL_BRIDGE_REQUIRE_IMAGE=1 but {reason}")
        pytest.skip(reason)
    return container.image_config()


def test_image_runs_canal_bridge_as_non_root_with_its_labels(image: dict[str, Any]) -> None:
    config = image["config"]
    assert config["Entrypoint"] == ["canal-bridge"]
    assert config["Cmd"] == ["run", "--config", CONFIG_PATH, "--log-format", "json"]
    assert config["User"] == f"{USER_ID}:{USER_ID}"
    assert config["WorkingDir"] == "/var/lib/canal-bridge"
    # No image VOLUMEs: the runtime mounts the state folders (buildah 1.28 even lets an image
    # VOLUME hide a mount given on the command line).
    assert not config.get("Volumes")
    assert config["StopSignal"] == "SIGTERM"
    assert "11112/tcp" in config["ExposedPorts"]
    for metadata in (config["Labels"], image["annotations"]):
        assert metadata["org.opencontainers.image.version"] == container.VERSION
        assert metadata["org.opencontainers.image.revision"] not in ("", "unknown")
        assert metadata["org.opencontainers.image.source"]
    assert not any("PASSWORD" in e or "SECRET" in e for e in config.get("Env", []))


def test_oci_archive_is_loadable_by_podman_docker_and_ctr(image: dict[str, Any]) -> None:
    """podman reads the OCI layout, docker load ``manifest.json``, ctr import the containerd
    name; every blob they name is in the archive with its digest."""
    with tarfile.open(container.ARCHIVE) as archive:
        names = set(archive.getnames())

        def read(name: str) -> Any:
            member = archive.extractfile(name)
            assert member is not None, name
            return member.read()

        assert json.loads(read("oci-layout"))["imageLayoutVersion"] == "1.0.0"
        (entry,) = json.loads(read("index.json"))["manifests"]
        assert entry["annotations"]["io.containerd.image.name"] == (
            f"docker.io/library/canal-bridge:{container.VERSION}"
        )
        (docker,) = json.loads(read("manifest.json"))
        assert docker["RepoTags"] == [f"canal-bridge:{container.VERSION}"]
        manifest = json.loads(read(_blob(entry["digest"])))
        assert docker["Config"] == _blob(manifest["config"]["digest"])
        assert docker["Layers"] == [_blob(layer["digest"]) for layer in manifest["layers"]]
        assert len(manifest["layers"]) <= 3  # vfs copies a tree per layer: few layers
        for descriptor in [entry, manifest["config"], *manifest["layers"]]:
            name = _blob(descriptor["digest"])
            assert name in names
            digest = hashlib.sha256(read(name)).hexdigest()
            assert f"sha256:{digest}" == descriptor["digest"], name


def _blob(digest: str) -> str:
    return "blobs/" + digest.replace(":", "/", 1)


# ------------------------------------------------------------------------------- the smoke run


@pytest.fixture
def volumes(tmp_path: Path) -> dict[str, Path]:
    """Host folders for the container's mounts, owned as the pod's fsGroup would make them."""
    folders = {name: tmp_path / name for name in ("config", "secrets", "meta", "tmp")}
    for folder in folders.values():
        folder.mkdir()
    os.chown(folders["meta"], USER_ID, USER_ID)
    os.chmod(folders["tmp"], 0o1777)
    return folders


@pytest.fixture
def smoke_container(image: dict[str, Any], volumes: dict[str, Path]) -> Iterator[Container]:
    box = Container(
        volumes={
            volumes["config"]: "/etc/canal-bridge",
            volumes["secrets"]: SECRETS,
            volumes["meta"]: META,
            volumes["tmp"]: "/tmp",
        }
    )
    try:
        yield box.create()
    finally:
        box.remove()


@dataclass(frozen=True)
class Smoke:
    """One smoke run's world: the source, Kafka, the scratch schema and topic, the config."""

    mysql: MysqlEndpoint
    kafka: str
    schema: str
    topic: str
    destination: str
    admin: str  # base URL of the admin endpoint
    volumes: dict[str, Path]
    log: Path


@pytest.fixture
def smoke(
    volumes: dict[str, Path], mysql: MysqlEndpoint, kafka_bootstrap: str, scratch_schema: str
) -> Smoke:
    """destinations.yaml as deploy/k8s/base has it (file meta on the volume, the password from
    the secret file), a fresh topic, and a free admin port on the host network."""
    secret = volumes["secrets"] / "mysql-password"
    secret.write_text(mysql.password + "\n")
    os.chown(secret, 0, USER_ID)
    secret.chmod(0o440)
    destination = f"smoke{uuid.uuid4().hex[:6]}"
    topic = f"image-smoke-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, 1)
    port = free_port()
    config = {
        "kafka": {"bootstrap_servers": kafka_bootstrap, "producer": {"linger.ms": 5}},
        "meta": {"store": "file", "dir": META, "flush_period_ms": 200},
        "admin": {"listen": f"127.0.0.1:{port}"},
        "destinations": [
            {
                "name": destination,
                "source": {
                    "address": mysql.address,
                    "username": mysql.user,
                    "password_file": f"{SECRETS}/mysql-password",
                    "slave_id": 30000 + os.getpid() % 10000,
                },
                "filter": {"regex": scratch_schema + r"\..*"},
                "heartbeat_period_s": 1,
                "get_timeout_ms": 100,
                "mq": {"topic": topic, "partitions": 1},
            }
        ],
    }
    path = volumes["config"] / "destinations.yaml"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o644)
    log = volumes["tmp"].parent / "container.log"
    return Smoke(
        mysql,
        kafka_bootstrap,
        scratch_schema,
        topic,
        destination,
        f"http://127.0.0.1:{port}",
        volumes,
        log,
    )


def _binlog_position(mysql: MysqlEndpoint) -> tuple[str, int]:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SHOW MASTER STATUS" if mysql.flavor == "mariadb" else "SHOW BINARY LOG STATUS"
            )
            row = cur.fetchone()
            assert row is not None
            return str(row[0]), int(row[1])
    finally:
        conn.close()


def _insert_rows(mysql: MysqlEndpoint, schema: str) -> None:
    conn = connect_admin(mysql)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE `{schema}`.t (id INT PRIMARY KEY, name VARCHAR(40))")
            for start in range(0, ROWS, 50):
                cur.executemany(
                    f"INSERT INTO `{schema}`.t VALUES (%s, %s)",
                    [(i, f"row {i}") for i in range(start + 1, start + 51)],
                )
                conn.commit()
    finally:
        conn.close()


def _image_size(rootfs: Path) -> int:
    """Bytes of the image's files (hard links once): what the image unpacks to."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _dirs, files in os.walk(rootfs):
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def _read_back(smoke: Smoke, timeout_s: float) -> set[int]:
    """Ids of the rows inserted into the scratch schema that reached the topic."""
    seen: set[int] = set()
    records = cast(
        Generator[tuple[int, int, bytes | None, dict[str, Any]]], consume(smoke.kafka, smoke.topic)
    )
    deadline = time.monotonic() + timeout_s
    try:
        while len(seen) < ROWS and time.monotonic() < deadline:
            _partition, _offset, _key, message = next(records)
            if message.get("type") == "INSERT" and message.get("database") == smoke.schema:
                seen.update(int(row["id"]) for row in message["data"])
    finally:
        records.close()
    return seen


def _json_log(smoke: Smoke) -> list[dict[str, Any]]:
    text = smoke.log.read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _tail(smoke: Smoke, lines: int = 40) -> str:
    if not smoke.log.exists():
        return ""
    return "\n".join(smoke.log.read_text(errors="replace").splitlines()[-lines:])


@pytest.mark.timeout(300)
def test_image_checks_streams_answers_probes_and_stops_cleanly_on_sigterm(
    image: dict[str, Any], smoke_container: Container, smoke: Smoke
) -> None:
    assert smoke_container.rootfs is not None
    size = _image_size(smoke_container.rootfs)
    assert size <= SIZE_LIMIT, f"the image unpacks to {size / 1e6:.0f} MB"

    # Step 1: the preflight passes from inside the container.
    check = smoke_container.run(["canal-bridge", "check", "--config", CONFIG_PATH], 120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "FAIL" not in check.stdout and "PASS" in check.stdout, check.stdout

    # Step 2: the image's own entrypoint and command; the root file system must not change.
    before = smoke_container.snapshot()
    start = _binlog_position(smoke.mysql)
    launcher = smoke_container.start(
        [*image["config"]["Entrypoint"], *image["config"]["Cmd"]], smoke.log
    )
    try:
        wait_until(lambda: get(f"{smoke.admin}/readyz")[0] == 200, 90, "/readyz 200")
        assert get(f"{smoke.admin}/healthz")[0] == 200
        messages = [line["message"] for line in _json_log(smoke)]
        assert "record path: compiled (canal-bridge-native)" in messages, _tail(smoke)

        # Step 3: a few hundred changes reach Kafka.
        _insert_rows(smoke.mysql, smoke.schema)
        seen = _read_back(smoke, 60)
        assert seen == set(range(1, ROWS + 1)), f"{len(seen)} of {ROWS} rows: {_tail(smoke)}"
        # Counted when the batch is acked, which may follow the records into Kafka a little.
        key = ("canal_bridge_rows_total", (("destination", smoke.destination),))
        wait_until(lambda: scrape(smoke.admin).get(key, 0) >= ROWS, 30, "rows_total >= ROWS")

        # Step 4: SIGTERM to the container's main process, as the kubelet sends it.
        main = container.main_process(launcher.pid, "canal-bridge")
        assert main is not None, "the canal-bridge process of the container was not found"
        os.kill(main, signal.SIGTERM)
        assert launcher.wait(45) == 0, _tail(smoke)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(30)
    log = _json_log(smoke)
    assert "received SIGTERM: stopping" in [line["message"] for line in log], _tail(smoke)
    assert all(line["level"] != "ERROR" for line in log), _tail(smoke)

    # Step 5: the acked cursor is on the meta volume, past every inserted row.
    ((_client, cursor),) = FileCursorStore(smoke.volumes["meta"]).load(smoke.destination)
    assert cursor is not None
    acked = (cursor.position.journal_name or "", cursor.position.position or 0)
    assert acked > start, (acked, start)
    # Step 6: nothing was written outside the volumes: a read-only root file system works.
    after = smoke_container.snapshot()
    changed = sorted(
        path for path in after.keys() | before.keys() if after.get(path) != before.get(path)
    )
    assert not changed, f"written to the root file system: {changed[:20]}"
