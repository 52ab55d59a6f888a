"""``xlinalg compare old.jsonl new.jsonl``: per-cell ratio of medians, with a test.

For each cell (same key: case, backend, dtype, size) in both files the ratio
new/old of the median times, and a two-sided test on the raw samples
(``time.raw_s``): Mann-Whitney U from :mod:`scipy.stats` where SciPy is
importable, else a permutation test on the difference of medians in NumPy.
A cell is flagged a regression (slower) or improvement (faster) when the test
is significant at ``--alpha`` and the ratio moves by more than
``--threshold``. The exit status is 0 whatever the result; a file that cannot
be read gives its one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._units import format_time

__all__ = ["add_arguments", "compare_records", "p_value", "run"]

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the baseline results file")
    parser.add_argument("new", metavar="NEW", help="the results file to compare with it")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the test (default: 0.05)")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="smallest relative change flagged (default: 0.05, i.e. 5%%)")
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
    """Two-sided p-value that samples a and b come from the same distribution."""
    if len(a) < 2 or len(b) < 2:
        return None, "too few samples"
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        return _permutation_p(a, b), "permutation"
    if len(set(a) | set(b)) == 1:
        return 1.0, "Mann-Whitney U"
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue), "Mann-Whitney U"


def _samples(r: dict[str, Any]) -> list[float]:
    raw = (r.get("time") or {}).get("raw_s") or []
    return [float(x) for x in raw if isinstance(x, (int, float))]


def _median(r: dict[str, Any]) -> float | None:
    v = (r.get("time") or {}).get("median_s")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def compare_records(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], *,
                    alpha: float = 0.05, threshold: float = 0.05) -> list[dict[str, Any]]:
    """One row per cell key in either file."""
    rows = []
    for key in list(old) + [k for k in new if k not in old]:
        o, n = old.get(key), new.get(key)
        row: dict[str, Any] = {"key": key, "old_s": None, "new_s": None, "ratio": None,
                               "p": None, "test": "", "flag": ""}
        if o is None or n is None:
            row["flag"] = "only in old" if n is None else "only in new"
            rows.append(row)
            continue
        mo, mn = _median(o), _median(n)
        row.update(old_s=mo, new_s=mn)
        if o.get("status") == n.get("status") == "skipped":
            row["flag"] = "~ (skipped in both)"
            rows.append(row)
            continue
        if mo is None or mn is None or o.get("status") in ("failed", "skipped") \
                or n.get("status") in ("failed", "skipped"):
            row["flag"] = f"not comparable ({o.get('status')} -> {n.get('status')})"
            rows.append(row)
            continue
        row["ratio"] = mn / mo
        p, test = p_value(_samples(o), _samples(n))
        row.update(p=p, test=test)
        if p is not None and p < alpha and row["ratio"] > 1 + threshold:
            row["flag"] = "REGRESSION"
        elif p is not None and p < alpha and row["ratio"] < 1 - threshold:
            row["flag"] = "improvement"
        else:
            row["flag"] = "~" if p is not None else "~ (no test: too few samples)"
        if n.get("status") == "wrong" and o.get("status") != "wrong":
            row["flag"] += " (now WRONG)"
        rows.append(row)
    return rows


def run(args: argparse.Namespace) -> int:
    from ._store import ResultsFileError, read_results

    files = []
    for f in (args.old, args.new):
        try:
            res = read_results(f, warn=False)
        except ResultsFileError as exc:
            print(f"xlinalg compare: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        for w in res.warnings:
            print(f"xlinalg compare: warning: {w}", file=sys.stderr)
        files.append(res)
    rows = compare_records(files[0].latest(), files[1].latest(), alpha=args.alpha,
                           threshold=args.threshold)
    test = next((r["test"] for r in rows if r["test"] and r["test"] != "too few samples"),
                "Mann-Whitney U")
    print(f"compare {args.old} -> {args.new}: ratio = new/old median; p: two-sided {test} "
          f"on the raw samples; flagged at p < {args.alpha} and a change > "
          f"{100 * args.threshold:g}%")
    shown = [r for r in rows if not args.only_flagged or not r["flag"].startswith("~")]
    width = max([len("cell")] + [len(r["key"]) for r in shown])
    print(f"{'cell':<{width}}  {'old':>10}  {'new':>10}  {'ratio':>7}  {'p':>8}  flag")
    for r in shown:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        p = f"{r['p']:.3g}" if r["p"] is not None else "-"
        print(f"{r['key']:<{width}}  {format_time(r['old_s']):>10}  {format_time(r['new_s']):>10}  "
              f"{ratio:>7}  {p:>8}  {r['flag']}")
    counts: dict[str, int] = {}
    for r in rows:
        k = r["flag"].split(" (")[0] or "?"
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(rows)} cells: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return EXIT_OK
