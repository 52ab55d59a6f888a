"""``xlinalg compare old.jsonl new.jsonl``: per-cell ratio of medians with an interval.

For each cell (same key: case, backend, dtype, size) in both files, the ratio
new/old of the median times and an interval around it, built from two parts:

- *within the runs*: the bootstrap standard error of ``log(median(new) /
  median(old))`` from the cells' raw samples (``time.raw_s``; seeded);
- *between the passes* of each cell: a run measures every cell twice, the
  second time in fresh worker processes (``time.passes``); half the log of
  the ratio of the passes' medians, for each file. A library whose time
  depends on its process's state (0.9 ms in one process, 1.8 ms in the next)
  moves that much from run to run with no code changed;
- *between the runs*: how much the cells of these two files move as a whole
  when nothing changed — the robust spread (1.4826 x the median absolute
  deviation) of all comparable cells' log ratios around their median. Two runs
  of the same code on a loaded machine differ by far more than one run's
  samples say; this term is that difference, measured on the files themselves.

The interval is ``log ratio ± z * sqrt(se_within² + passes_old² + passes_new² +
spread²)`` with ``z`` for a
family-wise level ``1 - alpha`` over all compared cells (Bonferroni). A cell is a
REGRESSION only when the whole interval lies above ``1 + threshold`` (default
5 %), an improvement when it lies below ``1 / (1 + threshold)``, and only when
both sides have at least ``min_samples`` samples and neither side's worker was
starved (kept less than half a core busy over its samples: it waited for the
CPU most of the time, so its time measures the scheduler). A cell whose process
kept a different number of cores busy in the two runs (effective cores 1.9 in
one, 1.0 in the other: a neighbour took a core from a two-threaded library) is
not like for like: it is shown with both figures, never as a REGRESSION. A change shared by every cell
(a slower machine, or a change that slows everything) is reported on its own
line, with its interval and the load averages of both runs.

Before the table, ``compare`` warns when the files come from different
machines, scales, dtypes, thread settings or library versions. The exit status
is 0 whatever the result; a file that cannot be read gives its one-line error
and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Mapping
from typing import Any

from ._escape import terminal
from ._units import format_time, round_outward

__all__ = ["add_arguments", "compare_records", "header_differences", "p_value", "run"]

EXIT_OK, EXIT_USAGE = 0, 2

#: Fewest comparable cells from which the between-run spread is estimated.
MIN_CELLS_FOR_SPREAD = 6


def _number(text: str, ok: Any, what: str, conv: Any = float) -> Any:
    try:
        v = conv(text)
    except ValueError:
        v = math.nan
    if not ok(v):  # nan and inf fail every range
        raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}")
    return v


def _open_unit(text: str) -> float:
    return _number(text, lambda v: 0 < v < 1, "a number between 0 and 1 (exclusive)")


def _fraction(text: str) -> float:
    return _number(text, lambda v: 0 <= v < 10, "a relative change from 0 to 10")


def _count(text: str) -> int:
    return _number(text, lambda v: 1 <= v <= 10**6, "a whole number from 1 to 1000000", int)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the baseline results file")
    parser.add_argument("new", metavar="NEW", help="the results file to compare with it")
    parser.add_argument("--alpha", type=_open_unit, default=0.05,
                        help="family-wise error level of the intervals over all cells "
                             "(default: 0.05)")
    parser.add_argument("--threshold", type=_fraction, default=0.05,
                        help="smallest relative change flagged: the whole interval must "
                             "clear it (default: 0.05, i.e. 5%%)")
    parser.add_argument("--min-samples", type=_count, default=5,
                        help="samples each side needs before a cell can be flagged "
                             "(default: 5)")
    parser.add_argument("--only-flagged", action="store_true",
                        help="list only flagged cells (regressions, improvements, missing)")


def _permutation_p(a: list[float], b: list[float], n_perm: int = 4000, seed: int = 0) -> float:
    import numpy as np

    x, y = np.asarray(a, float), np.asarray(b, float)
    obs = abs(np.median(x) - np.median(y))
    both = np.concatenate([x, y])
    rng = np.random.default_rng(seed)
    count = 0
    for _ in range(n_perm):
        rng.shuffle(both)
        if abs(np.median(both[: len(x)]) - np.median(both[len(x):])) >= obs - 1e-15 * obs:
            count += 1
    return (count + 1) / (n_perm + 1)


def p_value(a: list[float], b: list[float]) -> tuple[float | None, str]:
    """Two-sided p-value that samples a and b come from the same distribution
    (Mann-Whitney U, or a permutation test without SciPy). Shown for information:
    the flag comes from the interval."""
    if len(a) < 2 or len(b) < 2:
        return None, "too few samples"
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        return _permutation_p(a, b), "permutation"
    if len(set(a) | set(b)) == 1:
        return 1.0, "Mann-Whitney U"
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue), "Mann-Whitney U"


def _samples(r: Mapping[str, Any]) -> list[float]:
    raw = (r.get("time") or {}).get("raw_s") or []
    return [float(x) for x in raw
            if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
            and math.isfinite(x)]


def _median(r: Mapping[str, Any]) -> float | None:
    v = (r.get("time") or {}).get("median_s")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if v > 0 and math.isfinite(v) else None


def _pass_spread(r: Mapping[str, Any]) -> float:
    """Half the log of max/min of the passes' medians (``time.passes``); 0 with one pass."""
    passes = _get(r, "time", "passes")
    meds = [float(m) for p in passes if isinstance(p, dict)
            and isinstance(m := p.get("median_s"), (int, float)) and not isinstance(m, bool)
            and m > 0 and math.isfinite(m)] if isinstance(passes, list) else []
    # logs, not max/min: 1e308 over 1e-308 overflows
    return 0.5 * (math.log(max(meds)) - math.log(min(meds))) if len(meds) > 1 else 0.0


def _starved_cores(r: Mapping[str, Any]) -> float | None:
    """The effective cores of a side-by-side record whose worker was starved, else None."""
    from ._stats import starved

    v = _cores(r)
    return v if v is not None and starved(str(r.get("backend")), v) else None


def _cores(r: Mapping[str, Any]) -> float | None:
    """The effective cores of a side-by-side record (CPU time over wall time), if a
    finite number, else None."""
    v = _get(r, "side_by_side", "effective_cores")
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return None
    return float(v)


def _parallelism_changed(o: Mapping[str, Any], n: Mapping[str, Any]) -> str | None:
    """A note when the two runs' processes kept different numbers of cores busy
    for this cell (by more than :data:`._passes.PARALLELISM_FACTOR`), else None.

    A library that spread its work over two cores in one run and found one of
    them taken by a neighbour in the other is slower for a reason that is not
    its code: the comparison is not like for like, and saying REGRESSION would
    cry wolf. The note shows both figures, so a change that made a library
    single-threaded is still visible."""
    from ._passes import PARALLELISM_FACTOR

    a, b = _cores(o), _cores(n)
    if a is None or b is None or min(a, b) <= 0 or max(a, b) / min(a, b) <= PARALLELISM_FACTOR:
        return None
    return f"effective cores {a:.1f} -> {b:.1f}"


def _representable(log_ratio: float) -> bool:
    """Whether ``exp(log_ratio)`` and its inverse are normal floats (not 0, not
    inf, not a subnormal whose relative precision is gone)."""
    return abs(log_ratio) < -math.log(sys.float_info.min)


def _spread(logs: list[float]) -> tuple[float, float]:
    """(median, 1.4826 * MAD) of log ratios; (0, 0) for too few cells."""
    if len(logs) < MIN_CELLS_FOR_SPREAD:
        return (statistics.median(logs) if logs else 0.0), 0.0
    med = statistics.median(logs)
    return med, 1.4826 * statistics.median(abs(x - med) for x in logs)


def compare_records(old: Mapping[str, Mapping[str, Any]],
                    new: Mapping[str, Mapping[str, Any]], *, alpha: float = 0.05,
                    threshold: float = 0.05, min_samples: int = 5) -> list[dict[str, Any]]:
    """One row per cell key in either file (see the module docstring).

    Each compared row has ``ratio``, ``lo``, ``hi`` (the interval), ``se_within``
    and ``se_passes`` (log scale), ``n_old``/``n_new`` and ``flag``; the shared figures of the
    comparison (``shift``, ``spread``, ``z``) are in every compared row too.
    """
    from statistics import NormalDist

    from ._stats import exp_or_limit, ratio_interval

    rows = []
    for key in list(old) + [k for k in new if k not in old]:
        o, n = old.get(key), new.get(key)
        row: dict[str, Any] = {"key": key, "old_s": None, "new_s": None, "ratio": None,
                               "lo": None, "hi": None, "p": None, "test": "", "flag": ""}
        rows.append(row)
        if o is None or n is None:
            row["flag"] = "only in old" if n is None else "only in new"
            continue
        mo, mn = _median(o), _median(n)
        row.update(old_s=mo, new_s=mn)
        if o.get("status") == n.get("status") == "skipped":
            row["flag"] = "~ (skipped in both)"
            continue
        if mo is None or mn is None or o.get("status") in ("failed", "skipped") \
                or n.get("status") in ("failed", "skipped"):
            row["flag"] = f"not comparable ({o.get('status')} -> {n.get('status')})"
            continue
        # on the log scale: mn / mo of hostile times (1e308 over 1e-308, subnormals)
        # overflows to inf or underflows to 0, which has no log
        log_ratio = math.log(mn) - math.log(mo)
        if not _representable(log_ratio):
            row["flag"] = ("not comparable (the ratio of the medians, "
                           f"{format_time(mn)} over {format_time(mo)}, is out of range)")
            continue
        so, sn = _samples(o), _samples(n)
        row.update(ratio=math.exp(log_ratio), log_ratio=log_ratio, n_old=len(so),
                   n_new=len(sn))
        ri = ratio_interval(so, sn)
        row["se_within"] = ri["se_log"] if ri else None
        row["se_passes"] = math.hypot(_pass_spread(o), _pass_spread(n))
    compared = [r for r in rows if r["ratio"] is not None]
    shift, spread = _spread([r["log_ratio"] for r in compared])
    m = max(1, len(compared))
    z = NormalDist().inv_cdf(1.0 - alpha / (2.0 * m))
    for r in compared:
        se = math.hypot(r["se_within"] or 0.0, r["se_passes"], spread)
        half = z * se
        r.update(lo=exp_or_limit(r["log_ratio"] - half), hi=exp_or_limit(r["log_ratio"] + half),
                 shift=exp_or_limit(shift), spread=spread, z=z)
        enough = min(r["n_old"], r["n_new"]) >= min_samples and r["se_within"] is not None
        starved = [c for c in (_starved_cores(old[r["key"]]), _starved_cores(new[r["key"]]))
                   if c is not None]
        if not enough:
            r["flag"] = f"~ (too few samples: {r['n_old']} and {r['n_new']})"
        elif starved:
            r["flag"] = (f"~ (starved: the process ran {100 * min(starved):.0f}% of the wall "
                         "time; the times measure the scheduler)")
        elif r["lo"] > 1 + threshold or r["hi"] < 1 / (1 + threshold):
            moved = "REGRESSION" if r["lo"] > 1 + threshold else "improvement"
            cores = _parallelism_changed(old[r["key"]], new[r["key"]])
            r["flag"] = (f"~ (not like for like: {cores}; the {moved} may be the machine's "
                         "load, not the code)" if cores else moved)
        else:
            r["flag"] = "~"
        o, n = old[r["key"]], new[r["key"]]
        if n.get("status") == "wrong" and o.get("status") != "wrong":
            r["flag"] += " (now WRONG)"
    return rows


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def header_differences(old: Mapping[str, Any] | None,
                       new: Mapping[str, Any] | None) -> list[str]:
    """What differs between the two runs' headers that makes times incomparable."""
    old, new = old or {}, new or {}
    out = []
    for key in ("machine_id", "host"):  # "host": files written before 2026-12-04
        a, b = _get(old, "env", key), _get(new, "env", key)
        if a is not None and b is not None:
            if a != b:  # the values are not shown: a host name is nobody's business
                out.append("machine: the two files come from different machines")
            break
    for label, path in (("CPU", ("env", "cpu", "model")),
                        ("usable cores", ("env", "cpu", "usable_cores")),
                        ("scale", ("run", "scale")), ("dtype", ("run", "dtype")),
                        ("threads", ("run", "threads")), ("TF32", ("run", "allow_tf32")),
                        ("execution", ("run", "execution")), ("xlinalg", ("env", "xlinalg")),
                        ("NumPy", ("env", "numpy"))):
        a, b = _get(old, *path), _get(new, *path)
        if a != b:
            out.append(f"{label}: {a!r} -> {b!r}")
    po, pn = _get(old, "env", "packages") or {}, _get(new, "env", "packages") or {}
    if isinstance(po, dict) and isinstance(pn, dict):
        out.extend(f"{k} version: {po.get(k)!r} -> {pn.get(k)!r}"
                   for k in sorted(set(po) | set(pn)) if po.get(k) != pn.get(k))
    return out


def _fmt(x: float, digits: int = 3) -> str:
    """`x` with `digits` decimals, or 3 significant digits outside 0.001-1e6
    (an interval from hostile times reaches 1e307 or 0: never 300 digits)."""
    if x != 0 and math.isfinite(x) and not _fixed(x):
        return f"{x:.3g}"
    return f"{x:.{digits}f}"


def _fixed(x: float) -> bool:
    """Whether :func:`_fmt` writes `x` with fixed decimals (else 3 significant digits)."""
    return math.isfinite(x) and 1e-3 <= abs(x) < 1e6


def _fmt_interval(lo: float, hi: float) -> str:
    """"[0.997, 1.104]": each end as :func:`_fmt` writes it, rounded outward (low end
    down, high end up), so an interval whose low end is 1.0996 never prints as
    "[1.100, ...]" beside a 1.10 threshold it did not clear."""
    def end(x: float, up: bool) -> str:
        return _fmt(round_outward(x, 3, up)) if _fixed(x) else _fmt(x)

    return f"[{end(lo, False)}, {end(hi, True)}]"


def _load(records: Mapping[str, Mapping[str, Any]]) -> float | None:
    vals = [v for r in records.values()
            if isinstance(v := _get(r, "side_by_side", "load_avg_1min", "mean"), (int, float))]
    return statistics.median(vals) if vals else None


def run(args: argparse.Namespace) -> int:
    from ._stats import exp_or_limit
    from ._store import ResultsFileError, read_results

    files = []
    for f in (args.old, args.new):
        try:
            res = read_results(f, warn=False)
        except ResultsFileError as exc:
            print(terminal(f"xlinalg compare: error: {exc}"), file=sys.stderr)
            return EXIT_USAGE
        for w in res.warnings:
            print(terminal(f"xlinalg compare: warning: {w}"), file=sys.stderr)
        files.append(res)
    for d in header_differences(files[0].headers[-1] if files[0].headers else None,
                                files[1].headers[-1] if files[1].headers else None):
        print(f"xlinalg compare: warning: the runs differ: {terminal(d, 300)}; times may not "
              "be comparable", file=sys.stderr)
    old, new = files[0].latest(), files[1].latest()
    rows = compare_records(old, new, alpha=args.alpha, threshold=args.threshold,
                           min_samples=getattr(args, "min_samples", 5))
    compared = [r for r in rows if r["lo"] is not None]
    print(terminal(f"compare {args.old} -> {args.new}: ratio = new/old median; interval: "
                   f"{100 * (1 - args.alpha):g}% over all {len(compared)} cells together "
                   "(Bonferroni), from the samples and the spread between the runs; flagged "
                   f"when the whole interval is beyond {100 * args.threshold:g}%"))
    if compared:
        r0 = compared[0]
        lo, hi = _load(old), _load(new)
        load = (f"; load average old {lo:.1f}, new {hi:.1f}"
                if lo is not None and hi is not None else "")
        print(f"all cells moved by x{_fmt(r0['shift'])} (median); spread between the runs: "
              f"±{_fmt(100 * (exp_or_limit(r0['spread']) - 1), 1)}% (1 sigma){load}")
    shown = [r for r in rows if not args.only_flagged or not r["flag"].startswith("~")]
    keys = {r["key"]: terminal(r["key"], 120) for r in shown}  # from the files: untrusted
    width = max([len("cell")] + [len(k) for k in keys.values()])
    print(f"{'cell':<{width}}  {'old':>10}  {'new':>10}  {'ratio':>7}  {'interval':>15}  flag")
    for r in shown:
        ratio = _fmt(r["ratio"]) if r["ratio"] is not None else "-"
        iv = _fmt_interval(r["lo"], r["hi"]) if r["lo"] is not None else "-"
        print(f"{keys[r['key']]:<{width}}  {format_time(r['old_s']):>10}  "
              f"{format_time(r['new_s']):>10}  {ratio:>7}  {iv:>15}  {terminal(r['flag'])}")
    counts: dict[str, int] = {}
    for r in rows:
        k = r["flag"].split(" (")[0] or "?"
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(rows)} cells: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return EXIT_OK
