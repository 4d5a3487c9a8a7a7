"""The cursor targets an operator may give (``PUT .../cursor``) and the one-line refusals of
everything else."""

from __future__ import annotations

import pytest

from bridge.config import StartConfig
from bridge.exceptions import ActionRefused
from bridge.runner.cursor_target import check_listed, check_reached, parse_target

MYSQL_GTID = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql-bin.000003:4", StartConfig(journal_name="mysql-bin.000003", position=4)),
        (" mysql-bin.000003:1234 ", StartConfig(journal_name="mysql-bin.000003", position=1234)),
        ("0-1-100", StartConfig(gtid="0-1-100")),
        ("0-1-100,1-2-7", StartConfig(gtid="0-1-100,1-2-7")),
        (MYSQL_GTID, StartConfig(gtid=MYSQL_GTID)),
        (
            f"{MYSQL_GTID},{MYSQL_GTID.lower()}",
            StartConfig(gtid=f"{MYSQL_GTID},{MYSQL_GTID.lower()}"),
        ),
        ("2026-11-29T08:00:00Z", StartConfig(timestamp=1_795_939_200_000)),
        ("2026-11-29T09:00:00+01:00", StartConfig(timestamp=1_795_939_200_000)),
        ("2026-11-29 08:00:00.5+00:00", StartConfig(timestamp=1_795_939_200_500)),
    ],
)
def test_targets_name_the_start_they_mean(text: str, expected: StartConfig) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "is empty"),
        ("mysql-bin.000003:3", "4 or more"),
        ("mysql-bin.000003", "is not a cursor target"),
        ("mysql-bin.000003:x", "is not a cursor target"),
        ("3E11FA47-71CA-11E1-9E33-C80AA9429562:5-3", "is not a cursor target"),
        ("2026-11-29T08:00:00", "has no UTC offset"),
        ("2026-11-29T25:00:00Z", "is not an ISO-8601 timestamp"),
        ("2026-11-29", "a date without a time"),
        ("1969-12-31T00:00:00Z", "before 1970"),
    ],
)
def test_malformed_targets_are_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        parse_target(text)
    assert "\n" not in str(caught.value)


def test_a_file_the_source_does_not_list_or_a_position_past_its_end_is_refused() -> None:
    files = {"mysql-bin.000002": 900, "mysql-bin.000003": 400}
    check_listed("d", "mysql-bin.000003", 400, files)  # the end itself is a position
    with pytest.raises(ActionRefused, match=r"000001 is not on the source .*000002 to .*000003"):
        check_listed("d", "mysql-bin.000001", 4, files)
    with pytest.raises(ActionRefused, match=r"past the end of mysql-bin.000003 \(400 bytes\)"):
        check_listed("d", "mysql-bin.000003", 401, files)


def test_a_time_before_the_oldest_binlog_is_refused() -> None:
    check_reached("d", 2_000, "mysql-bin.000002", 1_000)  # the oldest reaches back far enough
    check_reached("d", 2_000, "mysql-bin.000002", None)  # a file without a transaction yet
    with pytest.raises(ActionRefused, match=r"oldest binlog mysql-bin.000002 begins at 1970-"):
        check_reached("d", 999, "mysql-bin.000002", 1_000)
