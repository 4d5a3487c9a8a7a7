"""The ``canal-bridge`` command line: run, validate, check, status, snapshot, schema, tail,
import-canal."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from bridge.config import BridgeConfig, load_config
from bridge.exceptions import BridgeError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="MySQL/MariaDB binlog change-data-capture to Kafka with canal's semantics.",
)


def _print_version(wanted: bool) -> None:
    if wanted:
        from bridge import __version__

        typer.echo(f"canal-bridge {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """MySQL/MariaDB binlog change-data-capture to Kafka with canal's semantics."""


ConfigOption = Annotated[
    Path, typer.Option("--config", "-c", help="destinations.yaml", exists=False, dir_okay=False)
]


def _load(path: Path) -> BridgeConfig:
    try:
        return load_config(path)
    except BridgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def validate(config: ConfigOption) -> None:
    """Check the configuration file and print every problem with its path."""
    loaded = _load(config)
    names = ", ".join(d.name for d in loaded.destinations)
    typer.echo(f"{config}: valid ({len(loaded.destinations)} destination(s): {names})")


@app.command()
def run(
    config: ConfigOption,
    log_format: Annotated[str, typer.Option(help="plain or json")] = "plain",
) -> None:
    """Run one MQ worker per destination until SIGINT/SIGTERM; a change to the file (or
    SIGHUP) is applied while running."""
    from bridge.runner import run_until_signalled

    loaded = _load(config)
    _setup_logging(log_format)
    try:
        code = run_until_signalled(loaded, config)
    except BridgeError as exc:
        logging.getLogger("bridge").error("%s", exc)
        raise typer.Exit(1) from None
    raise typer.Exit(code)


@app.command()
def check(config: ConfigOption) -> None:
    """Check every source and the Kafka topics against the configuration; exit 1 on a failure."""
    from bridge.check import print_check

    raise typer.Exit(print_check(_load(config), sys.stdout))


@app.command()
def status(config: ConfigOption) -> None:
    """Print each destination's cursor and how far it is behind its source; with HA, which
    process runs each destination and which stand by."""
    from bridge.commands.status import print_status

    loaded = _load(config)
    try:
        print_status(loaded, sys.stdout)
    except BridgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def snapshot(
    config: ConfigOption,
    destination: Annotated[str, typer.Option("--destination", "-d", help="destination name")],
    tables: Annotated[
        str, typer.Option("--tables", help="schema.table names, comma-separated: db.t1,db.t2")
    ],
    timeout_s: Annotated[
        float, typer.Option("--timeout-s", help="how long to wait for the destination")
    ] = 90.0,
) -> None:
    """Ask the process running a destination to snapshot tables again while it streams
    (through ZooKeeper with HA, else its admin endpoint); exit 1 when refused or unreachable."""
    from bridge.commands.snapshot import request_snapshot

    loaded = _load(config)
    raise typer.Exit(
        request_snapshot(
            loaded, destination, tables, timeout_s=timeout_s, out=sys.stdout, err=sys.stderr
        )
    )


schema_app = typer.Typer(no_args_is_help=True, help="The schema history of a destination.")
app.add_typer(schema_app, name="schema")


@schema_app.command("show")
def schema_show(
    config: ConfigOption,
    destination: Annotated[str, typer.Option("--destination", "-d", help="destination name")],
    table: Annotated[str | None, typer.Option("--table", help="only this db.table")] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="FILE:OFFSET; default: the acked cursor")
    ] = None,
) -> None:
    """Print the table definitions a destination decodes with, as of its acked cursor or a
    binlog position, from its stored schema history."""
    from bridge.commands.schema import show_schema

    raise typer.Exit(
        show_schema(_load(config), destination, table=table, at=at, out=sys.stdout, err=sys.stderr)
    )


@schema_app.command("reload")
def schema_reload(
    config: ConfigOption,
    destination: Annotated[str, typer.Option("--destination", "-d", help="destination name")],
    table: Annotated[str, typer.Option("--table", help="db.table to read from the source")],
    at: Annotated[
        str | None,
        typer.Option("--at", help="FILE:OFFSET of the DDL it replaces; default: the cursor"),
    ] = None,
) -> None:
    """Read a table's definition from the source and keep it in the destination's history
    at a position (after a stop on a DDL the parser could not read); restart after."""
    from bridge.commands.schema import reload_table

    raise typer.Exit(
        reload_table(_load(config), destination, table=table, at=at, out=sys.stdout, err=sys.stderr)
    )


@app.command()
def tail(  # noqa: PLR0917  (typer maps each option to a parameter)
    config: ConfigOption,
    topic: Annotated[str, typer.Option("--topic", "-t", help="topic to follow")],
    from_beginning: Annotated[bool, typer.Option(help="start at the oldest offset")] = False,
    max_messages: Annotated[int | None, typer.Option(help="stop after this many")] = None,
    timeout_s: Annotated[float | None, typer.Option(help="stop after this long idle")] = None,
    read_committed: Annotated[
        bool,
        typer.Option(
            "--read-committed/--read-uncommitted",
            help="only records of committed transactions (exactly-once topics), or every "
            "record written, aborted ones included",
        ),
    ] = True,
) -> None:
    """Pretty-print the FlatMessages of a topic as they arrive."""
    from bridge.mq.tail import tail as follow

    loaded = _load(config)
    follow(
        loaded.kafka,
        topic,
        from_beginning=from_beginning,
        max_messages=max_messages,
        idle_timeout_s=timeout_s,
        out=sys.stdout,
        read_committed=read_committed,
    )


@app.command("import-canal")
def import_canal(
    conf: Annotated[
        Path, typer.Option("--conf", help="canal's conf/ folder (canal.properties, <dest>/)")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write here instead of stdout")
    ] = None,
) -> None:
    """Print a destinations.yaml equivalent to a canal deployer's conf/ folder (Kafka mode),
    every key it cannot map listed at the top with the reason; secrets become ${VAR}.
    Exit 1 when the result does not validate (the problems head the output), 2 on refusal."""
    from bridge.canal_import import CanalImportError, render, validation_problems
    from bridge.canal_import import import_canal as run_import

    try:
        result = run_import(conf)
    except CanalImportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    problems = validation_problems(result, render(result))
    text = render(result, problems)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    findings = result.findings
    problems = [*findings.problems, *problems]
    typer.echo(
        f"imported {len(result.config['destinations'])} destination(s) from {conf}: "
        f"{len(findings.unmapped)} key(s) not mapped, {len(findings.changed)} with a changed "
        f"meaning, {len(problems)} problem(s) (listed at the top of the output)",
        err=True,
    )
    for problem in problems:
        typer.echo(f"problem: {problem}", err=True)
    raise typer.Exit(1 if problems else 0)


def _setup_logging(log_format: str) -> None:
    from bridge.logs import configure_logging

    configure_logging(log_format)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
