"""A third renderer: the schedule as ufunc calls writing into reused buffers.

The Python rendering (:func:`._schedule.python_function`) makes one new array
per statement: on NumPy, eagerly, that is ~200 allocations of the batch's size
per solve, and above the allocator's small-block sizes each is fresh memory
(page faults). This renderer runs the same statements, in the same order and
with the same operations (so the same results, bit for bit), as ufunc calls with
``out=`` into a few buffers reused as values die (a linear scan over the
program), on chunks of the batch small enough for the buffers to stay in the
cache. The namespace needs NumPy's ufunc protocol (``out=``, ``copyto`` with
``where=``): NumPy, CuPy.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from ._schedule import _LOCK, _apply, _Emitter, _factor


class _Op(NamedTuple):
    name: str  # the value it defines
    op: str  # abs, gt, eq0, or, mul, sub, div, where
    args: tuple[str, ...]  # value names, or "one" / "nan" / "0"


class _OpEmitter(_Emitter):
    """Records the schedule as operations (nested expressions get their own names)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[_Op] = []
        self._pending: dict[str, tuple[str, tuple[str, ...]]] = {}

    def _node(self, op: str, *args: str) -> str:
        key = f"@{len(self._pending)}"
        self._pending[key] = (op, args)
        return key

    def _define(self, name: str, key: str) -> None:
        op, args = self._pending.pop(key)
        flat = []
        for arg in args:
            if arg in self._pending:  # a nested expression: a value of its own
                self._count += 1
                inner = f"t_{self._count}"
                self._define(inner, arg)
                arg = inner
            flat.append(arg)
        self.ops.append(_Op(name, op, tuple(flat)))

    def let(self, base: str, expr: str) -> str:
        self._count += 1
        name = f"{base}_{self._count}"
        if expr in self._pending:
            self._define(name, expr)
        else:  # a load (an input entry)
            self.lines.append(name)
            self.ops.append(_Op(name, "load", (expr,)))
        return name

    def abs_(self, x: str) -> str:
        return self._node("abs", x)

    def where(self, c: str, x: str, y: str) -> str:
        return self._node("where", c, x, y)

    def gt(self, x: str, y: str) -> str:
        return self._node("gt", x, y)

    def eq0(self, x: str) -> str:
        return self._node("eq0", x)

    def le(self, x: str, y: str) -> str:
        return self._node("le", x, y)

    def or_(self, x: str, y: str) -> str:
        return self._node("or", x, y)

    def mul(self, x: str, y: str) -> str:
        return self._node("mul", x, y)

    def sub(self, x: str, y: str) -> str:
        return self._node("sub", x, y)

    def div(self, x: str, y: str) -> str:
        return self._node("div", x, y)


_UFUNC = {"abs": "_abs", "gt": "_greater", "le": "_less_equal", "or": "_or", "mul": "_multiply", "sub": "_subtract",
          "div": "_divide"}
_CONSTANTS = ("one", "nan", "tol")


class _Plan(NamedTuple):
    """A rendered program: its source and the buffers it needs, per kind."""

    name: str
    source: str
    #: per buffer: (kind, shape class): kind "T" (the dtype), "R" (its real
    #: dtype: moduli), "B" (bool); shape "e" (an entry, (C,)) or "r" (a
    #: right-hand-side row, (K, C))
    buffers: list[tuple[str, str]]


def _kind(op: str, arg_kinds: list[str]) -> str:
    if op in ("gt", "le", "eq0", "or"):
        return "B"
    if op == "abs":
        return "R"
    if op == "where":
        return arg_kinds[1] if arg_kinds[1] != "C" else arg_kinds[2]
    if all(k in ("R", "C") for k in arg_kinds):  # tol * |a_ik|: real
        return "R"
    return "T"


def _plan(n: int) -> _Plan:
    """Render the schedule for ``n`` over chunks: ``fn(at, bt, xt, bad, one, nan, tol, buf)``.

    `at` ``(n*n, C)`` and `bt` ``(n, K, C)`` are the chunk's inputs, batch last,
    copies the program may overwrite; `xt` ``(n, K, C)`` and `bad` ``(C,)`` receive
    the solution (NaN rows for singular members) and the zero-pivot mask; `buf`
    are the buffers of :attr:`_Plan.buffers`.
    """
    e = _OpEmitter()
    A = [[e.let(f"a{i}{j}", f"at[{i * n + j}]") for j in range(n)] for i in range(n)]
    B = [e.let(f"b{i}", f"bt[{i}]") for i in range(n)]
    f = _factor(e, [list(r) for r in A])
    X = _apply(e, f, B)
    rows = [e.let(f"x{k}", e.where(f.zero, "nan", x)) for k, x in enumerate(X)]
    ops = e.ops
    last: dict[str, int] = {}
    for t, o in enumerate(ops):
        for a in o.args:
            last[a] = t
    for name in (*rows, f.zero):  # outputs live to the end
        last[name] = len(ops)
    kind: dict[str, str] = dict.fromkeys(_CONSTANTS, "C")
    shape: dict[str, str] = dict.fromkeys(_CONSTANTS, "e")
    where_is: dict[str, str] = {}  # value -> the expression holding it (a buffer or a view)
    owned: dict[str, int] = {}  # value -> its buffer number (values in a buffer we may reuse)
    free: dict[tuple[str, str], list[int]] = {}
    buffers: list[tuple[str, str]] = []
    lines = []

    def take(k: str, s: str) -> int:
        pool = free.get((k, s))
        if pool:
            return pool.pop()
        buffers.append((k, s))
        return len(buffers) - 1

    def release(t: int, names: tuple[str, ...]) -> None:
        for a in dict.fromkeys(names):
            if last.get(a) == t and a in owned:
                b = owned.pop(a)
                free.setdefault(buffers[b], []).append(b)

    for t, o in enumerate(ops):
        if o.op == "load":
            # an entry of a (a row of at) or a row of b (bt[i], (K, C)): our copies
            kind[o.name], shape[o.name] = "T", ("e" if o.args[0].startswith("at") else "r")
            where_is[o.name] = o.args[0]
            continue
        ks = [kind[a] for a in o.args]
        k = _kind(o.op, ks)
        s = "r" if any(shape[a] == "r" for a in o.args) else "e"
        kind[o.name], shape[o.name] = k, s
        args = [where_is.get(a, a) for a in o.args]
        # the output: a dying argument's place (exact overlap is safe for ufuncs),
        # or a loaded row of a or b that dies here, or a free buffer
        dst = None
        if o.op == "where":
            c, x, y = o.args
            if last.get(y) == t and y in where_is and kind[y] == k and shape[y] == s:
                dst = where_is[y]  # where(c, x, y) into y's place: x copied where c
                lines.append(f"    _copyto({dst}, {args[1]}, where={args[0]})")
                if y in owned:
                    owned[o.name] = owned.pop(y)
                where_is[o.name] = dst
                release(t, (c, x))
                continue
            b = take(k, s)
            dst = f"buf[{b}]"
            lines.append(f"    _copyto({dst}, {args[2]})")
            lines.append(f"    _copyto({dst}, {args[1]}, where={args[0]})")
            owned[o.name], where_is[o.name] = b, dst
            release(t, o.args)
            continue
        for a in o.args:
            if a in where_is and last.get(a) == t and kind[a] == k and shape[a] == s:
                dst = where_is[a]
                if a in owned:
                    owned[o.name] = owned.pop(a)
                break
        if dst is None:
            b = take(k, s)
            dst = f"buf[{b}]"
            owned[o.name] = b
        where_is[o.name] = dst
        if o.op == "eq0":
            lines.append(f"    _equal({args[0]}, 0, out={dst})")
        else:
            lines.append(f"    {_UFUNC[o.op]}({', '.join(args)}, out={dst})")
        release(t, o.args)
    for r, x in enumerate(rows):
        lines.append(f"    _copyto(xt[{r}], {where_is[x]})")
    lines.append(f"    _copyto(bad, {where_is[f.zero]})")
    name = f"_unrolled_solve_inplace_n{n}"
    head = f"def {name}(at, bt, xt, bad, one, nan, tol, buf):"
    return _Plan(name, "\n".join([head, *lines]) + "\n", buffers)


_PLANS: dict[int, _Plan] = {}


def inplace_function(n: int, ns: Any) -> tuple[Callable[..., None], list[tuple[str, str]]]:
    """The program for ``n`` over the ufuncs of `ns` (NumPy's), and its buffers."""
    with _LOCK:
        plan = _PLANS.get(n)
        if plan is None:
            plan = _PLANS[n] = _plan(n)
    modname = f"xlinalg._unrolled_generated_inplace_n{n}"
    code = compile(plan.source, f"<{modname}: unrolled solve n={n}, in place>", "exec")
    mod = types.ModuleType(modname)
    mod.__dict__.update(
        _abs=ns.abs, _greater=ns.greater, _less_equal=ns.less_equal, _equal=ns.equal, _or=ns.logical_or,
        _multiply=ns.multiply, _subtract=ns.subtract, _divide=ns.divide, _copyto=ns.copyto,
    )
    sys.modules.setdefault(modname, mod)
    exec(code, mod.__dict__)
    return mod.__dict__[plan.name], plan.buffers
