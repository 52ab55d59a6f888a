"""Do two runs of ``xlinalg bench`` agree? The figures of issue 16's "done means".

Usage::

    xlinalg bench --quick --backends numpy,torch-cpu,jax-cpu --cases ... --out a.jsonl
    xlinalg bench --quick --backends numpy,torch-cpu,jax-cpu --cases ... --out b.jsonl
    python benchmarks/run_to_run.py a.jsonl b.jsonl

Prints, over the (case, size) cells both files hold (calibration cells left out):

* cells whose verdict names a fastest backend by at least 1.10x in both runs, and
  how many of those name different backends (the verdict: the interval clears
  the margin); the same count from plain medians (fastest by >= 10 % over the
  second), which is what the issue measured on the old runner;
* backend-pair ratios (every pair of backends in every cell) that move by more
  than 1.25x between the runs, from the paired ratios in the records
  (``ratios``) and from the medians; and of the paired moves, those whose
  intervals in the two runs do not overlap (a move the intervals did not cover);
* then run ``xlinalg compare a.jsonl b.jsonl`` yourself for its regressions.

Nothing is asserted: this prints, a person reads.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from typing import Any

from xlinalg.bench import ResultsFileError, read_results
from xlinalg.bench._findings import verdict


def _cells(path: str) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in read_results(path).latest().values():
        if str(r.get("case", "")).startswith("calib_") or r.get("status") not in ("ok",
                                                                                 "unchecked"):
            continue
        out.setdefault((r["case"], r["size_label"]), {})[r["backend"]] = r
    return out


def _median(r: dict[str, Any]) -> float:
    return float(r["time"]["median_s"])


def _decisive_by_median(by: dict[str, dict[str, Any]], factor: float) -> str | None:
    order = sorted(by, key=lambda b: _median(by[b]))
    if len(order) < 2:
        return None
    return order[0] if _median(by[order[1]]) / _median(by[order[0]]) >= factor else None


def _decisive_by_verdict(by: dict[str, dict[str, Any]], factor: float) -> str | None:
    """The fastest backend as the report names it (the one verdict), when by `factor`."""
    v = verdict(by)
    if not v or v["tie"] or v.get("no_verdict") or not v.get("speedup"):
        return None
    return v["winner"] if v["speedup"]["ratio"] >= factor else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--decisive", type=float, default=1.10)
    p.add_argument("--move", type=float, default=1.25)
    args = p.parse_args(argv)
    try:
        a, b = _cells(args.a), _cells(args.b)
    except ResultsFileError as exc:
        print(f"run_to_run: error: {exc}", file=sys.stderr)
        return 2
    common = [k for k in a if k in b]
    print(f"{len(common)} cells in both files")
    for label, fn in (("verdict", _decisive_by_verdict), ("medians", _decisive_by_median)):
        both = [(k, fn(a[k], args.decisive), fn(b[k], args.decisive)) for k in common]
        named = [(k, x, y) for k, x, y in both if x and y]
        differ = [(k, x, y) for k, x, y in named if x != y]
        print(f"[{label}] named decisively (>= {args.decisive:.2f}x) in both runs: {len(named)}; "
              f"for different backends: {len(differ)}")
        for k, x, y in differ:
            print(f"    {k}: {x} -> {y}")
    for label in ("paired ratios", "medians"):
        moved, total, uncovered = [], 0, 0
        for k in common:
            names = [n for n in a[k] if n in b[k]]
            for x, y in itertools.combinations(names, 2):
                if label == "medians":
                    ra = _median(a[k][x]) / _median(a[k][y])
                    rb = _median(b[k][x]) / _median(b[k][y])
                else:
                    pa = (a[k][x].get("ratios") or {}).get(y)
                    pb = (b[k][x].get("ratios") or {}).get(y)
                    if not pa or not pb:
                        continue
                    ra, rb = pa["ratio"], pb["ratio"]
                total += 1
                f = max(ra / rb, rb / ra)
                if f > args.move:
                    gap = ""
                    if label != "medians":
                        apart = pa["hi"] < pb["lo"] or pb["hi"] < pa["lo"]
                        uncovered += apart
                        gap = (f" [{pa['lo']:.3g}, {pa['hi']:.3g}] -> "
                               f"[{pb['lo']:.3g}, {pb['hi']:.3g}]"
                               + (" (intervals apart)" if apart else ""))
                    moved.append((k, x, y, ra, rb, gap))
        share = f" ({100 * len(moved) / total:.0f}%)" if total else ""
        apart_text = (f"; {uncovered} with intervals that do not overlap"
                      if label != "medians" else "")
        print(f"[{label}] backend-pair ratios moving by more than {args.move:.2f}x: "
              f"{len(moved)} of {total}{share}{apart_text}")
        for k, x, y, ra, rb, gap in moved:
            print(f"    {k} {x}/{y}: {ra:.3g} -> {rb:.3g}{gap}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
