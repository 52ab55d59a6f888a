"""The unrolled solver's algorithm, written once, and its two renderers.

:func:`_schedule` emits Gaussian elimination with partial pivoting for a fixed
``n`` as straight-line single-assignment code, every value an array over the
batch. :class:`_PyEmitter` renders it as Python over an array namespace (every
backend, compiled or eager; :func:`python_function`), :class:`_CEmitter` as the
body of a C elementwise kernel (one thread per system; :func:`c_source`, the
CuPy kernel). Nothing here knows a library: the namespace is passed in.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from typing import Any, NamedTuple

#: the storage orders the solver can use inside (see docs/unrolled.md)
LAYOUTS = ("batch-first", "batch-last")

#: largest n the unrolled solver accepts. The program grows like n³ (n = 8: 731
#: statements, n = 16: 4999) and so do compile times (seconds at n = 8, minutes
#: at n = 16: docs/unrolled.md), while LAPACK already wins at n = 8 on every CPU
#: backend measured (benchmarks/results/unrolled-cpu.json).
MAX_N = 8

#: guards the generated-source cache and module counter (and, elsewhere in the
#: package, the kernel caches)
_LOCK = threading.RLock()


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

    def le(self, x: str, y: str) -> str:
        return f"({x} <= {y})"

    def or_(self, x: str, y: str) -> str:
        return f"({x} | {y})"

    def mul(self, x: str, y: str) -> str:
        return f"({x} * {y})"

    def sub(self, x: str, y: str) -> str:
        return f"({x} - {y})"

    def div(self, x: str, y: str) -> str:
        return f"({x} / {y})"

    one = "one"
    #: the singular rule's relative tolerance n * eps (``_lib/_singular.py``), real
    tol = "tol"


class _Factors(NamedTuple):
    """Names of the values the right-hand-side phase needs."""

    swaps: list[list[tuple[int, str]]]  # per step k: (row i, mask "swap rows k and i")
    lower: list[list[str]]  # lower[i][k]: multiplier of row k subtracted from row i
    upper: list[list[str]]  # upper[k][j], j > k: the U factor
    recip: list[str]  # 1 / pivot k (1 where the pivot was small)
    zero: str  # mask: some pivot was <= tol * its column's scale (the member is singular)


def _factor(e: _Emitter, A: list[list[str]]) -> _Factors:
    """LU with partial pivoting of the n×n matrix of value names `A` (updated in place).

    Pivoting is a compare-and-swap of row k with each row i below it, keeping the
    larger |candidate| in row k (strictly larger: the first maximum wins, as
    LAPACK's ``i?amax``). A zero pivot (every candidate 0) marks the member
    singular, and so does any pivot ``|u_kk| <= tol * c_k`` with ``c_k`` the largest
    modulus of column k of the input (xlinalg's singular rule, ``_lib/_singular.py``;
    ``tol`` is the constant ``n * eps``); the pivot is then replaced by 1 so that
    the member's arithmetic stays finite (no warnings, no inf) and its solution is
    set to NaN at the end.
    Multiplying by the pivot's reciprocal (as LAPACK's ``getf2`` does) rather than
    dividing keeps one division per column: XLA materializes a division with
    several users, and fewer of them mean fewer kernels.
    """
    n = len(A)
    swaps: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    lower = [[""] * n for _ in range(n)]
    recip = [""] * n
    zero = ""
    thresh = []  # tol * c_k, from the input's columns (before any swap)
    for k in range(n):
        c = e.let("c", e.abs_(A[0][k]))
        for i in range(1, n):
            ci = e.let("c", e.abs_(A[i][k]))
            c = e.let("c", e.where(e.gt(ci, c), ci, c))
        thresh.append(e.let(f"t{k}", e.mul(e.tol, c)))
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
        z = e.let("z", e.le(e.abs_(A[k][k]), thresh[k]))
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
    """Source of ``fn(a, b, one, nan, tol) -> (rows, singular)`` for ``a (B, n, n)``, ``b (B, n, K)``.

    `rows` are the n rows of the solution, NaN for singular members; `singular`
    is a ``(B,)`` mask. The caller assembles the rows (:func:`assemble`).

    batch-first: each matrix entry is the strided view ``a[:, i, j:j+1]`` of shape
    ``(B, 1)`` and each right-hand-side row ``b[:, i, :]`` of shape ``(B, K)``.
    batch-last: `a` is first copied to ``(n*n, B)`` (every entry a contiguous ``(B,)``
    vector) and `b` to ``(n*K, B)``; the solution rows are ``(K, B)``.
    """
    name = f"_unrolled_solve_n{n}_{layout.replace('-', '_')}"
    e = _PyEmitter()
    head = [f"def {name}(a, b, one, nan, tol):"]
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
#: the names of the modules the generated functions live in (``clear_cache`` drops them)
GENERATED_PREFIX = "xlinalg._unrolled_generated_"


def python_function(n: int, layout: str, ns: Any) -> Callable[..., Any]:
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
        modname = f"{GENERATED_PREFIX}{_MODULE_COUNT}"
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


def assemble(ns: Any, rows: Any, layout: str) -> Any:
    """The solution ``(B, n, K)`` from its rows (``(B, K)`` or ``(K, B)`` each)."""
    if layout == "batch-first":
        return ns.stack(list(rows), axis=1)
    return ns.permute_dims(ns.stack(list(rows), axis=0), (2, 0, 1))


def assemble_select(ns: Any, rows: Any, layout: str) -> Any:
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



# ====================================================================== C rendering (CuPy)
class _CEmitter(_Emitter):
    one = "((T)1)"
    tol = "tolv[0]"

    def assign(self, name: str, expr: str) -> str:
        boolean = name[0] == "z" or (name[0] == "s" and name[1].isdigit())
        return f"    const {'bool' if boolean else 'T'} {name} = {expr};"

    def abs_(self, x: str) -> str:
        return f"fabs({x})"

    def where(self, c: str, x: str, y: str) -> str:
        return f"({c} ? {x} : {y})"

    def or_(self, x: str, y: str) -> str:
        return f"({x} || {y})"


def c_source(n: int, layout: str) -> str:
    """Body of a CUDA elementwise kernel: one thread (index ``i``) solves one system.

    Parameters of the kernel: ``a`` (``(B, n, n)`` batch-first or ``(n, n, B)``
    batch-last), ``b`` (``(B, n, K)`` or ``(n, K, B)``), ``nanv`` (one NaN of type
    T), ``tolv`` (the rule's tolerance ``n * eps``, type T), ``nb`` (B), ``k`` (K); outputs ``x`` (shaped like ``b``) and ``bad`` (B,).
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
def std_namespace(xp: Any) -> Any:
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
