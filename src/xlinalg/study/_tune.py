"""``xlinalg bench --tune``: this machine's ``method="auto"`` rules, measured.

For each CPU backend whose unrolled path is NumPy's compiled kernel (numba:
numpy, and torch-cpu and jax-cpu eager arrays through views of their memory),
each dtype, n and batch size, three calls are timed interleaved (A B C, B C A,
...) in calibrated blocks closed by the backend's fence:

* ``native``: the library's own batched solve (``numpy.linalg.solve``,
  ``torch.linalg.solve``, ``jax.numpy.linalg.solve``);
* ``xl_native``: ``xlinalg.solve(a, b, method="native")``, what ``method="auto"``
  runs when it does not pick the kernel (xlinalg's singular rule included);
* ``unrolled``: ``xlinalg.solve(a, b, method="unrolled")``, the numba kernel.

:func:`derive` turns the rows into the selection rules (``batch_min`` per n
against ``xl_native``, the warm-disk-cache first call per n), and
:func:`write_table` writes a table that ``XLINALG_UNROLLED_SELECTION`` can name:
the measured numba rules first, then the shipped table's other rules (those
apply where numba is not installed). ``benchmarks/unrolled.py --tune`` runs the
same measurement with the shipped table's grid and a cold-cache first-call
section (docs/unrolled.md).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..backends._tune_natives import (
    native_batched_solve,
    warm_only_by_default,
)
from ..bench._timer import first_call, interleaved

#: the batch sizes (systems) measured by default, and with ``--quick``
TUNE_BATCHES = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)
QUICK_BATCHES = (10, 1000, 100_000)
TUNE_DTYPES = ("float64", "float32")
#: ``batch_min`` of an n where the kernel never won by the margin: never automatic
NEVER = 1 << 62
#: a win must be at least this ratio (xl native / unrolled) at every larger batch
MARGIN = 1.2


# ---------------------------------------------------------------------- timing
def summary(v: list[float]) -> tuple[float, float]:
    """Median and IQR relative to it (0 for fewer than two samples)."""
    m = statistics.median(v)
    if len(v) < 2:
        return m, 0.0
    q = statistics.quantiles(v, n=4)
    return m, (q[2] - q[0]) / m


# ---------------------------------------------------------------------- one cell
def _native(backend: str) -> Callable[[Any, Any], Any]:
    """The library's own batched solve."""
    return native_batched_solve(backend)


def data(n: int, batch: int, dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random systems (randn + 2 sqrt(n) I: well conditioned), one right-hand side."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    b = rng.standard_normal((batch, n, 1))
    return a.astype(dtype), b.astype(dtype)


def check(x: Any, a: np.ndarray, b: np.ndarray) -> None:
    """A wrong answer is reported as wrong, not fast: GEPP's backward error bound,
    ``|b - a x| <= 100 n eps (|a| |x| + |b|)``, checked in float64 for every member."""
    x64 = np.asarray(x, dtype=np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    res = np.abs(a64 @ x64 - b64)
    bound = 100 * a.shape[-1] * float(np.finfo(a.dtype).eps) * (np.abs(a64) @ np.abs(x64) + np.abs(b64))
    if not (res <= bound).all():
        raise AssertionError(f"unrolled result fails the backward-error check by {float((res - bound).max()):.3g}")


def measure_cell(backend: str, n: int, batch: int, dtype: str, *, repeats: int = 3,
                 min_time: float = 0.01) -> dict[str, Any]:
    """One (backend, n, batch, dtype) cell: the three calls' medians and ratios.

    ``ratio`` is ``xl_native_s / unrolled_s`` (what ``method="auto"`` decides
    between), ``ratio_library`` ``native_s / unrolled_s``."""
    import xlinalg as xl
    from xlinalg.backends import get_backend

    be = get_backend(backend)
    a_np, b_np = data(n, batch, dtype)
    a, b = be.from_numpy(a_np), be.from_numpy(b_np)
    lib = _native(backend)

    def fenced(f: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:  # (Dask: computed; a device: waited for)
            return be.bench.materialize(f())
        return call

    fns = {
        "native": fenced(lambda: lib(a, b)),
        "xl_native": fenced(lambda: xl.solve(a, b, method="native")),
        "unrolled": fenced(lambda: xl.solve(a, b, method="unrolled")),
    }
    firsts = {k: first_call(f) for k, f in fns.items()}
    out = fns["unrolled"]()
    check(out if isinstance(out, np.ndarray) else be.to_numpy(out), a_np, b_np)
    st = interleaved(fns, repeats, min_time)
    row: dict[str, Any] = {"backend": backend, "n": n, "batch": batch, "dtype": dtype,
                           "compiler": None if be.unrolled.blockwise else "numba"}
    if be.unrolled.blockwise:  # the rule reads systems per block (Dask: from_numpy's blocks)
        row["blocks"] = len(a.chunks[0])
        row["batch"] = max(a.chunks[0])
        row["total_batch"] = batch
    for k, v in st.items():
        row[f"{k}_s"], row[f"{k}_iqr_rel"] = summary(v)
        row[f"{k}_first_s"] = firsts[k]
    row["unrolled_first_s"] = firsts["unrolled"]
    row["native_first_s"] = firsts["native"]
    row["ratio"] = row["xl_native_s"] / row["unrolled_s"]
    row["ratio_library"] = row["native_s"] / row["unrolled_s"]
    row["bytes"] = int(a_np.nbytes + 2 * b_np.nbytes)
    return row


_FIRST_CALL = textwrap.dedent(
    """
    import json, os, sys, time
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    import numpy as np
    import xlinalg as xl
    out = []
    for n, dtype in json.loads(sys.argv[1]):
        a = np.random.default_rng(0).standard_normal((1000, n, n)) + 3 * np.eye(n)
        a, b = a.astype(dtype), np.ones((1000, n, 1), dtype)
        t0 = time.perf_counter(); xl.solve(a, b, method="unrolled"); t1 = time.perf_counter()
        out.append({"n": n, "dtype": dtype, "first_call_s": t1 - t0})
    print(json.dumps(out))
    """
)


def first_calls(cells: Sequence[tuple[int, str]], *, cache: str, env: dict[str, str] | None = None,
                one_process_each: bool = True) -> list[dict[str, Any]]:
    """The first ``method="unrolled"`` call of each (n, dtype) in a fresh process
    (numba's import included where it is the process's first kernel; the
    libraries' import not): `cache` says what numba's disk cache held
    (``"warm"``: the kernels compiled by an earlier process; ``"cold"``: the
    caller's `env` points ``NUMBA_CACHE_DIR`` at an empty directory)."""
    groups = [[c] for c in cells] if one_process_each else [list(cells)]
    rows: list[dict[str, Any]] = []
    for group in groups:
        out = subprocess.run([sys.executable, "-c", _FIRST_CALL, json.dumps(group)], env=env,
                             capture_output=True, text=True, check=True)
        rows.extend({"section": "first-call", "cache": cache, **r}
                    for r in json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


# ---------------------------------------------------------------------- the rule
def derive(results: dict[str, Any], margin: float = MARGIN, against: str = "xl_native") -> dict[tuple[str, str], dict[str, Any]]:
    """The selection rules from crossover rows.

    Per (backend, dtype) and n, ``batch_min`` is the smallest measured batch from
    which the unrolled solver wins by `margin` at *every* larger measured batch,
    against `against` (``"xl_native"``: ``xl.solve(..., method="native")``, what
    ``auto`` would run instead, where the rows measured it; else the library's
    call, ``native``); :data:`NEVER` for an n where it never does. ``n_max`` is
    the largest n that wins somewhere. Per n, ``extra_first_call_s`` is the median
    first call beyond the native path's own (for numba rows: the cold compile,
    from the ``first-call`` rows, which the rule never pays), and
    ``saving_per_system_s`` the smallest steady-state saving from ``batch_min`` up:
    together with ``cached_first_call_s`` (numba: the first call with a warm disk
    cache) they say how many same-shape calls amortize a first call.
    torch's own compiler: ``warm_only`` (its 5-60 s compile is never started
    automatically).
    """
    table: dict[tuple[str, str], dict[str, Any]] = {}
    rows = [r for r in results["crossover"] if "ratio" in r]
    fc = [r for r in results.get("first-call", []) if "dtype" in r]

    def base(r: dict[str, Any]) -> float:
        return float(r[f"{against}_s"] if f"{against}_s" in r else r["native_s"])

    for key in sorted({(r["backend"], r["dtype"]) for r in rows}):
        mine = [r for r in rows if (r["backend"], r["dtype"]) == key]
        per_n: dict[int, int] = {}
        for n in sorted({r["n"] for r in mine}):
            rn = sorted((r for r in mine if r["n"] == n), key=lambda r: r["batch"])
            wins = [base(r) / r["unrolled_s"] >= margin for r in rn]
            per_n[n] = next((rn[i]["batch"] for i in range(len(rn)) if all(wins[i:])), NEVER)
        won = [n for n, v in per_n.items() if v != NEVER]
        if not won:
            continue
        n_max = max(won)
        if any(n not in per_n for n in range(1, n_max + 1)):
            n_max = next(n for n in range(1, n_max + 2) if n not in per_n) - 1
            if n_max == 0:
                continue
        compiler = mine[0].get("compiler")
        extra, saving, cached = [], [], []
        for n in range(1, n_max + 1):
            chosen = [r for r in mine if r["n"] == n and r["batch"] >= per_n[n]]
            if not chosen:  # never wins: no first call or saving to weigh
                extra.append(0.0)
                saving.append(0.0)
                cached.append(0.0)
                continue
            own = statistics.median(max(0.0, r["unrolled_first_s"] - r["native_first_s"]) for r in chosen)
            saving.append(float(f"{min((base(r) - r['unrolled_s']) / r['batch'] for r in chosen):.3g}"))
            if compiler == "numba":
                cold = [r["first_call_s"] for r in fc if (r["n"], r["dtype"], r["cache"]) == (n, key[1], "cold")]
                warm = [r["first_call_s"] for r in fc if (r["n"], r["dtype"], r["cache"]) == (n, key[1], "warm")]
                extra.append(round(max(cold) if cold else own, 3))
                cached.append(round(max(warm) if warm else own, 3))
            else:
                extra.append(round(own, 3))
        rule: dict[str, Any] = {"compiler": "numba"} if compiler == "numba" else {}
        if compiler == "numba":
            rule["cached_first_call_s"] = tuple(cached)
        table[key] = {
            **rule,
            "n_max": n_max,
            "batch_min": tuple(per_n[n] for n in range(1, n_max + 1)),
            "warm_only": warm_only_by_default(key[0], compiler),
            "extra_first_call_s": tuple(extra),
            "saving_per_system_s": tuple(saving),
        }
    return table


def selection_json(table: dict[tuple[str, str], dict[str, Any]], source: str,
                   keep: Iterable[dict[str, Any]] = (), command: str | None = None) -> str:
    """`table` (:func:`derive`) as the text of a selection table
    (``src/xlinalg/_unrolled_selection.json``'s format), `keep`'s rules after its own."""
    cmd = command or f"python benchmarks/unrolled.py --derive {source} --out src/xlinalg/_unrolled_selection.json"
    doc = {
        "about": "method='auto' rules of xlinalg.solve (xlinalg._unrolled.SELECTION), per "
                 "(backend, dtype); lists are indexed by n - 1; a batch_min of "
                 f"{NEVER} means never. Generated, do not edit: {cmd}",
        "source": source,
        "rules": [{"backend": backend, "dtype": dtype, **rule} for (backend, dtype), rule in table.items()]
        + list(keep),
    }
    return json.dumps(doc, indent=1) + "\n"


def shipped_table_path() -> str:
    """The selection table the package ships (package data)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_unrolled_selection.json")


def write_table(results: dict[str, Any], path: str, source: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Derive the rules from `results` and write them to `path`, followed by the
    shipped table's rules for other compilers (they apply without numba) and for
    the (backend, dtype) pairs not measured here. Written aside, then renamed."""
    table = derive(results)
    with open(shipped_table_path(), encoding="utf-8") as f:
        shipped = json.load(f)["rules"]
    measured = {(r["backend"], r["dtype"]) for r in results["crossover"]}
    keep = [r for r in shipped
            if r.get("compiler") != "numba" or (r["backend"], r["dtype"]) not in measured]
    text = selection_json(table, source, keep, command="xlinalg bench --tune --out FILE")
    tmp = f"{path}.part"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return table


# ---------------------------------------------------------------------- the command
def tune(backends: Sequence[str], dtypes: Sequence[str], ns: Sequence[int], batches: Sequence[int], *,
         repeats: int = 3, min_time: float = 0.01, progress: Callable[[str], None] = print,
         with_first_calls: bool = True) -> dict[str, Any]:
    """Measure every cell, then (`with_first_calls`) the first calls with numba's disk
    cache warm (the kernels this process compiled); returns the results (``env``,
    ``crossover``, ``first-call``)."""
    from ..bench import collect_env

    rows: list[dict[str, Any]] = []
    for backend in backends:
        for dtype in dtypes:
            for n in ns:
                for batch in batches:
                    try:
                        row = measure_cell(backend, n, batch, dtype, repeats=repeats, min_time=min_time)
                    except Exception as exc:  # recorded, and the run goes on
                        progress(f"  {backend} n={n} {batch} {dtype}: ERROR {exc!r:.200}")
                        rows.append({"backend": backend, "n": n, "batch": batch, "dtype": dtype,
                                     "error": repr(exc)[:300]})
                        continue
                    row["section"] = "crossover"
                    rows.append(row)
                    progress(f"  {backend:9s} n={n} {batch:>8d} x {dtype:7s} xl native {row['xl_native_s'] * 1e3:9.3f} ms"
                             f"  unrolled {row['unrolled_s'] * 1e3:9.3f} ms  {row['ratio']:6.2f}x"
                             f"  (library {row['native_s'] * 1e3:9.3f} ms)")
    cells = [(n, dt) for dt in dtypes for n in ns]
    fc = first_calls(cells, cache="warm") if with_first_calls else []
    for r in fc:
        progress(f"  first call, warm numba cache: n={r['n']} {r['dtype']}: {r['first_call_s']:.2f} s")
    return {"env": collect_env(), "crossover": rows, "first-call": fc}
