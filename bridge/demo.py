"""The quickstart demo: a small workload on MariaDB, ``canal-bridge run``, and the topic tailed.

``python -m bridge.demo --config config/destinations.yaml [--duration 30]`` (re)creates the
``demo`` tables with three customers, starts ``canal-bridge run`` as a child process, writes a
few orders per second (inserts, updates, deletes) and prints the FlatMessages arriving on the
destination's topic. On a first run (no cursor yet) the three customers come first, as
snapshot INSERTs (``snapshot.mode: initial``, the default); later runs stream the tables'
re-creation. Ctrl-C (or the end of ``--duration``) stops the writer and sends SIGTERM to the
bridge.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pymysql

from bridge.config import KafkaConfig, load_config
from bridge.mq.exceptions import TopicLookupFailed
from bridge.mq.tail import tail

SCHEMA = """
CREATE DATABASE IF NOT EXISTS demo;
DROP TABLE IF EXISTS demo.orders, demo.customers;
CREATE TABLE demo.customers (
  id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, country CHAR(2), vip BOOLEAN DEFAULT FALSE
);
CREATE TABLE demo.orders (
  id BIGINT AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(12,2),
  status ENUM('new','paid','shipped') DEFAULT 'new', note JSON, created DATETIME(6)
);
"""


def _admin_connection(host: str, port: int) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        host=host,
        port=port,
        user=os.environ.get("CANAL_BRIDGE_MYSQL_ADMIN_USER", "bridge_admin"),
        password=os.environ.get("CANAL_BRIDGE_MYSQL_ADMIN_PASSWORD", "bridge_admin"),
        autocommit=True,
        charset="utf8mb4",
    )


def create_tables(host: str, port: int) -> None:
    """The demo tables and their customers, before the bridge starts: rows it finds there
    (a snapshot's) rather than changes it streams."""
    conn = _admin_connection(host, port)
    with conn.cursor() as cur:
        for statement in filter(str.strip, SCHEMA.split(";")):
            cur.execute(statement)
        cur.executemany(
            "INSERT IGNORE INTO demo.customers VALUES (%s, %s, %s, %s)",
            [(1, "Ada", "GB", True), (2, "Grace", "US", False), (3, "Zoë", "FR", False)],
        )
    conn.close()


def write_workload(host: str, port: int, per_second: float, stop: threading.Event) -> None:
    """Inserts orders, pays and ships some, deletes a few: every kind of change, slowly."""
    conn = _admin_connection(host, port)
    rng = random.Random(7)
    while not stop.wait(1 / per_second):
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO demo.orders (customer_id, amount, note, created) "
                "VALUES (%s, %s, %s, NOW(6))",
                (rng.randint(1, 3), f"{rng.uniform(1, 500):.2f}", '{"source": "demo"}'),
            )
            cur.execute(
                "UPDATE demo.orders SET status = IF(status = 'new', 'paid', 'shipped') "
                "WHERE id = %s",
                (rng.randint(1, max(1, cur.lastrowid or 1)),),
            )
            if rng.random() < 0.2:
                cur.execute("DELETE FROM demo.orders WHERE status = 'shipped' LIMIT 1")
    conn.close()


def follow_topic(kafka: KafkaConfig, topic: str, finished: threading.Event) -> None:
    """Tail ``topic`` from its start; it appears with the bridge's first message."""
    while not finished.is_set():
        try:
            tail(kafka, topic, from_beginning=True, out=sys.stdout, stop=finished)
            return
        except TopicLookupFailed:
            finished.wait(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", type=Path, default=Path("config/destinations.yaml"))
    parser.add_argument("--rate", type=float, default=2.0, help="orders per second")
    parser.add_argument("--duration", type=float, default=None, help="seconds; default: forever")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    destination = config.destinations[0]
    create_tables(destination.source.host, destination.source.port)
    stop = threading.Event()
    writer = threading.Thread(
        target=write_workload,
        args=(destination.source.host, destination.source.port, args.rate, stop),
        daemon=True,
    )
    writer.start()
    bridge = subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", "run", "--config", str(args.config)]
    )
    print(f"canal-bridge run started (pid {bridge.pid}); following topic {destination.mq.topic}")
    finished = threading.Event()
    if args.duration is not None:
        threading.Timer(args.duration, finished.set).start()
    try:
        follow_topic(config.kafka, destination.mq.topic, finished)
    except KeyboardInterrupt:
        pass
    finally:
        finished.set()
        stop.set()
        bridge.send_signal(signal.SIGTERM)
        code = bridge.wait(60)
        print(f"canal-bridge exited with {code}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
