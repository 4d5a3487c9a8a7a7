"""Java .properties as canal reads them, and the Spring view an instance sees."""

from __future__ import annotations

from bridge.canal_import import Settings, parse_properties
from bridge.canal_import.properties import PropertiesFile


def test_separators_comments_and_duplicates() -> None:
    text = "# comment\n! also a comment\na=1\nb : 2\nc 3\nd =\n   e = indented\na = 4\n"
    assert parse_properties(text) == {"a": "4", "b": "2", "c": "3", "d": "", "e": "indented"}


def test_escapes_and_continuation_lines() -> None:
    text = (
        "regex = .*\\\\..*\n"  # .*\\..* in the file: the regex .*\..*
        "unicode = caf\\u00e9\n"
        "long = one, \\\n"
        "       two\n"
        "key\\ with\\ spaces = x\n"
        "tab = a\\tb\n"
        "even = ends with a backslash \\\\\n"
        "next = not joined\n"
    )
    assert parse_properties(text) == {
        "regex": r".*\..*",
        "unicode": "café",
        "long": "one, two",
        "key with spaces": "x",
        "tab": "a\tb",
        "even": "ends with a backslash \\",
        "next": "not joined",
    }


def test_instance_file_wins_and_reads_are_recorded() -> None:
    instance = PropertiesFile("example/instance.properties", {"k": "instance", "only": " v "})
    server = PropertiesFile("canal.properties", {"k": "server", "s": "server-only", "e": ""})
    settings = Settings([instance, server])
    assert settings.get("k") == "instance"
    assert settings.get("only") == "v"  # stripped, as Spring's conversions trim
    assert settings.get("e") is None  # empty: not set
    assert settings.get("missing") is None
    assert instance.read == {"k", "only"}
    assert server.read == {"k", "e"}  # read through the instance's override, too
    assert server.unread() == ["s"]
    assert settings.origin("s") == "canal.properties"
    assert settings.origin("missing") == "example/instance.properties"


def test_placeholders_resolve_nested_with_defaults() -> None:
    server = PropertiesFile(
        "canal.properties",
        {
            "canal.conf.dir": "../conf",
            "canal.file.data.dir": "${canal.conf.dir}",
            "tsdb": "${canal.file.data.dir:../x}/${canal.instance.destination:}",
            "fallback": "${not.there:default}/${also.not.there}",
            "loop": "${loop}",
        },
    )
    settings = Settings([server], fixed={"canal.instance.destination": "example"})
    assert settings.get("canal.file.data.dir") == "../conf"
    assert settings.get("tsdb") == "../conf/example"
    assert settings.get("fallback") == "default/${also.not.there}"  # unresolved stays literal
    assert settings.get("loop") == "${loop}"
