"""The unrolled schedule as one compiled CPU loop over the batch (numba).

The fourth renderer of :func:`._schedule._factor` / :func:`._schedule._apply`:
scalar Python, one iteration of a ``prange`` loop per system, every entry of
the matrix a local variable (registers), the factorization once and the
right-hand-side columns a loop over it, as in the CuPy kernel
(:func:`._schedule.c_source`). The same statements in the same order as
every other unrolled path: the same pivots, the same singular members.

The generated functions are plain Python in a committed file,
``_numba_generated.py`` (:func:`generated_source` writes it; a test checks it
is current), so that numba can cache their machine code on disk
(``cache=True``): a later process loads it in milliseconds instead of
compiling (docs/performance.md: first calls). numba is imported here only,
lazily, on the first solve that uses it; ``import xlinalg`` never imports it.

One kernel per (n, dtype), compiled for one explicit signature: `a` and `b`
read-only arrays of any strides (layout ``"A"``: broadcast and transposed
batches are read where they lie, no copy), `x` and the mask C-contiguous.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib import _singular
from ._schedule import _apply, _Emitter, _factor, _Factors

#: the file the generated functions live in (package source, next to this module)
GENERATED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_numba_generated.py")
#: the dtypes the kernels take (numba's native-order float and complex types)
DTYPES = ("float32", "float64", "complex64", "complex128")


class _ScalarEmitter(_Emitter):
    """The schedule as scalar Python (numba's subset): one value per local variable."""

    indent = "        "

    def assign(self, name: str, expr: str) -> str:
        return f"{self.indent}{name} = {expr}"

    def abs_(self, x: str) -> str:
        return f"abs({x})"

    def where(self, c: str, x: str, y: str) -> str:
        return f"_sel({c}, {x}, {y})"



def _function_source(n: int) -> str:
    """``solve_n{n}(a, b, x, bad, st, one, nan, tol)``: `a` ``(B, n, n)``, `b` ``(B, n, K)``
    in, `x` ``(B, n, K)``, `bad` ``(B,)`` and `st` ``(B,)`` out; `tol` the rule's ``n * eps``.

    xlinalg's singular rule (``xlinalg._lib._singular``, docs/semantics.md), decided
    by the schedule itself (``_schedule._factor``, as every unrolled kernel): a member
    is singular when some pivot ``|u_kk| <= tol * c_k``, ``c_k`` the largest modulus
    of column k of `a`; a member with NaN or inf in its
    `a` or `b` is never singular and its whole solution is NaN; singular members'
    solutions are NaN too. (``v - v == 0``: v is finite, real or complex.)

    `st` (status) is 1 for a member that is singular, has NaN or inf in its input
    or a solution that is not finite (an overflow), else 0: where no entry is set
    the caller has nothing to check (``make_kernel``: ``clean``).
    """
    e = _ScalarEmitter()
    A = [[e.let(f"a{i}{j}", f"a[i, {i}, {j}]") for j in range(n)] for i in range(n)]
    a0_names = [list(row) for row in A]
    f = _factor(e, A)
    rule = [
        *(f"        fa{i} = {' & '.join(f'({v} - {v} == 0)' for v in a0_names[i])}" for i in range(n)),
        f"        fa = {' & '.join(f'fa{i}' for i in range(n))}",
        f"        sg = {f.zero}",
        "        fb = True",
        "        for col in range(b.shape[2]):",
        *(f"            fb = fb & (b[i, {r}, col] - b[i, {r}, col] == 0)" for r in range(n)),
        "        dead = sg | (not fa) | (not fb)",
    ]
    factor_lines = list(e.lines)
    e.lines.clear()
    e.indent = "            "
    B = [e.let(f"b{r}", f"b[i, {r}, col]") for r in range(n)]
    X = _apply(e, f, B)
    col_lines = list(e.lines)
    col_lines.append("            fx = fx & " + " & ".join(f"({v} - {v} == 0)" for v in X))
    col_lines += [f"            x[i, {r}, col] = _sel(dead, nan, {X[r]})" for r in range(n)]
    return "\n".join(
        [
            f"def solve_n{n}(a, b, x, bad, st, one, nan, tol):",
            "    for i in prange(a.shape[0]):",
            *factor_lines,
            *rule,
            "        fx = True",
            "        for col in range(b.shape[2]):",
            *col_lines,
            "        bad[i] = sg & fa & fb",
            "        st[i] = 1 if dead or not fx else 0",
        ]
    ) + "\n"


#: systems per tile (a SIMD loop over them) and per chunk (a prange iteration)
TILE, CHUNK = 32, 1024


def _all_finite(values: list[str], out: str) -> list[str]:
    """Statements setting `out` to "every one of `values` is finite": a balanced sum of
    ``v - v`` (0 exactly for a finite v, NaN for NaN and ±inf, and a sum with a NaN
    term is NaN), compared with 0 once; the same verdict as ``(v - v == 0) & ...``
    with half the operations (no compare and no ``and`` per value)."""
    terms = [f"({v} - {v})" for v in values]
    lines: list[str] = []
    level = 0
    while len(terms) > 1:
        pairs = []
        for i in range(0, len(terms) - 1, 2):
            pairs.append(f"{out}_{level}_{i // 2}")
            lines.append(f"{pairs[-1]} = {terms[i]} + {terms[i + 1]}")
        terms = pairs + terms[len(pairs) * 2:]
        level += 1
    return [*lines, f"{out} = {terms[0]} == 0"]


def _tiled_source(n: int, tile: int = TILE, chunk: int = CHUNK) -> str:
    """``solve_t_n{n}``: the same schedule and singular rule as :func:`_function_source`
    (the same operations in the same order: bitwise the same results), for real
    dtypes, batch-last inside: each thread takes chunks of `chunk` systems, copies
    tiles of `tile` systems to ``(entries, W)`` buffers and runs the straight-line
    body as a loop over the tile, which LLVM vectorizes across systems (the
    pivot choices are selects, no branches). The factors go to a tile buffer,
    then each right-hand-side column is a second vectorized loop over them;
    members whose input is not finite or that are singular get NaN last.

    `st` has one entry per chunk: 1 where some member of the chunk is singular,
    has NaN or inf in its input or a solution that is not finite (an overflow),
    else 0, so that the caller learns "nothing to check" without a pass over `x`.
    """
    ind = " " * 16
    e = _ScalarEmitter()
    e.indent = ind
    mat = [[e.let(f"a{i}{j}", f"ta[{i * n + j}, j]") for j in range(n)] for i in range(n)]
    a0 = [list(r) for r in mat]
    f = _factor(e, mat)
    keep = ([f.lower[i][k] for k in range(n) for i in range(k + 1, n)]
            + [f.upper[k][j] for k in range(n) for j in range(k + 1, n)] + list(f.recip))
    sw = [s for k in range(n) for (_i, s) in f.swaps[k]]
    rule = _all_finite([v for row in a0 for v in row], "fa")
    # the singular rule, decided by the schedule (_schedule._factor) as in _function_source
    rule += [f"tsg[j] = {f.zero}", "tfa[j] = fa"]
    rule += [f"tf[{m}, j] = {v}" for m, v in enumerate(keep)] + [f"ts[{m}, j] = {s}" for m, s in enumerate(sw)]
    factor_lines = e.lines + [ind + line for line in rule]
    e2 = _ScalarEmitter()
    e2.indent = ind
    names = {v: e2.let("f", f"tf[{m}, j]") for m, v in enumerate(keep)}
    names.update({s: e2.let("s", f"ts[{m}, j]") for m, s in enumerate(sw)})
    f2 = _Factors([[(i, names[s]) for (i, s) in f.swaps[k]] for k in range(n)],
                  [[names[v] if v else "" for v in row] for row in f.lower],
                  [[names[v] if v else "" for v in row] for row in f.upper],
                  [names[v] for v in f.recip], "")
    brows = [e2.let(f"b{r}", f"tb[{r}, j]") for r in range(n)]
    xrows = _apply(e2, f2, brows)
    apply_lines = [*e2.lines, *(ind + line for line in _all_finite(brows, "fb")), ind + "tfb[j] = tfb[j] & fb",
                   *(ind + line for line in _all_finite(xrows, "fx")), ind + "tfx[j] = tfx[j] & fx",
                   *(ind + f"tx[{r}, j] = {xrows[r]}" for r in range(n))]
    lines = [
        f"def solve_t_n{n}(a, b, x, bad, st, one, nan, tol):",
        "    nb = a.shape[0]",
        "    k = b.shape[2]",
        f"    for c in prange((nb + {chunk - 1}) // {chunk}):",
        f"        ta = np.empty(({n * n}, {tile}), x.dtype)",
        f"        tf = np.empty(({max(len(keep), 1)}, {tile}), x.dtype)",
        f"        ts = np.empty(({max(len(sw), 1)}, {tile}), np.bool_)",
        f"        tb = np.empty(({n}, {tile}), x.dtype)",
        f"        tx = np.empty(({n}, {tile}), x.dtype)",
        f"        tsg = np.empty({tile}, np.bool_)",
        f"        tfa = np.empty({tile}, np.bool_)",
        f"        tfb = np.empty({tile}, np.bool_)",
        f"        tfx = np.empty({tile}, np.bool_)",
        "        st[c] = 0",
        f"        for i0 in range(c * {chunk}, min(nb, (c + 1) * {chunk}), {tile}):",
        f"            w = min({tile}, nb - i0)",
        "            for j in range(w):",
        *(f"                ta[{i * n + jj}, j] = a[i0 + j, {i}, {jj}]" for i in range(n) for jj in range(n)),
        "                tfb[j] = True",
        "                tfx[j] = True",
        "            for j in range(w):",
        *factor_lines,
        "            for col in range(k):",
        "                for j in range(w):",
        *(f"                    tb[{r}, j] = b[i0 + j, {r}, col]" for r in range(n)),
        "                for j in range(w):",
        *("    " + line for line in apply_lines),
        "                for j in range(w):",
        *(f"                    x[i0 + j, {r}, col] = tx[{r}, j]" for r in range(n)),
        # the verdicts and a count of the members to look at, branch-free (a SIMD loop);
        # only a tile that has some goes member by member
        "            nd = 0",
        "            for j in range(w):",
        "                ok = tfa[j] & tfb[j]",
        "                bad[i0 + j] = tsg[j] & ok",
        "                nd += _sel(ok & tfx[j] & (not tsg[j]), 0, 1)",
        "            if nd > 0:",
        "                st[c] = 1",
        "                for j in range(w):",
        "                    if tsg[j] or not (tfa[j] & tfb[j]):",
        "                        for col in range(k):",
        *(f"                            x[i0 + j, {r}, col] = nan" for r in range(n)),
    ]
    return "\n".join(lines) + "\n"


def generated_source(max_n: int = 8) -> str:
    """The text of ``_numba_generated.py``: one function per n = 1..`max_n`."""
    head = (
        '"""Generated by xlinalg._kernels._numba.generated_source(); do not edit.\n\n'
        "Regenerate with ``python -m xlinalg._kernels._numba`` after changing the\n"
        "schedule (xlinalg._kernels._schedule): a test checks this file is current.\n"
        '"""\n\n'
        "# ruff: noqa: F841\n"
        "# mypy: ignore-errors\n"
        "import numpy as np\n"
        "from numba import njit, prange\n\n\n"
        "@njit(cache=True, nogil=True)\n"
        "def _sel(c, x, y):\n"
        "    # a call rather than an inline conditional: numba's front end is\n"
        "    # superlinear in basic blocks, LLVM inlines the call to a select\n"
        "    return x if c else y\n"
    )
    return head + "".join("\n\n" + _function_source(n) + "\n\n" + _tiled_source(n) for n in range(1, max_n + 1))


@functools.cache
def numba_problem() -> str | None:
    """Why the compiled NumPy kernel cannot be used here, or None (numba is installed).

    Answered without importing numba (a look at the installed packages)."""
    if importlib.util.find_spec("numba") is None:
        return "numba is not installed (pip install 'xlinalg[fast]')"
    return None


_LOCK = threading.Lock()
#: numba's default threading layer (workqueue) must not be entered by two threads at
#: once (it aborts the process): Dask's worker threads and users' threads take turns
_CALL_LOCK = threading.Lock()
_DISPATCHERS: dict[tuple[int, str], Any] = {}
#: (n, dtype) -> seconds its compile (or load from numba's disk cache) took here
COMPILE_S: dict[tuple[int, str], float] = {}


def _dispatcher(n: int, dtype: np.dtype, tiled: bool | None = None) -> Any:
    """numba's compiled solve for (n, dtype), built on first use (from the disk cache
    where an earlier process left it). `tiled`: the tiled kernel (the default for
    real dtypes) or the one-system-per-iteration one (complex; tests compare them)."""
    if tiled is None:
        tiled = dtype.kind == "f"
    key = (n, dtype.name) if tiled == (dtype.kind == "f") else (n, f"{dtype.name}-{'tiled' if tiled else 'plain'}")
    disp = _DISPATCHERS.get(key)
    if disp is not None:
        return disp
    with _LOCK:
        disp = _DISPATCHERS.get(key)
        if disp is None:
            import time

            import numba
            from numba import types as nt

            from . import _numba_generated as gen

            t0 = time.perf_counter()
            scalar = numba.from_dtype(dtype)
            src = nt.Array(scalar, 3, "A", readonly=True)
            real = numba.from_dtype(np.empty(0, dtype).real.dtype)
            flags = nt.Array(nt.boolean, 1, "C")
            sig = nt.void(src, src, nt.Array(scalar, 3, "C"), flags, nt.Array(nt.uint8, 1, "C"), scalar, scalar, real)
            # real dtypes: the tiled kernel (vectorized across systems); complex: one
            # system per iteration (LLVM does not vectorize complex arithmetic here)
            name = f"solve_t_n{n}" if tiled else f"solve_n{n}"
            disp = numba.njit(sig, parallel=True, cache=True, nogil=True, error_model="numpy")(getattr(gen, name))
            COMPILE_S[key] = time.perf_counter() - t0
            _DISPATCHERS[key] = disp
    return disp


def is_compiled(n: int, dtype_name: str) -> bool:
    """Whether this process has the kernel for (n, dtype) ready (compiled or loaded)."""
    return (n, dtype_name) in _DISPATCHERS


@functools.lru_cache(maxsize=64)
def cached_on_disk(n: int, dtype_name: str) -> bool:
    """Whether numba's on-disk cache holds the (n, dtype) kernel *for the current
    source and numba*: then the first call here loads it instead of compiling it
    (a fraction of a second against seconds: docs/performance.md, "First calls").
    Answered once per process and (n, dtype), without importing numba.

    numba keeps, per function, an index ``<module>.<function>-<line>.py<ver>.nbi``
    under ``NUMBA_CACHE_DIR`` where it is set (then only there), else in ``__pycache__``
    next to the source: a pickled
    numba version, then the source's SHA-256 and the compiled signatures. The
    index counts only when it was written by the installed numba for this very
    file (numba ignores it otherwise, and compiles) and names a signature of this
    dtype (the output array ``array(<dtype>, 3d, C)``)."""
    import hashlib
    import importlib.metadata
    import sys

    kind = np.dtype(dtype_name).kind
    tag = f"_numba_generated.{'solve_t_n' if kind == 'f' else 'solve_n'}{n}-"
    ver = f".py{sys.version_info.major}{sys.version_info.minor}.nbi"
    try:
        numba_version = importlib.metadata.version("numba")
        with open(GENERATED_FILE, "rb") as fh:
            stamp = hashlib.sha256(fh.read()).digest()
    except (importlib.metadata.PackageNotFoundError, OSError):
        return False
    signature = f"array({dtype_name}, 3d, C)".encode()
    # numba reads and writes NUMBA_CACHE_DIR alone where it is set (its first cache
    # locator), else the ``__pycache__`` next to the source
    dirs = [os.environ.get("NUMBA_CACHE_DIR") or os.path.join(os.path.dirname(GENERATED_FILE), "__pycache__")]
    for d in dirs:
        for root, _sub, files in os.walk(d):
            for name in files:
                if not (name.startswith(tag) and name.endswith(ver)):
                    continue
                try:
                    with open(os.path.join(root, name), "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                # (looked at, not unpickled: the version pickle leads, as a short str)
                if numba_version.encode() in data[:64] and stamp in data and signature in data:
                    return True
    return False


#: a child process's compile of one kernel into numba's disk cache (:func:`warm_disk_cache`)
_WARM_CHILD = (
    "import sys, numpy as np\n"
    "from xlinalg._kernels._numba import _dispatcher\n"
    "_dispatcher(int(sys.argv[1]), np.dtype(sys.argv[2]))\n"
)


def warm_disk_cache(n: int, dtype_name: str, timeout: float = 600.0) -> bool:
    """Make numba's disk cache hold the (n, dtype) kernel, compiling it in a child
    process where it does not (a cold compile: seconds, docs/performance.md), and
    drop the kernel from this process: the next call here then *loads* it from the
    disk cache, whatever earlier calls in this process did. A benchmark's first
    call is then the same on every run ("warm cache"). Returns whether the disk
    cache holds the kernel now (False: numba missing, or the child failed)."""
    import subprocess
    import sys

    if numba_problem() is not None:
        return False
    dtype = np.dtype(dtype_name)
    cached_on_disk.cache_clear()  # (this process may have written it since it was asked)
    if not cached_on_disk(n, dtype.name):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        try:
            subprocess.run([sys.executable, "-c", _WARM_CHILD, str(n), dtype.name], env=env,
                           capture_output=True, timeout=timeout, check=True)
        except (OSError, subprocess.SubprocessError):
            return False
        cached_on_disk.cache_clear()
    with _LOCK:
        _DISPATCHERS.pop((n, dtype.name), None)
    return cached_on_disk(n, dtype.name)


def _threads_for(nb: int, n: int) -> int:
    """Threads for `nb` systems: one below ~2,000 systems (waking the pool costs
    more than it saves there), else numba's count (``NUMBA_NUM_THREADS``, or
    what ``numba.set_num_threads`` set in this thread)."""
    import numba

    most = numba.get_num_threads()
    return 1 if nb * n * n < 50_000 else most


def make_kernel(n: int, dtype: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    """``run(a, bm) -> (x, singular, clean)`` (the contract of ``_build.Kernel`` with
    ``reports_clean``) over numba.

    `a` ``(..., n, n)`` and `bm` ``(..., n, K)`` NumPy arrays of `dtype`, batches
    broadcast; one flat batch dimension (or any view that reshapes without a copy)
    is read in place. `clean`: no member is singular, has NaN or inf in its input
    or a solution that is not finite (the kernel's status flags, one per chunk of
    systems: the caller needs no pass over `x` or `singular` to know it)."""
    dtype = np.dtype(dtype)
    if not dtype.isnative:
        dtype = dtype.newbyteorder("=")
    one, nan = dtype.type(1), dtype.type(np.nan)
    real = np.empty(0, dtype).real.dtype
    tol = real.type(_singular.tolerance(np, dtype, n))
    tiled = dtype.kind == "f"  # (_dispatcher's default)

    def run(a: Any, bm: Any) -> tuple[Any, ...]:
        import numba

        fn = _dispatcher(n, dtype)
        sa, sb = a.shape[:-2], bm.shape[:-2]
        batch = sa if sa == sb else np.broadcast_shapes(sa, sb)
        k = bm.shape[-1]
        nb = math.prod(batch)
        a3 = _flat(np.broadcast_to(a, (*batch, n, n)) if sa != batch else a, nb, n, n, dtype)
        b3 = _flat(np.broadcast_to(bm, (*batch, n, k)) if sb != batch else bm, nb, n, k, dtype)
        x = _aligned_empty((nb, n, k), dtype)
        bad = _aligned_empty((nb,), np.dtype(np.bool_))
        st = np.empty(-(-nb // CHUNK) if tiled else nb, np.uint8)
        threads = _threads_for(nb, n)
        old = numba.get_num_threads()
        if threads != old:
            numba.set_num_threads(threads)
        try:
            with _CALL_LOCK:
                fn(a3, b3, x, bad, st, one, nan, tol)
        finally:
            if threads != old:
                numba.set_num_threads(old)
        clean = not st.any()
        if len(batch) == 1:
            return x, bad, clean
        return x.reshape((*batch, n, k)), bad.reshape(batch), clean

    run.reports_clean = True  # type: ignore[attr-defined]
    return run


#: byte alignment of the kernel's outputs: what XLA's CPU client needs to alias a host
#: buffer (``jax.dlpack.from_dlpack``) instead of copying it; NumPy aligns to 16 only
ALIGN = 64


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, C-ordered, its data aligned to :data:`ALIGN` bytes
    (a view into a slightly larger buffer)."""
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    off = -raw.__array_interface__["data"][0] % ALIGN
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def _flat(v: np.ndarray, nb: int, r: int, c: int, dtype: np.dtype) -> np.ndarray:
    """`v` ``(*batch, r, c)`` as ``(nb, r, c)``: a view where the strides allow (the
    common cases: one batch dimension, a contiguous stack, a broadcast member),
    else a copy; native byte order (numba's types)."""
    if v.dtype != dtype:
        v = v.astype(dtype)
    if v.ndim == 3:
        return v
    if v.ndim == 2:
        return v[None]
    try:  # a view when the batch dimensions merge
        return np.reshape(v, (nb, r, c), copy=False)
    except ValueError:  # they do not: a copy
        return np.reshape(v, (nb, r, c))


if __name__ == "__main__":  # pragma: no cover - regenerates the committed file
    with open(GENERATED_FILE, "w", encoding="utf-8") as fh:
        fh.write(generated_source())
    print(f"wrote {GENERATED_FILE}")
