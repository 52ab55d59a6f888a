"""What does xlinalg cost on top of the native call? Ratios measured side by side in one run.

Usage::

    python benchmarks/overhead.py            # everything (about two minutes on 2 cores)
    python benchmarks/overhead.py --quick    # fewer repeats
    python benchmarks/overhead.py --only solve,add
    python benchmarks/overhead.py --only extension   # the linalg extension + lstsq rows

Every row times the native call and the xlinalg call *interleaved* (A, B, A, B, ...)
with calibrated inner loops, so slow drifts of a noisy machine hit both alike,
and reports the medians, the IQRs and the ratio of medians against the target of
issue 5. JAX calls are fenced (``block_until_ready``) inside the timed loop.
Peak memory of the large cases is the growth of the peak RSS of a fresh
subprocess that runs the call once (it sees every allocator: NumPy's, torch's, XLA's).

No timings are asserted anywhere: this prints, a person reads.
"""

from __future__ import annotations

import argparse
import cmath
import functools
import json
import os
import statistics
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit

import xlinalg as xl
from xlinalg.bench import calibrate as _calibrate
from xlinalg.bench import time_block as _sample


def _stats(samples: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(samples, n=4)
    return statistics.median(samples), q[2] - q[0]


def compare(native: Callable[[], Any], ours: Callable[[], Any], repeats: int, min_time: float) -> dict[str, float]:
    """Interleaved medians of `native` and `ours` (seconds per call)."""
    native()
    ours()  # warm-up (and JIT compile) outside the timed region
    number = max(_calibrate(native, min_time), 1)
    a: list[float] = []
    b: list[float] = []
    for i in range(repeats):
        if i % 2:  # A B, B A, ...: a drift within a pair hits both sides alike
            b.append(_sample(ours, number))
            a.append(_sample(native, number))
        else:
            a.append(_sample(native, number))
            b.append(_sample(ours, number))
    ma, ia = _stats(a)
    mb, ib = _stats(b)
    return {"native": ma, "native_iqr": ia, "ours": mb, "ours_iqr": ib, "ratio": mb / ma, "number": number}


def _peak_rss_growth(setup: str, call: str) -> float:
    """Peak-RSS growth (bytes) of a fresh process running `call` once after `setup`.

    Linux: the high-water mark (VmHWM) is reset through /proc/self/clear_refs just
    before the call, so what imports and set-up touched earlier does not hide it.
    """
    code = textwrap.dedent(
        f"""
        import json, gc
        def hwm():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        {setup}
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak-RSS high-water mark to the current RSS
        base = hwm()
        out = {call}
        print(json.dumps(hwm() - base))
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(json.loads(res.stdout.strip().splitlines()[-1]))


# ---------------------------------------------------------------------- the extension's rows
#: the library's own call where it is not ``<library>.linalg.<name>``
_NATIVE: dict[str, dict[str, tuple[str, Callable[..., Any]]]] = {
    "numpy": {"lstsq": ("np.linalg.lstsq(a, b, rcond=None)", lambda a, b: np.linalg.lstsq(a, b, rcond=None)),
              # (no solve_ex in NumPy or JAX: their solve, which gives no mask)
              "solve_ex": ("np.linalg.solve(a, b)", lambda a, b: np.linalg.solve(a, b))},
    "torch": {
        "matrix_transpose": ("x.mT", lambda x: x.mT),
        "outer": ("torch.outer", lambda x1, x2: __import__("torch").outer(x1, x2)),
        "tensordot": ("torch.tensordot", lambda x1, x2, axes: __import__("torch").tensordot(x1, x2, dims=axes)),
        "trace": ("torch.diagonal(x, 0, -2, -1).sum(-1)",
                  lambda x: __import__("torch").diagonal(x, 0, -2, -1).sum(-1)),
    },
    "jax": {"lstsq": ("jnp.linalg.lstsq(a, b)", lambda a, b: __import__("jax.numpy").numpy.linalg.lstsq(a, b)),
            "solve_ex": ("jnp.linalg.solve(a, b)", lambda a, b: __import__("jax.numpy").numpy.linalg.solve(a, b))},
}

#: the functions timed: every declared linear-algebra function but solve and
#: matmul (rows of their own above)
def _extension_names() -> list[str]:
    from xlinalg._lib._declare import operations

    return [op.name for op in operations("linalg") if op.name not in ("solve", "matmul")]


def _extension_libraries(have_torch: bool, have_jax: bool) -> list[tuple[str, Any, Any, float]]:
    """(library, host -> library array, fence, target) for each installed CPU library."""
    out: list[tuple[str, Any, Any, float]] = [("numpy", np.asarray, lambda r: r, 1.10)]
    if have_torch:
        import torch

        out.append(("torch", torch.from_numpy, lambda r: r, 1.10))
    if have_jax:
        import jax
        import jax.numpy as jnp

        out.append(("jax", jnp.asarray, lambda r: jax.block_until_ready(r), 1.10))
    return out


def _extension_calls(lib: str, convert: Any, fence: Any) -> list[tuple[str, Any, Any]]:
    """(name, native call, xlinalg call) of each function on its declared sample."""
    from xlinalg._lib._declare import OPERATIONS

    spaces = {"numpy": "np", "torch": "torch", "jax": "jnp"}
    calls = []
    for name in _extension_names():
        op = OPERATIONS[name]
        args = tuple(convert(np.ascontiguousarray(a)) for a in op.sample_args())
        kwargs = dict(op.kwargs)
        label, fn = _NATIVE.get(lib, {}).get(name, (None, None))
        if fn is None:
            module = {"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}[lib]
            fn = getattr(__import__(module, fromlist=["linalg"]).linalg, name, None)
            if fn is None:  # an xlinalg function with no twin in the library (solve_ex): no row
                continue
            label = f"{spaces[lib]}.linalg.{name}"
        ours_fn = op.func

        def native(fn: Any = fn, args: Any = args, kwargs: Any = kwargs) -> Any:
            return fence(fn(*args, **kwargs))

        def ours(args: Any = args, kwargs: Any = kwargs, ours_fn: Any = ours_fn) -> Any:
            return fence(ours_fn(*args, **kwargs))

        native.__doc__ = label + (" (fenced)" if lib == "jax" else "")
        calls.append((name, native, ours))
    return calls


def _extension_floors(lib: str, convert: Any, fence: Any) -> list[tuple[str, Any, Any]]:
    """(what, native call, floor call): what no xlinalg function can go below, measured
    in the same run. A Python function with xlinalg's signature around the library's
    smallest call of the rows; where the contract must look at the values (a
    decomposition that did not converge raises, a singular matrix raises, a
    determinant of NaN input is NaN), the native call plus the quickest look at its
    result or input (torch: the eigenvalues, or the matrix, read as Python numbers;
    JAX: a zero-copy host look, which waits for the result, then the fence)."""
    sample = np.ascontiguousarray(np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]))
    v = convert(np.array([1.0, -2.0, 0.5]))
    x = convert(sample)
    if lib == "numpy":
        def vfloor(x1: Any, x2: Any, /, *, axis: int = -1, xp: Any = None) -> Any:
            return np.vecdot(x1, x2, axis=axis)

        return [("do-nothing wrapper / np.vecdot", lambda: np.vecdot(v, v), lambda: vfloor(v, v))]
    if lib == "torch":
        import torch

        def tfloor(x: Any, /, *, xp: Any = None) -> Any:
            return x.mT

        def tlook(x: Any, /, *, xp: Any = None) -> Any:
            w = torch.linalg.eigvalsh(x)
            if not cmath.isfinite(sum(w.tolist())):
                raise AssertionError("not finite")
            return w

        def tlook_in(x: Any, /, *, xp: Any = None) -> Any:
            if not cmath.isfinite(sum(map(sum, x.tolist()))):
                raise AssertionError("not finite")
            return torch.linalg.det(x)

        ok = frozenset((torch.float32, torch.float64, torch.complex64, torch.complex128))
        strided = torch.strided

        def tvecdot(x1: Any, x2: Any, /, *, axis: int = -1, xp: Any = None) -> Any:
            # the argument reads the contract needs that torch.linalg.vecdot does not do
            if x1.dtype not in ok or x1.layout is not strided or x2.layout is not strided:
                raise AssertionError("refused")
            if x1.shape[-1] != x2.shape[-1]:
                raise AssertionError("refused")
            return torch.linalg.vecdot(x1, x2)

        def teig(x: Any, /, *, xp: Any = None) -> Any:
            if not cmath.isfinite(sum(map(sum, x.tolist()))):
                raise AssertionError("not finite")
            w = torch.linalg.eigvals(x)
            if not cmath.isfinite(sum(w.tolist())):
                raise AssertionError("not finite")
            return w

        def tsvd(x: Any, /, *, xp: Any = None) -> Any:
            s = torch.linalg.svdvals(x)
            if not cmath.isfinite(sum(s.tolist())):
                raise AssertionError("not finite")
            return s

        return [("do-nothing wrapper / x.mT", lambda: x.mT, lambda: tfloor(x)),
                ("vecdot + the argument reads / torch.linalg.vecdot", lambda: torch.linalg.vecdot(v, v),
                 lambda: tvecdot(v, v)),
                ("eigvals + a look at its input and values / torch.linalg.eigvals",
                 lambda: torch.linalg.eigvals(x), lambda: teig(x)),
                ("svdvals + a look at its values / torch.linalg.svdvals", lambda: torch.linalg.svdvals(x),
                 lambda: tsvd(x)),
                ("eigvalsh + a look at its values / torch.linalg.eigvalsh", lambda: torch.linalg.eigvalsh(x),
                 lambda: tlook(x)),
                ("det + a look at its input / torch.linalg.det", lambda: torch.linalg.det(x),
                 lambda: tlook_in(x))]
    import jax.numpy as jnp

    def jlook(x: Any, /, *, xp: Any = None) -> Any:
        w = jnp.linalg.eigvalsh(x)
        m = memoryview(w)  # (JAX exports "=d": cast to the plain format first)
        if not cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())):
            raise AssertionError("not finite")
        return w

    def jlook_inv(x: Any, /, *, xp: Any = None) -> Any:
        r = jnp.linalg.inv(x)
        m = memoryview(r)
        if not cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())):
            raise AssertionError("not finite")
        return r

    def jlook_chol(x: Any, /, *, upper: bool = False, xp: Any = None) -> Any:
        r = jnp.linalg.cholesky(x)
        m = memoryview(r)
        if not cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())):
            raise AssertionError("not finite")
        return r

    return [("eigvalsh + host look / jnp.linalg.eigvalsh (fenced)", lambda: fence(jnp.linalg.eigvalsh(x)),
             lambda: fence(jlook(x))),
            ("cholesky + host look / jnp.linalg.cholesky (fenced)", lambda: fence(jnp.linalg.cholesky(x)),
             lambda: fence(jlook_chol(x))),
            ("inv + host look / jnp.linalg.inv (fenced)", lambda: fence(jnp.linalg.inv(x)),
             lambda: fence(jlook_inv(x)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats (noisier)")
    p.add_argument("--only", default="", help="comma list of row groups: solve,fence,small,extension,large,many,stacks,host,memory")
    p.add_argument("--names", default="", help="comma list of the extension's functions to time (default: all)")
    args = p.parse_args(argv)
    repeats = 7 if args.quick else 41
    only = set(filter(None, args.only.split(",")))

    def want(group: str) -> bool:
        return not only or group in only

    rng = np.random.default_rng(0)
    rows: list[tuple[str, str, float, dict[str, float]]] = []  # (what, target text, target, stats)
    avail = set(xl.available_backends())
    have_torch = "torch-cpu" in avail
    have_jax = "jax-cpu" in avail
    if have_torch:
        import torch

        torch.set_num_threads(1)  # tiny problems: threads only add noise
    if have_jax:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

    def add_row(what: str, target_txt: str, target: float | None, st: dict[str, float]) -> None:
        """One row; `target` None: context for the rows around it (no verdict)."""
        rows.append((what, target_txt, target, st))
        mark = "info" if target is None else "ok" if st["ratio"] <= target else "MISS"
        speed = f"  speed-up {1 / st['ratio']:.2f}×" if target is not None and target < 1 else ""
        print(f"  {what:50s} native {st['native'] * 1e6:10.2f} µs  xlinalg {st['ours'] * 1e6:10.2f} µs  "
              f"ratio {st['ratio']:.3f}{speed}  ({target_txt}) {mark}", flush=True)

    small_t = 0.01  # many short samples: a burst of noise spoils few of them
    if want("solve"):
        print("solve 5×5, vector right-hand side")
        a = rng.random((5, 5)) + 5 * np.eye(5)
        b = rng.random(5)
        add_row("numpy  xl.solve / numpy.linalg.solve", "≤ 1.10", 1.10,
                compare(lambda: np.linalg.solve(a, b), lambda: xl.solve(a, b), repeats, small_t))
        if have_torch:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            add_row("torch  xl.solve / torch.linalg.solve", "≤ 1.10", 1.10,
                    compare(lambda: torch.linalg.solve(ta, tb), lambda: xl.solve(ta, tb), repeats, small_t))
        if have_jax:
            ja, jb = jnp.asarray(a), jnp.asarray(b)
            add_row("jax    xl.solve / jnp.linalg.solve (fenced)", "≤ 1.35 (issue 21; issue 5 asked ≤ 1.10)", 1.35,
                    compare(lambda: jnp.linalg.solve(ja, jb).block_until_ready(),
                            lambda: xl.solve(ja, jb).block_until_ready(), repeats, small_t))
            # what the error contract costs: xl.solve must look at the result on the
            # host (errors="raise"), where the native call only waits for it
            add_row("jax    native + host read / native (fenced)", "context", None,
                    compare(lambda: jnp.linalg.solve(ja, jb).block_until_ready(),
                            lambda: np.asarray(jnp.linalg.solve(ja, jb)), repeats, small_t))
            add_row("jax    xl.solve errors=\"nan\" (no wait) / native", "≤ 1.10", 1.10,
                    compare(lambda: jnp.linalg.solve(ja, jb).block_until_ready(),
                            lambda: xl.solve(ja, jb, errors="nan").block_until_ready(), repeats, small_t))

    if want("fence") and have_jax:
        print("the fence users put inside timed loops, on a ready array")
        jx = jnp.ones(5)
        jx.block_until_ready()
        # both sides called straight from the loop (a bound method, a partial): no lambda
        add_row("jax    xl.synchronize(x) / x.block_until_ready()", "≤ 2.5", 2.5,
                compare(jx.block_until_ready, functools.partial(xl.synchronize, jx), repeats, small_t))

    if want("small"):
        print("sub-microsecond native calls")
        m = rng.random((4, 4))
        v = rng.random(8)

        def floor(x: Any, y: Any, /, *, xp: Any = None) -> Any:  # xl.add's signature, no work
            return np.add(x, y)

        # the floor: any Python function in front of a C call, measured in this run
        add_row("numpy  do-nothing wrapper / numpy.add (floor)", "context", None,
                compare(lambda: np.add(v, v), lambda: floor(v, v), repeats, small_t))
        add_row("numpy  xl.matmul 4×4 / numpy.matmul", "≤ 1.25", 1.25,
                compare(lambda: np.matmul(m, m), lambda: xl.matmul(m, m), repeats, small_t))
        add_row("numpy  xl.add 8 / numpy.add", "≤ 1.25", 1.25,
                compare(lambda: np.add(v, v), lambda: xl.add(v, v), repeats, small_t))
        def sfloor(x: Any, /, *, xp: Any = None) -> Any:  # xl.sigmoid's signature, no work
            return expit(x)

        add_row("numpy  do-nothing wrapper / expit (floor)", "context", None,
                compare(lambda: expit(v), lambda: sfloor(v), repeats, small_t))
        add_row("numpy  xl.sigmoid 8 / scipy.special.expit", "≤ 1.25", 1.25,
                compare(lambda: expit(v), lambda: xl.sigmoid(v), repeats, small_t))
        add_row("numpy  xl.sigmoid 8 / 1/(1+np.exp(-x)) (article)", "≤ 1.25", 1.25,
                compare(lambda: 1 / (1 + np.exp(-v)), lambda: xl.sigmoid(v), repeats, small_t))
        if have_torch:
            tm, tv = torch.from_numpy(m), torch.from_numpy(v)

            def tfloor(x: Any, y: Any, /, *, xp: Any = None) -> Any:
                return torch.add(x, y)

            add_row("torch  do-nothing wrapper / torch.add (floor)", "context", None,
                    compare(lambda: torch.add(tv, tv), lambda: tfloor(tv, tv), repeats, small_t))
            add_row("torch  xl.matmul 4×4 / torch.matmul", "≤ 1.25", 1.25,
                    compare(lambda: torch.matmul(tm, tm), lambda: xl.matmul(tm, tm), repeats, small_t))
            add_row("torch  xl.add 8 / torch.add", "≤ 1.25", 1.25,
                    compare(lambda: torch.add(tv, tv), lambda: xl.add(tv, tv), repeats, small_t))
            add_row("torch  xl.sigmoid 8 / torch.sigmoid", "≤ 1.25", 1.25,
                    compare(lambda: torch.sigmoid(tv), lambda: xl.sigmoid(tv), repeats, small_t))

    if want("extension"):
        print("the linalg extension and lstsq: each function's declared sample (3×3 matrices, "
              "3-vectors), xlinalg / the library's own call")
        for lib, convert, fence, target in _extension_libraries(have_torch, have_jax):
            for what, native, floor in _extension_floors(lib, convert, fence):
                add_row(f"{lib:6s} {what} (floor)", "context", None, compare(native, floor, repeats, small_t))
            for name, native, ours in _extension_calls(lib, convert, fence):
                if args.names and name not in args.names.split(","):
                    continue
                add_row(f"{lib:6s} xl.{name} / {native.__doc__}", f"≤ {target:.2f}", target,
                        compare(native, ours, repeats, small_t))

    if want("large"):
        print("large inputs: throughput (ratio of times; target ≤ 1/0.97 = 1.031)")
        big_r = max(5, repeats // 3)
        g = rng.random((1024, 1024), dtype=np.float32)
        s = rng.standard_normal((4096, 4096), dtype=np.float32)
        A = rng.random((1000, 5, 5)) + 5 * np.eye(5)
        B = rng.random((1000, 5, 1))
        tgt = 1 / 0.97
        add_row("numpy  GEMM 1024³ float32", "≥ 0.97× throughput", tgt,
                compare(lambda: np.matmul(g, g), lambda: xl.matmul(g, g), big_r, 0.2))
        add_row("numpy  sigmoid 4096² float32 / expit", "≥ 0.97× throughput", tgt,
                compare(lambda: expit(s), lambda: xl.sigmoid(s), big_r, 0.2))
        add_row("numpy  solve 1000×(5×5) batched", "≥ 0.97× throughput", tgt,
                compare(lambda: np.linalg.solve(A, B), lambda: xl.solve(A, B), big_r, 0.2))
        if have_torch:
            torch.set_num_threads(os.cpu_count() or 1)
            tg, ts, tA, tB = (torch.from_numpy(x) for x in (g, s, A, B))
            add_row("torch  GEMM 1024³ float32", "≥ 0.97× throughput", tgt,
                    compare(lambda: torch.matmul(tg, tg), lambda: xl.matmul(tg, tg), big_r, 0.2))
            add_row("torch  sigmoid 4096² float32", "≥ 0.97× throughput", tgt,
                    compare(lambda: torch.sigmoid(ts), lambda: xl.sigmoid(ts), big_r, 0.2))
            add_row("torch  solve 1000×(5×5) batched", "≥ 0.97× throughput", tgt,
                    compare(lambda: torch.linalg.solve(tA, tB), lambda: xl.solve(tA, tB), big_r, 0.2))
            torch.set_num_threads(1)

    if want("many"):
        print("1000 separate 5×5 systems in a Python list: loop of native solves / xl.solve_many")
        As = [rng.random((5, 5)) + 5 * np.eye(5) for _ in range(1000)]
        bs = [rng.random(5) for _ in range(1000)]
        st = compare(lambda: [np.linalg.solve(x, y) for x, y in zip(As, bs)],
                     lambda: xl.solve_many(As, bs), max(5, repeats // 3), 0.2)
        add_row("numpy  speed-up of solve_many over the loop", "≥ 6×", 1 / 6, st)
        if have_torch:
            tAs = [torch.from_numpy(x) for x in As]
            tbs = [torch.from_numpy(x) for x in bs]
            st = compare(lambda: [torch.linalg.solve(x, y) for x, y in zip(tAs, tbs)],
                         lambda: xl.solve_many(tAs, tbs), max(5, repeats // 3), 0.2)
            add_row("torch  speed-up of solve_many over the loop", "≥ 10×", 1 / 10, st)

    if want("stacks"):
        # what the singular rule costs on stacks (docs/semantics.md): xl.solve's native
        # path factors with LAPACK and applies the rule to the pivots; NumPy's batched
        # solve gives no pivots, so a screen (slogdet) or one gesv a member pays for it
        print("stacks: xl.solve(method=\"native\") / the native batched solve (the singular rule's cost)")
        for batch, n in ((3, 5), (1000, 5), (100, 20), (1, 200)):
            sa = rng.random((batch, n, n)) + n * np.eye(n)
            sb = rng.random((batch, n, 1))
            mt = max(small_t, 0.05)
            add_row(f"numpy  {batch}×{n}×{n}", "context", None,
                    compare(lambda sa=sa, sb=sb: np.linalg.solve(sa, sb),
                            lambda sa=sa, sb=sb: xl.solve(sa, sb, method="native"), repeats, mt))
            if have_torch:
                ta, tb = torch.from_numpy(sa), torch.from_numpy(sb)
                add_row(f"torch  {batch}×{n}×{n}", "context", None,
                        compare(lambda ta=ta, tb=tb: torch.linalg.solve(ta, tb),
                                lambda ta=ta, tb=tb: xl.solve(ta, tb, method="native"), repeats, mt))
            if have_jax:
                ja, jb = jnp.asarray(sa), jnp.asarray(sb)
                add_row(f"jax    {batch}×{n}×{n} (fenced)", "context", None,
                        compare(lambda ja=ja, jb=jb: jnp.linalg.solve(ja, jb).block_until_ready(),
                                lambda ja=ja, jb=jb: xl.solve(ja, jb, method="native").block_until_ready(),
                                repeats, mt))

    if want("host"):
        print("host data: Python lists of floats, checked to hold numbers only, then converted")
        flat = rng.random(100_000).tolist()
        nested = rng.random((1000, 100)).tolist()
        for what, data in (("flat list of 100,000 floats", flat), ("1000 lists of 100 floats", nested)):
            add_row(f"numpy  xl.add(list, 0.0) / numpy.add, {what}", "context", None,
                    compare(lambda d=data: np.add(d, 0.0), lambda d=data: xl.add(d, 0.0), max(5, repeats // 3), 0.05))

    mem: list[tuple[str, float, float]] = []
    if want("memory") or want("large"):
        print("peak memory of the large cases (peak-RSS growth of a fresh process)")
        cases = [
            ("numpy GEMM 1024³ f32", "import numpy as np, xlinalg as xl; g = np.ones((1024,1024), np.float32)",
             "np.matmul(g, g)", "xl.matmul(g, g)"),
            ("numpy sigmoid 4096² f32", "import numpy as np, xlinalg as xl; from scipy.special import expit; s = np.ones((4096,4096), np.float32)",
             "expit(s)", "xl.sigmoid(s)"),
            ("numpy solve 1000×5×5", "import numpy as np, xlinalg as xl; A = np.ones((1000,5,5)) + 5*np.eye(5); B = np.ones((1000,5,1))",
             "np.linalg.solve(A, B)", "xl.solve(A, B)"),
            ("numpy solve 1000000×5×5", "import numpy as np, xlinalg as xl; A = np.ones((1000000,5,5)) + 5*np.eye(5); B = np.ones((1000000,5,1))",
             "np.linalg.solve(A, B)", "xl.solve(A, B)"),
        ]
        if have_torch:
            cases += [
                ("torch GEMM 1024³ f32", "import torch, xlinalg as xl; g = torch.ones((1024,1024))",
                 "torch.matmul(g, g)", "xl.matmul(g, g)"),
                ("torch sigmoid 4096² f32", "import torch, xlinalg as xl; s = torch.ones((4096,4096))",
                 "torch.sigmoid(s)", "xl.sigmoid(s)"),
                ("torch solve 1000×5×5", "import torch, xlinalg as xl; A = torch.ones((1000,5,5), dtype=torch.float64) + 5*torch.eye(5, dtype=torch.float64); B = torch.ones((1000,5,1), dtype=torch.float64)",
                 "torch.linalg.solve(A, B)", "xl.solve(A, B)"),
                ("torch solve 1000000×5×5", "import torch, xlinalg as xl; A = torch.ones((1000000,5,5), dtype=torch.float64) + 5*torch.eye(5, dtype=torch.float64); B = torch.ones((1000000,5,1), dtype=torch.float64)",
                 "torch.linalg.solve(A, B)", "xl.solve(A, B)"),
            ]
        for name, setup, native, ours in cases:
            # warm both paths on a tiny copy so lazy imports are not counted, while
            # the high-water mark is still below the big call's
            tiny = (f"{setup.replace('4096', '4').replace('1024', '4').replace('1000000', '2').replace('1000', '2')}; "
                    f"{native}; {ours}")
            warm = f"{tiny}; {setup}"
            n = _peak_rss_growth(warm, native)
            o = _peak_rss_growth(warm, ours)
            mem.append((name, n, o))
            ok = o <= n * 1.05 + 64 * 1024
            print(f"  {name:50s} native {n / 2**20:8.2f} MiB  xlinalg {o / 2**20:8.2f} MiB  "
                  f"({'ok' if ok else 'MISS'}: within 5%)", flush=True)

    print()
    print("| what | native median (IQR) | xlinalg median (IQR) | ratio | target |")
    print("|---|---|---|---|---|")
    for what, ttxt, _t, st in rows:
        unit, scale = ("ms", 1e3) if st["native"] > 1e-4 else ("µs", 1e6)
        print(f"| {what} | {st['native'] * scale:.2f} {unit} ({st['native_iqr'] * scale:.2f}) | "
              f"{st['ours'] * scale:.2f} {unit} ({st['ours_iqr'] * scale:.2f}) | {st['ratio']:.3f} | {ttxt} |")
    for name, n, o in mem:
        print(f"| peak memory: {name} | {n / 2**20:.2f} MiB | {o / 2**20:.2f} MiB | {o / max(n, 1):.3f} | ≤ 1.05 |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
