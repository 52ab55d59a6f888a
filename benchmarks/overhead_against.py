"""``overhead.py``'s rows for an earlier revision beside this checkout's, with the run-to-run noise.

Usage::

    python benchmarks/overhead_against.py REV                 # 2 runs a side, every row
    python benchmarks/overhead_against.py REV --pairs 3 --only solve,extension

Runs this checkout's ``benchmarks/overhead.py`` in fresh processes, alternately on the
source tree of ``REV`` (``git archive REV src/xlinalg``, unpacked in a temporary folder)
and on this checkout's ``src`` (after, before, after, ... so a slow drift of the machine
hits both), then prints one row per measurement: each side's ratios (xlinalg / native),
after / before (the quotient of the sides' mean ratios) and the run-to-run spread of
each side (largest / smallest ratio of its runs). A row moved beyond the noise when
after / before lies outside its noise band: the larger of its own two spreads and the
90th percentile of the spreads of all rows (two runs a side say little about one row's
noise; the machine's is shared by every row). Both sides run the same
script and the same timing loop: a tree older than ``xlinalg.bench.calibrate`` and
``time_block`` is given this checkout's (``src/xlinalg/bench/_timer.py`` imports only
the standard library).

Timings need a quiet machine; nothing here asserts one. Extra options go to
``overhead.py`` (``--only``, ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run in the child: this checkout's timer where the tree lacks it, then overhead.py.
_BOOT = """
import importlib.util, runpy, sys
timer_py, script = sys.argv[1], sys.argv[2]
import xlinalg.bench as bench
if not (hasattr(bench, "calibrate") and hasattr(bench, "time_block")):
    spec = importlib.util.spec_from_file_location("_overhead_timer", timer_py)
    timer = importlib.util.module_from_spec(spec)
    sys.modules["_overhead_timer"] = timer
    spec.loader.exec_module(timer)
    bench.calibrate, bench.time_block = timer.calibrate, timer.time_block
sys.argv = [script, *sys.argv[3:]]
runpy.run_path(script, run_name="__main__")
"""


def parse_rows(text: str) -> dict[str, float]:
    """The ratio of every row of overhead.py's closing Markdown table, by its label."""
    rows: dict[str, float] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 4 or cells[0] == "what" or set(cells[0]) <= {"-"}:
            continue
        try:
            rows[cells[0]] = float(cells[3])
        except ValueError:
            continue
    return rows


def summarize(before: list[dict[str, float]], after: list[dict[str, float]]) -> list[tuple[str, float, float, float]]:
    """(label, after / before, before's spread, after's spread) for every row both sides have in every run."""
    out = []
    for label in after[0]:
        b = [r[label] for r in before if label in r]
        a = [r[label] for r in after if label in r]
        if len(b) != len(before) or len(a) != len(after) or min(a + b) <= 0:
            continue
        out.append((label, (sum(a) / len(a)) / (sum(b) / len(b)), max(b) / min(b), max(a) / min(a)))
    return out


def pooled_noise(rows: list[tuple[str, float, float, float]]) -> float:
    """The 90th percentile over rows of each row's larger spread (1.0 when there are none)."""
    spreads = sorted(max(sb, sa) for _, _, sb, sa in rows)
    return spreads[min(len(spreads) - 1, int(0.9 * len(spreads)))] if spreads else 1.0


def _tree(rev: str, into: Path) -> Path:
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/xlinalg"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _run(src: Path, extra: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-c", _BOOT, str(ROOT / "src/xlinalg/bench/_timer.py"),
           str(ROOT / "benchmarks/overhead.py"), *extra]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"overhead.py on {src} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return parse_rows(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the earlier revision (anything `git archive` takes)")
    ap.add_argument("--pairs", type=int, default=2, help="runs of each side (default 2)")
    args, extra = ap.parse_known_args(argv)
    if args.pairs < 1:
        ap.error(f"--pairs must be at least 1, got {args.pairs}")
    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="overhead-against-") as tmp:
        old = _tree(args.rev, Path(tmp))
        for i in range(args.pairs):
            for side, src, runs in (("after", ROOT / "src", after), ("before", old, before)):
                print(f"run {i + 1}/{args.pairs}: {side}", file=sys.stderr, flush=True)
                runs.append(_run(src, extra))
    rows = summarize(before, after)
    pooled = pooled_noise(rows)
    print("| row | after / before | before's spread | after's spread | beyond the noise |\n|---|---|---|---|---|")
    for label, moved, sb, sa in rows:
        noise = max(sb, sa, pooled)
        beyond = "slower" if moved > noise else "faster" if moved < 1 / noise else ""
        print(f"| {label} | {moved:.2f} | {sb:.2f} | {sa:.2f} | {beyond} |")
    print(f"\n{len(rows)} rows, {args.pairs} run(s) a side; before = {args.rev}, after = this checkout; "
          f"the rows' 90th-percentile run-to-run spread: {pooled:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
