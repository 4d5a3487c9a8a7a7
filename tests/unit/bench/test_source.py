"""Picking the source server by name: MySQL's variables, MariaDB's as the fallback for the
accounts they share, never for the port."""

from __future__ import annotations

import argparse

import pytest

from bench.source import add_source_argument, source_server

ENV = {
    "CANAL_BRIDGE_MYSQL_HOST": "10.0.0.5",
    "CANAL_BRIDGE_MYSQL_PORT": "13306",
    "CANAL_BRIDGE_MYSQL_USER": "canal",
    "CANAL_BRIDGE_MYSQL_PASSWORD": "secret",
    "CANAL_BRIDGE_ORACLE_MYSQL_PORT": "13307",
}


def test_mariadb_is_read_from_its_variables() -> None:
    server = source_server("mariadb", ENV)

    assert (server.flavor, server.address) == ("mariadb", ("10.0.0.5", 13306))
    assert (server.user, server.password) == ("canal", "secret")
    assert server.title == "MariaDB"


def test_mysql_takes_its_port_and_shares_the_other_settings() -> None:
    server = source_server("mysql", {**ENV, "CANAL_BRIDGE_ORACLE_MYSQL_USER": "repl"})

    assert server.address == ("10.0.0.5", 13307)
    assert (server.user, server.password) == ("repl", "secret")
    assert server.admin_user == "bridge_admin"  # neither names one: the default
    assert server.title == "MySQL"


def test_mysql_without_its_port_variable_uses_the_local_default_not_mariadbs() -> None:
    env = {key: value for key, value in ENV.items() if "ORACLE" not in key}

    assert source_server("mysql", env).port == 13307


def test_source_argument_defaults_to_mariadb_and_takes_only_the_two_servers() -> None:
    parser = argparse.ArgumentParser()
    add_source_argument(parser)

    assert parser.parse_args([]).source == "mariadb"
    assert parser.parse_args(["--source", "mysql"]).source == "mysql"
    with pytest.raises(SystemExit):
        parser.parse_args(["--source", "postgres"])
