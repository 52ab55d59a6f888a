"""matrix_norm and vector_norm: the standard's ``ord`` values and ``keepdims`` everywhere.

The singular-value norms (``ord`` 2, -2, "nuc") go through :func:`xlinalg.svdvals`
on every backend, so NaN or inf input raises its ``LinAlgError`` everywhere (PyTorch
raises, JAX returns NaN natively); the others are the library's own reductions
(Dask's lazily). Empty reductions have one answer everywhere (see the docstrings).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from . import _validate
from ._dispatch import adapter1, fast_paths
from ._fastpath import JAX_FLOAT, MISSING, NP_FLOAT, jax_maker, np_maker, torch_float, torch_maker
from ._lib._declare import declare
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import matrix_input, real_dtype
from ._orthogonal import svdvals
from .backends._base import Adapter

__all__ = ["matrix_norm", "vector_norm"]

_INF = math.inf
_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, _INF, -_INF)


def _matrix_ord(ord: Any) -> Any:
    if isinstance(ord, str):
        if ord in ("fro", "nuc"):
            return ord
    elif not isinstance(ord, bool) and isinstance(ord, (int, float)) and ord in (1, -1, 2, -2, _INF, -_INF):
        return int(ord) if math.isfinite(ord) else float(ord)
    elif isinstance(ord, (np.generic, np.ndarray)) and ord.ndim == 0 and not isinstance(ord.item(), bool):
        return _matrix_ord(ord.item())
    raise ValueError(
        f"matrix_norm: `ord` must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf, got {ord!r:.80}"
    )


def _matrix_norm_reference(x: Any) -> Any:
    import numpy as np

    return np.linalg.norm(x, axis=(-2, -1))


def _vector_norm_reference(x: Any) -> Any:
    import numpy as np

    return np.linalg.vector_norm(x)


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py): the library's own norm on a non-empty array of a supported
# dtype, with the arguments the checked path would pass it (for matrix_norm the
# orders that are not singular values; those go through svdvals)
def _plain_matrix_ord(ord: Any) -> bool:
    t = type(ord)
    return (t is str and ord == "fro") or (t is int and ord in (1, -1)) or (t is float and ord in (_INF, -_INF))


def _np_matrix_norm_fast(x: Any, o: Any, keep: bool) -> Any:
    if x.dtype not in NP_FLOAT or x.ndim < 2 or not x.size:
        return MISSING
    if o != "fro":
        return np.linalg.norm(x, ord=o, axis=(-2, -1), keepdims=keep)
    # numpy.linalg.norm's own Frobenius, without its argument handling
    r = np.sqrt(np.add.reduce(x * x if x.dtype.kind == "f" else (x.conj() * x).real, axis=(-2, -1)))
    return r.reshape((*x.shape[:-2], 1, 1)) if keep else r


def _torch_matrix_norm_fast(torch: Any) -> Any:
    call = torch.linalg.matrix_norm
    ok = torch_float(torch)
    dims = (-2, -1)

    def fast(x: Any, o: Any, keep: bool) -> Any:
        if x.dtype not in ok or not x.numel():
            return MISSING
        try:  # (the library's defaults: ord="fro", keepdim=False; positional: parsed faster)
            return call(x) if o == "fro" and not keep else call(x, o, dims, keep)
        except Exception:  # a shape or layout it refuses: named by the checked path
            return MISSING

    return fast


def _jax_matrix_norm_fast(jax: Any, jnp: Any) -> Any:
    call = jnp.linalg.matrix_norm

    def fast(x: Any, o: Any, keep: bool) -> Any:
        if x.dtype not in JAX_FLOAT or x.ndim < 2 or not x.size:
            return MISSING
        # (the library's defaults, ord="fro", keepdims=False, not passed: JAX's
        # dispatch of static keywords costs more than the norm of a small matrix)
        return call(x) if o == "fro" and not keep else call(x, ord=o, keepdims=keep)

    return fast


_MATRIX_NORM_FAST = fast_paths(
    "matrix_norm",
    np_maker(_np_matrix_norm_fast),
    torch_maker(_torch_matrix_norm_fast),
    jax_maker(_jax_matrix_norm_fast),
)


@declare(
    "linalg", args={"x": "matrix"}, reference=_matrix_norm_reference, dtypes="linalg",
    how="the standard's `linalg.matrix_norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'",
    backends={
        "numpy": "`np.linalg.norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'",
        "torch": "`torch.linalg.matrix_norm` for 'fro', 1, -1, inf, -inf; xlinalg's `svdvals` for 2, -2, 'nuc'",
        "dask": ("Dask's reductions; xlinalg's `svdvals` for 2, -2, 'nuc'", "lazy"),
    },
)
def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: Any = "fro", xp: Namespace | None = None) -> Array:
    """Matrix norm of a matrix or of each matrix of a stack.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Integer and bool inputs are computed in float64.
    keepdims : bool, optional
        Keep the two matrix axes as axes of size one.
    ord : {"fro", "nuc", 1, -1, 2, -2, inf, -inf}, optional
        ``"fro"`` (default): Frobenius; ``"nuc"``: sum of singular values; 1/-1:
        max/min column sum of absolute values; 2/-2: largest/smallest singular
        value; inf/-inf: max/min row sum. Anything else raises ValueError.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(...)`` (``(..., 1, 1)`` with `keepdims`)
        Real: float32 for float32 and complex64 input, float64 otherwise. An empty
        matrix has norm 0 where the norm is a sum ("fro", "nuc", 1 and -1 of a
        matrix with columns but no rows, inf and -inf of one with rows but no
        columns); the others (a max or min over nothing) raise ValueError.

    Raises
    ------
    LinAlgError
        For `ord` 2, -2 or "nuc" of an `x` with NaN or inf (as :func:`svdvals`).
    ValueError
        For an `ord` not listed, or `x` with fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> float(xl.matrix_norm(xp.asarray([[3.0, 0.0], [0.0, 4.0]])))
    5.0
    >>> float(xl.matrix_norm(xp.asarray([[3.0, 0.0], [0.0, 4.0]]), ord=2))
    4.0
    """
    if (
        xp is None
        and (keepdims is False or keepdims is True)
        and _plain_matrix_ord(ord)
        and (f := _MATRIX_NORM_FAST.get(type(x))) is not None
        and (r := f(x, ord, keepdims)) is not MISSING
    ):
        return r
    o = _matrix_ord(ord)
    keep = _bool(keepdims, "matrix_norm", "keepdims")
    ad, x = matrix_input(x, "matrix_norm", xp)
    xpn = ad.xp
    m, n = x.shape[-2:]
    if 0 in tuple(x.shape[:-2]) and m and n:  # no members (Dask's max refuses zero-size blocks)
        shape = (*x.shape[:-2], 1, 1) if keep else tuple(x.shape[:-2])
        return keep_subclass(xpn.zeros(shape, dtype=real_dtype(ad, x), device=ad.device(x)), x)
    if m == 0 or n == 0:
        # a sum over no values is 0; a max or min over none is undefined
        summed = o in ("fro", "nuc") or (o in (1, -1) and n != 0) or (o in (_INF, -_INF) and m != 0)
        if not summed:
            raise ValueError(
                f"matrix_norm: ord={ord!r} of `x` {ad.describe(x)} is a max or min over no values "
                "(an empty matrix axis); only 'fro', 'nuc' and the column (row) sums of matrices "
                "with no rows (columns) are defined, as 0"
            )
        shape = (*x.shape[:-2], 1, 1) if keep else tuple(x.shape[:-2])
        return keep_subclass(xpn.zeros(shape, dtype=real_dtype(ad, x), device=ad.device(x)), x)
    if o in (2, -2, "nuc"):
        s = svdvals(x)
        r = xpn.sum(s, axis=-1) if o == "nuc" else (xpn.max(s, axis=-1) if o == 2 else xpn.min(s, axis=-1))
        r = r[..., None, None] if keep else r
        return keep_subclass(r, x) if ad.numpy_arrays else r
    if ad.namespace_linalg:
        native = _native_matrix_norm(ad)
        if native is not None:
            r = native(x, o, keep)
            return keep_subclass(r, x) if ad.numpy_arrays else r
    a = xpn.abs(x)
    if o == "fro":
        r = xpn.sqrt(xpn.sum(a * a, axis=(-2, -1), keepdims=keep))
    else:
        ax = -2 if o in (1, -1) else -1
        sums = xpn.sum(a, axis=ax, keepdims=True)
        red = xpn.max if o in (1, _INF) else xpn.min
        r = red(sums, axis=-1 if ax == -2 else -2, keepdims=True)
        if not keep:
            r = r[..., 0, 0]
    return r


def _native_matrix_norm(ad: Adapter) -> Any:
    if (own := ad.native_matrix_norm()) is not None:  # (NumPy's norm, torch's matrix_norm)
        return own
    if hasattr(ad.xp, "linalg") and hasattr(ad.xp.linalg, "matrix_norm"):
        f = ad.xp.linalg.matrix_norm
        return lambda x, o, keep: f(x, ord=o, keepdims=keep)
    return None


def _bool(v: Any, fn: str, name: str) -> bool:
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    raise TypeError(f"{fn}: `{name}` must be a bool, got {type(v).__name__} {v!r:.80}")


def _vector_ord(ord: Any) -> float:
    o = ord.item() if isinstance(ord, (np.generic, np.ndarray)) and ord.ndim == 0 else ord
    if isinstance(o, bool) or not isinstance(o, (int, float)) or math.isnan(o):
        raise ValueError(f"vector_norm: `ord` must be a real number, inf or -inf, got {ord!r:.80}")
    return o


def _axes(axis: Any, ndim: int, ad: Adapter, x: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        try:
            i = operator.index(a)
        except TypeError:
            raise TypeError(
                f"vector_norm: `axis` must be None, an int or a tuple of ints, got {axis!r:.80}"
            ) from None
        if not -ndim <= i < ndim:
            raise ValueError(f"vector_norm: `axis` {axis!r} is out of range for `x` {ad.describe(x)}")
        out.append(i % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"vector_norm: `axis` {axis!r} repeats an axis")
    return tuple(out)


# vector_norm's fast paths (see matrix_norm's): `axis` None, every axis as the
# checked path passes them
_EVERY_AXIS = tuple(tuple(range(n)) for n in range(9))


def _np_vector_norm_fast(x: Any, keep: bool, o: Any) -> Any:
    if x.dtype not in NP_FLOAT or not x.size or not 0 < (n := x.ndim) < 9:
        return MISSING
    if o != 2:
        return np.linalg.vector_norm(x, axis=_EVERY_AXIS[n], keepdims=keep, ord=o)
    # numpy.linalg.vector_norm's own 2-norm (norm of the raveled array), without its
    # argument handling
    v = x.ravel()
    r = np.sqrt(np.add.reduce(v * v if v.dtype.kind == "f" else (v.conj() * v).real, axis=0))
    return r.reshape((1,) * n) if keep else r


def _torch_vector_norm_fast(torch: Any) -> Any:
    call = torch.linalg.vector_norm
    ok = torch_float(torch)

    def fast(x: Any, keep: bool, o: Any) -> Any:
        if x.dtype not in ok or not x.numel():
            return MISSING
        try:  # (every axis: dim=None, as the checked path passes it; the defaults not passed)
            return call(x) if o == 2 and not keep else call(x, o, None, keep)
        except Exception:  # a layout it refuses: named by the checked path
            return MISSING

    return fast


def _jax_vector_norm_fast(jax: Any, jnp: Any) -> Any:
    call = jnp.linalg.vector_norm

    def fast(x: Any, keep: bool, o: Any) -> Any:
        if x.dtype not in JAX_FLOAT or not x.size or not 0 < x.ndim < 9:
            return MISSING
        # (axis=None reduces every axis, as the checked path's tuple of them does;
        # the library's defaults are not passed: JAX's dispatch of static keywords
        # costs more than the norm of a small vector)
        return call(x) if o == 2 and not keep else call(x, keepdims=keep, ord=o)

    return fast


_VECTOR_NORM_FAST = fast_paths(
    "vector_norm",
    np_maker(_np_vector_norm_fast),
    torch_maker(_torch_vector_norm_fast),
    jax_maker(_jax_vector_norm_fast),
)


@declare(
    "linalg", args={"x": "vector"}, reference=_vector_norm_reference, dtypes="linalg", batched=False,
    how="the standard's `linalg.vector_norm`",
    backends={"torch": "`torch.linalg.vector_norm`", "dask": ("Dask's reductions (the standard's operations)", "lazy")},
)
def vector_norm(x: Array, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2,
                xp: Namespace | None = None) -> Array:
    """Vector norm over `axis` (all axes by default) of an array.

    Parameters
    ----------
    x : array
        Any number of dimensions. Integer and bool inputs are computed in float64.
    axis : None, int or tuple of ints, optional
        The axes to reduce over (the vector); None (default): every axis.
    keepdims : bool, optional
        Keep the reduced axes as axes of size one.
    ord : real number, inf or -inf, optional
        ``sum(|x|**ord)**(1/ord)``; inf/-inf: max/min of ``|x|``; 0: the number of
        non-zero entries. Default 2.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        Real: float32 for float32 and complex64 input, float64 otherwise. A norm
        over no values is 0 for ``ord`` > 0, inf and 0, and inf for ``ord`` < 0 and
        -inf, on every backend (the natives disagree or raise).

    Raises
    ------
    ValueError
        For an `ord` that is not a real number, or an `axis` out of range or repeated.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> float(xl.vector_norm(xp.asarray([3.0, 4.0])))
    5.0
    >>> float(xl.vector_norm(xp.asarray([3.0, -4.0]), ord=xp.inf))
    4.0
    """
    if (
        xp is None
        and axis is None
        and (keepdims is False or keepdims is True)
        and (type(ord) is int or (type(ord) is float and ord == ord))
        and (f := _VECTOR_NORM_FAST.get(type(x))) is not None
        and (r := f(x, keepdims, ord)) is not MISSING
    ):
        return r
    o = _vector_ord(ord)
    keep = _bool(keepdims, "vector_norm", "keepdims")
    ad, x = adapter1(x, "x", xp)
    if (err := ad.dense_error(x, "x", "vector_norm")) is not None:
        raise err
    dt = _validate.linalg_dtype(ad, x, "x", "vector_norm")
    x = ad.astype(x, dt)
    axes = _axes(axis, x.ndim, ad, x)
    xpn = ad.xp
    shape = tuple(x.shape)
    if 0 in shape:  # (an empty result too: Dask's max and min refuse zero-size blocks)
        value = math.inf if o < 0 and any(shape[i] == 0 for i in axes) else 0.0
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keep else tuple(
            s for i, s in enumerate(shape) if i not in axes
        )
        return keep_subclass(xpn.full(out_shape, value, dtype=real_dtype(ad, x), device=ad.device(x)), x)
    if ad.namespace_linalg:
        if (r := ad.native_vector_norm(x, o, axes, keep)) is not None:
            return r
        f = getattr(getattr(xpn, "linalg", None), "vector_norm", None)
        if f is not None:
            r = f(x, axis=axes, keepdims=keep, ord=o)
            return keep_subclass(r, x) if ad.numpy_arrays else r
    a = xpn.abs(x)
    if o == math.inf:
        return xpn.max(a, axis=axes, keepdims=keep)
    if o == -math.inf:
        return xpn.min(a, axis=axes, keepdims=keep)
    if o == 0:
        return xpn.sum(xpn.astype(a != 0, a.dtype), axis=axes, keepdims=keep)
    if o == 1:
        return xpn.sum(a, axis=axes, keepdims=keep)
    if o == 2:
        return xpn.sqrt(xpn.sum(a * a, axis=axes, keepdims=keep))
    return xpn.pow(xpn.sum(xpn.pow(a, o), axis=axes, keepdims=keep), 1.0 / o)
