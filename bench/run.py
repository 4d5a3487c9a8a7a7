"""The end-to-end benchmark: one command, results appended to bench/results/runs.md.

    var/venv/bin/python -m bench.run --all [--scale 1] [--repeat 3] [--record]
    var/venv/bin/python -m bench.run --workload a --scale 0.1
    var/venv/bin/python -m bench.run --source mysql --workload a --workload a-compressed
    var/venv/bin/python -m bench.run --live [--rate 5000 --seconds 20]
    var/venv/bin/python -m bench.run --snapshot --rows 1000000  (bench.snapshot)

Per workload: load it into a fresh schema of the source server (``--source``: the local MariaDB
by default, or the local MySQL 9; after FLUSH BINARY LOGS, so it sits in one binlog file),
then, ``--repeat`` times, run ``canal-bridge run`` as a child process
from the workload's first binlog position to a fresh topic (acks=all, FlatMessage JSON) and
time it until the bridge reports every row change acked by Kafka (its /metrics ``rows``
counter: polled rarely while much is left, every 20 ms near the end). The floors run in the
same round, on the same binlog range: the server's binlog client copying the bytes
(``mariadb-binlog`` or MySQL's ``mysqlbinlog``, ``--read-from-remote-server --raw``) and plain
mysql-replication decoding every row. Figures are medians over the rounds. The first round
also reads the topic back and checks the row count. A workload with a ``baseline`` (the
realistic and the compressed (a)) is reported beside it when both ran.

``--live``: the bridge follows the binlog while a loader commits rows at ``--rate`` row changes
per second (transactions of ``--txn-rows``); latency is each row's commit (the loader's clock
when COMMIT returned) to its record's broker append time (the topic has
message.timestamp.type=LogAppendTime).

Needs the local services: ``eval "$(deploy/local/services.sh env)"``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.kafka_read import arrival_times, count_rows
from bench.measure import (
    BridgeRun,
    FloorResult,
    SharedCpu,
    binlog_floor,
    create_topic,
    delete_topic,
    percentiles,
    replication_floor,
    shared_cpu,
    usage_of,
)
from bench.snapshot import report_lines, run_snapshot
from bench.source import SourceServer, add_source_argument, source_server
from bench.workloads import (
    CORE,
    WORKLOADS,
    connect,
    create_schema,
    load_paced,
    master_position,
    refusals,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "runs.md"
READING = "reading"  # the instance's log line when the dump starts


@dataclass
class Round:
    rows: int
    total_s: float  # process spawn -> last row acked
    stream_s: float  # dump started -> last row acked
    cpu_s: float  # whole process, at the last ack
    stream_cpu_s: float  # CPU after the dump started
    peak_rss_mb: float
    binlog_floor_s: float
    binlog_bytes: int
    replication_floor_s: float  # 0 when not run (--no-floors, or a workload it cannot read)
    replication_floor_cpu_s: float
    shared: SharedCpu  # Kafka broker, source server and machine CPU while streaming


def run_workload(
    name: str,
    scale: float,
    repeat: int,
    workdir: Path,
    *,
    profile: Path | None = None,
    floors: bool = True,
    env: dict[str, str] | None = None,
    root: Path | None = None,
    settings: dict[str, Any] | None = None,
    source: SourceServer | None = None,
) -> dict[str, Any]:
    workload = WORKLOADS[name]
    server = source or source_server()
    schema = f"bench_{name.replace('-', '_')}"
    conn = connect(source=server)
    create_schema(conn, schema, workload)
    with conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
    start = master_position(conn)
    began = time.monotonic()
    workload.load(conn, schema, scale)
    load_s = time.monotonic() - began
    end_file, end = master_position(conn)
    conn.close()
    if end_file != start[0]:
        raise RuntimeError(f"the binlog rotated during the load ({start[0]} -> {end_file})")
    expected = workload.row_changes(scale)
    print(f"[{name}] loaded {expected} row changes in {load_s:.1f}s, {start}..{end}", flush=True)
    rounds = []
    for index in range(repeat):
        topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
        create_topic(topic)
        bridge = BridgeRun(
            workdir, schema, topic, start, env=env, root=root, settings=settings, source=server
        )
        if profile is not None and index == 0:
            profile.mkdir(parents=True, exist_ok=True)
            bridge.profile = profile / f"{name}.txt"
        try:
            bridge.start_process()
            t_read = bridge.wait_for_log(READING)
            cpu_read, shared_read = usage_of(bridge.pid).cpu_s, shared_cpu(server.flavor)
            t_done = bridge.wait_for_rows(expected, timeout_s=600 + expected / 1000)
            usage, shared = usage_of(bridge.pid), shared_cpu(server.flavor) - shared_read
        finally:
            bridge.stop()
        if index == 0:
            counted = count_rows(topic)
            if counted != expected:
                raise RuntimeError(f"{topic}: {counted} rows in Kafka, expected {expected}")
        delete_topic(topic)
        binlog = binlog_floor(start, end, server) if floors else FloorResult(1, 0, 0, 0)
        decoded = (
            replication_floor(start, end, schema, server)
            if floors and workload.replication_floor
            else FloorResult(0, 0, expected, 0)  # not run: 0 s, shown as "-"
        )
        if decoded.rows != expected:
            raise RuntimeError(f"mysql-replication decoded {decoded.rows} rows of {expected}")
        result = Round(
            rows=expected,
            total_s=t_done - bridge.started_at,
            stream_s=t_done - t_read,
            cpu_s=usage.cpu_s,
            stream_cpu_s=usage.cpu_s - cpu_read,
            peak_rss_mb=usage.peak_rss_mb,
            binlog_floor_s=binlog.wall_s,
            binlog_bytes=binlog.bytes,
            replication_floor_s=decoded.wall_s,
            replication_floor_cpu_s=decoded.cpu_s,
            shared=shared,
        )
        print(f"[{name}] round {index + 1}: {summary(result, server.title)}", flush=True)
        rounds.append(result)
    return {"workload": name, "scale": scale, "load_s": load_s, "rounds": rounds}


def summary(r: Round, server: str = "MariaDB") -> str:
    return (
        f"{r.rows / r.stream_s:,.0f} rows/s from dump start ({r.rows / r.total_s:,.0f} from "
        f"spawn), {r.stream_cpu_s / r.rows * 1e6:.1f} CPU s/M rows, peak RSS "
        f"{r.peak_rss_mb:.0f} MB; binlog copy {r.binlog_floor_s:.2f}s, mysql-replication "
        f"{r.replication_floor_s:.2f}s vs bridge {r.stream_s:.2f}s; Kafka broker "
        f"{r.shared.kafka_s / r.rows * 1e6:.1f}, {server} {r.shared.source_s / r.rows * 1e6:.1f} "
        f"CPU s/M rows, machine busy {r.shared.machine_s / r.stream_s:.2f} cores"
    )


def run_live(  # noqa: PLR0917  (the live run's knobs, straight from the command line)
    rate: int,
    seconds: float,
    txn_rows: int,
    get_timeout_ms: int,
    workdir: Path,
    env: dict[str, str] | None = None,
    root: Path | None = None,
    settings: dict[str, Any] | None = None,
    source: SourceServer | None = None,
) -> dict[str, Any]:
    schema = "bench_live"
    conn = connect(source=source)
    create_schema(conn, schema, WORKLOADS["d"])
    start = master_position(conn)
    topic = f"bench-live-{uuid.uuid4().hex[:8]}"
    create_topic(topic)
    bridge = BridgeRun(
        workdir,
        schema,
        topic,
        start,
        get_timeout_ms=get_timeout_ms,
        env=env,
        root=root,
        settings=settings,
        source=source,
    )
    total = int(rate * seconds) // txn_rows * txn_rows
    try:
        bridge.start_process()
        bridge.wait_for_log(READING)
        time.sleep(1.0)
        cpu0 = usage_of(bridge.pid).cpu_s
        load = load_paced(conn, schema, rate, total, txn_rows)
        commit_ms, load_s, behind = load.commit_ms, load.seconds, load.max_behind_s
        bridge.wait_for_rows(total, timeout_s=120)
        usage = usage_of(bridge.pid)
        cpu_s = usage.cpu_s - cpu0
    finally:
        bridge.stop()
        conn.close()
    arrived = arrival_times(topic)
    delete_topic(topic)
    latencies = sorted(arrived[i][0] - commit_ms[i] for i in range(1, total + 1))
    p50, p99 = percentiles(latencies, 50, 99)
    (built_p99,) = percentiles([arrived[i][1] - commit_ms[i] for i in range(1, total + 1)], 99)
    return {
        "rate": rate,
        "achieved_rate": total / load_s,
        "rows": total,
        "txn_rows": txn_rows,
        "get_timeout_ms": get_timeout_ms,
        "max_behind_s": behind,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": latencies[-1],
        "built_p99_ms": built_p99,
        "cpu_share": cpu_s / load_s,
        "peak_rss_mb": usage.peak_rss_mb,
    }


def medians(result: dict[str, Any]) -> dict[str, float]:
    rounds: list[Round] = result["rounds"]

    def med(field: str) -> float:
        return statistics.median(getattr(r, field) for r in rounds)

    rows = rounds[0].rows
    return {
        "rows": rows,
        "rows_per_s": statistics.median(r.rows / r.stream_s for r in rounds),
        "rows_per_s_spawn": statistics.median(r.rows / r.total_s for r in rounds),
        "cpu_per_m": statistics.median(r.stream_cpu_s / r.rows * 1e6 for r in rounds),
        "cpu_per_m_total": statistics.median(r.cpu_s / r.rows * 1e6 for r in rounds),
        "peak_rss_mb": med("peak_rss_mb"),
        "binlog_floor_ratio": statistics.median(r.stream_s / r.binlog_floor_s for r in rounds),
        "binlog_floor_rows_per_s": statistics.median(r.rows / r.binlog_floor_s for r in rounds),
        "replication_ratio": statistics.median(r.replication_floor_s / r.stream_s for r in rounds),
        "replication_rows_per_s": statistics.median(
            r.rows / r.replication_floor_s if r.replication_floor_s else 0.0 for r in rounds
        ),
        "binlog_mb": rounds[0].binlog_bytes / 1e6,
        "kafka_per_m": statistics.median(r.shared.kafka_s / r.rows * 1e6 for r in rounds),
        "source_per_m": statistics.median(r.shared.source_s / r.rows * 1e6 for r in rounds),
        "busy_cores": statistics.median(r.shared.machine_s / r.stream_s for r in rounds),
    }


def machine(source: SourceServer | None = None) -> str:
    """The box, Python, the source server's version and the commit, for a report's header."""
    server = source or source_server()
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    conn = connect(source=server)
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        row = cur.fetchone()
    conn.close()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "bridge"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    ).stdout.strip()
    return (
        f"{os.cpu_count()} x {model}, Python {platform.python_version()}, "
        f"{server.title} {row[0] if row else '?'}, "
        f"commit {commit}{' + local changes' if dirty else ''}"
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def record_table(module: str, argv: list[str] | None, label: str, table: str) -> None:
    """Append a run to RESULTS: ``label`` with the time, the machine, the command that
    reproduces it (``python -m module`` with ``argv``, else this process's arguments) and
    the Markdown ``table``."""
    command = f"var/venv/bin/python -m {module} " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    with RESULTS.open("a") as out:
        out.write(
            f"\n### {label} ({time.strftime('%Y-%m-%d %H:%M')})\n\n"
            f"- machine: {machine()}\n- command: `{command}`\n\n{table}\n"
        )


def beside_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per workload whose baseline ran too: its CPU per million rows and rate
    against the baseline's, so that a variant of (a) reads as a cost over (a)."""
    by_name = {result["workload"]: medians(result) for result in results}
    lines = []
    for name, m in by_name.items():
        baseline = WORKLOADS[name].baseline
        if baseline is None or baseline not in by_name:
            continue
        base = by_name[baseline]
        lines.append(
            f"{name} beside {baseline}: {m['cpu_per_m']:.1f} against {base['cpu_per_m']:.1f} "
            f"CPU s / M rows (x{m['cpu_per_m'] / base['cpu_per_m']:.2f}), "
            f"{m['rows_per_s']:,.0f} against {base['rows_per_s']:,.0f} rows/s from dump start."
        )
    return ["", *lines] if lines else []


def report(
    label: str,
    command: str,
    results: list[dict[str, Any]],
    live: dict[str, Any] | None,
    loads: tuple[str, str],
    *,
    snapshot: dict[str, Any] | None = None,
    source: SourceServer | None = None,
) -> str:
    server = source or source_server()
    copier = "mariadb-binlog" if server.flavor == "mariadb" else "mysqlbinlog"
    lines = [
        f"### {label} ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- machine: {machine(server)}",
        f"- load average before / after: {loads[0]} / {loads[1]}",
        f"- command: `{command}`",
        "",
    ]
    if results:
        lines += [
            "| workload | row changes | binlog MB | rows/s (from dump start) | rows/s (from spawn) "
            f"| CPU s / M rows | peak RSS MB | x {copier} time | mysql-replication rows/s "
            f"| bridge speed-up over mysql-replication | Kafka broker / {server.title} CPU s / M "
            "rows | machine busy (cores) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for result in results:
            m = medians(result)
            decoded = (
                f"{m['replication_rows_per_s']:,.0f} | {m['replication_ratio']:.2f}"
                if m["replication_rows_per_s"]
                else "- | -"  # a workload mysql-replication cannot read
            )
            floors = (
                f"| {m['binlog_floor_ratio']:.1f} | {decoded} |"
                if m["binlog_mb"]
                else "| - | - | - |"  # --no-floors
            )
            size = f"{m['binlog_mb']:.1f}" if m["binlog_mb"] else "-"
            lines.append(
                f"| {result['workload']} | {m['rows']:,} | {size} "
                f"| {m['rows_per_s']:,.0f} | {m['rows_per_s_spawn']:,.0f} "
                f"| {m['cpu_per_m']:.1f} ({m['cpu_per_m_total']:.1f} with start-up) "
                f"| {m['peak_rss_mb']:.0f} {floors} {m['kafka_per_m']:.1f} / "
                f"{m['source_per_m']:.1f} | {m['busy_cores']:.2f} |"
            )
        rounds = len(results[0]["rounds"])
        lines += ["", f"Medians of {rounds} round(s).", *beside_lines(results)]
    if live is not None:
        lines += [
            "",
            f"Live: {live['rows']:,} rows at {live['rate']:,} rows/s target "
            f"({live['achieved_rate']:,.0f} achieved, {live['txn_rows']}-row transactions, "
            f"get_timeout_ms {live['get_timeout_ms']}): commit -> Kafka append "
            f"p50 {live['p50_ms']:.1f} ms, p99 {live['p99_ms']:.1f} ms, max "
            f"{live['max_ms']:.0f} ms (commit -> record built p99 {live['built_p99_ms']:.1f} ms); "
            f"bridge CPU {live['cpu_share'] * 100:.0f}% of a core, "
            f"peak RSS {live['peak_rss_mb']:.0f} MB.",
        ]
    if snapshot is not None:
        lines += [*([""] if lines[-1] else []), *report_lines(snapshot)]
    return "\n".join(lines) + "\n"


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{flag} {item!r}: expected KEY=VALUE")
        pairs[key] = value
    return pairs


def _bridge_settings(items: list[str]) -> dict[str, Any]:
    return {k: yaml.safe_load(v) for k, v in _pairs(items, "--bridge-setting").items()}


def _bridge_env(items: list[str]) -> dict[str, str]:
    return _pairs(items, "--bridge-env")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS))
    parser.add_argument(
        "--all", action="store_true", help=f"workloads {', '.join(CORE)} and --live"
    )
    add_source_argument(parser)
    parser.add_argument("--live", action="store_true", help="the live latency run")
    parser.add_argument(
        "--snapshot", action="store_true", help="the snapshot run (bench.snapshot; --rows)"
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows the snapshot reads")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--txn-rows", type=int, default=10)
    parser.add_argument(
        "--live-get-timeout-ms",
        type=int,
        default=100,
        help="the bridge's get_timeout_ms in the live run (default: the product's, 100)",
    )
    parser.add_argument("--record", action="store_true", help=f"append to {RESULTS}")
    parser.add_argument("--label", default="Run")
    parser.add_argument("--profile", type=Path, help="py-spy the first round into this folder")
    parser.add_argument("--no-floors", action="store_true", help="skip the floors (iterating)")
    parser.add_argument(
        "--bridge-env", action="append", default=[], help="KEY=VALUE for the bridge (experiments)"
    )
    parser.add_argument(
        "--bridge-setting",
        action="append",
        default=[],
        help="KEY=VALUE (YAML value) added to the destination, e.g. parser_process=false",
    )
    parser.add_argument(
        "--bridge-root",
        type=Path,
        help="run the bridge package found in this folder (e.g. `git archive REV bridge`)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    names = list(CORE) if args.all else list(dict.fromkeys(args.workload or []))
    live = args.live or args.all
    if not names and not live and not args.snapshot:
        parser.error("name a --workload, --live, --snapshot or --all")
    if refused := refusals(names, args.source):
        raise SystemExit("\n".join(refused))
    source = source_server(args.source)
    loads_before = load_average()
    results = []
    live_result = None
    snapshot_result = None
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        workdir = Path(tmp)
        for name in names:
            results.append(
                run_workload(
                    name,
                    args.scale,
                    args.repeat,
                    workdir,
                    profile=args.profile,
                    floors=not args.no_floors,
                    env=_bridge_env(args.bridge_env),
                    root=args.bridge_root,
                    settings=_bridge_settings(args.bridge_setting),
                    source=source,
                )
            )
        if live:
            live_result = run_live(
                args.rate,
                args.seconds,
                args.txn_rows,
                args.live_get_timeout_ms,
                workdir,
                _bridge_env(args.bridge_env),
                args.bridge_root,
                _bridge_settings(args.bridge_setting),
                source,
            )
            print(f"[live] {live_result}", flush=True)
        if args.snapshot:
            snapshot_result = run_snapshot(
                args.rows,
                args.repeat,
                workdir,
                env=_bridge_env(args.bridge_env),
                root=args.bridge_root,
                settings=_bridge_settings(args.bridge_setting),
                profile=args.profile,
                source=source,
            )
    command = "var/venv/bin/python -m bench.run " + shlex.join(argv or sys.argv[1:])
    text = report(
        args.label,
        command,
        results,
        live_result,
        (loads_before, load_average()),
        snapshot=snapshot_result,
        source=source,
    )
    print(text)
    raw = ROOT / "var" / "bench"
    raw.mkdir(parents=True, exist_ok=True)
    dump = [{**r, "rounds": [asdict(x) for x in r["rounds"]]} for r in results]
    snapshot = snapshot_result and {
        **snapshot_result,
        "rounds": [asdict(x) for x in snapshot_result["rounds"]],
    }
    (raw / f"results-{int(time.time())}.json").write_text(
        json.dumps({"workloads": dump, "live": live_result, "snapshot": snapshot}, indent=1)
    )
    if args.record:
        with RESULTS.open("a") as out:
            out.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
