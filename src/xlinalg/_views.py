"""Views of a matrix and its diagonal: matrix_transpose, diagonal, trace.

Any dtype for the two views (``trace``: numeric, bool refused); the result is the
library's own (a view where the library makes one), in `x`'s library and device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._dispatch import adapter1, fast_paths
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    NP_FLOAT,
    jax_maker,
    np_maker,
    torch_float,
    torch_maker,
)
from ._lib._declare import declare
from ._lib._typing import Array, Namespace
from ._matrix import int_arg, native_call, numeric_only
from .backends._base import Adapter

__all__ = ["diagonal", "matrix_transpose", "trace"]


def _one(x: Any, fn: str, xp: Any, *, numeric: bool = False) -> tuple[Adapter, Any]:
    ad, x = adapter1(x, "x", xp)
    if (err := ad.dense_error(x, "x", fn)) is not None:
        raise err
    if x.ndim < 2:
        raise ValueError(
            f"{fn}: `x` must be a matrix or a stack of matrices (at least 2 dimensions), got {ad.describe(x)}"
        )
    if numeric and ad.kind(x.dtype) in "b?":
        raise TypeError(f"{fn}: `x` must be numeric, got {ad.describe(x)}")
    return ad, x


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py): the library's own call on a dense (stack of) matrices, any
# dtype for the views, a floating one for trace; anything else takes the checked path.
def _torch_views(torch: Any) -> dict[str, Any]:
    strided = torch.strided  # dense: strided and not nested (what the checked path takes)
    ok = torch_float(torch)
    linalg = torch.linalg
    diag = torch.diagonal

    # torch's own calls refuse what the checked path refuses (fewer than two
    # dimensions; diagonal and trace: sparse, nested and mkldnn layouts): their
    # error sends the call to the checked path, which names the argument
    # (tests/ops/test_fast_paths.py's hostile tensors). x.mT takes any layout and
    # a 0-d tensor.
    def transpose(x: Any) -> Any:
        return x.mT if x.layout is strided and not x.is_nested and x.ndim >= 2 else MISSING

    def diagonal(x: Any, k: int) -> Any:
        try:
            return linalg.diagonal(x, offset=k) if k else linalg.diagonal(x)
        except Exception:
            return MISSING

    def trace(x: Any, k: int) -> Any:
        if x.dtype not in ok:
            return MISSING
        try:
            return diag(x, k, -2, -1).sum(-1)
        except Exception:
            return MISSING

    return {"matrix_transpose": transpose, "diagonal": diagonal, "trace": trace}


def _jax_views(jnp: Any) -> dict[str, Any]:
    linalg = jnp.linalg

    def diagonal(x: Any, k: int) -> Any:
        if x.ndim < 2:
            return MISSING
        return linalg.diagonal(x, offset=k) if k else linalg.diagonal(x)

    def trace(x: Any, k: int) -> Any:
        if x.dtype not in JAX_FLOAT or x.ndim < 2:
            return MISSING
        return linalg.trace(x, offset=k) if k else linalg.trace(x)

    return {"matrix_transpose": lambda x: x.mT if x.ndim >= 2 else MISSING, "diagonal": diagonal, "trace": trace}


_NP_VIEWS: dict[str, Any] = {
    "matrix_transpose": lambda x: x.swapaxes(-1, -2) if x.ndim >= 2 else MISSING,
    "diagonal": lambda x, k: x.diagonal(k, -2, -1) if x.ndim >= 2 else MISSING,
    "trace": lambda x, k: np.asarray(x.trace(k, -2, -1)) if x.dtype in NP_FLOAT and x.ndim >= 2 else MISSING,
}


def _view_paths(name: str) -> dict[type, Any]:
    return fast_paths(
        name,
        np_maker(_NP_VIEWS[name]),
        torch_maker(lambda torch: _torch_views(torch)[name]),
        jax_maker(lambda jax, jnp: _jax_views(jnp)[name]),
    )


_TRANSPOSE_FAST = _view_paths("matrix_transpose")
_DIAGONAL_FAST = _view_paths("diagonal")
_TRACE_FAST = _view_paths("trace")


@declare(
    "linalg", args={"x": "matrix"}, reference=lambda x: np.swapaxes(x, -1, -2), dtypes="promote",
    how="the standard's `matrix_transpose`",
)
def matrix_transpose(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Transpose of each matrix (the last two axes swapped; no conjugation).

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Any dtype.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., N, M)``
        `x`'s dtype, library and device (a view where the library makes one).

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.matrix_transpose(xp.ones((2, 3))).shape
    (3, 2)
    """
    if xp is None and (f := _TRANSPOSE_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = _one(x, "matrix_transpose", xp)
    return ad.xp.matrix_transpose(x)


@declare(
    "linalg", args={"x": "matrix"}, reference=lambda x: np.diagonal(x, axis1=-2, axis2=-1), dtypes="promote",
    how="the standard's `linalg.diagonal`",
)
def diagonal(x: Array, /, *, offset: int = 0, xp: Namespace | None = None) -> Array:
    """The diagonal of each matrix.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Any dtype.
    offset : int, optional
        0 (default): the main diagonal; positive: above it; negative: below it.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., K)``
        `x`'s dtype; ``K = 0`` for an offset beyond the matrix.

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions.
    TypeError
        If `offset` is not an int.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.diagonal(xp.asarray([[1.0, 2.0], [3.0, 4.0]])), "numpy")
    array([1., 4.])
    """
    if (xp is None and type(offset) is int and (f := _DIAGONAL_FAST.get(type(x))) is not None
            and (r := f(x, offset)) is not MISSING):
        return r
    k = int_arg(offset, "diagonal", "offset")
    ad, x = _one(x, "diagonal", xp)
    return ad.xp.linalg.diagonal(x, offset=k)


@declare(
    "linalg", args={"x": "matrix"}, reference=lambda x: np.trace(x, axis1=-2, axis2=-1), dtypes="promote",
    how="the standard's `linalg.trace`",
    bad_input={"bool": numeric_only("trace", "`x`")},
)
def trace(x: Array, /, *, offset: int = 0, dtype: Any = None, xp: Namespace | None = None) -> Array:
    """Sum of the diagonal of each matrix.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Numeric (bool refused).
    offset : int, optional
        Which diagonal, as in :func:`diagonal`.
    dtype : dtype, optional
        The result's dtype; by default the standard's rule for sums (integers of
        lower precision than the default integer become the default integer;
        floating dtypes are kept).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(...)``
        The sums, in `dtype` or the standard's dtype for a sum.

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions.
    TypeError
        For bool or non-numeric `x`, or an `offset` that is not an int.

    Examples
    --------
    >>> import xlinalg as xl
    >>> float(xl.trace(xp.asarray([[1.0, 2.0], [3.0, 4.0]])))
    5.0
    """
    if (xp is None and dtype is None and type(offset) is int and (f := _TRACE_FAST.get(type(x))) is not None
            and (r := f(x, offset)) is not MISSING):
        return r
    k = int_arg(offset, "trace", "offset")
    ad, x = _one(x, "trace", xp, numeric=True)
    return native_call(ad, "trace", lambda: ad.xp.linalg.trace(x, offset=k, dtype=dtype), ("x", x))

