"""The one verdict, and the one way a ratio, an interval and a spread are written.

Whatever says which backend is faster, or whether a time moved (the runner's
record, the report, the terminal, the study's findings, ``compare``), reads an
interval through :func:`reading`, names the fastest through :func:`decide`, words
it through :func:`verdict_text` and writes numbers through :func:`fmt_number`,
:func:`fmt_ratio`, :func:`fmt_interval` and :func:`fmt_spread` only
(docs/benchmark.md, "Side by side", step 5, and the record fields there).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeGuard

from .._lib._units import round_outward

__all__ = ["BELOW_MARGIN", "BEYOND", "MARGIN", "WITHIN_NOISE", "decide", "fmt_interval",
           "fmt_number", "fmt_ratio", "fmt_spread", "inverse", "positive", "reading",
           "tie_reading", "verdict_text"]

#: A backend is named fastest only when the interval of its speed-up over every
#: other backend lies at or above this (1.05: 5 %); ``xlinalg compare``'s default
#: threshold is the same 5 %.
MARGIN = 1.05

BEYOND: Final = "beyond the margin"
WITHIN_NOISE: Final = "within noise"
BELOW_MARGIN: Final = "a real difference below the margin"

Reading = Literal["beyond the margin", "within noise", "a real difference below the margin"]


def positive(v: Any) -> TypeGuard[float]:
    """A finite number above 0 (not a bool): a time or a ratio a record may hold."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v > 0)


def inverse(x: float) -> float:
    """``1 / x`` for a ratio or an interval end that may be 0 (an underflowed ratio, or
    what a shared results file holds) or inf."""
    return math.inf if x == 0 else 1.0 / x


def reading(lo: float, hi: float, margin: float = MARGIN) -> Reading:
    """How the interval ``[lo, hi]`` of a ratio of two times reads against `margin`:
    :data:`BEYOND` when it lies wholly at or above `margin` or at or below
    ``1 / margin``; :data:`WITHIN_NOISE` when it holds 1 (the data cannot tell
    the two apart); else :data:`BELOW_MARGIN` (it excludes 1 but not the margin)."""
    if lo >= margin or hi <= 1.0 / margin:
        return BEYOND
    if lo <= 1.0 <= hi:
        return WITHIN_NOISE
    return BELOW_MARGIN


Interval = tuple[float, float, float]  # (lo, ratio, hi)


def decide(medians: Mapping[str, float],
           interval: Callable[[str, str], Interval | None],
           margin: float = MARGIN) -> dict[str, Any]:
    """THE verdict over backends with a time (`medians`: backend -> median time).

    The candidate is the smallest median (the first of equals, in `medians`'
    order). It is named (``"fastest"``) only when, for every other backend, the
    interval ``interval(other, candidate)`` of ``time(other) / time(candidate)``
    lies at or above `margin`; otherwise ``"tie"`` lists the candidate and the
    backends it does not clear (a missing interval clears nothing), and
    ``"below_margin"`` those of them whose interval excludes 1.

    Returns ``{"candidate", "fastest", "tie", "below_margin", "speedup"}``:
    ``speedup`` is ``{"over", "ratio", "lo", "hi"}`` against the second fastest
    (None without its interval); ``candidate`` is None with no median at all.
    """
    order = sorted(medians, key=lambda b: medians[b])
    out: dict[str, Any] = {"candidate": order[0] if order else None, "fastest": None,
                           "tie": [], "below_margin": [], "speedup": None}
    if len(order) < 2:
        return out
    cand = order[0]
    ivs = {o: interval(o, cand) for o in order[1:]}
    sp = ivs[order[1]]
    if sp is not None:
        out["speedup"] = {"over": order[1], "ratio": sp[1], "lo": sp[0], "hi": sp[2]}
    not_cleared = [o for o, iv in ivs.items() if iv is None or iv[0] < margin]
    if not_cleared:
        out["tie"] = [cand, *not_cleared]
        out["below_margin"] = [o for o in not_cleared if (iv := ivs[o]) is not None
                               and not iv[0] <= 1.0 <= iv[2]]
    else:
        out["fastest"] = cand
    return out


def fmt_ratio(x: float, decimals: int | None = None) -> str:
    """1.234 -> "1.23x", 141.6 -> "142x" (never "1.4e+02x"); "?x" for what is
    not a finite number, 3 significant digits from a million up (a ratio of
    hostile times would otherwise print 300 digits). `decimals`: that many
    decimals instead (``xlinalg compare``'s 3), 3 significant digits outside
    0.001 .. 1e6."""
    return fmt_number(x, decimals) + "x"


def fmt_number(x: float, decimals: int | None = None) -> str:
    """`x` as :func:`fmt_ratio` writes it, without the "x"."""
    if decimals is not None:  # compare's numbers: "inf" stays "inf"
        fixed = not math.isfinite(x) or x == 0 or 1e-3 <= abs(x) < 1e6
        return f"{x:.{decimals}f}" if fixed else f"{x:.3g}"
    if not positive(x) and x != 0:
        return "?"
    if x >= 1e6:
        return f"{x:.3g}"
    if x < 0.1:
        return f"{x:.2g}"
    return f"{x:.{_decimals(x)}f}"


def _decimals(x: float) -> int:
    """The decimals :func:`fmt_ratio` writes `x` with (negative: tens, hundreds...):
    the one table of its precision, which :func:`fmt_interval` rounds at."""
    if x >= 1e6:
        return 2 - math.floor(math.log10(x))
    if x >= 100:
        return 0
    if x >= 10:
        return 1
    if x >= 0.1:
        return 2
    return 1 - math.floor(math.log10(x))


def fmt_interval(lo: float, hi: float, decimals: int | None = None) -> str:
    """(0.0081, 0.0097) -> "[0.0081-0.0097]": THE format of an interval, each end
    as :func:`fmt_ratio` writes a ratio (with its `decimals`), rounded outward
    (low end down, high end up) so that the printed interval holds the measured
    one: a tie at [1.0496, 1.12] reads "[1.04-1.12]", never "[1.05-1.12]" beside
    a 1.05x margin it did not clear."""
    def end(x: float, up: bool) -> str:
        fixed = decimals is None or 1e-3 <= x < 1e6
        if not positive(x):
            return fmt_number(x, decimals)
        d = _decimals(x) if decimals is None else decimals
        return fmt_number(round_outward(x, d, up) if fixed else x, decimals)

    return f"[{end(lo, False)}-{end(hi, True)}]"


def fmt_spread(q: Sequence[float] | None) -> str:
    """" ±4%": half the interquartile range of a cell's times relative to their
    median, from ``(q1, median, q3)``; "" without them."""
    if not q or not positive(q[1]):
        return ""
    return f" ±{50 * (q[2] - q[0]) / q[1]:.0f}%"


def tie_reading(v: Mapping[str, Any]) -> Reading:
    """What a tie (a verdict that names no fastest) reads as: :data:`BELOW_MARGIN`
    when its speed-up's interval excludes 1, else :data:`WITHIN_NOISE`."""
    sp = v.get("speedup") or {}
    lo, hi = sp.get("lo"), sp.get("hi")
    if positive(lo) and positive(hi) and not lo <= 1.0 <= hi:
        return BELOW_MARGIN
    return WITHIN_NOISE


def verdict_text(v: Mapping[str, Any] | None) -> str:
    """THE words of a verdict (the report's, the terminal's, a record's ``text``):
    "numpy, 1.31x [1.20-1.45] over torch-cpu", "tie within noise (numpy 1.03x
    [0.98-1.08] vs torch-cpu)", "a real difference below the margin (...)",
    "no verdict: <reason>", "no winner: <reason>", "only numpy ran".

    `v`: ``{"winner", "runner_up", "tie", "speedup", "no_verdict", "fdr", "note"}``
    (as :func:`xlinalg.bench._findings.verdict` draws it)."""
    if v is None:
        return "no time"
    if v.get("no_verdict"):
        return f"no verdict: {v['no_verdict']}"
    if v.get("fdr"):
        return f"no winner: {v['fdr']}"
    if v.get("runner_up") is None:
        return f"only {v['winner']} ran"
    sp = v.get("speedup") or {}
    m = float(sp.get("ratio") or 0.0)
    has_iv = sp.get("lo") is not None and sp.get("hi") is not None
    lo, hi = (float(sp["lo"]), float(sp["hi"])) if has_iv else (0.0, 0.0)
    ivt = f" {fmt_interval(lo, hi)}" if has_iv else ""
    note = f"; {v['note']}" if v.get("note") else ""
    if v.get("tie"):
        if not m:
            return f"tie {WITHIN_NOISE}" + note
        a, b = v["winner"], v["runner_up"]
        if m < 1.0:  # the faster median is the slower one in the paired rounds: say it that way
            a, b, m = b, a, 1.0 / m
            ivt = f" {fmt_interval(inverse(hi), inverse(lo))}" if has_iv else ""
        # within noise only when the interval holds 1; else a real difference that
        # the margin does not clear
        words = BELOW_MARGIN if tie_reading(v) == BELOW_MARGIN else f"tie {WITHIN_NOISE}"
        return f"{words} ({a} {fmt_ratio(m)}{ivt} vs {b})" + note
    return f"{v['winner']}, {fmt_ratio(m)}{ivt} over {v['runner_up']}{note}"
