"""Many small systems at once: Gaussian elimination unrolled for a fixed ``n``.

For tiny matrices the backends' batched LAPACK/cuSOLVER paths spend most of their
time on per-matrix overhead. Here Gaussian elimination with partial pivoting is
*unrolled* for a fixed ``n`` into straight-line code whose every value is an array
over the batch, built only from the array API standard's elementwise operations
(``abs``, ``where``, ``>``, ``==``, ``|``, ``*``, ``-``, ``/``) plus indexing,
``reshape``, ``permute_dims`` and ``stack``. Each backend's compiler then fuses
the whole solve into a few kernels: ``jax.jit`` (XLA), ``torch.compile``
(Inductor, where a C compiler works), and on CuPy the same schedule rendered as
one CUDA elementwise kernel (one thread per system, the matrix in registers).

One *schedule* (:func:`_schedule`) is the algorithm; two renderers turn it into
code: Python source over a namespace (every backend, compiled or eager) and C
source for the CuPy kernel. Generated functions are cached per
``(backend, n, dtype, device, layout, compiled)``.

Semantics are :func:`xlinalg.solve`'s: the standard's right-hand-side rule,
batch broadcasting, the dtype rule, and exactly singular members (a zero pivot
after partial pivoting, i.e. every pivot candidate of a column is 0, LAPACK's
criterion) reported per member: ``LinAlgError`` naming them (``errors="raise"``,
eager), or NaN for those members (``errors="nan"``, under ``jax.jit`` or
``torch.compile``, where no exception is possible). See ``docs/unrolled.md`` for
the measurements and the selection rule (:func:`prefer_unrolled`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._lib import _dispatch, _env, _validate
from ._lib._adapters import NUMPY, Adapter, _singular_message, _to_batch, singular_members
from ._lib._errors import LinAlgError

__all__ = [
    "DEFAULT_LAYOUT",
    "LAYOUTS",
    "MAX_N",
    "METHODS",
    "SELECTION",
    "SelectionRule",
    "clear_cache",
    "compiled_cache_info",
    "is_warm",
    "op_count",
    "prefer_unrolled",
    "solve_adapter",
    "solve_unrolled",
    "torch_compile_available",
    "use_unrolled",
]

#: the storage orders the solver can use inside (see docs/unrolled.md)
LAYOUTS = ("batch-first", "batch-last")

#: largest n the unrolled solver accepts. The program grows like n³ (n = 8: 731
#: statements, n = 16: 4999) and so do compile times (seconds at n = 8, minutes
#: at n = 16: docs/unrolled.md), while LAPACK already wins at n = 8 on every CPU
#: backend measured (benchmarks/results/unrolled-cpu.json).
MAX_N = 8


# ====================================================================== the schedule
class _Emitter:
    """Builds a straight-line program in single-assignment form (one statement per value)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def let(self, base: str, expr: str) -> str:
        self._count += 1
        name = f"{base}_{self._count}"
        self.lines.append(self.assign(name, expr))
        return name

    # rendered per target language
    def assign(self, name: str, expr: str) -> str:
        raise NotImplementedError

    def abs_(self, x: str) -> str:
        raise NotImplementedError

    def where(self, c: str, x: str, y: str) -> str:
        raise NotImplementedError

    def gt(self, x: str, y: str) -> str:
        return f"({x} > {y})"

    def eq0(self, x: str) -> str:
        return f"({x} == 0)"

    def or_(self, x: str, y: str) -> str:
        return f"({x} | {y})"

    def mul(self, x: str, y: str) -> str:
        return f"({x} * {y})"

    def sub(self, x: str, y: str) -> str:
        return f"({x} - {y})"

    def div(self, x: str, y: str) -> str:
        return f"({x} / {y})"

    one = "one"


class _Factors(NamedTuple):
    """Names of the values the right-hand-side phase needs."""

    swaps: list[list[tuple[int, str]]]  # per step k: (row i, mask "swap rows k and i")
    lower: list[list[str]]  # lower[i][k]: multiplier of row k subtracted from row i
    upper: list[list[str]]  # upper[k][j], j > k: the U factor
    recip: list[str]  # 1 / pivot k (1 where the pivot was 0)
    zero: str  # mask: some pivot was exactly 0 (the member is singular)


def _factor(e: _Emitter, A: list[list[str]]) -> _Factors:
    """LU with partial pivoting of the n×n matrix of value names `A` (updated in place).

    Pivoting is a compare-and-swap of row k with each row i below it, keeping the
    larger |candidate| in row k (strictly larger: the first maximum wins, as
    LAPACK's ``i?amax``). A zero pivot (every candidate 0) marks the member
    singular; the pivot is then replaced by 1 so that the member's arithmetic stays
    finite (no warnings, no inf) and its solution is set to NaN at the end.
    Multiplying by the pivot's reciprocal (as LAPACK's ``getf2`` does) rather than
    dividing keeps one division per column: XLA materializes a division with
    several users, and fewer of them mean fewer kernels.
    """
    n = len(A)
    swaps: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    lower = [[""] * n for _ in range(n)]
    recip = [""] * n
    zero = ""
    for k in range(n):
        if k < n - 1:
            best = e.let("m", e.abs_(A[k][k]))
            for i in range(k + 1, n):
                c = e.let("c", e.abs_(A[i][k]))
                s = e.let(f"s{k}{i}", e.gt(c, best))
                if i < n - 1:
                    best = e.let("m", e.where(s, c, best))
                for j in range(k, n):
                    akj, aij = A[k][j], A[i][j]
                    A[k][j] = e.let(f"a{k}{j}", e.where(s, aij, akj))
                    A[i][j] = e.let(f"a{i}{j}", e.where(s, akj, aij))
                swaps[k].append((i, s))
        z = e.let("z", e.eq0(A[k][k]))
        zero = z if k == 0 else e.let("z", e.or_(zero, z))
        recip[k] = e.let(f"r{k}", e.div(e.one, e.where(z, e.one, A[k][k])))
        for i in range(k + 1, n):
            li = lower[i][k] = e.let(f"l{i}{k}", e.mul(A[i][k], recip[k]))
            for j in range(k + 1, n):
                A[i][j] = e.let(f"a{i}{j}", e.sub(A[i][j], e.mul(li, A[k][j])))
    upper = [[A[k][j] if j > k else "" for j in range(n)] for k in range(n)]
    return _Factors(swaps, lower, upper, recip, zero)


def _apply(e: _Emitter, f: _Factors, B: list[str]) -> list[str]:
    """Apply the row swaps and eliminations to the right-hand side rows `B`, then
    back-substitute; returns the names of the solution rows."""
    n = len(B)
    B = list(B)
    for k in range(n):
        for i, s in f.swaps[k]:
            bk, bi = B[k], B[i]
            B[k] = e.let(f"b{k}", e.where(s, bi, bk))
            B[i] = e.let(f"b{i}", e.where(s, bk, bi))
        for i in range(k + 1, n):
            B[i] = e.let(f"b{i}", e.sub(B[i], e.mul(f.lower[i][k], B[k])))
    X = [""] * n
    for k in reversed(range(n)):
        acc = B[k]
        for j in range(k + 1, n):
            acc = e.let(f"t{k}", e.sub(acc, e.mul(f.upper[k][j], X[j])))
        X[k] = e.let(f"x{k}", e.mul(acc, f.recip[k]))
    return X


def _schedule(e: _Emitter, A: list[list[str]], B: list[str]) -> tuple[list[str], str]:
    """The whole algorithm: factor, apply to the right-hand side, back-substitute.

    Returns the names of the solution rows and of the singular mask.
    """
    f = _factor(e, [list(r) for r in A])
    return _apply(e, f, B), f.zero


def op_count(n: int) -> dict[str, int]:
    """Elementwise operations of the unrolled program (one right-hand-side column)."""
    e = _PyEmitter()
    A = [[f"a{i}{j}" for j in range(n)] for i in range(n)]
    _schedule(e, A, [f"b{i}" for i in range(n)])
    text = "\n".join(e.lines)
    return {
        "statements": len(e.lines),
        "where": text.count("_where("),
        "abs": text.count("_abs("),
        "mul": text.count(" * "),
        "sub": text.count(" - "),
        "div": text.count(" / "),
    }


# ====================================================================== Python rendering
class _PyEmitter(_Emitter):
    def assign(self, name: str, expr: str) -> str:
        return f"    {name} = {expr}"

    def abs_(self, x: str) -> str:
        return f"_abs({x})"

    def where(self, c: str, x: str, y: str) -> str:
        return f"_where({c}, {x}, {y})"


def _python_source(n: int, layout: str) -> tuple[str, str]:
    """Source of ``fn(a, b, one, nan) -> (rows, singular)`` for ``a (B, n, n)``, ``b (B, n, K)``.

    `rows` are the n rows of the solution, NaN for singular members; `singular`
    is a ``(B,)`` mask. The caller assembles the rows (:func:`_assemble`).

    batch-first: each matrix entry is the strided view ``a[:, i, j:j+1]`` of shape
    ``(B, 1)`` and each right-hand-side row ``b[:, i, :]`` of shape ``(B, K)``.
    batch-last: `a` is first copied to ``(n*n, B)`` (every entry a contiguous ``(B,)``
    vector) and `b` to ``(n*K, B)``; the solution rows are ``(K, B)``.
    """
    name = f"_unrolled_solve_n{n}_{layout.replace('-', '_')}"
    e = _PyEmitter()
    head = [f"def {name}(a, b, one, nan):"]
    if layout == "batch-first":
        loads_a = [[f"a[:, {i}, {j}:{j + 1}]" for j in range(n)] for i in range(n)]
        loads_b = [f"b[:, {i}, :]" for i in range(n)]
    else:
        head += [
            "    nb = a.shape[0]",
            "    k = b.shape[2]",
            f"    at = _reshape(_permute_dims(a, (1, 2, 0)), ({n * n}, nb))",
            f"    bt = _reshape(_permute_dims(b, (1, 2, 0)), ({n} * k, nb))",
        ]
        loads_a = [[f"at[{i * n + j}, :]" for j in range(n)] for i in range(n)]
        loads_b = [f"bt[{i} * k:{i + 1} * k, :]" for i in range(n)]
    A = [[e.let(f"a{i}{j}", loads_a[i][j]) for j in range(n)] for i in range(n)]
    B = [e.let(f"b{i}", loads_b[i]) for i in range(n)]
    X, zero = _schedule(e, A, B)
    rows = [e.let(f"x{k}", e.where(zero, "nan", x)) for k, x in enumerate(X)]
    tail = f"    return ({', '.join(rows)},), {zero}" + ("[:, 0]" if layout == "batch-first" else "")
    return name, "\n".join(head + e.lines + [tail]) + "\n"


_SOURCES: dict[tuple[int, str], tuple[str, str, Any]] = {}
_MODULE_COUNT = 0
_LOCK = threading.RLock()


def _python_function(n: int, layout: str, ns: Any) -> Callable[..., Any]:
    """A fresh function (its own code object) running the schedule on namespace `ns`.

    Every call makes a new module: ``torch.compile`` keeps its caches and
    recompile limits per code object, and looks globals up by module name.
    """
    global _MODULE_COUNT
    with _LOCK:
        key = (n, layout)
        if key not in _SOURCES:
            name, src = _python_source(n, layout)
            _SOURCES[key] = (name, src, None)
        name, src, _ = _SOURCES[key]
        _MODULE_COUNT += 1
        modname = f"xlinalg._unrolled_generated_{_MODULE_COUNT}"
    code = compile(src, f"<{modname}: unrolled solve n={n} {layout}>", "exec")
    mod = types.ModuleType(modname)
    mod.__dict__.update(
        _abs=ns.abs,
        _where=ns.where,
        _reshape=ns.reshape,
        _permute_dims=ns.permute_dims,
    )
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    fn = mod.__dict__[name]
    fn.__doc__ = f"Unrolled LU solve with partial pivoting, n={n}, {layout} (generated)."
    return fn


def _assemble(ns: Any, rows: Any, layout: str) -> Any:
    """The solution ``(B, n, K)`` from its rows (``(B, K)`` or ``(K, B)`` each)."""
    if layout == "batch-first":
        return ns.stack(list(rows), axis=1)
    return ns.permute_dims(ns.stack(list(rows), axis=0), (2, 0, 1))


# ====================================================================== C rendering (CuPy)
class _CEmitter(_Emitter):
    one = "((T)1)"

    def assign(self, name: str, expr: str) -> str:
        boolean = name[0] == "z" or (name[0] == "s" and name[1].isdigit())
        return f"    const {'bool' if boolean else 'T'} {name} = {expr};"

    def abs_(self, x: str) -> str:
        return f"fabs({x})"

    def where(self, c: str, x: str, y: str) -> str:
        return f"({c} ? {x} : {y})"

    def or_(self, x: str, y: str) -> str:
        return f"({x} || {y})"


def _c_source(n: int, layout: str) -> str:
    """Body of a CUDA elementwise kernel: one thread (index ``i``) solves one system.

    Parameters of the kernel: ``a`` (``(B, n, n)`` batch-first or ``(n, n, B)``
    batch-last), ``b`` (``(B, n, K)`` or ``(n, K, B)``), ``nanv`` (one NaN of type
    T), ``nb`` (B), ``k`` (K); outputs ``x`` (shaped like ``b``) and ``bad`` (B,).
    The factorization is unrolled and lives in registers; the right-hand-side
    columns are a loop over the recorded swaps and multipliers. The same text
    compiles as C++ (``typedef double T;``): the tests check it on the CPU.
    """
    e = _CEmitter()
    if layout == "batch-first":
        load_a = lambda i, j: f"a[i * {n * n} + {i * n + j}]"  # noqa: E731
        at_b = lambda r: f"(i * {n} + {r}) * k + col"  # noqa: E731
    else:
        load_a = lambda i, j: f"a[{i * n + j} * nb + i]"  # noqa: E731
        at_b = lambda r: f"({r} * k + col) * nb + i"  # noqa: E731
    A = [[e.let(f"a{i}{j}", load_a(i, j)) for j in range(n)] for i in range(n)]
    f = _factor(e, A)
    factor_lines = list(e.lines)
    e.lines.clear()
    B = [e.let(f"b{r}", f"b[{at_b(r)}]") for r in range(n)]
    X = _apply(e, f, B)
    col_lines = ["    " + ln for ln in e.lines]
    col_lines += [f"        x[{at_b(r)}] = {f.zero} ? nanv[0] : {X[r]};" for r in range(n)]
    return "\n".join(
        factor_lines
        + ["    for (long long col = 0; col < k; ++col) {"]
        + col_lines
        + ["    }", f"    bad[i] = {f.zero};"]
    ) + "\n"


# ====================================================================== namespaces
def _std_namespace(xp: Any) -> Any:
    """The standard functions the generated code and its wrapper use, from `xp`."""
    return types.SimpleNamespace(
        abs=xp.abs,
        where=xp.where,
        stack=xp.stack,
        reshape=xp.reshape,
        permute_dims=xp.permute_dims,
        broadcast_to=xp.broadcast_to,
        concat=xp.concat,
    )


def _numpy_namespace() -> Any:
    # NumPy's own functions (no array-api-compat wrappers: 200 calls per solve)
    return types.SimpleNamespace(
        abs=np.abs, where=np.where, stack=np.stack, reshape=np.reshape,
        permute_dims=np.transpose, broadcast_to=np.broadcast_to, concat=np.concatenate,
    )


def _torch_namespace() -> Any:
    import torch

    return types.SimpleNamespace(
        abs=torch.abs,
        where=torch.where,
        stack=lambda xs, axis=0: torch.stack(xs, dim=axis),
        reshape=torch.reshape,
        permute_dims=torch.permute,
        broadcast_to=torch.broadcast_to,
        concat=lambda xs, axis=0: torch.cat(xs, dim=axis),
    )


def _jax_namespace() -> Any:
    import jax.numpy as jnp

    return _std_namespace(jnp)


# ====================================================================== compilers
_TORCH_COMPILE_OK: dict[str, str | None] = {}


def _torch_compile_reason(device_type: str = "cpu") -> str | None:
    """Why ``torch.compile`` cannot be used on `device_type` here, or None if it works.

    Tried once per process and device type with a one-line function (a few
    seconds the first time): Inductor needs a working C++ compiler on the CPU
    and Triton on CUDA. ``XLINALG_TORCH_COMPILE=0`` disables it.
    """
    if device_type in _TORCH_COMPILE_OK:
        return _TORCH_COMPILE_OK[device_type]
    with _LOCK:  # the self-test runs once, whichever threads ask first
        if device_type not in _TORCH_COMPILE_OK:
            _TORCH_COMPILE_OK[device_type] = _torch_compile_self_test(device_type)
    return _TORCH_COMPILE_OK[device_type]


def _torch_compile_self_test(device_type: str) -> str | None:
    reason: str | None = None
    if not _env.env_flag("XLINALG_TORCH_COMPILE", True):
        reason = "disabled by XLINALG_TORCH_COMPILE"
    else:
        try:
            import torch

            fn = torch.compile(lambda x: x * 2.0 + 1.0, fullgraph=True, dynamic=False)
            out = fn(torch.ones(3, device=device_type))
            if not bool((out == 3.0).all()):  # pragma: no cover - a broken toolchain
                reason = "torch.compile gave a wrong result in a self-test"
        except Exception as exc:  # no compiler, no Triton, an old torch...
            reason = f"torch.compile does not work here: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return reason


def torch_compile_available(device_type: str = "cpu") -> bool:
    """Whether ``torch.compile`` works on `device_type` (``"cpu"`` or ``"cuda"``) here.

    The first call compiles a one-line function (a few seconds); the answer is
    cached for the process.

    Parameters
    ----------
    device_type : str, optional
        The torch device type.

    Returns
    -------
    bool

    Examples
    --------
    >>> from xlinalg._unrolled import torch_compile_available
    >>> isinstance(torch_compile_available.__doc__, str)
    True
    """
    return _torch_compile_reason(device_type) is None


#: torch.compile: Inductor's scheduler stops fusing at 64 nodes by default, so
#: the unrolled program (hundreds of elementwise nodes) became a dozen loops
#: over the batch with every intermediate written to memory; one loop keeps
#: them in registers. Measured on torch-cpu, 100000 systems of 5x5: 2.0x ->
#: 2.9x torch.linalg.solve (benchmarks/results/unrolled-cpu.json).
_TORCH_OPTIONS = {"max_fusion_size": 4096}
#: JAX on the CPU: options for XLA. Its new fusion emitters duplicate the cheap
#: producers of the unrolled program into many kernels (10× slower, measured);
#: the classic emitters fuse it into a few loops.
_JAX_CPU_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
#: JAX on the CPU: systems per chunk (a ``lax.map`` over chunks keeps every
#: intermediate in the cache; see docs/unrolled.md for the measurement)
_JAX_CPU_CHUNK = 10000


class _Kernel:
    """A solver for one (backend, n, dtype, device, layout, compiled) key.

    ``run(a, bm)`` takes `a` ``(..., n, n)`` and `bm` ``(..., n, K)`` of one dtype
    and returns ``(x, singular)``: `x` ``(*batch, n, K)`` with NaN for singular
    members, `singular` a ``batch``-shaped mask (batch = broadcast batch shape).
    """

    def __init__(self, key: tuple[Any, ...], run: Callable[..., tuple[Any, Any]]) -> None:
        self.key = key
        self.run = run
        #: whether ``run(a, b, vector=True)`` takes a vector `b` itself (JAX: inside the program)
        self.takes_vector = bool(getattr(run, "takes_vector", False))
        #: whether ``run`` returns, next to `x`, one flag "some member of x is NaN"
        #: (JAX) rather than the per-member zero-pivot mask
        self.flag_only = bool(getattr(run, "flag_only", False))
        self.calls = 0
        #: numbers of systems solved (bounded)
        self.batches: set[int] = set()
        #: seconds of the first call of each input signature (compile + run)
        self.first_call_s: dict[tuple[Any, ...], float] = {}

    def __call__(self, a: Any, bm: Any, signature: tuple[Any, ...], vector: bool = False) -> tuple[Any, Any]:
        """Solve; with `vector` (only where ``run.takes_vector``), `bm` is ``(n,)`` and `x` too."""
        self.calls += 1
        args = (a, bm, True) if vector else (a, bm)
        if signature in self.first_call_s:
            return self.run(*args)
        t0 = time.perf_counter()
        out = self.run(*args)
        if len(self.first_call_s) < 64:  # bounded: a record, not a cache
            self.first_call_s[signature] = time.perf_counter() - t0
            self.batches.add(math.prod(_validate.broadcast_shapes(signature[0][:-2], signature[1][:-2])))
        return out


def _flatten(ns: Any, a: Any, bm: Any, n: int) -> tuple[Any, Any, tuple[int, ...], int, int]:
    """Broadcast the batch dimensions and flatten them: ``(B, n, n)``, ``(B, n, K)``."""
    sa, sb = tuple(a.shape[:-2]), tuple(bm.shape[:-2])
    batch = sa if sa == sb else _validate.broadcast_shapes(sa, sb)
    k = int(bm.shape[-1])
    nb = math.prod(batch)
    if sa != batch:
        a = ns.broadcast_to(a, (*batch, n, n))
    if sb != batch:
        bm = ns.broadcast_to(bm, (*batch, n, k))
    if len(batch) != 1:
        a = ns.reshape(a, (nb, n, n))
        bm = ns.reshape(bm, (nb, n, k))
    return a, bm, batch, nb, k


def _eager_run(ns: Any, core: Callable[..., Any], n: int, layout: str, consts: Callable[[Any], tuple[Any, Any]], assemble_inside: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    """Wrap a generated (possibly compiled) core: flatten, solve, assemble, unflatten."""

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        a3, b3, batch, _nb, k = _flatten(ns, a, bm, n)
        one, nan = consts(a)
        if assemble_inside:
            x3, bad = core(a3, b3, one, nan)
        else:
            rows, bad = core(a3, b3, one, nan)
            x3 = _assemble(ns, rows, layout)
        if len(batch) != 1:
            x3 = ns.reshape(x3, (*batch, n, k))
            bad = ns.reshape(bad, batch)
        return x3, bad

    return run


def _make_numpy(n: int, layout: str, dtype: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    ns = _numpy_namespace()
    core = _python_function(n, layout, ns)
    one, nan = np.asarray(1, dtype=dtype), np.asarray(np.nan, dtype=dtype)
    run = _eager_run(ns, core, n, layout, lambda a: (one, nan), False)

    def quiet(a: Any, bm: Any) -> tuple[Any, Any]:
        with np.errstate(all="ignore"):  # inf/NaN inputs: IEEE results, no warnings
            return run(a, bm)

    return quiet


def _make_generic(ad: Adapter, n: int, layout: str, dtype: Any, device: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    xp = ad.xp
    ns = _std_namespace(xp)
    core = _python_function(n, layout, ns)
    one = xp.asarray(1, dtype=dtype, device=device)
    nan = xp.asarray(float("nan"), dtype=dtype, device=device)
    return _eager_run(ns, core, n, layout, lambda a: (one, nan), False)


def _make_torch(n: int, layout: str, dtype: Any, device: Any, compiled: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    import torch

    ns = _torch_namespace()
    one = torch.tensor(1, dtype=dtype, device=device)
    nan = torch.tensor(float("nan"), dtype=dtype, device=device)
    consts = lambda a: (one, nan)  # noqa: E731
    core = _python_function(n, layout, ns)
    plain = _eager_run(ns, core, n, layout, consts, False)
    if not compiled:
        return plain

    def whole(a3: Any, b3: Any, one: Any, nan: Any) -> tuple[Any, Any]:
        rows, bad = core(a3, b3, one, nan)
        return _assemble(ns, rows, layout), bad

    # dynamic=True: one compile serves every batch size (measured as fast as static)
    fast = _eager_run(ns, torch.compile(whole, fullgraph=True, dynamic=True,
                                            options=dict(_TORCH_OPTIONS)), n, layout, consts, True)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        if torch.compiler.is_compiling():  # inside the caller's torch.compile: inline
            return plain(a, bm)
        return fast(a, bm)

    return run


def _assemble_select(ns: Any, rows: Any, layout: str) -> Any:
    """The solution ``(B, n, K)`` from its rows as one elementwise expression.

    ``where(row_index == r, rows[r], ...)`` rather than ``stack``: XLA fuses it
    with the program that computes the rows, where a concatenation would be a
    fusion per row, each recomputing the whole shared program (measured: 1.9×
    fewer HLO instructions and 20-30% faster on jax-cpu).
    """
    n = len(rows)
    if layout == "batch-first":  # rows (B, K) -> (B, n, K)
        ridx = ns.reshape(ns.arange(n), (1, n, 1))
        out = rows[n - 1][:, None, :]
        for r in range(n - 2, -1, -1):
            out = ns.where(ridx == r, rows[r][:, None, :], out)
        return out
    ridx = ns.reshape(ns.arange(n), (n, 1, 1))  # rows (K, B) -> (n, K, B)
    out = rows[n - 1][None, :, :]
    for r in range(n - 2, -1, -1):
        out = ns.where(ridx == r, rows[r][None, :, :], out)
    return ns.permute_dims(out, (2, 0, 1))


def _chunks(nb: int, target: int) -> tuple[int, int]:
    """(m, c): m chunks of c systems, c near `target`, m*c == nb where a divisor allows.

    A remainder (fewer than m systems) is solved by a second copy of the program
    and concatenated: measured 20-40% slower than an even split, hence the search.
    """
    m0 = -(-nb // target)
    for dm in range(m0):  # m0, m0+1, m0-1, m0+2, ... within a factor of 2 of the target
        for m in (m0 + dm, m0 - dm):
            if m >= 2 and m <= 2 * m0 and 2 * m >= m0 and nb % m == 0:
                return m, nb // m
    return max(m0, 2), nb // max(m0, 2)


def _make_jax(n: int, layout: str, compiled: bool, cpu: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    """JAX: one jitted program; returns ``(x, flag)``: singular members are NaN in `x`,
    and `flag` (0-d) says whether any entry of `x` is NaN.

    On the CPU the batch is cut into chunks of about :data:`_JAX_CPU_CHUNK`
    systems solved by a ``lax.map`` (the intermediates stay in the cache), and
    XLA's classic fusion emitters are asked for (:data:`_JAX_CPU_OPTIONS`).
    The singular mask is not an output: a second output would be a second fusion
    recomputing the program; NaN rows mark the candidates instead, confirmed on
    the host only when there are any (:func:`_check_singular`). Whether there are
    any is the flag, reduced inside the program from the written `x` (an
    optimization barrier keeps XLA from fusing the solve into the reduction a
    second time): ``errors="raise"`` reads one bool, not the solution.
    """
    import jax
    import jax.numpy as jnp

    ns = _jax_namespace()
    ns.arange = jnp.arange
    core = _python_function(n, layout, ns)
    chunk = _JAX_CPU_CHUNK if cpu else 0

    def solve3(a3: Any, b3: Any) -> Any:
        one = jnp.asarray(1, dtype=a3.dtype)
        nan = jnp.asarray(float("nan"), dtype=a3.dtype)
        rows, _ = core(a3, b3, one, nan)
        return _assemble_select(ns, rows, layout)

    def solve_flat(a3: Any, b3: Any, nb: int, k: int) -> Any:
        if not chunk or nb <= chunk:
            return solve3(a3, b3)
        m, c = _chunks(nb, chunk)
        head = m * c
        ac = jnp.reshape(a3[:head], (m, c, n, n))
        bc = jnp.reshape(b3[:head], (m, c, n, k))
        x = jax.lax.map(lambda ab: solve3(ab[0], ab[1]), (ac, bc))
        x = jnp.reshape(x, (head, n, k))
        if head < nb:
            x = jnp.concat([x, solve3(a3[head:], b3[head:])], axis=0)
        return x

    def whole(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if vector:  # inside the program: eager JAX indexing costs a dispatch a call
            bm = bm[..., None]
        a3, b3, batch, nb, k = _flatten(ns, a, bm, n)
        x = jnp.reshape(solve_flat(a3, b3, nb, k), (*batch, n, k))
        flag = jnp.any(jnp.isnan(jax.lax.optimization_barrier(x)))  # (dropped when unused)
        return (x[..., 0] if vector else x), flag

    whole.takes_vector = True  # type: ignore[attr-defined]
    whole.flag_only = True  # type: ignore[attr-defined]
    if not compiled:
        return whole
    top = jax.jit(whole, static_argnums=2, compiler_options=dict(_JAX_CPU_OPTIONS) if cpu else None)
    plain_jit = jax.jit(whole, static_argnums=2)
    tracer = jax.core.Tracer
    state = {"options_ok": cpu}

    def run(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if isinstance(a, tracer) or isinstance(bm, tracer):
            return whole(a, bm, vector)  # inside the caller's trace: inlined into its program
        if state["options_ok"]:
            try:
                return top(a, bm, vector)
            except Exception as exc:  # an XLA without these options
                if "xla_cpu" not in str(exc):
                    raise
                state["options_ok"] = False
        return plain_jit(a, bm, vector)

    run.jitted = top  # type: ignore[attr-defined]  # (for inspection: .lower(...).compile())
    run.takes_vector = True  # type: ignore[attr-defined]
    run.flag_only = True  # type: ignore[attr-defined]
    return run


def _make_cupy(n: int, layout: str, dtype: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """The schedule as one CUDA elementwise kernel (float32/float64): one thread per system."""
    import cupy as cp

    kernel = cp.ElementwiseKernel(
        "raw T a, raw T b, raw T nanv, int64 nb, int64 k",
        "raw T x, raw bool bad",
        _c_source(n, layout),
        f"xlinalg_unrolled_solve_n{n}_{layout.replace('-', '_')}",
        preamble="",
    )
    ns = _std_namespace(cp)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        with a.device:
            a3, b3, batch, nb, k = _flatten(ns, a, bm, n)
            nanv = cp.full((1,), float("nan"), dtype=dtype)
            if layout == "batch-first":
                a3 = cp.ascontiguousarray(a3)
                b3 = cp.ascontiguousarray(b3)
                x = cp.empty((nb, n, k), dtype=dtype)
            else:
                a3 = cp.ascontiguousarray(cp.transpose(a3, (1, 2, 0)))
                b3 = cp.ascontiguousarray(cp.transpose(b3, (1, 2, 0)))
                x = cp.empty((n, k, nb), dtype=dtype)
            bad = cp.empty((nb,), dtype=cp.bool_)
            # 1-D views: a raw CArray of more dimensions unravels every flat index
            # with integer divisions
            kernel(a3.reshape(-1), b3.reshape(-1), nanv, nb, k, x.reshape(-1), bad, size=nb)
            if layout == "batch-last":
                x = cp.transpose(x, (2, 0, 1))
            return cp.reshape(x, (*batch, n, k)), cp.reshape(bad, batch)

    return run


# ====================================================================== the cache
#: backend id -> the layout measured fastest there (GPU entries: see docs/unrolled.md)
DEFAULT_LAYOUT: dict[str, str] = {
    "numpy": "batch-last",
    "torch-cpu": "batch-first",
    "jax-cpu": "batch-first",
    "torch-cuda": "batch-last",
    "jax-gpu": "batch-last",
    "cupy": "batch-first",
    "dask": "batch-last",
    "array-api-strict": "batch-first",
}

_COMPILERS = {
    "jax-cpu": "jax.jit",
    "jax-gpu": "jax.jit",
    "torch-cpu": "torch.compile",
    "torch-cuda": "torch.compile",
    "cupy": "cupy.ElementwiseKernel",
}

_KERNELS: dict[tuple[Any, ...], _Kernel] = {}
#: solve_adapter's arguments -> kernel (see there)
_RESOLVED: dict[tuple[Any, ...], _Kernel] = {}


def clear_cache() -> None:
    """Forget every generated and compiled solver (the backends' own caches stay)."""
    with _LOCK:
        _KERNELS.clear()
        _RESOLVED.clear()


def compiled_cache_info() -> list[dict[str, Any]]:
    """One entry per cached solver: its key, calls and first-call (compile) seconds."""
    with _LOCK:
        items = list(_KERNELS.values())
    return [
        {
            "backend": k.key[0],
            "n": k.key[1],
            "dtype": k.key[2],
            "device": k.key[3],
            "layout": k.key[4],
            "compiled": k.key[5],
            "calls": k.calls,
            "first_call_s": {str(s): round(t, 4) for s, t in k.first_call_s.items()},
        }
        for k in items
    ]


def _resolve_compile(backend: str, compile: bool | None, complex_: bool) -> bool:
    if compile is not None and compile not in (True, False):
        raise TypeError(f"`compile` must be None, True or False, got {compile!r}")
    compiler = _COMPILERS.get(backend)
    if backend == "cupy" and complex_:
        compiler = None  # the CUDA kernel is real-only; complex runs the eager schedule
    if compiler is None:
        if compile:
            raise ValueError(
                f"solve_unrolled: no compiler for the {backend} backend"
                + (" with complex dtypes" if backend == "cupy" else "")
                + f"; compiled backends: {', '.join(sorted(_COMPILERS))}. Pass compile=None or False"
            )
        return False
    if compile is False:
        return False
    if compiler == "torch.compile":
        reason = _torch_compile_reason(backend.split("-", 1)[1])
        if reason is not None:
            if compile:
                raise RuntimeError(f"solve_unrolled: compile=True needs torch.compile, but {reason}")
            return False
    return True


def _kernel(ad: Adapter, backend: str, n: int, a: Any, layout: str, compiled: bool) -> _Kernel:
    dtype = a.dtype
    dname = ad.dtype_name(dtype)
    device = ad.device(a)
    key = (backend, n, dname, str(device), layout, compiled)
    kern = _KERNELS.get(key)
    if kern is not None:
        return kern
    if backend == "numpy":
        run = _make_numpy(n, layout, dtype)
    elif backend.startswith("torch"):
        run = _make_torch(n, layout, dtype, device, compiled)
    elif backend.startswith("jax"):
        run = _make_jax(n, layout, compiled, cpu=backend == "jax-cpu")
    elif backend == "cupy" and compiled:
        run = _make_cupy(n, layout, dtype)
    else:
        run = _make_generic(ad, n, layout, dtype, device)
    with _LOCK:
        kern = _KERNELS.setdefault(key, _Kernel(key, run))
    return kern


def is_warm(backend: str, n: int, dtype_name: str, batch: int | None = None) -> bool:
    """Whether a compiled solver for (backend, n, dtype) has run (JAX: for `batch` systems).

    torch compiles with dynamic shapes (one program for every batch size); JAX
    compiles per input shape, so there `batch` (number of systems) must match.
    """
    with _LOCK:
        kernels = [k for k in _KERNELS.values() if k.key[:3] == (backend, n, dtype_name) and k.key[5]]
    if batch is None or not backend.startswith("jax"):
        return any(k.calls for k in kernels)
    return any(batch in k.batches for k in kernels)


# ====================================================================== solving
def _raise_singular(mask: np.ndarray, batch_shape: tuple[int, ...]) -> None:
    """LinAlgError naming the singular members (`mask` over `a`'s batch), as xl.solve does."""
    m = np.asarray(mask, dtype=bool).reshape(batch_shape)
    if batch_shape:
        indices = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))]
        members = [int(i) for i in np.flatnonzero(m)]
    else:
        indices, members = [()], [0]
    raise LinAlgError(_singular_message(indices, batch_shape), indices=indices, members=members)


def _check_singular(ad: Adapter, a: Any, b: Any, x: Any, bad: Any, flag_only: bool, vector: bool = False) -> None:
    """errors="raise", eager: one bool crosses to the host; raise for singular members.

    `bad` is the solver's zero-pivot mask over the broadcast batch, where the
    solver ran (a GPU, say): it is reduced there and one bool is read (a device
    sync); only when it is set is xl.solve's rule (:func:`singular_members`: never
    members with NaN or inf in `a` or `b`) applied there too, and only the
    reported members' mask is copied. With `flag_only` (JAX), `bad` is the
    program's own flag "some entry of `x` is NaN": only when it is set are the
    members whose solution is all NaN candidates, confirmed by the NumPy schedule
    on the host (subnormals kept), then the same rule.
    """
    a_batch = tuple(a.shape[:-2])
    if not flag_only:
        xp = ad.xp
        if not bool(xp.any(bad)):  # the common case: no zero pivot
            return
        sing = singular_members(xp, bad, a, b[..., None] if vector else b)
        if bool(xp.any(sing)):
            _raise_singular(_to_batch(np.asarray(ad.to_host(sing)), a_batch).reshape(a_batch), a_batch)
        return
    if not bool(bad):  # the common case: no NaN anywhere in x
        return
    h = np.asarray(ad.to_host(x))
    cand = np.asarray(np.isnan(h).all(axis=-1 if vector else (-2, -1)))  # (0-d: an array too)
    if not cand.any():
        return
    n = int(a.shape[-1])
    a_host = np.asarray(ad.to_host(a))
    cand = _confirm_zero_pivots(cand, np.broadcast_to(a_host, (*cand.shape, n, n)))
    b_host = np.asarray(ad.to_host(b))
    sing = singular_members(np, cand, a_host, b_host[..., None] if vector else b_host)
    mask = _to_batch(sing, a_batch).reshape(a_batch)
    if mask.any():
        _raise_singular(mask, a_batch)


def _traced(ad: Adapter, x: Any) -> bool:
    if ad.traced(x):
        return True
    if type(x).__module__.startswith("torch"):
        import torch

        return bool(torch.compiler.is_compiling())
    return False


def _confirm_zero_pivots(cand: np.ndarray, a: np.ndarray) -> np.ndarray:
    """`cand` (a mask over `a`'s batch) kept where the NumPy schedule meets a zero pivot."""
    cand = cand.copy()
    if cand.any():
        sel = a[cand]
        n = sel.shape[-1]
        _, zero = _kernel(NUMPY, "numpy", n, sel, "batch-last", False)(
            sel, np.zeros((sel.shape[0], n, 1), sel.dtype), ((), ())
        )
        cand[cand] = np.asarray(zero)
    return cand


def _dask_block(ab: np.ndarray, bb: np.ndarray, vector: bool, errors: str, layout: str) -> np.ndarray:
    """One Dask block: the NumPy schedule, checked as on NumPy (see DaskAdapter.map_solve)."""
    return solve_adapter(NUMPY, ab, bb, vector, errors, layout=layout, compile=False)


def solve_adapter(
    ad: Adapter,
    a: Any,
    b: Any,
    vector: bool,
    errors: str,
    *,
    layout: str | None = None,
    compile: bool | None = None,
) -> Any:
    """The unrolled solve behind :func:`solve_unrolled`, for already validated input.

    The contract of ``Adapter.solve``: `a` ``(..., n, n)`` and `b` ``(n,)``
    (``vector``) or ``(..., n, K)`` of one floating dtype on one device, no empty
    dimension; `errors` is "raise" or "nan". xl.solve calls this in place of
    ``ad.solve(a, b, vector, errors)`` for ``method="unrolled"``.
    """
    n = a.shape[-1]
    # What the arguments resolve to (backend, layout, compiler, kernel) is cached
    # per (library, dtype, device, n, layout, compile): resolving it reads dtype
    # names and devices, on JAX more than the compiled solve of one system costs.
    rkey = (ad, a.dtype, None if ad.single_device else ad.device(a), n, layout, compile)
    kern = _RESOLVED.get(rkey)
    if kern is None:
        layout, kern = _resolve(ad, a, int(n), layout, compile)
        if kern is None:  # Dask (a DaskAdapter): lazy blocks of the NumPy schedule, nothing to cache
            kernel = functools.partial(_dask_block, layout=layout)
            return ad.map_solve(a, b, vector, errors, kernel)  # type: ignore[attr-defined]
        with _LOCK:
            if len(_RESOLVED) > 256:  # bounded (dtype x device x n x options)
                _RESOLVED.clear()
            _RESOLVED[rkey] = kern
    if vector and kern.takes_vector:
        # JAX: the vector's expand and squeeze happen inside the compiled program
        x, bad = kern(a, b, (a.shape, (*b.shape, 1)), vector=True)
        if errors == "raise" and not _traced(ad, x):
            _check_singular(ad, a, b, x, bad, kern.flag_only, vector=True)
        return x
    bm = b[..., None] if vector else b
    x, bad = kern(a, bm, (tuple(a.shape), tuple(bm.shape)))
    if errors == "raise" and not _traced(ad, x):
        _check_singular(ad, a, bm, x, bad, kern.flag_only)
    return x[..., 0] if vector else x


def _resolve(ad: Adapter, a: Any, n: int, layout: str | None, compile: bool | None) -> tuple[str, _Kernel | None]:
    """The layout and kernel for these arguments (kernel None: Dask); argument errors raised here."""
    if n > MAX_N:
        raise ValueError(
            f"solve_unrolled: n = {n} is above the unrolled solver's limit of {MAX_N} "
            "(its code grows like n³ and LAPACK wins long before); use method='native'"
        )
    if layout is None:
        layout = DEFAULT_LAYOUT.get(backend := ad.backend(a), "batch-first")
    else:
        if layout not in LAYOUTS:
            raise ValueError(f"solve_unrolled: `layout` must be None or one of {LAYOUTS}, got {layout!r}")
        backend = ad.backend(a)
    if backend == "dask":
        if compile:
            raise ValueError("solve_unrolled: no compiler for the dask backend; pass compile=None or False")
        return layout, None
    complex_ = ad.kind(a.dtype) == "c"
    compiled = _resolve_compile(backend, compile, complex_)
    return layout, _kernel(ad, backend, n, a, layout, compiled)


def solve_unrolled(
    a: Any,
    b: Any,
    /,
    *,
    errors: str = "raise",
    layout: str | None = None,
    compile: bool | None = None,
    xp: Any = None,
) -> Any:
    """Solve many small systems ``a @ x = b`` with Gaussian elimination unrolled for ``n``.

    Same semantics as :func:`xlinalg.solve` (right-hand-side rule, batch
    broadcasting, dtype rule, singular members), computed by straight-line
    elementwise code over the batch (partial pivoting, written once against the
    array API standard) that each backend compiles: ``jax.jit`` on JAX,
    ``torch.compile`` on PyTorch where a compiler works, one CUDA elementwise
    kernel on CuPy; NumPy, Dask and array-api-strict run it eagerly (slower than
    their LAPACK). See ``docs/unrolled.md`` for when it wins.

    Parameters
    ----------
    a : array, shape ``(..., n, n)``
        Matrix or stack of matrices, ``1 <= n <= 8`` (:data:`MAX_N`).
    b : array, shape ``(n,)`` or ``(..., n, K)``
        Right-hand side, as in :func:`xlinalg.solve`.
    errors : {"raise", "nan"}, optional
        ``"raise"``: :class:`xlinalg.LinAlgError` naming the exactly singular
        members (a zero pivot after partial pivoting); this reads a mask from the
        device (a sync). ``"nan"``: NaN for those members, no sync. Under
        ``jax.jit`` or ``torch.compile`` NaN whatever `errors`; on Dask the error
        is raised by ``compute()``.
    layout : {None, "batch-first", "batch-last"}, optional
        Storage inside the solver: batch-first reads each entry as a strided
        view of `a`; batch-last first copies `a` to ``(n*n, batch)`` so that every
        entry is contiguous. ``None``: the layout measured fastest on the backend.
    compile : bool, optional
        ``None`` (default): compile where the backend has a compiler that works
        here (torch.compile's first call takes seconds: docs/unrolled.md; later
        processes reuse its on-disk cache). ``True``: require it (error if unavailable). ``False``:
        run the schedule eagerly.
    xp : namespace, optional
        The array namespace; inferred from `a` and `b` by default.

    Returns
    -------
    array, shape ``(..., n)`` or ``(..., n, K)``
        The solution in the inputs' library and device.

    Raises
    ------
    LinAlgError
        If a member is exactly singular and ``errors="raise"`` (eager).
    ValueError
        For shapes :func:`xlinalg.solve` refuses, ``n > 8``, an unknown
        `layout`, or ``compile=True`` on a backend without a compiler.
    TypeError
        For dtypes :func:`xlinalg.solve` refuses.

    Examples
    --------
    >>> import numpy as np
    >>> from xlinalg._unrolled import solve_unrolled
    >>> a = np.array([[[0.0, 2.0], [1.0, 1.0]], [[4.0, 0.0], [0.0, 2.0]]])
    >>> solve_unrolled(a, np.array([2.0, 2.0]))
    array([[1. , 1. ],
           [0.5, 1. ]])
    """
    ad, a, b = _dispatch.adapter2(a, b, "a", "b", xp)
    sa, sb = a.shape, b.shape
    vector = len(sb) == 1
    _validate.solve_shapes(ad, a, b, vector)
    _validate.check_errors(errors)
    if a.dtype != b.dtype or a.dtype not in ad.solve_dtypes:
        a, b = _validate.promote_linalg(ad, a, b, "solve")
    ad.check_same_device(a, b, "a", "b")
    if 0 in tuple(sa) or 0 in tuple(sb):
        return _validate.empty_solve(ad, a, b, vector)
    return solve_adapter(ad, a, b, vector, errors, layout=layout, compile=compile)


# ====================================================================== selection
class SelectionRule(NamedTuple):
    """Where ``method="auto"`` picks the unrolled solver on one (backend, dtype).

    Derived from ``benchmarks/results/unrolled-cpu.json`` by
    ``python benchmarks/unrolled.py --derive`` (see :func:`prefer_unrolled`).
    The tuples are indexed by ``n - 1``.
    """

    #: largest n such that every n from 1 up wins (by >= 20%) from some batch size on
    n_max: int
    #: per n: the smallest measured number of systems from which it wins at every larger one
    batch_min: tuple[int, ...]
    #: only use an already compiled solver, never compile one automatically
    warm_only: bool
    #: per n: median first-call (compile) seconds beyond the native path's own first call
    extra_first_call_s: tuple[float, ...]
    #: per n: smallest measured steady-state saving per system (seconds) from batch_min up
    saving_per_system_s: tuple[float, ...]


def _load_selection(path: str | None = None) -> dict[tuple[str, str], SelectionRule]:
    """The shipped selection table (package data next to this module).

    The file is generated by ``python benchmarks/unrolled.py --derive
    benchmarks/results/unrolled-cpu.json`` (a test checks it equals that
    derivation); a rule whose lists do not have ``n_max`` entries is refused.
    """
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_unrolled_selection.json")
    with open(path, encoding="utf-8") as f:
        rules = json.load(f)["rules"]
    table = {}
    for r in rules:
        rule = SelectionRule(
            n_max=int(r["n_max"]),
            batch_min=tuple(int(v) for v in r["batch_min"]),
            warm_only=bool(r["warm_only"]),
            extra_first_call_s=tuple(float(v) for v in r["extra_first_call_s"]),
            saving_per_system_s=tuple(float(v) for v in r["saving_per_system_s"]),
        )
        lists = (rule.batch_min, rule.extra_first_call_s, rule.saving_per_system_s)
        if not 1 <= rule.n_max <= MAX_N or any(len(v) != rule.n_max for v in lists):
            raise ValueError(f"{path}: the rule for {r['backend']}/{r['dtype']} is malformed: {r}")
        table[(str(r["backend"]), str(r["dtype"]))] = rule
    return table


#: (backend, dtype) -> rule, from ``_unrolled_selection.json``. Absent: never
#: automatic, only ``method="unrolled"`` (GPU backends: not yet measured; dask,
#: array-api-strict: eager, never measured faster; float32 on numpy and torch:
#: not measured).
SELECTION: dict[tuple[str, str], SelectionRule] = _load_selection()

_ASKED: dict[tuple[str, int, int, str], int] = {}


def prefer_unrolled(backend_name: str, n: int, batch: int, dtype_name: str) -> bool:
    """Whether ``method="auto"`` should use the unrolled solver: the measured rule.

    True when :data:`SELECTION` has a rule for (backend, dtype) with
    ``n <= n_max`` and ``batch >= batch_min[n - 1]``, and either a compiled
    solver for (backend, n, dtype, batch) already exists in this process, or
    (rules without ``warm_only``) the compile has been paid for: this (backend,
    n, batch, dtype) has been asked about more than
    ``extra_first_call_s[n - 1] / (saving_per_system_s[n - 1] * batch)`` times,
    the calls a compile needs to amortize itself (0 where compiling costs no more
    than the native path's own first call: JAX compiles its LAPACK wrapper per
    shape too). The calls are counted here.

    Parameters
    ----------
    backend_name : str
        Backend id, e.g. ``"jax-cpu"`` (:func:`xlinalg.backend_of`).
    n : int
        Matrix size.
    batch : int
        Number of systems (the product of the broadcast batch dimensions).
    dtype_name : str
        ``"float32"``, ``"float64"``, ...

    Returns
    -------
    bool

    Examples
    --------
    >>> from xlinalg._unrolled import prefer_unrolled
    >>> prefer_unrolled("numpy", 5, 100_000, "float64")
    False
    """
    rule = SELECTION.get((backend_name, dtype_name))
    if rule is None or not 1 <= n <= rule.n_max or batch < rule.batch_min[n - 1]:
        return False
    if is_warm(backend_name, n, dtype_name, batch):
        return True
    if rule.warm_only:
        return False
    saving = max(rule.saving_per_system_s[n - 1] * batch, 1e-12)
    need = math.ceil(rule.extra_first_call_s[n - 1] / saving)
    key = (backend_name, n, batch, dtype_name)
    with _LOCK:
        if len(_ASKED) > 1024:
            _ASKED.clear()
        count = _ASKED[key] = _ASKED.get(key, 0) + 1
    return count > need


#: the values of xl.solve's ``method=`` option
METHODS = ("auto", "native", "unrolled")

_LIBRARY = {"numpy": "NumPy", "jax": "JAX", "torch": "PyTorch", "cupy": "CuPy"}
#: adapter ``library`` name -> the smallest batch_min of its rules (a cheap early exit)
_AUTO_MIN_BATCH: dict[str, int] = {}
#: adapter ``library`` name -> the largest n any of its rules takes (numpy: 1, so a
#: batch of 5x5 systems leaves at once instead of reading dtype names)
_AUTO_MAX_N: dict[str, int] = {}
#: adapter ``library`` names all of whose rules are ``warm_only`` (torch): no compiled
#: kernel in this process means no rule can say yes (an early exit)
_WARM_ONLY: set[str] = set()
_NOT_WARM_ONLY: set[str] = set()


def _index_selection() -> None:
    """Fill the early-exit tables above from :data:`SELECTION` (which may be empty)."""
    for (backend, _dtype), rule in SELECTION.items():
        lib = _LIBRARY.get(backend.split("-")[0], backend)
        _AUTO_MIN_BATCH[lib] = min(_AUTO_MIN_BATCH.get(lib, 1 << 62), *rule.batch_min)
        _AUTO_MAX_N[lib] = max(_AUTO_MAX_N.get(lib, 0), rule.n_max)
        (_WARM_ONLY if rule.warm_only else _NOT_WARM_ONLY).add(lib)
    _WARM_ONLY.difference_update(_NOT_WARM_ONLY)


_index_selection()


def use_unrolled(ad: Adapter, a: Any, b: Any, vector: bool, method: str) -> bool:
    """xl.solve's choice for ``method=``: True to call :func:`solve_adapter`.

    ``"native"``: False; ``"unrolled"``: True; ``"auto"``: :func:`prefer_unrolled`
    for the backend, n, number of systems and dtype of validated `a` and `b`
    (libraries without a rule, and batches below every rule's, return at once).

    Raises
    ------
    ValueError
        If `method` is not one of :data:`METHODS`.
    """
    if method == "auto":
        lo = _AUTO_MIN_BATCH.get(ad.library)
        if lo is None or (ad.library in _WARM_ONLY and not _KERNELS):
            return False
        n = a.shape[-1]
        if n > _AUTO_MAX_N[ad.library]:
            return False
        sa = tuple(a.shape[:-2])
        sb = () if vector else tuple(b.shape[:-2])
        batch = math.prod(sa if sa == sb or not sb else _validate.broadcast_shapes(sa, sb))
        if batch < lo:
            return False
        return prefer_unrolled(ad.backend(a), int(n), batch, ad.dtype_name(a.dtype))
    if method == "native":
        return False
    if method == "unrolled":
        return True
    raise ValueError(f"solve: `method` must be one of {METHODS}, got {method!r}")
