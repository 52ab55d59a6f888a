"""The singular rule's LAPACK helpers for NumPy's adapter: one matrix by ``gesv``
with a screen, and the exact power-of-two scalings that keep LU's pivots normal."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._lib import _singular

_INF = float("inf")

#: members whose largest modulus lies outside [_LO, _HI] are scaled by a power of two
#: before LAPACK factors them for the rule (exact): their pivots would otherwise be
#: subnormal or overflow, where LU loses the precision the rule compares at
_LO, _HI = 2.0**-400, 2.0**400


def _pow2(e: Any) -> tuple[Any, Any]:
    """``2**-e`` as two factors, each representable (``e`` up to ±1100)."""
    h = -(e // 2)
    return np.ldexp(1.0, h), np.ldexp(1.0, -e - h)


def _gesv_ruled(lap: Any, a: Any, b: Any) -> tuple[Any, Any, Any]:
    """``(x, pivots, scale)`` of one matrix by LAPACK's gesv; ``pivots`` None when a
    screen clears the member (docs/performance.md, "singular rule").

    The screen: with ``m = max|a_ij|`` finite (LAPACK's ``lange('M')`` propagates
    NaN), every pivot ``|u_kk| > n·eps·m`` and a finite solution, no column can fail
    the rule (``c_k <= m``) and `b` is finite (a non-finite entry of `b` reaches the
    solution through finite factors). Otherwise the caller applies the rule to
    ``pivots`` against ``scale`` (the column scales of the matrix factored). A matrix
    whose ``m`` lies outside ``[_LO, _HI]`` is factored scaled by a power of two
    (exact; the rule is invariant under it) and the solution scaled back.
    """
    gesv, lange, _getrf, eps = lap
    m = lange("M", a)
    s1 = None
    if not _LO <= m <= _HI and 0 < m < _INF:
        s1, s2 = _pow2(math.frexp(m)[1])
        a = a * s1 * s2
        m = lange("M", a)
    lu, _, x, _ = gesv(a, b)
    if s1 is not None:
        with np.errstate(over="ignore"):  # (s·a) x' = b: x = s·x' (inf where it overflows)
            x = x * s1 * s2
    if m < _INF and min(map(abs, lu.diagonal().tolist())) > (a.shape[0] * eps) * m and lange("M", x) < _INF:
        return x, None, None
    return x, lu.diagonal(), np.abs(a).max(axis=0)


def _pow2_normalized(a: Any, scale: Any, fin: Any, factor: bool = False) -> Any:
    """`a` and its column scales with each finite member whose largest modulus lies
    outside ``[_LO, _HI]`` scaled by a power of two (exact; see :data:`_LO`); with
    `factor`, also the two factors whose product is each member's (None when no
    member was scaled; one factor could overflow)."""
    m = scale.max(axis=-1)
    out = fin & ((m < _LO) | (m > _HI)) & (m > 0)
    if not out.any():
        return (a, scale, None) if factor else (a, scale)
    e = np.where(out, np.frexp(np.where(out, m, 1.0))[1], 0)
    s1, s2 = _pow2(e)
    a = a * s1[..., None, None] * s2[..., None, None]
    scale = scale * s1[..., None] * s2[..., None]
    return (a, scale, (s1, s2)) if factor else (a, scale)


def _column_scale(a: Any) -> Any:
    """``_singular.column_scale`` for NumPy: the same numbers (NaN propagates), by
    ``n - 1`` elementwise maxima over rows for small matrices (NumPy's reduction over
    a short middle axis costs 4× more on a stack of 5×5: docs/performance.md)."""
    aa = np.abs(a)
    n = a.shape[-1]
    if n > 16:
        return aa.max(axis=-2)
    c = aa[..., 0, :]
    for i in range(1, n):
        c = np.maximum(c, aa[..., i, :])
    return c


def _screen_bound(dtype: Any, n: int) -> float:
    """``log(n·eps·2**(n(n-1)/2)·16)``: :meth:`NumPyAdapter.verdict`'s screen clears
    a member whose ``log|det| - sum(log c_k)`` exceeds it (useless above about -2:
    no matrix of that size clears it)."""
    return math.log(_singular.tolerance(np, dtype, n)) + n * (n - 1) / 2 * math.log(2) + math.log(16)
