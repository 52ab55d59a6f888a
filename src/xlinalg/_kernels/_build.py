"""What every unrolled kernel is made of, whatever the library.

A kernel (:class:`Kernel`) wraps a ``run(a, bm) -> (x, singular)`` function
built for one (backend, n, dtype, device, layout, compiled) key. The library
modules build ``run`` from the generated code (:mod:`._schedule`) with
:func:`eager_run` (flatten the batch, solve, assemble the rows); a library with
no builder of its own gets :func:`make_generic` (the standard's functions,
eagerly).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .._lib import _singular
from .._lib._shapes import broadcast_shapes
from ._schedule import assemble, python_function, std_namespace


class Kernel:
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
        #: whether ``run`` returns a third value, ``clean``: True when no member is
        #: singular, has NaN or inf in its input or a solution that is not finite
        #: (numba's kernel: its status flags), so that nothing needs checking
        self.reports_clean = bool(getattr(run, "reports_clean", False))
        #: whether a compile serves one input shape only (JAX), not every batch size
        self.per_shape = bool(getattr(run, "per_shape", False))
        #: ``traced(x)``: whether the result `x` is inside the caller's trace (torch:
        #: ``torch.compiler.is_compiling``), where no exception can be raised; None:
        #: the adapter's :meth:`traced` alone decides
        self.traced: Callable[[Any], bool] | None = getattr(run, "traced", None)
        self.calls = 0
        #: numbers of systems solved (bounded)
        self.batches: set[int] = set()
        #: seconds of the first call of each input signature (compile + run)
        self.first_call_s: dict[tuple[Any, ...], float] = {}

    def __call__(self, a: Any, bm: Any, signature: tuple[Any, ...], vector: bool = False) -> tuple[Any, ...]:
        """Solve; with `vector` (only where ``run.takes_vector``), `bm` is ``(n,)`` and `x` too.
        ``(x, singular)``, or ``(x, singular, clean)`` where ``reports_clean``."""
        self.calls += 1
        args = (a, bm, True) if vector else (a, bm)
        if signature in self.first_call_s:
            return self.run(*args)
        t0 = time.perf_counter()
        out = self.run(*args)
        if len(self.first_call_s) < 64:  # bounded: a record, not a cache
            self.first_call_s[signature] = time.perf_counter() - t0
            self.batches.add(math.prod(broadcast_shapes(signature[0][:-2], signature[1][:-2])))
        return out


def flatten(ns: Any, a: Any, bm: Any, n: int) -> tuple[Any, Any, tuple[int, ...], int, int]:
    """Broadcast the batch dimensions and flatten them: ``(B, n, n)``, ``(B, n, K)``."""
    sa, sb = tuple(a.shape[:-2]), tuple(bm.shape[:-2])
    batch = sa if sa == sb else broadcast_shapes(sa, sb)
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


def eager_run(ns: Any, core: Callable[..., Any], n: int, layout: str, consts: Callable[[Any], tuple[Any, Any, Any]], assemble_inside: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    """Wrap a generated (possibly compiled) core: flatten, solve, assemble, unflatten."""

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        a3, b3, batch, _nb, k = flatten(ns, a, bm, n)
        one, nan, tol = consts(a)
        if assemble_inside:
            x3, bad = core(a3, b3, one, nan, tol)
        else:
            rows, bad = core(a3, b3, one, nan, tol)
            x3 = assemble(ns, rows, layout)
        if len(batch) != 1:
            x3 = ns.reshape(x3, (*batch, n, k))
            bad = ns.reshape(bad, batch)
        return x3, bad

    return run


def make_generic(ad: Any, n: int, layout: str, dtype: Any, device: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    xp = ad.xp
    ns = std_namespace(xp)
    core = python_function(n, layout, ns)
    one = xp.asarray(1, dtype=dtype, device=device)
    nan = xp.asarray(float("nan"), dtype=dtype, device=device)
    tol = xp.abs(one) * _singular.tolerance(xp, dtype, n)  # real
    return eager_run(ns, core, n, layout, lambda a: (one, nan, tol), False)


def chunks(nb: int, target: int) -> tuple[int, int]:
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
