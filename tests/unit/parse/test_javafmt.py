"""Java's Float/Double.toString and BigDecimal.toPlainString, by known Java outputs."""

from __future__ import annotations

import math
import struct

import pytest

from bridge.parse.binlog.javafmt import big_decimal_plain, double_to_string, float_to_string


def f32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (1e10, "1.0E10"),
        (1e-5, "1.0E-5"),
        (0.001, "0.001"),
        (0.0009999, "9.999E-4"),
        (1234567.0, "1234567.0"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1 / 3, "0.3333333333333333"),
        (2e23, "2.0E23"),
        (-1.5e-300, "-1.5E-300"),
        (5e-324, "4.9E-324"),  # Double.MIN_VALUE: two digits when one would do
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_double_to_string(value: float, java: str) -> None:
    assert double_to_string(value) == java


@pytest.mark.parametrize(
    ("value", "java"),
    [
        (1.0, "1.0"),
        (0.1, "0.1"),
        (3.3, "3.3"),
        (100.0, "100.0"),
        (1e10, "1.0E10"),
        (1e-5, "1.0E-5"),
        (16777216.0, "1.6777216E7"),
        (3.4028235e38, "3.4028235E38"),  # Float.MAX_VALUE
        (1.4e-45, "1.4E-45"),  # Float.MIN_VALUE
        (1.17549435e-38, "1.1754944E-38"),  # Float.MIN_NORMAL; JDK 8: 1.17549435E-38
        (123456789.0, "1.2345679E8"),  # JDK 19+; JDK 8 printed 1.23456792E8
        (-2.5, "-2.5"),
        (0.001, "0.001"),
        (math.inf, "Infinity"),
    ],
)
def test_float_to_string(value: float, java: str) -> None:
    assert float_to_string(f32(value)) == java


def test_float_results_round_trip_and_are_short() -> None:
    for bits in range(0x3F800000, 0x3F800000 + 5000, 7):
        value = struct.unpack("<I", struct.pack("<I", bits))
        number = struct.unpack("<f", struct.pack("<I", *value))[0]
        text = float_to_string(number)
        assert f32(float(text.replace("E", "e"))) == number, text
        mantissa = text.split("E")[0].replace(".", "").replace("-", "").lstrip("0")
        assert len(mantissa.rstrip("0")) <= 9


@pytest.mark.parametrize(
    ("unscaled", "scale", "plain"),
    [
        (1230, 2, "12.30"),
        (-1, 2, "-0.01"),
        (0, 2, "0.00"),
        (0, 0, "0"),
        (-5, 0, "-5"),
        (5, 4, "0.0005"),
        (123456789012345678901234567890, 10, "12345678901234567890.1234567890"),
    ],
)
def test_big_decimal_plain(unscaled: int, scale: int, plain: str) -> None:
    assert big_decimal_plain(unscaled, scale) == plain
