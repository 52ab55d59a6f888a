"""xlinalg's one rule for singular matrices, written against the array API standard.

docs/semantics.md, "solve: singular, non-finite and subnormal input", states it;
every path that factors a matrix (``solve`` with every method and backend,
``solve_many``, Dask's blocks, and the functions that reuse it: ``inv``, ``det``,
the compiled NumPy kernel) decides with these functions, so that the verdict does
not depend on which library's LAPACK ran:

* a member ``a`` (``n×n``) is **singular** when LU with partial pivoting of ``a``,
  computed in ``a``'s precision, has a pivot ``u_kk`` with
  ``|u_kk| <= n * eps * c_k``, where ``c_k = max_i |a_ik|`` is the largest modulus
  in column ``k`` of ``a`` and ``eps`` the machine epsilon of ``a``'s real dtype
  (:func:`tolerance` is ``n * eps``);
* a member whose ``a`` or ``b`` holds NaN or inf is **not finite**: never
  singular, and its whole solution is NaN (:func:`finite_members`).

Scale: multiplying ``a`` by any number, or any column of ``a`` by a power of
two, leaves the verdict unchanged. An exact zero pivot is always singular (the
tolerance is never negative), a subnormal one is not when its column is
subnormal too (``1e-310 * I``).

The API is stable (reused by other modules and by the compiled kernels):

``tolerance(xp, dtype, n)``
    the relative tolerance ``n * eps(dtype)``, a Python float.
``column_scale(xp, a)``
    ``c``, shape ``(..., n)``: NaN or inf where a column holds one.
``singular_from_pivots(xp, pivots, scale, tol)``
    the mask ``(...)`` of members with some ``|u_kk| <= tol * c_k``.
``finite_members(xp, scale, b=None)``
    the mask ``(...)`` of members whose ``a`` (through its ``scale``) and ``b``
    are finite.
``lu_pivots(xp, a)``
    the diagonal of ``U`` (``(..., n)``) from LU with partial pivoting, vectorized
    over the batch with the standard's functions only (the reference, and the
    fallback where a library exposes no LU).
``singular_mask(xp, a)``
    the verdict for ``a`` alone (:func:`lu_pivots` and the rule).
``diagonal(xp, lu)``
    the diagonal of a packed LU factor ``(..., n, n)``.

Scalar code (a compiled kernel) applies the same comparison per pivot:
``abs(u_kk) <= tolerance(np, dtype, n) * c_k``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "column_scale",
    "diagonal",
    "finite_members",
    "lu_pivots",
    "singular_from_pivots",
    "singular_mask",
    "tolerance",
]


def tolerance(xp: Any, dtype: Any, n: int) -> float:
    """``n * eps``: the relative pivot tolerance for ``n×n`` matrices of `dtype`.

    `dtype` may be real or complex (the epsilon of its real dtype: float64's
    ``2**-52`` for complex128); `xp` is the namespace whose ``finfo`` reads it.
    """
    return int(n) * float(xp.finfo(dtype).eps)


def column_scale(xp: Any, a: Any) -> Any:
    """``c_k = max_i |a_ik|`` per column of each member: shape ``(..., n)``, real.

    NaN propagates (the standard's ``max``), so a column holding NaN or inf has a
    scale that is not finite (:func:`finite_members` reads that).
    """
    return xp.max(xp.abs(a), axis=-2)


def singular_from_pivots(xp: Any, pivots: Any, scale: Any, tol: float) -> Any:
    """Mask ``(...)``: members with some ``|pivots_k| <= tol * scale_k``.

    `pivots` ``(..., n)`` is the diagonal of ``U`` from LU with partial pivoting,
    `scale` ``(..., n)`` :func:`column_scale` of the same matrices, `tol`
    :func:`tolerance`. A NaN pivot or scale compares false (not singular: NaN
    input is :func:`finite_members`'s business); an inf scale makes every pivot
    "small", which :func:`finite_members` overrides in turn.
    """
    return xp.any(xp.abs(pivots) <= tol * scale, axis=-1)


def finite_members(xp: Any, scale: Any, b: Any = None) -> Any:
    """Mask ``(...)``: members whose `a` (through its :func:`column_scale`) and `b` are finite.

    `b` ``(..., n, k)`` (a vector given a trailing unit axis) or None; the result
    broadcasts the two batches.
    """
    fin = xp.all(xp.isfinite(scale), axis=-1)
    if b is not None:
        fin = xp.logical_and(fin, xp.all(xp.isfinite(b), axis=(-2, -1)))
    return fin


def diagonal(xp: Any, lu: Any) -> Any:
    """The diagonal ``(..., n)`` of `lu` ``(..., n, n)`` (``U``'s, for a packed LU)."""
    linalg = getattr(xp, "linalg", None)
    diag = getattr(linalg, "diagonal", None)
    if diag is not None:
        return diag(lu)
    n = lu.shape[-1]  # pragma: no cover - every namespace here has linalg.diagonal
    return xp.stack([lu[..., k, k] for k in range(n)], axis=-1)


def lu_pivots(xp: Any, a: Any) -> Any:
    """The pivots ``u_kk`` ``(..., n)`` of LU with partial pivoting of each member of `a`.

    Right-looking elimination (LAPACK's ``getf2`` order), the pivot chosen as
    LAPACK's ``i?amax`` does: the first largest ``|a_ik|`` (``|re| + |im|`` for
    complex). Written with the standard's functions only, functionally (JAX
    arrays cannot be assigned to), vectorized over the batch: ``n`` steps of
    ``O(n²)`` elementwise work per member. A member holding NaN or inf gets
    meaningless pivots (:func:`finite_members` excludes it).
    """
    n = int(a.shape[-1])
    dev = getattr(a, "device", None)
    rows = xp.reshape(xp.arange(n, device=dev), (n, 1))
    cols = xp.reshape(xp.arange(n, device=dev), (1, n))
    take = getattr(xp, "take_along_axis", None)
    zero = xp.zeros((), dtype=a.dtype, device=dev)
    one = xp.ones((), dtype=a.dtype, device=dev)
    cplx = xp.isdtype(a.dtype, "complex floating")
    pivots = []
    for k in range(n):
        if k < n - 1:
            ak = a[..., :, k]
            col = xp.abs(xp.real(ak)) + xp.abs(xp.imag(ak)) if cplx else xp.abs(ak)
            # rows above k are done: never chosen (-1 < any modulus)
            col = xp.where(rows[:, 0] >= k, col, xp.asarray(-1.0, dtype=col.dtype, device=dev))
            p = xp.argmax(col, axis=-1)  # the first largest, as i?amax
            p = p[..., None]  # (..., 1)
            # row i of the swapped matrix comes from row src(i): k <-> p
            r = xp.astype(rows[:, 0], p.dtype)
            kk = xp.full_like(r, k)
            src = xp.where(r == kk, p, xp.where(r == p, kk, r))  # (..., n)
            if take is not None:
                try:
                    a = take(a, xp.broadcast_to(src[..., None], a.shape), axis=-2)
                except RuntimeError:  # array-api-strict before API 2024.12 refuses it
                    take = None
            if take is None:  # an exact permutation product for finite members
                perm = xp.astype(src[..., :, None] == xp.astype(cols, src.dtype), a.dtype)
                a = xp.matmul(perm, a)
        piv = a[..., k, k]
        pivots.append(piv)
        if k < n - 1:
            safe = xp.where(piv == zero, one, piv)
            lcol = xp.where(rows[:, 0] > k, a[..., :, k] / safe[..., None], zero)  # (..., n)
            upd = lcol[..., :, None] * a[..., k : k + 1, :]  # (..., n, n)
            a = a - xp.where((rows > k) & (cols > k), upd, zero)
    return xp.stack(pivots, axis=-1)


def singular_mask(xp: Any, a: Any) -> Any:
    """The rule's verdict for each member of `a` ``(..., n, n)``: mask ``(...)``.

    Singular members whose `a` is finite (members with NaN or inf are never
    singular: combine with :func:`finite_members` for the whole rule). Computed by
    :func:`lu_pivots`: use a library's own LU where it has one (same verdict,
    faster).
    """
    n = int(a.shape[-1])
    scale = column_scale(xp, a)
    sing = singular_from_pivots(xp, lu_pivots(xp, a), scale, tolerance(xp, a.dtype, n))
    return xp.logical_and(sing, finite_members(xp, scale))
