"""``xlinalg compare old.jsonl new.jsonl``: per-cell ratio of medians with an interval.

The method (noise from each file's passes or an A/A pair, Student's t with Welch's
degrees of freedom, Benjamini-Hochberg over the cells, the machine shift, the exit
status) is docs/benchmark.md, "`compare`: a regression only beyond the noise".
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Iterator, Mapping
from statistics import NormalDist
from typing import Any

import numpy as np

from .._lib._units import format_time
from ._findings._fields import median, raw_times
from ._passes import PARALLELISM_FACTOR, _number
from ._resultsfile import get_path
from ._stats import N_BOOT, _boot_median, exp_or_limit, ratio_interval, starved, t_quantile
from ._verdict import BELOW_MARGIN, BEYOND, positive, reading

__all__ = ["aa_selftest", "compare_records", "header_differences", "noise_from_pair"]

#: Fewest comparable cells from which a machine shift is estimated.
MIN_CELLS_FOR_SPREAD = 6
#: Weight (in passes) of the prior of a cell's between-pass variance: the
#: median variance of every cell of both files (limma's moderated t).
PRIOR_DF = 4.0


def _pass_var(r: Mapping[str, Any]) -> tuple[float, int] | None:
    """(variance between a record's passes of their log medians (``time.passes``),
    passes); None with one pass."""
    passes = get_path(r, "time", "passes")
    # logs, not ratios: 1e308 over 1e-308 overflows
    logs = [math.log(float(m)) for p in passes if isinstance(p, dict)
            and positive(m := p.get("median_s"))] if isinstance(passes, list) else []
    return (statistics.variance(logs), len(logs)) if len(logs) > 1 else None


def _starved_cores(r: Mapping[str, Any]) -> float | None:
    """The effective cores of a side-by-side record whose worker was starved, else None."""
    v = _cores(r)
    return v if v is not None and starved(str(r.get("backend")), v) else None


def _cores(r: Mapping[str, Any]) -> float | None:
    """The effective cores (CPU over wall time) of a side-by-side record, else None."""
    v = get_path(r, "side_by_side", "effective_cores")
    return float(v) if _number(v) else None


def _parallelism_changed(o: Mapping[str, Any], n: Mapping[str, Any]) -> str | None:
    """A note when the two runs' processes kept different numbers of cores busy
    for this cell (by more than :data:`._passes.PARALLELISM_FACTOR`), else None.

    A library that spread its work over two cores in one run and found one of
    them taken by a neighbour in the other is slower for a reason that is not
    its code: the comparison is not like for like, and saying REGRESSION would
    cry wolf. The note shows both figures, so a change that made a library
    single-threaded is still visible."""
    a, b = _cores(o), _cores(n)
    if a is None or b is None or min(a, b) <= 0 or max(a, b) / min(a, b) <= PARALLELISM_FACTOR:
        return None
    return f"effective cores {a:.1f} -> {b:.1f}"


def _moderated(own: tuple[float, int] | None, prior: float | None) -> tuple[float, float] | None:
    """(variance, degrees of freedom) of a cell's pass-to-pass noise: its own
    estimate pulled towards `prior` with :data:`PRIOR_DF` (limma's moderated
    variance); None when neither exists."""
    if prior is None:
        return (own[0], own[1] - 1.0) if own else None
    if own is None:
        return prior, PRIOR_DF
    v, k = own
    # a cell whose own passes disagree more than the prior keeps its own variance
    # (a library with a fast and a slow process state), the others are pulled up
    return max(v, (PRIOR_DF * prior + (k - 1) * v) / (PRIOR_DF + k - 1)), PRIOR_DF + k - 1


def _shift(logs: list[float], *, level: float) -> tuple[float, float, float] | None:
    """(median, lo, hi) of the cells' log ratios, a bootstrap interval over the
    cells at `level`; None for fewer than :data:`MIN_CELLS_FOR_SPREAD` cells."""
    if len(logs) < MIN_CELLS_FOR_SPREAD:
        return None
    meds = _boot_median(np.asarray(logs), seed=0, n_boot=N_BOOT)
    lo, hi = np.quantile(meds, [(1 - level) / 2, (1 + level) / 2])
    return statistics.median(logs), float(lo), float(hi)


def noise_from_pair(a: Mapping[str, Mapping[str, Any]],
                    b: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Per cell, the variance of the log ratio that an A/A pair (two runs of the
    same code) shows, moderated towards the median over the cells."""
    sq = {key: (math.log(y) - math.log(x)) ** 2 for key in a
          if key in b and (x := median(a[key])) and (y := median(b[key]))}
    if not sq:
        return {}
    prior = statistics.median(sq.values())
    return {k: (PRIOR_DF * prior + v) / (PRIOR_DF + 1) for k, v in sq.items()}


def _p_beyond(lr: float, se: float, df: float, threshold: float) -> float:
    """Two-sided p-value of "the log ratio `lr` lies within the threshold band"
    (Student's t with `df`; normal when df is infinite); 1 inside the band."""
    x = (abs(lr) - math.log1p(threshold)) / se if se > 0 else (math.inf if abs(lr) > math.log1p(threshold) else 0.0)
    if x <= 0:
        return 1.0
    if not math.isfinite(df):
        return min(1.0, 2.0 * (1.0 - NormalDist().cdf(x)))
    from scipy.stats import t

    return min(1.0, 2.0 * float(t.sf(x, df)))


def _beyond(lo: float, hi: float, threshold: float) -> str | None:
    """"REGRESSION" or "improvement" when the interval of new/old reads beyond the
    threshold (:func:`._verdict.reading`, the one rule), else None."""
    if reading(lo, hi, 1 + threshold) != BEYOND:
        return None
    return "REGRESSION" if lo > 1 else "improvement"


def compare_records(old: Mapping[str, Mapping[str, Any]],
                    new: Mapping[str, Mapping[str, Any]], *, alpha: float = 0.05,
                    threshold: float = 0.05, min_samples: int = 5,
                    noise: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """One row per cell key in either file (see the module docstring).

    Each compared row has ``ratio``, ``lo``, ``hi`` (its interval),
    ``judged_ratio``, ``judged_lo``, ``judged_hi`` (the same less the machine
    shift when one is removed; the flag is drawn from these), ``se`` (log scale, with
    ``se_within`` and ``se_passes``), ``df``, ``n_old``/``n_new`` and ``flag``;
    the shared figures of the comparison (``shift``, ``shift_lo``,
    ``shift_hi``, ``shift_removed``, ``z``) are in every compared row too.
    `noise`: per cell key, a variance of the log ratio from an A/A pair
    (:func:`noise_from_pair`).
    """
    rows = []
    for key in list(old) + [k for k in new if k not in old]:
        o, n = old.get(key), new.get(key)
        row: dict[str, Any] = {"key": key, "old_s": None, "new_s": None, "ratio": None,
                               "lo": None, "hi": None, "p": None, "test": "", "flag": ""}
        rows.append(row)
        if o is None or n is None:
            row["flag"] = "only in old" if n is None else "only in new"
            continue
        mo, mn = median(o), median(n)
        row.update(old_s=mo, new_s=mn)
        if o.get("status") == n.get("status") == "skipped":
            row["flag"] = "~ (skipped in both)"
            continue
        if mo is None or mn is None or o.get("status") in ("failed", "skipped") \
                or n.get("status") in ("failed", "skipped"):
            row["flag"] = f"not comparable ({o.get('status')} -> {n.get('status')}: {_why_not(o, n)})"
            continue
        # on the log scale: mn / mo of hostile times (1e308 over 1e-308, subnormals)
        # overflows to inf or underflows to 0, which has no log; compared only where
        # the ratio and its inverse are normal floats (not a subnormal whose relative
        # precision is gone)
        log_ratio = math.log(mn) - math.log(mo)
        if abs(log_ratio) >= -math.log(sys.float_info.min):
            row["flag"] = ("not comparable (the ratio of the medians, "
                           f"{format_time(mn)} over {format_time(mo)}, is out of range)")
            continue
        so, sn = raw_times(o), raw_times(n)
        row.update(ratio=math.exp(log_ratio), log_ratio=log_ratio, n_old=len(so),
                   n_new=len(sn))
        ri = ratio_interval(so, sn)
        row["se_within"] = ri["se_log"] if ri else None
    compared = [r for r in rows if r["ratio"] is not None]
    own = {r["key"]: (_pass_var(old[r["key"]]), _pass_var(new[r["key"]])) for r in compared}
    vs = [v[0] for pair in own.values() for v in pair if v is not None]
    prior = statistics.median(vs) if vs else None
    shift = _shift([r["log_ratio"] for r in compared], level=1.0 - alpha)
    removed = shift is not None and _beyond(math.exp(shift[1]), math.exp(shift[2]),
                                            threshold) is not None
    # a removed shift is known to within its interval: its standard error joins the cell's
    offset, shift_se = ((shift[0], (shift[2] - shift[1]) / (2 * 1.96)) if removed and shift
                        else (0.0, 0.0))
    for r in compared:
        dfs = []  # (variance of a side's mean log, its degrees of freedom)
        for v in own[r["key"]]:
            mv = _moderated(v, prior)
            if mv is not None:  # a side without its own variance has one pass (or none)
                dfs.append((mv[0] / (v[1] if v is not None else 1), mv[1]))
        se_passes = math.sqrt(sum(a for a, _ in dfs)) if len(dfs) == 2 else None
        if noise is not None and r["key"] in noise:
            aa = noise[r["key"]]
            if se_passes is None or aa > se_passes ** 2:
                se_passes, dfs = math.sqrt(aa), [(aa, PRIOR_DF + 1)]
        r["se_passes"] = se_passes
        se = max(se_passes or 0.0, r["se_within"] or 0.0)
        # Welch-Satterthwaite degrees of freedom of the passes' terms
        df = (sum(a for a, _ in dfs) ** 2 / sum(a * a / d for a, d in dfs)
              if dfs and all(d > 0 for _, d in dfs) and sum(a for a, _ in dfs) > 0 else math.inf)
        lr, se = r["log_ratio"] - offset, math.hypot(se, shift_se)
        r.update(se=se, df=df, judged_ratio=exp_or_limit(lr),
                 p=_p_beyond(lr, se, df, threshold) if se_passes is not None else 1.0,
                 test="t beyond the threshold")
    # Benjamini-Hochberg over the compared cells: the false-discovery rate of the
    # flags is at most alpha; the intervals are at the matching level 1 - alpha R / m
    # (R flagged; Benjamini-Yekutieli's false-coverage rate), so a cell is flagged
    # exactly when its interval lies beyond the threshold
    from scipy.stats import false_discovery_control

    flagged = int((false_discovery_control([r["p"] for r in compared]) <= alpha).sum()
                  if compared else 0)
    level = 1.0 - alpha * max(1, flagged) / max(1, len(compared))
    for r in compared:
        se, df, lr = r["se"], r["df"], r["log_ratio"] - offset
        q = (t_quantile(1 - (1 - level) / 2, df) if math.isfinite(df)
             else NormalDist().inv_cdf(1 - (1 - level) / 2))
        half = q * se
        base = r["log_ratio"]  # the interval of new/old itself; the judged one less the shift
        r.update(lo=exp_or_limit(base - half), hi=exp_or_limit(base + half), z=q, level=level,
                 judged_lo=exp_or_limit(lr - half), judged_hi=exp_or_limit(lr + half),
                 shift=exp_or_limit(shift[0] if shift else statistics.median(
                     x["log_ratio"] for x in compared)),
                 shift_lo=exp_or_limit(shift[1]) if shift else None,
                 shift_hi=exp_or_limit(shift[2]) if shift else None,
                 shift_removed=removed)
        o, n = old[r["key"]], new[r["key"]]
        enough = min(r["n_old"], r["n_new"]) >= min_samples and r["se_within"] is not None
        starved_cores = [c for c in (_starved_cores(o), _starved_cores(n)) if c is not None]
        moved = _beyond(r["judged_lo"], r["judged_hi"], threshold)
        if not enough:
            r["flag"] = f"~ (too few samples: {r['n_old']} and {r['n_new']})"
        elif r["se_passes"] is None:
            r["flag"] = ("~ (one pass: no noise between processes; measure with the "
                         "recheck or give --noise)")
        elif starved_cores:
            r["flag"] = (f"~ (starved: the process ran {100 * min(starved_cores):.0f}% of the wall "
                         "time; the times measure the scheduler)")
        elif moved:
            cores = _parallelism_changed(o, n)
            r["flag"] = (f"~ (not like for like: {cores}; the {moved} may be the machine's "
                         "load, not the code)" if cores else moved)
        elif reading(r["judged_lo"], r["judged_hi"], 1 + threshold) == BELOW_MARGIN:
            r["flag"] = "~ (a real difference below the threshold)"
        else:
            r["flag"] = "~"
        if n.get("status") == "wrong" and o.get("status") != "wrong":
            r["flag"] += " (now WRONG)"
    return rows


def aa_selftest(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]],
                rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What an A/A pair (two runs of the same code) says of the statistics.

    ``coverage``: of the backend pairs (a group's ratio of one backend to
    another) that both runs have, how many of the second run's ratios lie
    inside the first run's interval, and the other way round (nominally 95 %:
    an interval is a statement about the next run). ``false_positives``: how
    many cells `rows` (compare of the pair) flagged, of those it judged."""
    inside = [0, 0]
    total = 0
    for key, ra in a.items():
        pb = (b.get(key) or {}).get("ratios")
        if not isinstance(pb, Mapping):
            continue
        for other, x in _pairs(ra):
            if not isinstance(y := pb.get(other), Mapping):
                continue
            try:
                total += 1
                inside[0] += float(x["lo"]) <= float(y["ratio"]) <= float(x["hi"])
                inside[1] += float(y["lo"]) <= float(x["ratio"]) <= float(y["hi"])
            except (KeyError, TypeError, ValueError):
                total -= 1
    judged = [r for r in rows if r["lo"] is not None]
    flagged = [r for r in judged if not r["flag"].startswith("~")]
    (held_a, checked_a), (held_b, checked_b) = _pass_to_pass(a), _pass_to_pass(b)
    return {"pairs": total, "second_in_first": inside[0], "first_in_second": inside[1],
            "cells": len(judged), "flagged": len(flagged),
            "flagged_keys": [r["key"] for r in flagged],
            "pass_checks": checked_a + checked_b, "pass_inside": held_a + held_b}


def _pairs(rec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(other backend, ratio) of each pair in a record's ``ratios``: each unordered
    pair once (in the record of the backend whose name sorts first)."""
    pairs = rec.get("ratios")
    for other, x in pairs.items() if isinstance(pairs, Mapping) else ():
        if str(rec.get("backend")) < str(other) and isinstance(x, Mapping):
            yield other, x


def _pass_to_pass(run: Mapping[str, Mapping[str, Any]]) -> tuple[int, int]:
    """(inside, checked): within one run, how often a pass's ratio of two backends
    lies inside the 95 % prediction interval for one more pass drawn from the run's
    other passes (leave one out: ``mean ± t(k-2) * s * sqrt(1 + 1/(k-1))`` over the
    other ``k - 1`` log ratios). The run's own check of its noise model: a
    pass is a fresh set of processes, so this is the rate at which the next
    process lands where the others said it would. Pairs with fewer than 4 passes
    (two others give a one-degree-of-freedom interval) are not checked."""
    inside = checked = 0
    for ra in run.values():
        for _, x in _pairs(ra):
            got = x.get("passes")
            if not isinstance(got, list):
                continue
            logs = [math.log(v) for v in got if positive(v)]
            if len(logs) < 4 or len(logs) != len(got):
                continue
            for i, li in enumerate(logs):
                rest = logs[:i] + logs[i + 1:]
                m, sd = statistics.fmean(rest), statistics.stdev(rest)
                half = t_quantile(0.975, len(rest) - 1) * sd * math.sqrt(1 + 1 / len(rest))
                checked += 1
                inside += abs(li - m) <= half
    return inside, checked


def _why_not(o: Mapping[str, Any], n: Mapping[str, Any]) -> str:
    """Why a cell cannot be compared: a failure, a skip or a time that is no time."""
    out = []
    for side, r in (("old", o), ("new", n)):
        st = r.get("status")
        if st in ("failed", "skipped"):
            err = get_path(r, "error", "message") or r.get("skip_reason")
            out.append(f"{side} {st}" + (f": {str(err)[:80]}" if err else ""))
        elif median(r) is None:
            v = get_path(r, "time", "median_s")
            out.append(f"{side} has no positive finite median time (got {v!r})")
    return "; ".join(out) or "no comparable times"


def header_differences(old: Mapping[str, Any] | None,
                       new: Mapping[str, Any] | None) -> list[str]:
    """What differs between the two runs' headers that makes times incomparable."""
    out = []
    a, b = get_path(old, "env", "machine_id"), get_path(new, "env", "machine_id")
    if a is not None and b is not None and a != b:  # the ids are not shown
        out.append("machine: the two files come from different machines")
    for label, path in (("CPU", ("env", "cpu", "model")),
                        ("usable cores", ("env", "cpu", "usable_cores")),
                        ("scale", ("run", "scale")), ("dtype", ("run", "dtype")),
                        ("threads", ("run", "threads")), ("TF32", ("run", "allow_tf32")),
                        ("execution", ("run", "execution")), ("xlinalg", ("env", "xlinalg")),
                        ("NumPy", ("env", "numpy"))):
        a, b = get_path(old, *path), get_path(new, *path)
        if a != b:
            out.append(f"{label}: {a!r} -> {b!r}")
    po, pn = get_path(old, "env", "packages") or {}, get_path(new, "env", "packages") or {}
    if isinstance(po, dict) and isinstance(pn, dict):
        out.extend(f"{k} version: {po.get(k)!r} -> {pn.get(k)!r}"
                   for k in sorted(set(po) | set(pn)) if po.get(k) != pn.get(k))
    return out
