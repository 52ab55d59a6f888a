"""Seconds, bytes and interval ends as short text for people: tables, reports, plot ticks.

One definition, used by the command line, the report, compare and the plots.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["format_bytes", "format_time", "round_outward"]

_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_time(s: Any, missing: str = "-") -> str:
    """``1.5e-5`` -> ``"15 µs"``: the largest unit the value reaches, 3 significant
    digits (whole units from 100 up, so never ``1e+03 ms``); `missing` for
    anything that is not a finite number (``None``: not measured).

    >>> format_time(0.0123), format_time(2.5e-7), format_time(999.7e-3), format_time(None)
    ('12.3 ms', '250 ns', '1000 ms', '-')
    """
    if not isinstance(s, numbers.Real) or isinstance(s, bool) or not math.isfinite(s):
        return missing
    t = float(s)
    for unit, f in _TIME_UNITS:
        if t >= f or unit == "ns":
            v = t / f
            # 3 significant digits again from a million up: 1e308 s (a hostile
            # results file) is not 309 digits
            return f"{v:.0f} {unit}" if 100 <= v < 1e6 else f"{v:.3g} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def format_bytes(n: Any, missing: str = "-") -> str:
    """``3 * 2**20`` -> ``"3.0 MiB"`` (binary units); `missing` for anything that
    is not a number.

    >>> format_bytes(512), format_bytes(3 * 2**20), format_bytes(None, missing="?")
    ('512 B', '3.0 MiB', '?')
    """
    if not isinstance(n, numbers.Real) or isinstance(n, bool):
        return missing
    v = float(n)
    for unit in _BYTE_UNITS:
        if abs(v) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def round_outward(x: float, decimals: int, up: bool) -> float:
    """`x` rounded up (`up`) or down at `decimals` decimals (negative: tens,
    hundreds...), for the ends of a printed interval: rounded outward, the printed
    interval holds the measured one (a low end of 1.0496 prints 1.04, never 1.05).
    `x` comes back as it is where the rounding leaves the floats or reaches 0."""
    if not (math.isfinite(x) and x > 0) or abs(decimals) > 300:
        return x
    scaled = x * 10.0**decimals
    # a hair of slack: 1.15 is 1.1499999999999999 in binary, and stays 1.15
    r = math.ceil(scaled - 1e-6) if up else math.floor(scaled + 1e-6)
    y = r / 10.0**decimals
    return y if math.isfinite(y) and y > 0 else x
