"""``xlinalg compare OLD NEW``: the command; the comparison is the harness's
(:func:`xlinalg.bench._compare.compare_records`), imported when the command runs."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Mapping
from typing import Any

from ._common import ExitCode

__all__ = ["add_arguments", "run"]


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
                        help="false-discovery rate of the flags over all cells "
                             "(Benjamini-Hochberg; default: 0.05)")
    parser.add_argument("--threshold", type=_fraction, default=0.05,
                        help="smallest relative change flagged: the whole interval must "
                             "clear it (default: 0.05, i.e. 5%%)")
    parser.add_argument("--min-samples", type=_count, default=5,
                        help="samples each side needs before a cell can be flagged "
                             "(default: 5)")
    parser.add_argument("--only-flagged", action="store_true",
                        help="list only flagged cells (regressions, improvements, missing)")
    parser.add_argument("--noise", nargs=2, metavar=("A", "B"), default=None,
                        help="two results files of the same code on this machine (an A/A "
                             "pair): each cell's noise is at least what they show")
    parser.add_argument("--aa", action="store_true",
                        help="OLD and NEW are two runs of the same code (an A/A pair): also "
                             "print the empirical coverage of the runs' 95%% ratio intervals "
                             "and compare's false-positive rate")
    parser.add_argument("--fail-on", choices=("regression", "shift"), default=None,
                        help="exit 1 when a cell is flagged REGRESSION ('regression'), or "
                             "also when every cell moved slower beyond the threshold "
                             "('shift'): a CI gate (default: exit 0 whatever was found)")


def _load(records: Mapping[str, Mapping[str, Any]]) -> float | None:
    from ..bench._compare import get_path

    vals = [v for r in records.values()
            if isinstance(v := get_path(r, "side_by_side", "load_avg_1min", "mean"), (int, float))]
    return statistics.median(vals) if vals else None


def _read(path: str) -> Any:
    from .._lib._escape import terminal
    from ..bench import read_results

    res = read_results(path, warn=False)
    for w in res.warnings:
        print(terminal(f"xlinalg compare: warning: {w}"), file=sys.stderr)
    return res


def run(args: argparse.Namespace) -> ExitCode:
    from .._lib._escape import terminal
    from .._lib._units import format_time
    from ..bench import ResultsFileError
    from ..bench._compare import (
        aa_selftest,
        compare_records,
        header_differences,
        noise_from_pair,
    )
    from ..bench._verdict import fmt_interval, fmt_number

    try:
        files = [_read(f) for f in (args.old, args.new)]
        aa = [_read(f) for f in getattr(args, "noise", None) or ()]
    except ResultsFileError as exc:
        print(terminal(f"xlinalg compare: error: {exc}"), file=sys.stderr)
        return ExitCode.USAGE
    for d in header_differences(files[0].headers[-1] if files[0].headers else None,
                                files[1].headers[-1] if files[1].headers else None):
        print(f"xlinalg compare: warning: the runs differ: {terminal(d, 300)}; times may not "
              "be comparable", file=sys.stderr)
    old, new = files[0].latest(), files[1].latest()
    noise = noise_from_pair(aa[0].latest(), aa[1].latest()) if aa else None
    rows = compare_records(old, new, alpha=args.alpha, threshold=args.threshold,
                           min_samples=getattr(args, "min_samples", 5), noise=noise)
    compared = [r for r in rows if r["lo"] is not None]
    source = ("the A/A pair given with --noise and each file's passes" if aa
              else "each file's own passes (fresh processes)")
    level = compared[0]["level"] if compared else 1.0 - args.alpha
    print(terminal(f"compare {args.old} -> {args.new}"))
    print(terminal("ratio = new/old median; flags at a "
                   f"false-discovery rate of {100 * args.alpha:g}% over the {len(compared)} "
                   f"cells (Benjamini-Hochberg); intervals at {100 * level:.4g}% (the level "
                   f"that matches the flags); noise from {source}; flagged when the whole "
                   f"interval is beyond {100 * args.threshold:g}%"))
    shift_slower = False
    if compared and compared[0]["shift_lo"] is not None:
        r0 = compared[0]
        lo, hi = _load(old), _load(new)
        load = (f"; load average old {lo:.1f}, new {hi:.1f}"
                if lo is not None and hi is not None else "")
        iv = fmt_interval(r0["shift_lo"], r0["shift_hi"], 3)
        if r0["shift_removed"]:
            shift_slower = r0["shift_lo"] > 1 + args.threshold
            print(f"MACHINE SHIFT: all cells moved by x{fmt_number(r0['shift'], 3)} {iv} (median over "
                  f"the cells){load}: reported once; each cell below is judged after "
                  "removing it")
        else:
            print(f"all cells moved by x{fmt_number(r0['shift'], 3)} {iv} (median over the cells): no "
                  f"shift beyond the threshold{load}")
    shown = [r for r in rows if not args.only_flagged or not r["flag"].startswith("~")]
    keys = {r["key"]: terminal(r["key"], 120) for r in shown}  # from the files: untrusted
    width = max([len("cell")] + [len(k) for k in keys.values()])
    less = bool(compared and compared[0]["shift_removed"])
    extra = f"  {'less shift':>10}  {'interval':>15}" if less else ""
    print(f"{'cell':<{width}}  {'old':>10}  {'new':>10}  {'ratio':>7}  {'interval':>15}{extra}  flag")
    for r in shown:
        ratio = fmt_number(r["ratio"], 3) if r["ratio"] is not None else "-"
        iv = fmt_interval(r["lo"], r["hi"], 3) if r["lo"] is not None else "-"
        judged = ""
        if less:
            judged = (f"  {fmt_number(r['judged_ratio'], 3):>10}  {fmt_interval(r['judged_lo'], r['judged_hi'], 3):>15}"
                      if r["lo"] is not None else f"  {'-':>10}  {'-':>15}")
        print(f"{keys[r['key']]:<{width}}  {format_time(r['old_s']):>10}  "
              f"{format_time(r['new_s']):>10}  {ratio:>7}  {iv:>15}{judged}  {terminal(r['flag'])}")
    counts: dict[str, int] = {}
    for r in rows:
        k = r["flag"].split(" (")[0] or "?"
        counts[k] = counts.get(k, 0) + 1
    print(f"{len(rows)} cells: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if getattr(args, "aa", False):
        t = aa_selftest(old, new, rows)
        n = t["pairs"]
        pct = (lambda k: f"{k} of {n} ({100 * k / n:.0f}%)") if n else (lambda k: "-")
        print(f"A/A self-test: the second run's ratio inside the first run's 95% interval: "
              f"{pct(t['second_in_first'])} of backend pairs; the first inside the "
              f"second's: {pct(t['first_in_second'])}; compare flagged {t['flagged']} of "
              f"{t['cells']} cells (false positives: same code); within each run, a pass's ratio "
              f"inside the interval its other passes predict: "
              + (f"{t['pass_inside']} of {t['pass_checks']} ({100 * t['pass_inside'] / t['pass_checks']:.0f}%)"
                 if t["pass_checks"] else "- (no pair with 4 passes or more)"))
    regressions = counts.get("REGRESSION", 0)
    fail = getattr(args, "fail_on", None)
    if fail and (regressions or (fail == "shift" and shift_slower)):
        what = [f"{regressions} REGRESSION(s)"] if regressions else []
        what += ["a machine shift slower beyond the threshold"] if fail == "shift" and shift_slower else []
        print(f"xlinalg compare: --fail-on {fail}: {' and '.join(what)}: exit {int(ExitCode.FAILED)}",
              file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK
