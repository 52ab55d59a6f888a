"""Does xlinalg's benchmark engine agree with torch.utils.benchmark and timeit?

Usage::

    python benchmarks/compare_timers.py              # about a minute
    python benchmarks/compare_timers.py --rounds 5 --threads 2

For each operation the same inputs are timed, in one process, by

* the engine (:func:`xlinalg.bench.execute_cell`, exactly as ``xlinalg bench`` runs a
  cell: the case's operation, the backend's fence, calibrated blocks, median);
* ``torch.utils.benchmark.Timer(...).blocked_autorange()`` (median of blocks), with
  the same thread count (its default would be 1 thread);
* :mod:`timeit` (``autorange`` for the loop count, then ``repeat``; median per call).

The three are interleaved over several rounds, the order rotating each round, so
that slow drifts of a shared machine hit all alike; the figure of each tool is the
median over rounds (and, less sensitive to a co-tenant's bursts, the minimum over
rounds). The ratios engine/torch and engine/timeit should be within
about 10 % of 1. The engine adds two Python calls per operation (its closure and
the case's ``op``), which shows on the 5x5 solve (a few µs) and nowhere else.

Threads are pinned (default 1: a 2-core shared machine is too noisy with
multithreaded BLAS) through threadpoolctl and ``torch.set_num_threads`` for all
three tools alike. Nothing is asserted: this prints, a person reads.
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np


def _engine(case: str, backend: str, size: Any, min_run_time: float) -> Callable[[], float]:
    from xlinalg.bench import TimerConfig, execute_cell, make_cell
    from xlinalg.bench._fairness import backend_state

    cfg = TimerConfig(warmup_time=0.05, min_sample_time=0.01, min_run_time=min_run_time,
                      min_samples=7, max_samples=1000, max_run_time=10 * min_run_time)
    state = backend_state(backend)

    def run() -> float:
        rec = execute_cell(make_cell(case, backend, size, timer=cfg, memory=False),
                           backend_state=state)
        assert rec["status"] == "ok", rec.get("error") or rec.get("check")
        return float(rec["time"]["median_s"])

    return run


def _torch_timer(stmt: str, env: dict[str, Any], threads: int,
                 min_run_time: float) -> Callable[[], float]:
    from torch.utils.benchmark import Timer

    def run() -> float:
        t = Timer(stmt=stmt, globals=env, num_threads=threads)
        return float(t.blocked_autorange(min_run_time=min_run_time).median)

    return run


def _timeit(stmt: str, env: dict[str, Any], min_run_time: float) -> Callable[[], float]:
    def run() -> float:
        t = timeit.Timer(stmt, globals=env)
        number, _ = t.autorange()  # total >= 0.2 s
        number = max(1, number // 10)  # samples of >= ~20 ms
        repeat = max(7, int(min_run_time / 0.02))
        return statistics.median(t.repeat(repeat=repeat, number=number)) / number

    return run


def _inputs(case: str, size: Any) -> tuple[np.ndarray, ...]:
    """The engine's own inputs for this cell (same seed, same values)."""
    from xlinalg.bench import get_case
    from xlinalg.bench._cell import cell_seed

    c = get_case(case)
    s = c.normalize(size)
    from xlinalg.bench import format_size

    rng = np.random.default_rng(cell_seed(0, case, format_size(s)))
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in c.setup(rng, s))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="print every round")
    ap.add_argument("--min-run-time", type=float, default=0.2,
                    help="seconds of samples per tool per round")
    args = ap.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    from xlinalg.bench._fairness import configure_backend

    threadpool_limits(args.threads)
    torch.set_num_threads(args.threads)
    configure_backend("torch-cpu", threads=args.threads)
    configure_backend("numpy", threads=args.threads)

    rows = []
    a, b = _inputs("matmul", 256)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    sa, sb = _inputs("solve", 5)
    rows.append(("numpy matmul 256x256 float64", _engine("matmul", "numpy", 256, args.min_run_time),
                 "np.matmul(a, b)", {"np": np, "a": a, "b": b}))
    rows.append(("torch matmul 256x256 float64",
                 _engine("matmul", "torch-cpu", 256, args.min_run_time),
                 "torch.matmul(a, b)", {"torch": torch, "a": ta, "b": tb}))
    rows.append(("numpy solve 5x5 float64", _engine("solve", "numpy", 5, args.min_run_time),
                 "np.linalg.solve(a, b)", {"np": np, "a": sa, "b": sb}))
    rows.append(("torch solve 5x5 float64", _engine("solve", "torch-cpu", 5, args.min_run_time),
                 "torch.linalg.solve(a, b)",
                 {"torch": torch, "a": torch.from_numpy(sa), "b": torch.from_numpy(sb)}))

    print(f"threads={args.threads}, rounds={args.rounds}, min_run_time={args.min_run_time} s "
          f"per tool per round; torch {torch.__version__}, numpy {np.__version__}")
    header = (f"{'operation':30s} {'statistic':>16s} {'engine':>10s} {'torch Timer':>12s} "
              f"{'timeit':>10s} {'eng/torch':>10s} {'eng/timeit':>10s}")
    print(header)
    print("-" * len(header))
    worst = {"median": 0.0, "min": 0.0}
    for label, engine, stmt, env in rows:
        tools = {
            "engine": engine,
            "torch": _torch_timer(stmt, env, args.threads, args.min_run_time),
            "timeit": _timeit(stmt, env, args.min_run_time),
        }
        got: dict[str, list[float]] = {k: [] for k in tools}
        order = list(tools)
        for r in range(args.rounds):
            for k in order[r % 3:] + order[: r % 3]:  # rotate: no tool always runs first
                got[k].append(tools[k]())
        if args.verbose:
            print("   ", {k: [f"{x * 1e6:.2f}" for x in v] for k, v in got.items()})
        for stat, agg in (("median", statistics.median), ("min", min)):
            med = {k: agg(v) for k, v in got.items()}
            r1 = med["engine"] / med["torch"]
            r2 = med["engine"] / med["timeit"]
            worst[stat] = max(worst[stat], abs(r1 - 1), abs(r2 - 1))
            name = label if stat == "median" else ""
            print(f"{name:30s} {stat + ' of rounds':>16s} {med['engine'] * 1e6:8.2f}µs "
                  f"{med['torch'] * 1e6:10.2f}µs {med['timeit'] * 1e6:8.2f}µs "
                  f"{r1:10.3f} {r2:10.3f}")
    for stat, w in worst.items():
        print(f"largest deviation from 1 ({stat} of rounds): {w:.1%} "
              f"({'within' if w <= 0.10 else 'OUTSIDE'} the 10 % agreement expected)")

if __name__ == "__main__":
    main()
