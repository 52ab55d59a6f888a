"""lstsq, pinv, matrix_rank: one SVD-based answer on every backend.

All three go through :func:`xlinalg.svd`/:func:`xlinalg.svdvals` (NaN or inf
input raises their ``LinAlgError``; Dask's tall-and-skinny matrices run its TSQR
SVD, lazily) with the array API standard's tolerance by default:
``max(M, N) * eps`` relative to the largest singular value (JAX's own ``pinv``
would use ten times that, NumPy's ``pinv`` 1e-15). Where the library has one
LAPACK call for it, both paths make that call instead (``_lstsq_fast.OwnCall``):
NumPy's ``gelsd`` gufunc for lstsq and its SVD gufunc for pinv/matrix_rank, on
NumPy and on torch-cpu tensors NumPy can view; torch's ``gelsd`` for CPU tensors
that need gradients. CUDA, JAX, traces and NaN/inf input run the SVD above.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _validate
from ._dispatch import adapter2
from ._fastpath import MISSING
from ._lib._declare import BadInput, Raises, declare
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._lstsq_fast import (
    _LSTSQ_FAST,
    _LSTSQ_OWN,
    _PINV_FAST,
    _PINV_OWN,
    _RANK_FAST,
    _RANK_OWN,
    LstsqResult,
)
from ._matmul import matmul
from ._matrix import matrix_input, real_dtype
from ._orthogonal import svd, svdvals
from .backends._base import Adapter

__all__ = ["LstsqResult", "lstsq", "matrix_rank", "pinv"]


def _svd_fails(fn: str) -> BadInput:
    return BadInput(Raises(LinAlgError, rf"{fn}: the SVD of `x` did not converge",
                           "svd's error: the SVD of `x` did not converge: `x` contains NaN or inf"),
                    note="Dask: when computed. Under `jax.jit`: NaN.")


def _pinv_reference(x: np.ndarray) -> np.ndarray:
    return np.linalg.pinv(x, rtol=max(x.shape[-2:]) * np.finfo(x.dtype).eps)


def _lstsq_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """NumPy's lstsq, its residuals always computed (xlinalg's shape), the standard's
    vector rule, and one matrix at a time (NumPy's lstsq takes no stacks)."""
    vector = b.ndim == 1
    bm = b[..., None] if vector else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    a2 = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b2 = np.broadcast_to(bm, (*batch, *bm.shape[-2:]))
    xs, rs, ranks, ss = [], [], [], []
    for ix in np.ndindex(*batch):
        x, _, rank, s = np.linalg.lstsq(a2[ix], b2[ix], rcond=None)
        xs.append(x)
        rs.append((np.abs(b2[ix] - a2[ix] @ x) ** 2).sum(axis=0))
        ranks.append(rank)
        ss.append(s)
    m, n = a.shape[-2:]
    x = np.reshape(xs, (*batch, n, bm.shape[-1]))
    r = np.reshape(rs, (*batch, bm.shape[-1])).real
    rank = np.reshape(np.asarray(ranks, dtype=np.int64), batch)
    s = np.reshape(ss, (*batch, min(m, n)))
    return (x[..., 0] if vector else x), (r[..., 0] if vector else r), rank, s


def _eps(ad: Adapter, x: Any) -> float:
    return float(np.finfo(np.dtype(ad.dtype_name(real_dtype(ad, x)))).eps)


def _cutoff(ad: Adapter, x: Any, s: Any, rtol: Any, fn: str, name: str = "rtol") -> Any:
    """``rtol * max(s)`` per member, shape ``(..., 1)``; `rtol` a number or an array
    broadcast against the batch (the standard's default: ``max(M, N) * eps``)."""
    xp = ad.xp
    smax = xp.max(s, axis=-1, keepdims=True)
    if rtol is None:
        return smax * (max(x.shape[-2:]) * _eps(ad, x))
    if isinstance(rtol, bool) or not (isinstance(rtol, (int, float)) or hasattr(rtol, "shape")):
        raise TypeError(f"{fn}: `{name}` must be None, a real number or an array, got {type(rtol).__name__} {rtol!r:.80}")
    if isinstance(rtol, (int, float)):
        if not rtol >= 0:
            raise ValueError(f"{fn}: `{name}` must be a non-negative number, got {rtol!r}")
        return smax * float(rtol)
    if isinstance(rtol, np.ndarray) and type(rtol) is not type(s):
        rtol = ad.asarray(rtol, s, name)
    return smax * ad.astype(rtol, s.dtype)[..., None]


def _default_int(ad: Adapter, x: Any) -> Any:
    return ad.xp.asarray(0, device=ad.device(x)).dtype


@declare(
    "linalg", args={"x": "matrix"}, reference=_pinv_reference, dtypes="linalg",
    how="xlinalg's `svd` (reduced), then the standard's operations",
    backends={"dask": ("xlinalg's `svd` on Dask, then Dask's operations", "lazy")},
    bad_input={"nan": _svd_fails("svd"), "inf": _svd_fails("svd")},
)
def pinv(x: Array, /, *, rtol: Any = None, xp: Namespace | None = None) -> Array:
    """Moore-Penrose pseudo-inverse of a matrix or of each matrix of a stack.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Integer and bool inputs are computed in float64.
    rtol : float or array, optional
        Singular values at most ``rtol * largest singular value`` are treated as
        zero. An array broadcasts against the batch ``(...)``. Default (the
        standard's, on every backend): ``max(M, N) * eps`` of `x`'s dtype.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., N, M)``
        In `x`'s library, device and floating dtype.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf (the SVD does not converge; NaN under ``jax.jit``).
    ValueError
        If `x` has fewer than two dimensions, or `rtol` is negative.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.pinv(xp.asarray([[2.0, 0.0], [0.0, 0.0]])), "numpy")
    array([[0.5, 0. ],
           [0. , 0. ]])
    """
    if xp is None and rtol is None and (f := _PINV_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "pinv", xp)
    xpn = ad.xp
    m, n = x.shape[-2:]
    if 0 in tuple(x.shape):
        _cutoff_check(rtol)
        return keep_subclass(xpn.zeros((*x.shape[:-2], n, m), dtype=x.dtype, device=ad.device(x)), x)
    if rtol is None and (r := _PINV_OWN(ad, x)) is not MISSING:
        return keep_subclass(r, x) if ad.numpy_arrays else r
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _cutoff(ad, x, s, rtol, "pinv")
    sinv = xpn.where(keep, 1.0 / xpn.where(keep, s, xpn.ones_like(s)), xpn.zeros_like(s))
    v = xpn.matrix_transpose(xpn.conj(vh) if ad.kind(x.dtype) == "c" else vh)
    uh = xpn.matrix_transpose(xpn.conj(u) if ad.kind(x.dtype) == "c" else u)
    out = matmul(v * ad.astype(sinv, x.dtype)[..., None, :], uh)
    return keep_subclass(out, x) if ad.numpy_arrays else out


def _cutoff_check(rtol: Any) -> None:
    if isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and not rtol >= 0:
        raise ValueError(f"`rtol` must be a non-negative number, got {rtol!r}")


@declare(
    "linalg", args={"x": "matrix"}, reference=np.linalg.matrix_rank, dtypes="linalg",
    how="xlinalg's `svdvals`, then a count above the tolerance",
    backends={"dask": ("xlinalg's `svdvals` on Dask, then a count", "lazy")},
    bad_input={"nan": _svd_fails("svdvals"), "inf": _svd_fails("svdvals")},
)
def matrix_rank(x: Array, /, *, rtol: Any = None, xp: Namespace | None = None) -> Array:
    """Rank of a matrix or of each matrix of a stack: its singular values above a tolerance.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Integer and bool inputs are computed in float64.
    rtol : float or array, optional
        Singular values at most ``rtol * largest singular value`` do not count.
        Default (the standard's, on every backend): ``max(M, N) * eps``.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(...)``
        The library's default integer dtype.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf (the SVD does not converge; NaN under ``jax.jit``).
    ValueError
        If `x` has fewer than two dimensions, or `rtol` is negative.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> int(xl.matrix_rank(xp.asarray([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    if xp is None and rtol is None and (f := _RANK_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "matrix_rank", xp)
    xpn = ad.xp
    it = _default_int(ad, x)
    if 0 in tuple(x.shape):
        _cutoff_check(rtol)
        return keep_subclass(xpn.zeros(tuple(x.shape[:-2]), dtype=it, device=ad.device(x)), x)
    if rtol is None and (r := _RANK_OWN(ad, x)) is not MISSING:
        return keep_subclass(r, x) if ad.numpy_arrays else r
    s = svdvals(x)
    rank = xpn.sum(xpn.astype(s > _cutoff(ad, x, s, rtol, "matrix_rank"), it), axis=-1)
    return keep_subclass(rank, x) if ad.numpy_arrays else rank


@declare(
    "linalg", args={"a": "matrix", "b": "rhs"}, reference=_lstsq_reference, dtypes="linalg",
    how="xlinalg's `svd` (reduced), then the standard's operations",
    backends={"dask": ("xlinalg's `svd` (Dask's tall-and-skinny SVD for a chunked matrix), then Dask's "
                       "operations", "lazy")},
    bad_input={
        "mismatched": Raises(ValueError, r"lstsq: `b` must have 3 rows to match `a`",
                             "lstsq: `b` must have 3 rows to match `a` of shape (3, 3), got shape (2,)"),
        "nan": _svd_fails("svd"), "inf": _svd_fails("svd"),
    },
)
def lstsq(a: Array, b: Array, /, *, rcond: Any = None, xp: Namespace | None = None) -> LstsqResult:
    """Solve ``a @ x = b`` in the least-squares sense (minimizing the 2-norm of the residual).

    The minimum-norm solution (LAPACK's ``gelsd`` answer) on every backend,
    batched: ``gelsd`` itself on NumPy and torch-cpu, the SVD of `a` elsewhere; on
    Dask a tall matrix in several chunks runs Dask's tall-and-skinny SVD (TSQR),
    lazily.

    Parameters
    ----------
    a : array, shape ``(..., M, N)``
        The coefficient matrix or stack; integer and bool inputs are computed in float64.
    b : array, shape ``(M,)`` or ``(..., M, K)``
        A vector only when ``b.ndim == 1`` (the standard's rule for ``solve``);
        batch axes broadcast against `a`'s.
    rcond : float, optional
        Singular values at most ``rcond * largest singular value`` are treated as
        zero (rank deficiency). Default: ``max(M, N) * eps`` (NumPy's). A
        negative value means ``eps`` (NumPy's legacy ``rcond=-1``).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    LstsqResult
        NamedTuple ``(solution, residuals, rank, singular_values)``: `solution`
        ``(..., N)`` or ``(..., N, K)``; `residuals` the squared 2-norm of each
        column of ``b - a @ x``, ``(...)`` or ``(..., K)``, **always computed**
        (NumPy returns an empty array unless the rank is N and M > N: a shape that
        depends on the values, impossible under ``jax.jit`` and on Dask); `rank`
        ``(...)`` integers; `singular_values` ``(..., min(M, N))`` descending.

    Raises
    ------
    LinAlgError
        If `a` holds NaN or inf (the SVD does not converge).
    ValueError
        If the shapes do not match.
    TypeError
        For float16/bfloat16 or non-numeric dtypes, or operands of two libraries.

    Examples
    --------
    >>> import xlinalg as xl
    >>> a = xp.asarray([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> res = xl.lstsq(a, xp.asarray([1.0, 2.0, 3.0]))
    >>> [round(v, 6) for v in xl.to(res.solution, "numpy").tolist()], int(res.rank)
    ([1.0, 1.0], 2)
    """
    if (xp is None and (t := type(a)) is type(b) and (f := _LSTSQ_FAST.get(t)) is not None
            and (r := f(a, b, rcond)) is not MISSING):
        return r
    ad, a, b = adapter2(a, b, "a", "b", xp)
    for nm, v in (("a", a), ("b", b)):
        if (err := ad.dense_error(v, nm, "lstsq")) is not None:
            raise err
    _validate.matrix(ad, a, "a", "lstsq")
    sb = tuple(b.shape)
    vector = len(sb) == 1
    if not sb:
        raise ValueError(f"lstsq: `b` must be a vector (M,) or a matrix (..., M, K), got {ad.describe(b)}")
    m, n = a.shape[-2:]
    if _validate.sizes_differ(sb[0 if vector else -2], m):
        raise ValueError(
            f"lstsq: `b` must have {m} rows to match `a` of shape {tuple(a.shape)}, got shape {sb}"
            + ("" if vector else " (for a matrix right-hand side the rows are axis -2)")
        )
    if not vector:
        _validate.batches("lstsq", a.shape, sb)
    a, b = _validate.promote_linalg(ad, a, b, "lstsq")
    ad.check_same_device(a, b, "a", "b")
    xpn = ad.xp
    bm = b[..., None] if vector else b
    rdt = real_dtype(ad, a)
    if rcond is not None and (isinstance(rcond, bool) or not isinstance(rcond, (int, float))):
        raise TypeError(f"lstsq: `rcond` must be None or a real number, got {type(rcond).__name__} {rcond!r:.80}")
    k = min(m, n)
    batch = _validate.broadcast_shapes(tuple(a.shape[:-2]), tuple(bm.shape[:-2]))
    if 0 in (m, n) or 0 in tuple(a.shape[:-2]) or 0 in tuple(bm.shape):
        x = xpn.zeros((*batch, n, bm.shape[-1]), dtype=a.dtype, device=ad.device(a))
        res = xpn.zeros((*batch, bm.shape[-1]), dtype=rdt, device=ad.device(a)) + _sq(ad, bm)
        rank = xpn.zeros(tuple(a.shape[:-2]), dtype=_default_int(ad, a), device=ad.device(a))
        s = xpn.zeros((*a.shape[:-2], k), dtype=rdt, device=ad.device(a))
        return keep_subclass(LstsqResult(x[..., 0] if vector else x, res[..., 0] if vector else res, rank, s), a, b)
    if type(b) is type(a) and (out := _LSTSQ_OWN(ad, a, b, rcond)) is not MISSING:
        return keep_subclass(out, a, b) if ad.numpy_arrays else out
    u, s, vh = svd(a, full_matrices=False)
    eps = _eps(ad, a)
    r = eps * max(m, n) if rcond is None else (eps if rcond < 0 else float(rcond))
    keep = s > xpn.max(s, axis=-1, keepdims=True) * r
    sinv = xpn.where(keep, 1.0 / xpn.where(keep, s, xpn.ones_like(s)), xpn.zeros_like(s))
    cplx = ad.kind(a.dtype) == "c"
    uh = xpn.matrix_transpose(xpn.conj(u) if cplx else u)
    v = xpn.matrix_transpose(xpn.conj(vh) if cplx else vh)
    x = matmul(v, ad.astype(sinv, a.dtype)[..., None] * matmul(uh, bm))
    res = _sq(ad, bm - matmul(a, x))
    rank = xpn.sum(xpn.astype(keep, _default_int(ad, a)), axis=-1)
    out = LstsqResult(x[..., 0] if vector else x, res[..., 0] if vector else res, rank, s)
    return keep_subclass(out, a, b) if ad.numpy_arrays else out


def _sq(ad: Adapter, r: Any) -> Any:
    """The squared 2-norm of each column of `r` (..., M, K): shape (..., K), real."""
    xp = ad.xp
    mag = xp.abs(r)
    return xp.sum(mag * mag, axis=-2)
