"""Statistics of side-by-side measurements: rotation, paired ratios with intervals,
verdicts, passes, stalls, and ``compare``'s unpaired interval.

Everything here is pure (numbers in, numbers out, no clock, no process), so the
tests drive it with synthetic data; the methods are docs/benchmark.md, "Side by side".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from ._findings._fields import is_gpu
from ._timer import rotation
from ._verdict import MARGIN, decide, inverse, positive, verdict_text

__all__ = [
    "DEFAULT_LEVEL",
    "N_BOOT",
    "STARVED_CORES",
    "all_pairs",
    "as_reading",
    "classify_stall",
    "combine_passes",
    "effective_cores",
    "exp_or_limit",
    "paired_ratio",
    "p_beyond",
    "passes_disagree",
    "ratio_interval",
    "rotation",
    "stall_factor",
    "starved",
    "t_quantile",
    "verdict",
]

#: Confidence level of every interval.
DEFAULT_LEVEL = 0.95
#: Bootstrap resamples.
N_BOOT = 2000
#: A CPU backend whose worker kept fewer cores than this busy over its samples
#: waited for a CPU most of the time (an oversubscribed machine): its times
#: measure the scheduler; no verdict, no regression is drawn from them.
STARVED_CORES = 0.5


def starved(backend: str, cores: float | None) -> bool:
    """A CPU backend that kept fewer than :data:`STARVED_CORES` cores busy (a GPU
    backend's host process waits by design)."""
    return cores is not None and cores < STARVED_CORES and not is_gpu(backend)


#: Index draws of the bootstrap held at once (32 MB): a long series is resampled in
#: blocks of rows, so memory stays bounded whatever a record holds
_BOOT_BLOCK = 4_000_000


def _boot_median(values: np.ndarray, *, seed: int, n_boot: int) -> np.ndarray:
    """Medians of `n_boot` resamples (with replacement) of `values`."""
    rng = np.random.default_rng(seed)
    n = len(values)
    rows = max(1, _BOOT_BLOCK // n)  # every run's records: rows >= n_boot, one draw
    out = np.empty(n_boot)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        out[start:stop] = np.median(values[rng.integers(0, n, size=(stop - start, n))], axis=1)
    return out


def paired_ratio(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> dict[str, Any] | None:
    """``a / b`` from paired rounds: ``a[i]`` and ``b[i]`` were measured in the same round.

    Rounds where either value is missing (``None``, non-positive, non-finite) are
    left out. The ratio is the median of the per-round ratios (computed on the log
    scale, so ``paired_ratio(a, b)`` is exactly the inverse of ``paired_ratio(b, a)``);
    the interval is the percentile bootstrap of that median at `level`.

    Returns
    -------
    dict or None
        ``{"ratio", "lo", "hi", "rounds", "level"}``; None with fewer than 2 shared rounds.
    """
    logs = [math.log(x) - math.log(y) for x, y in zip(a, b)  # x / y may overflow
            if positive(x) and positive(y)]
    if len(logs) < 2:
        return None
    v = np.asarray(logs)
    return {**_percentile_interval(float(np.median(v)), _boot_median(v, seed=seed, n_boot=N_BOOT),
                                   level), "rounds": len(logs), "level": level}


def _percentile_interval(log_ratio: float, boot: np.ndarray, level: float) -> dict[str, float]:
    """``{"ratio", "lo", "hi"}``: the ratio of `log_ratio` and the percentile interval at
    `level` of the bootstrap log ratios `boot`."""
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return {"ratio": exp_or_limit(log_ratio), "lo": exp_or_limit(float(lo)),
            "hi": exp_or_limit(float(hi))}


def all_pairs(
    rounds: Mapping[str, Sequence[float | None]], *, level: float = DEFAULT_LEVEL, seed: int = 0,
) -> dict[tuple[str, str], dict[str, Any]]:
    """:func:`paired_ratio` of every ordered pair of backends (``(a, b)``: a's time over b's)."""
    names = list(rounds)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            r = paired_ratio(rounds[x], rounds[y], level=level, seed=seed)
            if r is not None:
                out[(x, y)] = r
                out[(y, x)] = {**r, "ratio": inverse(r["ratio"]), "lo": inverse(r["hi"]),
                               "hi": inverse(r["lo"])}
    return out


def verdict(
    rounds: Mapping[str, Sequence[float | None]],
    *,
    margin: float = MARGIN,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    pairs: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Which backend is fastest, if the rounds say so beyond the noise: the one
    rule (:func:`._verdict.decide`) over the medians of `rounds` and the paired
    intervals of :func:`all_pairs` (or `pairs`: :func:`combine_passes`, over passes).

    Returns
    -------
    dict
        ``{"fastest": name or None, "tie": [names], "below_margin": [names],
        "text": str, "margin", "level", "speedup": {"over", "ratio", "lo", "hi"}
        or None, "p_margin"}`` where speedup is against the second fastest and
        ``text`` is :func:`._verdict.verdict_text`'s.
    """
    med = {name: float(np.median(ok)) for name, vals in rounds.items()
           if (ok := [v for v in vals if positive(v)])}
    got = pairs if pairs is not None else all_pairs(
        {n: rounds[n] for n in sorted(med, key=lambda n: med[n])}, level=level, seed=seed)

    def interval(slow: str, fast: str) -> tuple[float, float, float] | None:
        r = got.get((slow, fast))
        return None if r is None else (r["lo"], r["ratio"], r["hi"])

    d = decide(med, interval, margin)
    base: dict[str, Any] = {"fastest": d["fastest"], "tie": d["tie"], "margin": margin,
                            "level": level, "speedup": d["speedup"]}
    if d["tie"]:
        base["below_margin"] = d["below_margin"]
    elif d["fastest"] is not None:
        base["p_margin"] = max(p_beyond(got[(o, d["fastest"])], margin)
                               for o in med if o != d["fastest"])
    base["text"] = (verdict_text(as_reading(base, d["candidate"])) if d["candidate"]
                    else "no backend ran")
    return base


def as_reading(recorded: Mapping[str, Any], candidate: str | None) -> dict[str, Any]:
    """A recorded verdict (:func:`verdict`) in the shape :func:`._verdict.verdict_text`
    words: ``{"winner", "runner_up", "tie", "speedup", "no_verdict"}``."""
    sp = recorded.get("speedup")
    tie = list(recorded.get("tie") or [])
    return {"winner": recorded.get("fastest") or (tie[0] if tie else candidate),
            "runner_up": sp.get("over") if isinstance(sp, Mapping) else (tie[1] if len(tie) > 1 else None),
            "tie": recorded.get("fastest") is None, "speedup": sp,
            "no_verdict": recorded.get("no_verdict")}


def combine_passes(
    passes: Sequence[Mapping[tuple[str, str], Mapping[str, Any]]], *,
    level: float = DEFAULT_LEVEL,
) -> dict[tuple[str, str], dict[str, Any]]:
    """One interval per pair from the pairs of several passes (each pass: the
    rounds of one set of worker processes): over ``k >= 2`` passes the geometric
    mean of their ratios with Student's t prediction interval ``mean ± t(k-1) * se
    * sqrt(2)``, ``se² = max(s², w²) / k`` (between-pass variance, floored by the
    mean within-pass one: docs/benchmark.md, "Side by side", step 7); one pass: its
    own interval; ratios of hostile times (0 or inf): the span of the passes.

    Each result has ``ratio, lo, hi, rounds, level, passes`` (the per-pass
    ratios) and ``method``: ``"t over passes"``, ``"one pass"`` or ``"span"``.
    """
    keys = dict.fromkeys(k for p in passes for k in p)  # in order of first appearance
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for k in keys:
        got = [p[k] for p in passes if k in p]
        ratios = [float(g["ratio"]) for g in got]
        ends = [float(g["lo"]) for g in got] + [float(g["hi"]) for g in got]
        r: dict[str, Any] = {"rounds": sum(int(g.get("rounds") or 0) for g in got),
                             "level": level, "passes": ratios}
        finite = all(0.0 < x < math.inf for x in ratios + ends)
        if len(got) == 1 and finite:
            r.update(ratio=ratios[0], lo=ends[0], hi=ends[1], method="one pass")
        elif not finite:
            r.update(ratio=_geometric_mean(ratios), lo=min(ends + ratios),
                     hi=max(ends + ratios), method="span")
        else:
            logs = np.log(ratios)
            n = len(logs)
            within = float(np.mean([((math.log(float(g["hi"])) - math.log(float(g["lo"])))
                                     / (2.0 * z)) ** 2 for g in got]))
            between = float(np.var(logs, ddof=1))
            se = math.sqrt(max(between, within) / n)
            # a prediction interval: where the ratio of another run of as many passes
            # will lie (its mean has the same variance: sqrt(1/n + 1/n)), the
            # statement a reader checks by running again
            half = t_quantile(0.5 + level / 2.0, n - 1) * se * math.sqrt(2.0)
            m = float(np.mean(logs))
            r.update(ratio=exp_or_limit(m), lo=exp_or_limit(m - half), hi=exp_or_limit(m + half),
                     method="t over passes", se_log=se, between_sd_log=math.sqrt(between),
                     within_sd_log=math.sqrt(within))
        out[k] = r
    return out


def t_quantile(p: float, df: float) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (SciPy)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def p_beyond(r: Mapping[str, Any], margin: float) -> float:
    """One-sided p-value that a pair's ratio is at most `margin` (its interval's
    statistics: Student's t over passes, else normal from the interval's width).
    A group's claim "the fastest clears every other" is an intersection-union
    test: its p-value is the largest of its pairs'. The report controls the
    false-discovery rate of the run's claims with these (Benjamini-Hochberg)."""
    try:
        ratio, lo, hi = float(r["ratio"]), float(r["lo"]), float(r["hi"])
    except (KeyError, TypeError, ValueError):
        return 1.0
    if not (0 < lo <= ratio <= hi < math.inf):
        return 1.0 if not (lo > margin) else 0.0
    level = float(r.get("level") or DEFAULT_LEVEL)
    se = r.get("se_log")
    n = len(r.get("passes") or [])
    if r.get("method") == "t over passes" and isinstance(se, (int, float)) and se > 0 and n > 1:
        from scipy.stats import t

        return float(t.sf((math.log(ratio) - math.log(margin)) / se, n - 1))
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    se = (math.log(hi) - math.log(lo)) / (2.0 * z)
    if se <= 0:
        return 0.0 if ratio > margin else 1.0
    return 1.0 - NormalDist().cdf((math.log(ratio) - math.log(margin)) / se)


def passes_disagree(
    passes: Sequence[Mapping[tuple[str, str], Mapping[str, Any]]],
) -> list[tuple[str, str]]:
    """The pairs whose passes disagree: the intervals of two passes do not overlap
    (each pass's own interval, from its rounds). Such a pair's processes differ
    by more than their rounds can say, and the runner gives its group more
    passes, up to a cap. (This is a test of disagreement between passes, not a
    stopping rule on the width of an interval.)"""
    keys = dict.fromkeys(k for p in passes for k in p if k[0] < k[1])
    out = []
    for k in keys:
        got = [p[k] for p in passes if k in p]
        if len(got) > 1 and max(float(g["lo"]) for g in got) > min(float(g["hi"]) for g in got):
            out.append(k)
    return out


def _geometric_mean(ratios: Sequence[float]) -> float:
    """The geometric mean of ratios that :func:`exp_or_limit` may have made 0 or inf
    (times of a hostile file): 0 and inf where one pass says so, the median where
    passes say both."""
    logs = [math.log(r) if r > 0.0 else -math.inf for r in ratios]  # log(inf) is inf
    if math.inf in logs and -math.inf in logs:
        return sorted(ratios)[len(ratios) // 2]
    return exp_or_limit(sum(logs) / len(logs))  # exp_or_limit(±inf): inf, 0


def stall_factor(main: float | None, recheck: float | None) -> float | None:
    """``max(main/recheck, recheck/main)``: how far a cell is off its recheck (None if unknown)."""
    if positive(main) and positive(recheck):
        return max(main / recheck, recheck / main)
    return None


def classify_stall(first: float | None, recheck: float | None, again: float | None, *,
                   threshold: float) -> dict[str, Any]:
    """What three measurements of a cell say about a stall.

    `first` is the cell's median, `recheck` its short recheck at the end of the
    run, `again` the full remeasurement done because the two disagreed by more
    than `threshold`. The cell is *stalled* (flagged) when the remeasurement
    agrees with neither: no two of the three measurements agree. When it agrees
    with the recheck, the first measurement was the stall (``"healed"``, the
    remeasurement stands); when it agrees with the first, the recheck was
    (``"recheck was off"``).
    """
    f_first = stall_factor(first, recheck)
    to_recheck = stall_factor(again, recheck)
    to_first = stall_factor(again, first)
    if f_first is None or f_first <= threshold:
        how, stalled = "agrees with its recheck", False
    elif to_recheck is not None and to_recheck <= threshold:
        how, stalled = ("healed: the first measurement was off, the remeasurement agrees "
                        "with the recheck"), False
    elif to_first is not None and to_first <= threshold:
        how, stalled = "recheck was off: the remeasurement agrees with the first", False
    else:
        how, stalled = "still stalled: the remeasurement agrees with neither", True
    return {"factor": f_first, "stalled": stalled, "how": how, "threshold": threshold}


def effective_cores(cpu_s: float | None, wall_s: float | None) -> float | None:
    """Process CPU seconds over wall seconds: the cores the process kept busy."""
    if positive(wall_s) and isinstance(cpu_s, (int, float)):
        return max(0.0, float(cpu_s)) / wall_s
    return None


def ratio_interval(old: Sequence[float], new: Sequence[float]) -> dict[str, Any] | None:
    """``median(new) / median(old)`` with a bootstrap interval at :data:`DEFAULT_LEVEL`
    (independent samples).

    Returns ``{"ratio", "lo", "hi", "se_log", "level"}`` (``se_log``: the bootstrap
    standard error of the log ratio), or None with fewer than 2 samples on a side.
    """
    # on the log scale: the median of two times near the largest float would
    # overflow (their mean), a ratio of 1e308 to 1e-308 too; logs never do
    o = np.log(np.asarray([x for x in old if positive(x)], dtype=float))
    n = np.log(np.asarray([x for x in new if positive(x)], dtype=float))
    if len(o) < 2 or len(n) < 2:
        return None
    logs = _boot_median(n, seed=1, n_boot=N_BOOT) - _boot_median(o, seed=0, n_boot=N_BOOT)
    return {**_percentile_interval(float(np.median(n) - np.median(o)), logs, DEFAULT_LEVEL),
            "se_log": float(np.std(logs)), "level": DEFAULT_LEVEL}


def exp_or_limit(x: float) -> float:
    """``exp(x)``, with ``inf`` where it overflows (``math.exp`` raises there) and
    0 where it underflows: ratios made from logs of hostile times stay numbers."""
    if x > 709.0:  # exp(709.78) is the largest float
        return math.inf
    return math.exp(x)
