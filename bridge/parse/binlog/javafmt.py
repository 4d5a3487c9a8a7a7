"""Java's number-to-text conversions, reproduced for canal's column renderings.

canal renders FLOAT and DOUBLE columns with ``String.valueOf(Float)`` / ``String.valueOf(Double)``
and DECIMAL columns with ``BigDecimal.toPlainString()``. Python's ``repr``/``str`` differ from
Java ("1e+10" vs "1.0E10", "100.0" alike, "1e-05" vs "1.0E-5"), so this module implements the
Java rules:

- ``Float.toString`` / ``Double.toString`` (the JDK 19+ specification, Raffaello Giulietti's
  shortest-decimal algorithm): among the decimals that round to the value, the shortest; when the
  shortest has a single digit, the closest decimal with at most two digits (hence
  ``Double.MIN_VALUE`` -> "4.9E-324"). Values in [1e-3, 1e7) print as plain decimals with at least
  one fractional digit ("100.0", "0.001"); others as ``d.dddE<exp>`` ("1.0E10", "1.0E-5").
  Older JDKs (canal's usual Java 8) occasionally printed one superfluous digit (JDK-4511638,
  e.g. ``1.23456792E8`` where JDK 19+ prints ``1.2345679E8``); that bug is not reproduced.
- ``BigDecimal.toPlainString`` for an unscaled integer and a scale: exactly ``scale`` fractional
  digits, no exponent, and no sign on zero (BigDecimal has no negative zero).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def double_to_string(value: float) -> str:
    """``Double.toString(value)``."""
    return _java_to_string(value, _shortest_double)


def float_to_string(value: float) -> str:
    """``Float.toString(f)`` where ``value`` is the float32 ``f`` widened to a Python float."""
    return _java_to_string(value, _shortest_float32)


def _java_to_string(value: float, shortest: Callable[[float], tuple[str, int]]) -> str:
    """Java's special values, then the shortest digits that round-trip, laid out as Java does."""
    if math.isnan(value):
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits, exp = shortest(abs(value))
    return _java_layout(value < 0, digits, exp)


def big_decimal_plain(unscaled: int, scale: int) -> str:
    """``new BigDecimal(BigInteger.valueOf(unscaled), scale).toPlainString()`` for scale >= 0."""
    negative = unscaled < 0
    text = str(-unscaled if negative else unscaled)
    if scale > 0:
        if len(text) <= scale:
            text = "0" * (scale - len(text) + 1) + text
        text = f"{text[:-scale]}.{text[-scale:]}"
    return "-" + text if negative else text


def _java_layout(negative: bool, digits: str, exp: int) -> str:
    """Lay out ``0.d1d2...dn * 10**exp`` (``digits`` without trailing zeros) the Java way."""
    sci = exp - 1  # value = d1.d2...dn * 10**sci
    if -3 <= sci < 7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
            text = f"{whole}.{frac}"
        else:
            text = "0." + "0" * (-sci - 1) + digits
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{sci}"
    return "-" + text if negative else text


def _split(text: str) -> tuple[str, int]:
    """'%e'-style or repr text of a positive number -> (digits without trailing zeros, exp)."""
    _sign, digit_tuple, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    stripped = len(digit_tuple) - len(digits)
    return digits, exponent + stripped + len(digits)


def _shortest_double(value: float) -> tuple[str, int]:
    # repr() yields the shortest digits that round-trip, the closest one among equals.
    digits, exp = _split(repr(value))
    if len(digits) == 1:
        two, two_exp = _split(f"{value:.1e}")
        if float(f"{value:.1e}") == value and len(two) == 2:
            return two, two_exp
    return digits, exp


@lru_cache(maxsize=4096)
def _shortest_float32(value: float) -> tuple[str, int]:
    """Shortest decimal that rounds to the float32 ``value`` (closest among equals)."""
    for ndigits in range(1, 10):
        best = _closest_in_interval(value, ndigits)
        if best is not None:
            if ndigits == 1:
                two = _closest_in_interval(value, 2)
                if two is not None and len(_split(two)[0]) == 2:
                    return _split(two)
            return _split(best)
    raise AssertionError(f"no float32 decimal representation found for {value!r}")


def _closest_in_interval(value: float, ndigits: int) -> str | None:
    """The ``ndigits``-digit decimal closest to ``value`` that rounds back to it, if any."""
    text = f"{value:.{ndigits - 1}e}"
    if _rounds_to_float32(text, value):
        return text
    # The correctly rounded candidate may fall outside an asymmetric rounding interval (at a
    # power of two); its neighbour on the other side may still be inside.
    mantissa, _, exponent = text.partition("e")
    unit = Decimal(1).scaleb(int(exponent) - (ndigits - 1))
    base = Decimal(mantissa).scaleb(int(exponent))
    found = [
        (abs(Fraction(c) - Fraction(value)), c)
        for c in (base - unit, base + unit)
        if c > 0 and _rounds_to_float32(f"{c:e}", value)
    ]
    return f"{min(found)[1]:e}" if found else None


def _rounds_to_float32(text: str, value: float) -> bool:
    """Whether the decimal ``text`` reads back (round-half-even) as the float32 ``value``."""
    wide = float(text)
    try:
        narrow = _F32.unpack(_F32.pack(wide))[0]
    except OverflowError:
        return False
    if wide == narrow or not _is_float32_midpoint(wide, narrow):
        return bool(narrow == value)
    # ``wide`` sits exactly between two floats: rounding ``text`` via a double may differ from
    # rounding it directly, so decide exactly.
    return _exact_rounds_to(Fraction(Decimal(text)), value)


def _is_float32_midpoint(wide: float, narrow: float) -> bool:
    bits = _U32.unpack(_F32.pack(narrow))[0]
    neighbour_bits = bits + 1 if wide > narrow else bits - 1
    neighbour = _F32.unpack(_U32.pack(neighbour_bits & 0xFFFFFFFF))[0]
    return bool((narrow + neighbour) / 2 == wide)


def _exact_rounds_to(exact: Fraction, value: float) -> bool:
    bits = _U32.unpack(_F32.pack(value))[0]
    lower = _F32.unpack(_U32.pack(bits - 1))[0] if bits & 0x7FFFFFFF else 0.0
    upper = _F32.unpack(_U32.pack(bits + 1))[0]
    low = (Fraction(lower) + Fraction(value)) / 2
    high = (Fraction(value) + Fraction(upper)) / 2
    if low < exact < high:
        return True
    return exact in (low, high) and bits % 2 == 0
