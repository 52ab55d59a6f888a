"""The unrolled small-n solver against each backend's native batched solve (issue 7).

Usage::

    python benchmarks/unrolled.py                  # the targets: ratios in one run (~2 min)
    python benchmarks/unrolled.py --all --out benchmarks/results/unrolled-cpu.json
                                                   # + layouts, crossover in n, compile costs (~10 min)
    python benchmarks/unrolled.py --tune --only numpy --out benchmarks/results/unrolled-tune.json.xz
                                                   # the numba kernel's crossovers, one part per
                                                   # backend (--only, --dtypes), merged into --out
    python benchmarks/unrolled.py --tune-first-calls --out benchmarks/results/unrolled-tune.json.xz
                                                   # its first calls, cold and warm disk cache
    python benchmarks/unrolled.py --derive benchmarks/results/unrolled-tune.json.xz \
        benchmarks/results/unrolled-cpu.json --out src/xlinalg/_unrolled_selection.json
                                                   # the selection table xlinalg ships, derived
                                                   # from results files (package data, JSON)
    python benchmarks/unrolled.py --wall           # issue 39's done-means: default calls against
                                                   # native and the streaming limit, one run
    python benchmarks/unrolled.py --gpu --out benchmarks/results/unrolled-gpu.json
                                                   # torch-cuda, jax-gpu, cupy: 1e6 systems, GB/s

Every row times the native call and the unrolled call *interleaved* (A, B, A, B, ...)
with calibrated inner loops closed by the backend's fence, and reports the medians,
their ratio (native / unrolled: > 1 means the unrolled solver is faster) and the
IQRs. The first call of each (compile included) is timed apart. Every unrolled
result is checked against ``numpy.linalg.solve`` in float64 before it is timed.
This machine is shared: read ratios from one run, not absolute times across runs.

``--wall`` (issue 39) pauses 0.1 s before every timed block, for every call alike
(:func:`settled`): a library's threads keep spinning after its call returns (XLA's
for ~40 ms after ``jnp.linalg.solve`` on 1e6 systems, OpenMP's for ~10 ms after
numba's kernel), and on a 2-core machine a block timed at once would be charged for
them. Each default call is so measured as a program that makes it in a loop sees
it; the default call right after the library's own native call, no pause, is kept
as an extra figure (``default_after_native_s``, printed as "right after native").
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_ENABLE_X64", "1")

import contextlib

import numpy as np

from xlinalg import _unrolled as U
from xlinalg.backends import _jax as jax_backend
from xlinalg.bench._outfile import write_output
from xlinalg.bench._resultsfile import _decompressed, _read_bounded
from xlinalg.bench._timer import calibrate, first_call, interleaved, time_block
from xlinalg.study import _tune as T

N_HEADLINE = 5


# ---------------------------------------------------------------------- timing
# (the project's timer, xlinalg.bench._timer: `xlinalg bench --tune` measures with it
# too; the fresh-process first calls below time one call with perf_counter, without
# importing the harness into the process they time)
_summary = T.summary


def pair(native: Callable[[], Any], unrolled: Callable[[], Any], *, repeats: int = 7, min_time: float = 0.04) -> dict[str, float]:
    """Interleaved medians of two fenced callables (both already warm)."""
    st = interleaved({"native": native, "unrolled": unrolled}, repeats, min_time)
    (mn, qn), (mu, qu) = _summary(st["native"]), _summary(st["unrolled"])
    return {"native_s": mn, "unrolled_s": mu, "ratio": mn / mu, "native_iqr_rel": qn, "unrolled_iqr_rel": qu}


# ---------------------------------------------------------------------- backends
_data = T.data  # (randn + 2 sqrt(n) I, one column: the package's, as --tune measures)
_check = T.check  # GEPP's backward-error bound: a wrong answer is reported as wrong, not fast


class Case:
    """Native and unrolled callables for one backend, with the fence."""

    backend = ""

    def __init__(self, n: int, batch: int, dtype: str, layout: str | None = None, seed: int = 0) -> None:
        self.n, self.batch, self.dtype, self.layout = n, batch, dtype, layout
        self.a_np, self.b_np = _data(n, batch, dtype, seed)
        self.a, self.b = self.put(self.a_np), self.put(self.b_np)

    def put(self, x: np.ndarray) -> Any:
        return x

    def fence(self, x: Any) -> Any:
        return x

    def native(self) -> Any:
        raise NotImplementedError

    def unrolled(self) -> Any:
        return self.fence(U.solve_unrolled(self.a, self.b, layout=self.layout, **self.kw()))

    def kw(self) -> dict[str, Any]:
        return {}

    def host(self, x: Any) -> np.ndarray:
        return np.asarray(x)


class NumPyCase(Case):
    backend = "numpy"

    def native(self) -> Any:
        return np.linalg.solve(self.a, self.b)


class JaxCase(Case):
    backend = "jax-cpu"

    def put(self, x: np.ndarray) -> Any:
        import jax

        return jax.device_put(x, jax.devices(self.backend.split("-")[1])[0])

    def fence(self, x: Any) -> Any:
        return x.block_until_ready()

    def native(self) -> Any:
        import jax.numpy as jnp

        return jnp.linalg.solve(self.a, self.b).block_until_ready()


class JaxGpuCase(JaxCase):
    backend = "jax-gpu"


class TorchCase(Case):
    backend = "torch-cpu"
    device = "cpu"

    def put(self, x: np.ndarray) -> Any:
        import torch

        return torch.from_numpy(x).to(self.device)

    def fence(self, x: Any) -> Any:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
        return x

    def native(self) -> Any:
        import torch

        return self.fence(torch.linalg.solve(self.a, self.b))

    def host(self, x: Any) -> np.ndarray:
        return x.cpu().numpy()


class TorchCudaCase(TorchCase):
    backend = "torch-cuda"
    device = "cuda"


class CuPyCase(Case):
    backend = "cupy"

    def put(self, x: np.ndarray) -> Any:
        import cupy

        return cupy.asarray(x)

    def fence(self, x: Any) -> Any:
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        return x

    def native(self) -> Any:
        import cupy

        return self.fence(cupy.linalg.solve(self.a, self.b))

    def host(self, x: Any) -> np.ndarray:
        return x.get()


CASES = {c.backend: c for c in (NumPyCase, JaxCase, JaxGpuCase, TorchCase, TorchCudaCase, CuPyCase)}


def measure(backend: str, n: int, batch: int, dtype: str = "float64", layout: str | None = None, repeats: int = 7,
            min_time: float = 0.04) -> dict[str, Any]:
    if backend.startswith("jax"):
        import jax

        jax.config.update("jax_enable_x64", True)
    case = CASES[backend](n, batch, dtype, layout)
    t_native_first = first_call(case.native)
    t_unrolled_first = first_call(case.unrolled)
    _check(case.host(case.unrolled()), case.a_np, case.b_np)
    row: dict[str, Any] = {
        "backend": backend,
        "n": n,
        "batch": batch,
        "dtype": dtype,
        "layout": layout or U.DEFAULT_LAYOUT[backend],
        "native_first_s": t_native_first,
        "unrolled_first_s": t_unrolled_first,
    }
    row.update(pair(case.native, case.unrolled, repeats=repeats, min_time=min_time))
    row["bytes"] = int(case.a_np.nbytes + 2 * case.b_np.nbytes)
    row["unrolled_GBps"] = row["bytes"] / row["unrolled_s"] / 1e9
    return row


def _show(row: dict[str, Any], target: float | None = None) -> None:
    tgt = "" if target is None else f"  target >= {target:g}x: {'met' if row['ratio'] >= target else 'NOT met'}"
    print(
        f"  {row['backend']:10s} n={row['n']:<2d} {row['batch']:>8d} x {row['dtype']:7s} {row['layout']:11s}"
        f" native {row['native_s'] * 1e3:9.3f} ms  unrolled {row['unrolled_s'] * 1e3:9.3f} ms"
        f"  ratio {row['ratio']:5.2f}x  (IQR {row['native_iqr_rel']:.0%}/{row['unrolled_iqr_rel']:.0%};"
        f" first calls {row['native_first_s']:.2f}/{row['unrolled_first_s']:.2f} s){tgt}",
        flush=True,
    )


# ---------------------------------------------------------------------- sections
def headline() -> list[dict[str, Any]]:
    print("Targets (issue 7): n = 5, float64, ratio = native / unrolled")
    rows = []
    for backend, batch, target in (
        ("jax-cpu", 1000, 1.0),
        ("jax-cpu", 100_000, 4.0),
        ("torch-cpu", 100_000, 2.5),
        ("numpy", 100_000, None),
    ):
        row = measure(backend, N_HEADLINE, batch)
        row["section"] = "headline"
        row["target"] = target
        _show(row, target)
        rows.append(row)
    return rows


def errors_cost(backend: str, batch: int, speedup_target: float | None, raise_target: float,
                repeats: int = 41) -> dict[str, Any]:
    """What users meet (issue 21): ``xl.solve(a, b)`` with its defaults (errors="raise",
    method="auto") against the native batched solve and against ``errors="nan"``.

    The ratios are medians of the per-round ratios (the three calls of a round ran
    back to back, so a burst of load on this shared machine cancels out of them);
    the medians of each call's own times are recorded too.
    """
    import xlinalg as xl

    case = CASES[backend](N_HEADLINE, batch, "float64")
    fns = {
        "native": case.native,
        "default": lambda: case.fence(xl.solve(case.a, case.b)),
        "nan": lambda: case.fence(xl.solve(case.a, case.b, errors="nan")),
    }
    firsts = {k: first_call(f) for k, f in fns.items()}  # compiles, and method="auto" counts calls
    _check(case.host(fns["default"]()), case.a_np, case.b_np)
    st = interleaved(fns, repeats, 0.04)
    row: dict[str, Any] = {"section": "errors", "backend": backend, "n": N_HEADLINE, "batch": batch,
                           "dtype": "float64", "first_s": firsts}
    for k, v in st.items():
        row[f"{k}_s"], row[f"{k}_iqr_rel"] = _summary(v)
    row["speedup"] = statistics.median(n / d for n, d in zip(st["native"], st["default"]))
    row["raise_over_nan"] = statistics.median(d / n for d, n in zip(st["default"], st["nan"]))
    row["speedup_target"], row["raise_target"] = speedup_target, raise_target
    verdict = []
    if speedup_target is not None:
        verdict.append(f"native/default {row['speedup']:.2f}x (target >= {speedup_target:g}x: "
                       f"{'met' if row['speedup'] >= speedup_target else 'NOT met'})")
    verdict.append(f"default/nan {row['raise_over_nan']:.3f} (target <= {raise_target:g}: "
                   f"{'met' if row['raise_over_nan'] <= raise_target else 'NOT met'})")
    print(f"  {backend:10s} n={N_HEADLINE} {batch:>8d} x float64  native {row['native_s'] * 1e3:9.3f} ms"
          f"  xl.solve {row['default_s'] * 1e3:9.3f} ms  errors=\"nan\" {row['nan_s'] * 1e3:9.3f} ms"
          f"  (IQR {row['native_iqr_rel']:.0%}/{row['default_iqr_rel']:.0%}/{row['nan_iqr_rel']:.0%})  "
          + "; ".join(verdict), flush=True)
    return row


def default_call() -> list[dict[str, Any]]:
    print("The default call (issue 21): xl.solve(a, b) against the native call and errors=\"nan\"")
    return [errors_cost("jax-cpu", 100_000, 4.0, 1.15)]


def layouts() -> list[dict[str, Any]]:
    print("Layouts (n = 5, 100000 systems, float64)")
    rows = []
    for backend in ("jax-cpu", "torch-cpu", "numpy"):
        for layout in U.LAYOUTS:
            row = measure(backend, N_HEADLINE, 100_000, layout=layout, repeats=5)
            row["section"] = "layout"
            _show(row)
            rows.append(row)
    return rows


def _measure_fresh(backend: str, n: int, batch: int, dtype: str) -> dict[str, Any]:
    """`measure` in a fresh process: NumPy's eager schedule allocates ~200 temporaries
    per call, and its speed depends on the allocator's state (a process that ran
    JAX and torch benchmarks first measured it 5x faster than a fresh one)."""
    out = subprocess.run(
        [sys.executable, __file__, "--row", backend, str(n), str(batch), dtype],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def crossover(only: set[str] | None = None) -> list[dict[str, Any]]:
    print("Crossover in n (ratio > 1: the unrolled solver wins)")
    rows = []
    plan = [
        ("jax-cpu", "float64", range(1, U.MAX_N + 1), (100, 1000, 10_000, 100_000)),
        ("jax-cpu", "float32", range(1, U.MAX_N + 1), (100, 1000, 10_000, 100_000)),
        ("torch-cpu", "float64", (1, 2, 3, 4, 5, 6, 8), (1000, 10_000, 100_000)),
        ("numpy", "float64", (1, 2, 3, 4, 5, 8), (1000, 10_000, 100_000)),
    ]
    for backend, dtype, ns, batches in plan:
        if only and backend not in only:
            continue
        for n in ns:
            for batch in batches:
                try:
                    if backend == "numpy":
                        row = _measure_fresh(backend, n, batch, dtype)
                    else:
                        row = measure(backend, n, batch, dtype, repeats=5)
                except Exception as exc:  # recorded, and the run goes on
                    row = {"backend": backend, "n": n, "batch": batch, "dtype": dtype, "error": repr(exc)[:300]}
                    print(f"  {backend} n={n} {batch} {dtype}: ERROR {row['error']}", flush=True)
                    continue
                row["section"] = "crossover"
                _show(row)
                rows.append(row)
    return rows


_TORCH_COLD = textwrap.dedent(
    """
    import json, time, numpy as np, torch
    from xlinalg._unrolled import solve_unrolled
    a = torch.from_numpy(np.random.default_rng(0).standard_normal((1000, {n}, {n})) + 3 * np.eye({n}))
    b = torch.ones(1000, {n}, 1, dtype=torch.float64)
    t0 = time.perf_counter(); solve_unrolled(a, b, compile=True); t1 = time.perf_counter()
    solve_unrolled(a, b, compile=True); t2 = time.perf_counter()
    print(json.dumps({{"first_call_s": t1 - t0, "second_call_s": t2 - t1}}))
    """
)


def compile_costs() -> list[dict[str, Any]]:
    """torch.compile in fresh processes: a cold on-disk cache, then the warm cache."""
    print("torch.compile cost, fresh processes (includes importing torch's compiler stack)")
    rows = []
    for n in (2, 5, 8):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
            for state in ("cold", "warm"):
                out = subprocess.run(
                    [sys.executable, "-c", _TORCH_COLD.format(n=n)], env=env, capture_output=True, text=True, check=True
                )
                r = json.loads(out.stdout.strip().splitlines()[-1])
                row = {"section": "compile", "backend": "torch-cpu", "n": n, "cache": state, **r}
                print(f"  torch-cpu n={n} {state} on-disk cache: first call {r['first_call_s']:.1f} s", flush=True)
                rows.append(row)
    return rows


def gpu(progress: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    """`progress(rows)` after each measured row: a run cut short by the device's time
    limit keeps what it measured."""
    print("GPU (n = 5, 1e6 systems): ratio and achieved bandwidth of the unrolled solver")
    rows: list[dict[str, Any]] = []
    from xlinalg import backends

    for backend in (b for b in backends.BACKEND_NAMES if backends.get_backend(b).gpu):
        reason = backends.get_backend(backend).unavailable_reason()
        if reason is not None:
            print(f"  {backend}: skipped ({reason})")
            continue
        rows.append(errors_cost(backend, 1_000_000, None, 1.1))  # issue 21: raise costs what nan costs
        progress(rows)
        peak = _copy_GBps(backend)
        print(f"  {backend}: measured elementwise bandwidth {peak:.0f} GB/s (read + write)")
        for dtype in ("float64", "float32"):
            for layout in U.LAYOUTS:
                row = measure(backend, N_HEADLINE, 1_000_000, dtype, layout=layout)
                row["section"] = "gpu"
                row["device"] = backends.get_backend(backend).bench.device_name()
                _show(row, 5.0)
                row["device_GBps"] = peak
                print(f"    {row['unrolled_GBps']:.1f} GB/s moved (a, b, x) on {row['device']},"
                      f" {row['unrolled_GBps'] / peak:.0%} of the measured {peak:.0f} GB/s")
                rows.append(row)
                progress(rows)
    return rows


CROSSOVER_BATCHES = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)


def _copy_GBps(backend: str) -> float:
    """The card's achievable bandwidth, measured: an elementwise x * 2 on 256 Mi float32
    (1 GiB read, 1 GiB written), fenced, best of five. The unrolled solver's GB/s is
    quoted against this rather than the data sheet's figure."""
    case = CASES[backend](1, 1, "float32")
    count = 1 << 28
    if backend == "cupy":
        import cupy

        x = cupy.ones(count, dtype=cupy.float32)
        op = lambda: case.fence(x * 2)  # noqa: E731
    elif backend == "jax-gpu":
        import jax
        import jax.numpy as jnp

        x = jax.device_put(jnp.ones(count, dtype=jnp.float32), jax.devices("gpu")[0])
        f = jax.jit(lambda v: v * 2)
        op = lambda: f(x).block_until_ready()  # noqa: E731
    else:
        import torch

        x = torch.ones(count, dtype=torch.float32, device="cuda")
        op = lambda: case.fence(x * 2)  # noqa: E731
    op()
    best = min(first_call(op) for _ in range(5))
    return 2 * 4 * count / best / 1e9


def gpu_crossover() -> list[dict[str, Any]]:
    """From how many 5x5 systems does the GPU beat the CPU? Per batch size, the GPU
    backend's native batched solve and its unrolled solve against the CPU's best
    batched solve (numpy, torch-cpu), all float64, all warm, medians of
    interleaved fenced blocks. The first calls (start-up, compilation) are recorded
    apart: they are what the question's loop of single solves pays on every shape."""
    from xlinalg import backends

    print("GPU against CPU, n = 5, float64: batched native and unrolled, by batch size")
    gpus = [b for b in backends.BACKEND_NAMES
            if backends.get_backend(b).gpu and backends.get_backend(b).unavailable_reason() is None]
    cpus = [b for b in ("numpy", "torch-cpu") if backends.get_backend(b).unavailable_reason() is None]
    rows: list[dict[str, Any]] = []
    if not gpus:
        print("  skipped: no GPU backend is available here")
        return rows
    for batch in CROSSOVER_BATCHES:
        cpu_best = None
        for backend in cpus:
            case = CASES[backend](N_HEADLINE, batch, "float64")
            case.native()
            t = pair(case.native, case.native, repeats=5, min_time=0.02)["native_s"]
            rows.append({"section": "crossover-gpu", "backend": backend, "batch": batch, "native_s": t})
            cpu_best = t if cpu_best is None else min(cpu_best, t)
        for backend in gpus:
            row = measure(backend, N_HEADLINE, batch, "float64", repeats=5)
            row["section"] = "crossover-gpu"
            row["cpu_best_s"] = cpu_best
            row["gpu_best_s"] = min(row["native_s"], row["unrolled_s"])
            row["gpu_wins"] = cpu_best is not None and row["gpu_best_s"] < cpu_best
            rows.append(row)
            print(
                f"  {backend:10s} {batch:>8d} systems: native {row['native_s'] * 1e3:9.3f} ms, unrolled "
                f"{row['unrolled_s'] * 1e3:9.3f} ms, CPU best {cpu_best * 1e3 if cpu_best else float('nan'):9.3f} ms"
                f" -> {'GPU' if row['gpu_wins'] else 'CPU'} (first calls {row['native_first_s']:.3f}/"
                f"{row['unrolled_first_s']:.3f} s)",
                flush=True,
            )
    for backend in gpus:
        mine = sorted((r for r in rows if r["backend"] == backend), key=lambda r: r["batch"])
        wins = [r["gpu_wins"] for r in mine]
        cross = next((mine[i]["batch"] for i in range(len(mine)) if all(wins[i:])), None)
        rows.append({"section": "crossover-gpu-summary", "backend": backend, "crossover_batch": cross})
        print(f"  {backend}: the GPU wins from {cross if cross is not None else 'no measured'} systems on")
    return rows


# ---------------------------------------------------------------------- the memory wall (issue 39)
def stream_gbps(mib: int = 128, repeats: int = 10) -> float:
    """This machine's streaming limit, measured: ``np.add(a, b, out=c)`` on three
    arrays of `mib` MiB (two read, one written), best of `repeats`."""
    count = mib * 2**20 // 8
    a, b, c = np.ones(count), np.ones(count), np.empty(count)
    np.add(a, b, out=c)
    best = min(first_call(lambda: np.add(a, b, out=c)) for _ in range(repeats))
    return 3 * 8 * count / best / 1e9


#: wall(): at most this many default calls before timing, for method="auto" to amortize
#: loading the numba kernel from its disk cache (the calls are counted and reported)
MAX_WARM_CALLS = 200

#: wall(): seconds of pause before every timed block, whichever call it times. After
#: ``jnp.linalg.solve`` returns, XLA's CPU threads keep one core busy for ~40 ms at 1e6
#: 5x5 systems (~10 ms after numba's kernel: OpenMP's spin), and a block timed at once
#: shares the 2 cores with them: the previous call's threads would be charged to the
#: next one (docs/performance.md, issue 39, branch i39h). 0.1 s covers that twice over.
SETTLE_S = 0.1


def settled(fns: dict[str, Callable[[], Any]], repeats: int, min_time: float, pause: float = SETTLE_S,
            after: dict[str, tuple[Callable[[], Any], str]] | None = None) -> dict[str, list[float]]:
    """:func:`~xlinalg.bench._timer.interleaved` with `pause` seconds of sleep before
    every block (the same for every callable): each block measures its call as a
    program that makes it in a loop sees it, not the threads the previous block's
    library left spinning. The order rotates every round, as there.

    `after`: ``{name: (first, timed)}``: per round, once the rotation is done, one
    call of `first` and at once (no pause) a block of the callable `timed`, recorded
    as `name`: what `timed` costs right after `first` (the old interleaved figure)."""
    numbers = {k: calibrate(f, min_time) for k, f in fns.items()}
    keys = list(fns)
    samples: dict[str, list[float]] = {k: [] for k in [*keys, *(after or {})]}
    for r in range(repeats):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            time.sleep(pause)
            samples[k].append(time_block(fns[k], numbers[k]))
        for name, (first, timed) in (after or {}).items():
            time.sleep(pause)
            first()
            samples[name].append(time_block(fns[timed], numbers[timed]))
    return samples


def wall(backend: str, n: int, batch: int, dtype: str, k: int = 1) -> list[dict[str, Any]]:
    """The default call ``xl.solve(a, b)``, ``xl.solve(..., method="native")`` and the
    native batched solve for one cell, with the bytes they must move (a, b read; x
    written), the default call's first call and the number of default calls before it
    ran the numba kernel (``method="auto"`` amortizes loading it: docs/unrolled.md).

    Timed by :func:`settled`: a pause of :data:`SETTLE_S` before every block, so that
    no call is charged for the threads of the call before it (JAX's own solve leaves
    XLA's threads spinning for tens of ms); ``default_after_native_s`` is the default
    call timed right after one native call of the same library, no pause (what the
    earlier, purely interleaved timing measured: a program that calls its library's
    own solve just before pays it)."""
    import xlinalg as xl
    from xlinalg._kernels import _numba

    case = CASES[backend](n, batch, dtype)
    if k != 1:
        case.b_np = np.repeat(case.b_np, k, axis=-1)
        case.b = case.put(case.b_np)
    default = lambda: case.fence(xl.solve(case.a, case.b))  # noqa: E731
    xl_native = lambda: case.fence(xl.solve(case.a, case.b, method="native"))  # noqa: E731
    first = first_call(default)
    calls = 1
    while not _numba.is_compiled(n, dtype) and calls < MAX_WARM_CALLS:
        default()
        calls += 1
    _check(case.host(default()), case.a_np, case.b_np)
    row = {"section": "wall", "backend": backend, "n": n, "batch": batch, "dtype": dtype, "k": k,
           "bytes": int(case.a_np.nbytes + 2 * case.b_np.nbytes), "default_first_s": first,
           "kernel_after_calls": calls if _numba.is_compiled(n, dtype) else None, "settle_s": SETTLE_S}
    st = settled({"native": case.native, "xl_native": xl_native, "default": default}, 5, 0.03,
                 after={"default_after_native": (case.native, "default")})
    for key, v in st.items():
        row[f"{key}_s"], row[f"{key}_iqr_rel"] = _summary(v)
    # ratios of the rounds (the calls of a round ran close together: a burst of load cancels)
    row["ratio"] = statistics.median(a / d for a, d in zip(st["native"], st["default"]))
    row["ratio_xl_native"] = statistics.median(a / d for a, d in zip(st["xl_native"], st["default"]))
    return [row]


def wall_section(cells: list[tuple[str, int, int, str, int]]) -> list[dict[str, Any]]:
    print("The memory wall (issue 39): xl.solve(a, b) against the native batched solve and the streaming limit"
          f" (a pause of {SETTLE_S:g} s before every timed block)")
    rows = []
    gbps = stream_gbps()
    print(f"  streaming limit: np.add(a, b, out=c) on 128 MiB arrays, best of 10: {gbps:.1f} GB/s", flush=True)
    rows.append({"section": "stream", "GBps": gbps})
    for backend, n, batch, dtype, k in cells:
        try:
            (row,) = wall(backend, n, batch, dtype, k)
        except Exception as exc:  # recorded, and the run goes on
            print(f"  {backend} n={n} {batch} {dtype} k={k}: ERROR {exc!r:.200}", flush=True)
            rows.append({"section": "wall", "backend": backend, "n": n, "batch": batch, "dtype": dtype,
                         "k": k, "error": repr(exc)[:300]})
            continue
        row["wall_s"] = row["bytes"] / (gbps * 1e9)
        row["x_wall"] = row["default_s"] / row["wall_s"]
        row["bandwidth_fraction"] = row["wall_s"] / row["default_s"]
        after = row["kernel_after_calls"]
        row["x_wall_after_native"] = row["default_after_native_s"] / row["wall_s"]
        print(f"  {backend:10s} n={n} {batch:>8d} x {dtype:7s} k={k}  native {row['native_s'] * 1e3:8.2f} ms"
              f"  xl native {row['xl_native_s'] * 1e3:8.2f} ms  xl.solve {row['default_s'] * 1e3:8.2f} ms"
              f" ({row['default_after_native_s'] * 1e3:.2f} ms right after native: {row['x_wall_after_native']:.1f}x)"
              f"  ({row['ratio']:5.1f}x native, {row['ratio_xl_native']:5.1f}x xl native)"
              f"  wall {row['wall_s'] * 1e3:6.2f} ms: {row['x_wall']:4.1f}x the wall,"
              f" {row['bandwidth_fraction']:.0%} of memory bandwidth; first call {row['default_first_s']:.2f} s,"
              f" kernel {'from call ' + str(after) if after else 'never'}", flush=True)
        target = DONE_MEANS.get((backend, n, batch, dtype, k))
        if target is not None:
            over, wall_max = target
            met = row["ratio"] >= over and row["x_wall"] <= wall_max
            row["done_means"] = {"native_over_default_min": over, "x_wall_max": wall_max, "met": met}
            print(f"    done means: default >= {over:g}x native and <= {wall_max:g}x the wall:"
                  f" {'met' if met else 'NOT met'}", flush=True)
        rows.append(row)
    return rows


#: issue 39's done-means per cell: (default call at least this many times faster than
#: the library's batched solve, at most this many times the streaming limit)
DONE_MEANS = {("numpy", 5, 100_000, "float64", 1): (5.0, 2.5),
              **{(b, 5, batch, "float64", 1): (0.0, 2.5) for b in ("torch-cpu", "jax-cpu")
                 for batch in (100_000, 1_000_000)}}
HEADLINE_WALL = [(b, 5, 100_000, "float64", 1) for b in ("numpy", "torch-cpu", "jax-cpu")] + [
    (b, 5, 1_000_000, "float64", 1) for b in ("numpy", "torch-cpu", "jax-cpu")]
#: the default call's cells of the bar "<= 2.5x the wall" (issue 39's scope: float64 and
#: float32, one and several right-hand sides, at 1e5 and 1e6 systems, n = 5)
WALL_CELLS = HEADLINE_WALL + [
    (b, 5, batch, dt, k) for batch in (100_000, 1_000_000) for dt, k in (("float32", 1), ("float64", 4), ("float32", 4))
    for b in ("numpy", "torch-cpu", "jax-cpu")]
FULL_WALL = HEADLINE_WALL + [
    (b, n, batch, dt, k) for b in ("numpy", "torch-cpu", "jax-cpu") for n in (2, 8)
    for batch in (100_000, 1_000_000) for dt in ("float32", "float64") for k in (1, 4)]


_FIRST_CALL = textwrap.dedent(
    """
    import json, os, time
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import numpy as np
    t0 = time.perf_counter()
    lib = {lib!r}
    if lib == "torch":
        import torch
        conv = torch.from_numpy
    elif lib == "jax":
        import jax.numpy as jnp
        conv = jnp.asarray
    else:
        conv = np.asarray
    from xlinalg._unrolled import solve_unrolled
    rng = np.random.default_rng(0)
    a = conv(rng.standard_normal((1000, {n}, {n})) + 3 * np.eye({n}))
    b = conv(np.ones((1000, {n}, 1)))
    t1 = time.perf_counter(); solve_unrolled(a, b); t2 = time.perf_counter()
    print(json.dumps({{"first_call_s": t2 - t1, "import_s": t1 - t0}}))
    """
)


def first_calls() -> list[dict[str, Any]]:
    """The first unrolled call in fresh processes: numba's disk cache cold (a fresh
    NUMBA_CACHE_DIR), then warm (the same directory, a second process)."""
    print("First unrolled call in a fresh process (numba kernel; library import not included)")
    rows = []
    for lib in ("numpy", "torch", "jax"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            for state in ("cold", "warm"):
                out = subprocess.run([sys.executable, "-c", _FIRST_CALL.format(lib=lib, n=5)], env=env,
                                     capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append({"section": "first-call", "library": lib, "n": 5, "cache": state, **r})
                print(f"  {lib:6s} n=5 numba cache {state}: first call {r['first_call_s']:.2f} s", flush=True)
    return rows


def tune(backends: list[str], dtypes: list[str], ns: list[int] | None = None,
         batches: list[int] | None = None) -> list[dict[str, Any]]:
    """Crossover rows of the numba kernel: per (backend, dtype), n = 1..8 and 1 to
    1e6 systems (or the `ns` and `batches` given), the library's native solve,
    ``xl.solve(method="native")`` and ``xl.solve(method="unrolled")`` interleaved
    (:func:`xlinalg.study._tune.measure_cell`, what ``xlinalg bench --tune`` runs)."""
    ns = ns or list(range(1, U.MAX_N + 1))
    batches = batches or list(T.TUNE_BATCHES)
    print("Tuning method='auto': numba kernel against xl.solve(method='native') and the library, "
          f"n = {ns}, {batches} systems", flush=True)
    return T.tune(backends, dtypes, ns, batches,
                  progress=lambda s: print(s, flush=True), with_first_calls=False)["crossover"]


def tune_first_calls(ns: list[int]) -> list[dict[str, Any]]:
    """The first ``method="unrolled"`` call of each (n, dtype) in a fresh process:
    numba's disk cache cold (a fresh ``NUMBA_CACHE_DIR``: the compile), then warm
    (the same directory, later processes: the load). numba's import is in every
    row (each is a process's first kernel); the libraries' import is not."""
    print("First calls of the numba kernel, fresh processes, cold and warm disk cache", flush=True)
    cells = [(n, dt) for n in ns for dt in T.TUNE_DTYPES]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for state in ("cold", "warm"):
            got = T.first_calls(cells, cache=state, env=env)
            for r in got:
                print(f"  n={r['n']} {r['dtype']:7s} numba cache {state}: first call {r['first_call_s']:.2f} s", flush=True)
            rows += got
    return rows


def merge_crossover(old: list[dict[str, Any]], new: list[dict[str, Any]], partial: bool) -> list[dict[str, Any]]:
    """`old` crossover rows with `new` ones in their place: every old row of a
    (backend, dtype) that `new` measured, or (`partial`: a part of the grid,
    ``--tune-n``/``--tune-batches``) only those of the same (backend, dtype, n,
    systems), so that the rows not re-measured keep their older measurement."""
    def cell(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["backend"], r["dtype"], r["n"], r.get("total_batch", r["batch"]))

    redone = {cell(r) if partial else cell(r)[:2] for r in new}
    return [r for r in old if (cell(r) if partial else cell(r)[:2]) not in redone] + new


derive = T.derive


def load_json(path: str) -> Any:
    """A results file, xz- or gzip-compressed (recognised by its content) or plain JSON,
    read as ``xlinalg report`` reads one (bounded, a bomb refused)."""
    p = pathlib.Path(path)
    return json.loads(_decompressed(p, _read_bounded(p))[0])


def dump_json(path: str, obj: Any) -> None:
    """`obj` into `path`, xz-compressed where the name ends in ``.xz`` (the tuning
    results: a sixth of the size), as the report writes its files (aside, renamed)."""
    data = json.dumps(obj, indent=1).encode()
    write_output(path, lzma.compress(data, preset=9) if path.endswith(".xz") else data)


def derive_files(paths: list[str]) -> str:
    """The text of ``src/xlinalg/_unrolled_selection.json`` from several results
    files: the numba rules (``--tune`` files) first, since they apply where numba
    is installed, then the backends' own (they apply without numba)."""
    numba: dict[tuple[str, str], dict[str, Any]] = {}
    own: list[dict[str, Any]] = []
    for path in paths:
        for (backend, dtype), rule in derive(load_json(path)).items():
            if rule.get("compiler") == "numba":
                numba[(backend, dtype)] = rule
            else:
                own.append({"backend": backend, "dtype": dtype, **rule})
    cmd = f"python benchmarks/unrolled.py --derive {' '.join(paths)} --out src/xlinalg/_unrolled_selection.json"
    return T.selection_json(numba, " ".join(paths), own, command=cmd)


def _env() -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    for mod in ("jax", "torch"):
        with contextlib.suppress(ImportError):
            env[mod] = __import__(mod).__version__
    env["jax_cpu_chunk"] = jax_backend.UNROLLED_CPU_CHUNK
    env["jax_cpu_options"] = jax_backend.UNROLLED_CPU_OPTIONS
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all", action="store_true", help="also layouts, crossover in n and compile costs")
    p.add_argument("--gpu", action="store_true", help="the GPU backends (1e6 systems)")
    p.add_argument("--out", help="write the results (JSON) here")
    p.add_argument("--derive", metavar="RESULTS", nargs="+",
                   help="the selection table derived from results files (to --out FILE, else printed)")
    p.add_argument("--only", help="crossover, --tune: only these backends (comma-separated)")
    p.add_argument("--dtypes", default="float64,float32", help="--tune: these dtypes (comma-separated)")
    p.add_argument("--ns", default=",".join(str(n) for n in range(1, U.MAX_N + 1)),
                   help="--tune-first-calls: these n (comma-separated; merged into --out by n)")
    p.add_argument("--merge", action="store_true", help="crossover only, merged into the --out file")
    p.add_argument("--tune", action="store_true",
                   help="the numba kernel's crossovers (n = 1..8, 1 to 1e6 systems, against the library's "
                        "solve and xl.solve(method='native')), merged into the --out file by (backend, dtype)")
    p.add_argument("--tune-n", help="--tune: only these n (comma-separated); the rows measured replace "
                                    "those of the same (backend, dtype, n, systems) in --out")
    p.add_argument("--tune-batches", help="--tune: only these numbers of systems (comma-separated), as --tune-n")
    p.add_argument("--tune-first-calls", action="store_true",
                   help="the numba kernel's first calls per (n, dtype), cold and warm disk cache, into --out")
    p.add_argument("--wall", action="store_true", help="the memory-wall cells of issue 39 only")
    p.add_argument("--row", nargs=4, metavar=("BACKEND", "N", "BATCH", "DTYPE"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.row:
        backend, n, batch, dtype = args.row
        print(json.dumps(measure(backend, int(n), int(batch), dtype, repeats=5)))
        return 0
    if args.derive:
        text = derive_files(args.derive)
        if args.out:  # not a shell redirect: importing xlinalg reads the file being written
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {args.out}")
        else:
            sys.stdout.write(text)
        return 0
    if args.tune or args.tune_first_calls:  # parts of one results file, each run apart (quiet runs)
        if not args.out:
            p.error("--tune and --tune-first-calls need --out FILE")
        results_t: dict[str, Any] = (load_json(args.out) if os.path.exists(args.out) else
                                     {"crossover": [], "first-call": [], "parts": []})
        if args.tune:
            backends = args.only.split(",") if args.only else list(T.TUNE_BACKENDS)
            tune_ns = [int(v) for v in args.tune_n.split(",")] if args.tune_n else None
            batches = [int(v) for v in args.tune_batches.split(",")] if args.tune_batches else None
            new = tune(backends, args.dtypes.split(","), tune_ns, batches)
            results_t["crossover"] = merge_crossover(results_t["crossover"], new, bool(tune_ns or batches))
        if args.tune_first_calls:
            ns = [int(v) for v in args.ns.split(",")]
            results_t["first-call"] = [r for r in results_t["first-call"] if r["n"] not in ns] + tune_first_calls(ns)
        results_t["parts"].append({"env": _env(), "tune": args.tune, "first_calls": args.tune_first_calls,
                                   "backends": args.only, "dtypes": args.dtypes, "ns": args.ns,
                                   "tune_n": args.tune_n, "tune_batches": args.tune_batches,
                                   "time": time.strftime("%Y-%m-%d %H:%M:%S"),
                                   "load_average": list(os.getloadavg())})
        dump_json(args.out, results_t)
        print(f"wrote {args.out}")
        return 0
    if args.wall:
        results_w: dict[str, Any] = {"env": _env(), "load_average_start": list(os.getloadavg()),
                                     "wall": wall_section(WALL_CELLS), "first-call": first_calls(),
                                     "load_average_end": list(os.getloadavg())}
        if args.out:
            with open(args.out, "w") as f:
                json.dump(results_w, f, indent=1)
        return 0
    if args.merge:
        if not args.out:
            p.error("--merge needs --out")
        with open(args.out) as f:
            results = json.load(f)
        only = set(args.only.split(",")) if args.only else None
        new = crossover(only)
        redone = {(r["backend"], r["dtype"]) for r in new}
        results["crossover"] = [r for r in results["crossover"] if (r["backend"], r["dtype"]) not in redone] + new
        results["selection"] = {f"{k[0]}/{k[1]}": v for k, v in derive(results).items()}
        results.setdefault("merged", []).append({"time": time.strftime("%Y-%m-%d %H:%M:%S"), "backends": sorted(only or [])})
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
        for k, v in results["selection"].items():
            print(f"  {k}: {v}")
        return 0
    results: dict[str, Any] = {"env": _env(), "headline": [], "errors": [], "layout": [], "crossover": [],
                               "compile": [], "gpu": []}

    def save() -> None:  # after each section: an interrupted run keeps what it measured
        if args.out:  # (written aside, then renamed: a signal mid-write leaves the last file)
            dump_json(args.out, results)

    if args.gpu:
        def keep(rows: list[dict[str, Any]]) -> None:
            results["gpu"] = rows
            save()

        results["gpu"] = gpu(keep)
        save()
        results["crossover_gpu"] = gpu_crossover()
        save()
    else:
        results["headline"] = headline()
        save()
        results["errors"] = default_call()
        save()
        if args.all:
            for name, fn in (("layout", layouts), ("crossover", crossover), ("compile", compile_costs)):
                results[name] = fn()
                save()
            results["selection"] = {f"{k[0]}/{k[1]}": v for k, v in derive(results).items()}
            print("Selection table derived from this run:")
            for k, v in results["selection"].items():
                print(f"  {k}: {v}")
            save()
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
