"""det, slogdet: determinants by LU, NaN for a member holding NaN or inf.

A singular member has determinant 0 (``slogdet``: sign 0, ``logabsdet`` -inf),
never an error; a member holding NaN or inf gives NaN on every backend (LU may
never touch the entry: NumPy's ``det`` of ``[[1, nan], [0, 1]]`` is 1.0). float32
is computed in float32 everywhere, NumPy included (its gufuncs' own loops).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._dispatch import fast_paths
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    FastMaker,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    torch_maker,
    torch_via_numpy,
)
from ._lib._declare import Returns, all_nan, declare
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import NP_LOOPS, finite_members, matrix_input, np_square_loop, real_dtype
from .backends._base import Adapter

__all__ = ["SlogdetResult", "det", "slogdet"]

try:
    from numpy.linalg import _umath_linalg as _ul

    _NP_DET: Any = _ul.det
    _NP_SLOGDET: Any = _ul.slogdet
except (ImportError, AttributeError):  # pragma: no cover - a NumPy without them
    _NP_DET = _NP_SLOGDET = None

_SIG_SLOGDET = {"f": "f->ff", "d": "d->dd", "F": "F->Ff", "D": "D->Dd"}


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: ``det(x) == sign * exp(logabsdet)``."""

    sign: Array
    logabsdet: Array


_NAN_DET = Returns("NaN for a member holding NaN or inf, no error (NumPy's LU may skip it: 1.0)", all_nan)


def _finite(got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    assert all(np.isfinite(g).all() for g in got), got


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py) of det and slogdet: the library's kernel on a supported dtype,
# the input looked at quickly: NaN or inf takes the checked path, which computes the
# same way.
def _np_det_fast(x: Any, slog: bool) -> Any:
    if (sig := np_square_loop(x, _SIG_SLOGDET if slog else NP_LOOPS)) is None or _NP_DET is None:
        return MISSING
    token = np_quiet()
    try:
        out = (_NP_SLOGDET if slog else _NP_DET)(x, signature=sig)
    finally:
        np_loud(token)
    if not np_finite(x):  # NaN for those members: the checked path
        return MISSING
    return SlogdetResult(*out) if slog else out


def _jax_det_fast(slog: bool) -> Any:
    def build(jax: Any, jnp: Any) -> Any:
        def body(x: Any) -> Any:  # NaN for members holding NaN or inf, in the program
            if x.dtype not in JAX_FLOAT:
                return None
            bad = jnp.logical_not(jnp.all(jnp.isfinite(x), axis=(-2, -1)))
            if slog:
                sign, logabs = jnp.linalg.slogdet(x)
                return jnp.where(bad, jnp.nan, sign), jnp.where(bad, jnp.nan, logabs)
            return jnp.where(bad, jnp.nan, jnp.linalg.det(x))

        call = jax.jit(body)

        def fast(x: Any) -> Any:
            try:
                out = call(x)
            except Exception:  # a shape it refuses: named by the checked path
                return MISSING
            if out is None:
                return MISSING
            return SlogdetResult(*out) if slog else out

        return fast

    return build


def _det_makers(slog: bool) -> tuple[FastMaker, ...]:
    return (
        np_maker(lambda x: _np_det_fast(x, slog)),
        # (torch: NumPy's gufunc on a view of a small CPU matrix, as the checked path)
        torch_maker(torch_via_numpy(lambda x: _np_det_fast(x, slog))),
        jax_maker(_jax_det_fast(slog)),
    )


_DET_FAST = fast_paths("det", *_det_makers(False))
_SLOGDET_FAST = fast_paths("slogdet", *_det_makers(True))

@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.det, dtypes="linalg",
    how="the standard's `linalg.det`",
    backends={"numpy": "the gufunc behind `numpy.linalg.det`, in the input's precision",
              "dask": ("NumPy's det on each matrix (a gufunc over the batch)", "lazy")},
    bad_input={"nan": _NAN_DET, "inf": _NAN_DET,
               "near-singular": Returns("a tiny finite value (rounding: which one is the library's)", _finite)},
)
def det(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Determinant of a square matrix or of each matrix of a stack.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(...)``
        In `x`'s floating dtype (float32 computed in float32 on every backend,
        NumPy included). A singular member gives 0 (no error); NaN input gives
        NaN; ``det`` of a 0×0 matrix is 1.

    Raises
    ------
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> float(xl.det(xp.asarray([[2.0, 0.0], [0.0, 3.0]])))
    6.0
    """
    if xp is None and (f := _DET_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "det", xp, square=True)
    shape = tuple(x.shape)
    if 0 in shape:
        return keep_subclass(_empty_det(ad, x, 1), x)
    if ad.numpy_arrays and _NP_DET is not None:
        return keep_subclass(_np_det_block(x), x)
    if ad.map_gufunc is not None:  # lazy blocks (Dask): NumPy's on each
        return ad.map_gufunc(_np_det_block, "(m,m)->()", x, [(0, x.dtype)], {}, "det")
    if (xn := ad.small_numpy_view(x)) is not None:  # (torch: NumPy's on the view, cheaper)
        return ad.from_numpy_view(np.asarray(_np_det_block(xn)), x)
    return _nan_where_not_finite(ad, x, ad.xp.linalg.det(x))


def _nan_where_not_finite(ad: Adapter, x: Any, out: Any) -> Any:
    """`out` (over the batch) with NaN for the members of `x` holding NaN or inf: LU
    may never touch them (NumPy's det of [[1, nan], [0, 1]] is 1.0, torch's NaN)."""
    return ad.fill_nan(ad.xp.logical_not(finite_members(ad.xp, x)), out)


def _np_det_block(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        d = _NP_DET(x, signature=NP_LOOPS[x.dtype.char])
        bad = ~np.isfinite(x).all(axis=(-2, -1))
    if bad.any():
        d = np.where(bad, np.nan, d)
    return d


def _empty_det(ad: Adapter, x: Any, value: int, dtype: Any = None) -> Any:
    """det (value 1) or log|det| (0) of an empty stack: 0×0 matrices are 1, a batch with
    no members is empty."""
    batch = tuple(x.shape[:-2])
    xp = ad.xp
    dt = x.dtype if dtype is None else dtype
    if x.shape[-1] == 0:
        return xp.full(batch, value, dtype=dt, device=ad.device(x))
    return xp.zeros(batch, dtype=dt, device=ad.device(x))


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.slogdet, dtypes="linalg",
    how="the standard's `linalg.slogdet`",
    backends={"numpy": "the gufunc behind `numpy.linalg.slogdet`, in the input's precision",
              "dask": ("NumPy's slogdet on each matrix (a gufunc over the batch)", "lazy")},
    bad_input={"nan": _NAN_DET, "inf": _NAN_DET,
               "near-singular": Returns("finite (log of a tiny determinant: which one is the library's)", _finite)},
)
def slogdet(x: Array, /, *, xp: Namespace | None = None) -> SlogdetResult:
    """Sign and natural logarithm of the absolute determinant (no overflow).

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    SlogdetResult
        NamedTuple ``(sign, logabsdet)``, both of shape ``(...)``: `sign` in `x`'s
        dtype (complex of modulus 1 for complex `x`; 0 for a singular member, whose
        `logabsdet` is ``-inf``), `logabsdet` real. A 0×0 matrix gives ``(1, 0)``.

    Raises
    ------
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> sign, logabsdet = xl.slogdet(xp.asarray([[-2.0, 0.0], [0.0, 1.0]]))
    >>> float(sign), round(float(logabsdet), 6)
    (-1.0, 0.693147)
    """
    if xp is None and (f := _SLOGDET_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "slogdet", xp, square=True)
    if 0 in tuple(x.shape):
        return keep_subclass(SlogdetResult(_empty_det(ad, x, 1), _empty_det(ad, x, 0, real_dtype(ad, x))), x)
    if ad.numpy_arrays and _NP_SLOGDET is not None:
        return keep_subclass(SlogdetResult(*_np_slogdet_block(x)), x)
    if ad.map_gufunc is not None:
        sign, logabs = ad.map_gufunc(
            _np_slogdet_block, "(m,m)->(),()", x, [(0, x.dtype), (0, real_dtype(ad, x))], {}, "slogdet",
        )
        return SlogdetResult(sign, logabs)
    if (xn := ad.small_numpy_view(x)) is not None:  # (torch: NumPy's on the view, cheaper)
        return SlogdetResult(*(ad.from_numpy_view(np.asarray(v), x) for v in _np_slogdet_block(xn)))
    sign, logabs = ad.xp.linalg.slogdet(x)
    return SlogdetResult(_nan_where_not_finite(ad, x, sign), _nan_where_not_finite(ad, x, logabs))


def _np_slogdet_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        sign, logabs = _NP_SLOGDET(x, signature=_SIG_SLOGDET[x.dtype.char])
        bad = ~np.isfinite(x).all(axis=(-2, -1))
    if bad.any():
        sign, logabs = np.where(bad, np.nan, sign), np.where(bad, np.nan, logabs)
    return sign, logabs
