"""xlinalg on a dask.distributed cluster against plain Dask, side by side (issue 18).

Usage::

    python benchmarks/dask_cluster.py                 # everything (~5-10 min on a loaded machine)
    python benchmarks/dask_cluster.py --quick         # 1e5 systems, 2 rounds, a 192 MiB matrix
    python benchmarks/dask_cluster.py --out benchmarks/results/dask-cluster.json

What it runs, in one process, on LocalClusters of worker processes on 127.0.0.1:

1. **solve**, 1e6 5x5 float64 systems (b: 5x1) in 16 and 256 chunks, on 2 workers
   (1 thread each). The inputs are generated on the workers and persisted; each
   timed call builds the graph and persists the result on the workers (nothing
   comes back to the client). xlinalg's ``solve`` (errors="raise", "nan"),
   ``method="unrolled"``, against plain Dask: ``da.map_blocks(np.linalg.solve)``,
   and for the unrolled solver also ``da.map_blocks`` of the same per-block NumPy
   schedule (``solve_unrolled``), so the kernel's own cost and Dask's overhead read
   apart. Samples are interleaved (each round runs every variant, in a rotated
   order); the ratio is the median of per-round ratios. Task counts are
   ``len(x.__dask_graph__())`` (the persisted inputs counted in both).
2. **scaling**: solve (errors="raise"), ``method="unrolled"`` and plain Dask on a
   1-worker and a 2-worker cluster, both up at once, samples interleaved; same batch.
3. **stream**: solve (errors="raise") and plain Dask on batches of 0.25x, 1x and 3x
   one worker's memory limit (2 workers of 256 MiB), generated inside the graph and
   reduced to one number (``x.sum()``), so the batch streams through the workers;
   time per million systems shows whether the cost stays linear past the memory.
4. **out of core**: tall-and-skinny ``qr`` of a float64 matrix 3x one worker's
   memory limit (workers of 256 MiB, a 768 MiB matrix generated on the workers),
   xlinalg against ``da.linalg.qr``; R is checked against the Gram matrix.

The machine is shared: read the ratios of one run, not absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

import numpy as np

N_SYSTEMS = 1_000_000
CHUNKINGS = (16, 256)


def _cluster(workers: int, memory: str | int) -> Any:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0", memory_limit=memory, timeout=120,
    )
    return cluster, Client(cluster, timeout=120)


def _close(cluster: Any, client: Any) -> None:
    client.close(timeout=60)
    cluster.close(timeout=60)


def _inputs(client: Any, n: int, nchunks: int, seed: int = 0) -> tuple[Any, Any]:
    import dask.array as da
    from distributed import wait

    chunk = -(-n // nchunks)
    rs = da.random.RandomState(seed)
    a = rs.random_sample((n, 5, 5), chunks=(chunk, 5, 5)) + 5 * da.eye(5)
    b = rs.random_sample((n, 5, 1), chunks=(chunk, 5, 1))
    a, b = client.persist([a, b])
    wait([a, b], timeout=300)
    return a, b


def _plain_unrolled_block(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # the NumPy unrolled schedule alone (NaN for zero pivots, no check): the kernel
    # xlinalg's method="unrolled" runs per block
    from xlinalg._unrolled import solve_unrolled

    return solve_unrolled(a, b, errors="nan", compile=False)


def _variants() -> dict[str, Any]:
    import dask.array as da

    import xlinalg as xl

    return {
        "plain": lambda a, b: da.map_blocks(np.linalg.solve, a, b, dtype=a.dtype),
        "plain-unrolled": lambda a, b: da.map_blocks(_plain_unrolled_block, a, b, dtype=a.dtype),
        "raise": lambda a, b: xl.solve(a, b),
        "nan": lambda a, b: xl.solve(a, b, errors="nan"),
        "unrolled": lambda a, b: xl.solve(a, b, method="unrolled"),
    }


def _time_once(client: Any, make: Any, a: Any, b: Any) -> tuple[float, float, int]:
    """(seconds to build the graph, seconds to build and run it, tasks).

    The result stays on the workers; then it is released, and the call returns
    only once the scheduler has forgotten its keys (the next call of the same
    graph has the same keys and would otherwise find them computed)."""
    from distributed import futures_of, wait

    t0 = time.perf_counter()
    x = make(a, b)
    built = time.perf_counter() - t0
    y = client.persist(x)
    wait(y, timeout=600)
    total = time.perf_counter() - t0
    futures = futures_of(y)
    failed = [f for f in futures if f.status != "finished"]
    if failed:
        failed[0].result()  # raises the worker's exception
    keys = [f.key for f in futures]
    tasks = len(x.__dask_graph__())
    del y, futures, failed
    deadline = time.monotonic() + 60
    while client.run_on_scheduler(_held, keys):
        if time.monotonic() > deadline:
            raise TimeoutError("the scheduler kept a result for 60 s after its release")
        time.sleep(0.01)
    return built, total, tasks


def _held(keys: list[Any], dask_scheduler: Any = None) -> bool:
    return any(k in dask_scheduler.tasks for k in keys)


def _solve_side_by_side(client: Any, n: int, rounds: int) -> list[dict[str, Any]]:
    variants = _variants()
    names = list(variants)
    rows = []
    for nchunks in CHUNKINGS:
        a, b = _inputs(client, n, nchunks)
        # warm: workers import xlinalg, NumPy's unrolled schedule is generated
        for name in names:
            _time_once(client, variants[name], a, b)
        samples: dict[str, list[float]] = {k: [] for k in names}
        tasks: dict[str, int] = {}
        build: dict[str, list[float]] = {k: [] for k in names}
        for r in range(rounds):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                bt, t, k = _time_once(client, variants[name], a, b)
                samples[name].append(t)
                build[name].append(bt)
                tasks[name] = k
        for name in ("raise", "nan", "unrolled", "plain-unrolled"):
            base = "plain-unrolled" if name == "unrolled" else "plain"
            for ref in dict.fromkeys((base, "plain")):
                ratios = [x / y for x, y in zip(samples[name], samples[ref])]
                rows.append({
                    "systems": n, "chunks": nchunks, "variant": name, "against": ref,
                    "time_ratio": statistics.median(ratios),
                    "median_s": statistics.median(samples[name]),
                    "against_median_s": statistics.median(samples[ref]),
                    "build_s": statistics.median(build[name]),
                    "tasks": tasks[name], "against_tasks": tasks[ref],
                    "task_ratio": tasks[name] / tasks[ref],
                })
            if name == "plain-unrolled":
                rows[-1]["note"] = "the unrolled NumPy schedule against LAPACK, both plain Dask"
        del a, b
    return rows


def _scaling(n: int, rounds: int) -> list[dict[str, Any]]:
    """solve and method="unrolled" on a 1-worker and a 2-worker cluster, both up at
    once so that the samples interleave (each round runs every (workers, call) pair,
    in a rotated order); speed-up: the median of per-round ratios."""
    import xlinalg as xl

    calls = {"solve": lambda a, b: xl.solve(a, b),
             "unrolled": lambda a, b: xl.solve(a, b, method="unrolled"),
             "plain": lambda a, b: _variants()["plain"](a, b)}
    clusters = {w: _cluster(w, "2GiB") for w in (1, 2)}
    try:
        inputs = {w: _inputs(client, n, 16) for w, (_, client) in clusters.items()}
        pairs = [(w, c) for w in clusters for c in calls]
        for w, c in pairs:  # warm
            _time_once(clusters[w][1], calls[c], *inputs[w])
        ts: dict[tuple[int, str], list[float]] = {p: [] for p in pairs}
        for r in range(rounds):
            for w, c in pairs[r % len(pairs):] + pairs[: r % len(pairs)]:
                ts[(w, c)].append(_time_once(clusters[w][1], calls[c], *inputs[w])[1])
    finally:
        for cluster, client in clusters.values():
            _close(cluster, client)
    out = []
    for c in calls:
        for w in clusters:
            row = {"workers": w, "call": c, "systems": n, "chunks": 16, "median_s": statistics.median(ts[(w, c)])}
            if w == 2:
                row["speedup_vs_1"] = statistics.median(x / y for x, y in zip(ts[(1, c)], ts[(2, c)]))
            out.append(row)
    return out


STREAM_BYTES_PER_SYSTEM = 8 * (25 + 5 + 5)  # a, b and x of one 5x5 float64 system


def _stream(memory_mib: int, rounds: int, fractions: tuple[float, ...]) -> list[dict[str, Any]]:
    """solve on batches of `fractions` x one worker's memory limit, streamed: the
    inputs are generated in the graph and the result reduced to one number, so no
    worker ever holds the batch. Each round times xlinalg and plain Dask in turn
    (order alternating); the two sums must agree."""
    import dask.array as da

    import xlinalg as xl

    cluster, client = _cluster(2, f"{memory_mib}MiB")
    out = []
    try:
        small = da.random.RandomState(12).random_sample((1_000, 5, 5), chunks=(500, 5, 5)) + 5 * da.eye(5)
        client.compute([xl.solve(small, small[..., :1]).sum(),  # warm: workers import xlinalg
                        da.map_blocks(np.linalg.solve, small, small[..., :1], dtype=small.dtype).sum()],
                       sync=True)
        for frac in fractions:
            n = int(frac * memory_mib * 2**20 / STREAM_BYTES_PER_SYSTEM)
            chunk = min(n, 100_000)
            rs = da.random.RandomState(11)
            a = rs.random_sample((n, 5, 5), chunks=(chunk, 5, 5)) + 5 * da.eye(5)
            b = rs.random_sample((n, 5, 1), chunks=(chunk, 5, 1))
            makes = {"xlinalg": lambda a=a, b=b: xl.solve(a, b).sum(),
                     "plain": lambda a=a, b=b: da.map_blocks(np.linalg.solve, a, b, dtype=a.dtype).sum()}
            times: dict[str, list[float]] = {"xlinalg": [], "plain": []}
            sums: dict[str, float] = {}
            for r in range(rounds):
                for name in (("xlinalg", "plain") if r % 2 == 0 else ("plain", "xlinalg")):
                    t0 = time.perf_counter()
                    sums[name] = float(client.compute(makes[name]()).result(timeout=900))
                    times[name].append(time.perf_counter() - t0)
            out.append({
                "systems": n, "chunks": -(-n // chunk), "batch_mib": round(n * STREAM_BYTES_PER_SYSTEM / 2**20),
                "times_worker_memory": frac, "worker_memory_limit_mib": memory_mib, "workers": 2,
                "xlinalg_s": statistics.median(times["xlinalg"]), "plain_s": statistics.median(times["plain"]),
                "xlinalg_s_per_1e6": statistics.median(times["xlinalg"]) * 1e6 / n,
                "plain_s_per_1e6": statistics.median(times["plain"]) * 1e6 / n,
                "time_ratio": statistics.median(x / y for x, y in zip(times["xlinalg"], times["plain"])),
                "sums_agree": bool(np.isclose(sums["xlinalg"], sums["plain"], rtol=1e-9)),
            })
    finally:
        _close(cluster, client)
    return out


def _tall_qr(matrix_mib: int, memory_mib: int, check: bool) -> dict[str, Any]:
    import dask.array as da

    import xlinalg as xl

    cols = 20
    rows = matrix_mib * 2**20 // (8 * cols)
    cluster, client = _cluster(2, f"{memory_mib}MiB")
    res: dict[str, Any] = {"rows": rows, "cols": cols, "matrix_mib": matrix_mib,
                           "worker_memory_limit_mib": memory_mib, "workers": 2,
                           "chunk_rows": 50_000}
    try:
        A = da.random.RandomState(7).standard_normal((rows, cols), chunks=(50_000, cols))
        small = da.random.RandomState(8).standard_normal((4_000, cols), chunks=(1_000, cols))
        client.compute([xl.qr(small).R, da.linalg.qr(small)[1]], sync=True)  # warm the workers
        makes = {"xlinalg": lambda: xl.qr(A).R, "plain": lambda: da.linalg.qr(A)[1]}
        times: dict[str, list[float]] = {"xlinalg": [], "plain": []}
        for order in (("xlinalg", "plain"), ("plain", "xlinalg")):  # interleaved, both orders
            for name in order:
                t0 = time.perf_counter()
                R = client.compute(makes[name]()).result(timeout=900)
                times[name].append(time.perf_counter() - t0)
                res[f"{name}_finished"] = bool(np.isfinite(R).all() and np.allclose(R, np.triu(R)))
                if name == "xlinalg" and check and "R_matches_gram" not in res:
                    G = client.compute(A.T @ A).result(timeout=900)
                    res["R_matches_gram"] = bool(np.allclose(R.T @ R, G, rtol=1e-8))
        res["xlinalg_s"] = statistics.median(times["xlinalg"])
        res["plain_s"] = statistics.median(times["plain"])
        res["time_ratio"] = statistics.median(x / y for x, y in zip(times["xlinalg"], times["plain"]))
    finally:
        _close(cluster, client)
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1e5 systems, 2 rounds, a 192 MiB matrix")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5; quick: 2)")
    p.add_argument("--no-check", action="store_true", help="skip the Gram check of R (a second pass)")
    p.add_argument("--parts", default="solve,scaling,stream,qr",
                   help="which parts to run, comma-separated (default: solve,scaling,stream,qr)")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args(argv)
    n = 100_000 if args.quick else N_SYSTEMS
    rounds = args.rounds or (2 if args.quick else 5)
    if rounds < 1:
        p.error("--rounds must be at least 1")
    parts = set(args.parts.split(","))
    if not parts or not parts <= {"solve", "scaling", "stream", "qr"}:
        p.error(f"--parts: a comma-separated subset of solve,scaling,stream,qr, got {args.parts!r}")
    import dask
    import distributed

    import xlinalg

    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": os.getloadavg()},
        "versions": {"xlinalg": xlinalg.__version__, "dask": dask.__version__,
                     "distributed": distributed.__version__, "numpy": np.__version__},
        "cluster": "LocalCluster on 127.0.0.1, worker processes of 1 thread",
    }
    if "solve" in parts:
        print(f"solve: {n:,} 5x5 systems on 2 workers (2 GiB each), {rounds} interleaved rounds",
              flush=True)
        cluster, client = _cluster(2, "2GiB")
        try:
            result["solve"] = _solve_side_by_side(client, n, rounds)
        finally:
            _close(cluster, client)
        print(f"{'chunks':>6} {'variant':>15} {'against':>15} {'time ratio':>10} {'tasks':>12} "
              f"{'task ratio':>10}")
        for r in result["solve"]:
            print(f"{r['chunks']:>6} {r['variant']:>15} {r['against']:>15} {r['time_ratio']:>10.2f} "
                  f"{r['tasks']:>5}/{r['against_tasks']:<6} {r['task_ratio']:>10.2f}")
    if "scaling" in parts:
        print("scaling: solve, method='unrolled' and plain Dask on 1 and 2 workers", flush=True)
        result["scaling"] = _scaling(n, rounds)
        for r in result["scaling"]:
            print(f"  {r['call']:>8}, {r['workers']} worker(s): {r['median_s']:.3f} s"
                  + (f"  (2 workers / 1 worker speed-up {r['speedup_vs_1']:.2f}x)" if "speedup_vs_1" in r else ""))
    if "stream" in parts:
        fractions = (0.25, 1.0) if args.quick else (0.25, 1.0, 3.0)
        print(f"stream: solve on batches of {', '.join(f'{f:g}x' for f in fractions)} a worker's "
              "256 MiB, 2 workers", flush=True)
        result["stream"] = _stream(256, min(rounds, 3), fractions)
        for r in result["stream"]:
            print(f"  {r['systems']:>10,} systems ({r['batch_mib']} MiB, {r['times_worker_memory']:g}x a worker): "
                  f"xlinalg {r['xlinalg_s']:.2f} s ({r['xlinalg_s_per_1e6']:.2f} s per 1e6), plain "
                  f"{r['plain_s']:.2f} s ({r['plain_s_per_1e6']:.2f}), ratio {r['time_ratio']:.2f}, "
                  f"sums agree: {r['sums_agree']}")
    if "qr" in parts:
        mib, mem = (192, 256) if args.quick else (768, 256)
        print(f"tall-skinny qr: a {mib} MiB matrix, workers of {mem} MiB", flush=True)
        result["tall_qr"] = q = _tall_qr(mib, mem, not args.no_check)
        print(f"  xlinalg {q['xlinalg_s']:.1f} s (finished: {q['xlinalg_finished']}), "
              f"plain da.linalg.qr {q['plain_s']:.1f} s, ratio {q['time_ratio']:.2f}"
              + (f", R^T R == A^T A: {q['R_matches_gram']}" if "R_matches_gram" in q else ""))
    result["machine"]["load_average_after"] = os.getloadavg()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
