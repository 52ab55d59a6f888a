"""Products: outer, tensordot, vecdot, cross (of two operands), matrix_power.

Two operands follow :func:`xlinalg.matmul`'s rules: one library, one device,
numeric dtypes (bool refused), mixed dtypes promoted by NumPy's table on every
backend. ``matrix_power`` follows the linear-algebra dtype rule (integers in
float64) and its negative powers :func:`xlinalg.inv`'s singular-matrix contract.
(The views of one matrix, ``matrix_transpose``, ``diagonal`` and ``trace``, are in
:mod:`._views`; ``matmul`` in :mod:`._matmul`.)
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _validate
from ._dispatch import adapter2, fast_paths
from ._factor import inv
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    NP_FLOAT,
    jax_maker,
    np_maker,
    torch_float,
    torch_maker,
)
from ._lib._declare import BadInput, Raises, Returns, declare
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matmul import matmul
from ._matrix import common_dtype, int_arg, matrix_input, native_call, numeric_only
from .backends._base import Adapter

__all__ = ["cross", "matrix_power", "outer", "tensordot", "vecdot"]


_VEC_BATCH = np.ones((2, 3)), np.ones((4, 3))


def _vectors(n: int, text: str = "as NumPy") -> dict[str, BadInput]:
    """The generic cells whose default arguments are matrices, given as vectors of `n`."""
    from ._badinput import L, ReadOnly, with_float16

    v, w = np.arange(1.0, n + 1), np.ones(n)
    h = np.ones(n, np.float16)
    return {
        "list": BadInput(Returns(f"{text}: the list follows the other argument's backend"), args=(L(v), w)),
        "read-only": BadInput(Returns("the same result as for writeable arrays"), args=(ReadOnly(v), ReadOnly(w)),
                              only=("numpy",), only_why="NumPy arrays only"),
        "float16": BadInput(Returns("float16, computed natively"), args=(h, h), only=with_float16(),
                            only_why="no float16 arrays there"),
    }


def _pair(x1: Any, x2: Any, fn: str, xp: Any) -> tuple[Adapter, Any, Any]:
    """Two numeric operands of one library and device, in their common dtype."""
    ad, x1, x2 = adapter2(x1, x2, "x1", "x2", xp)
    for n, v in (("x1", x1), ("x2", x2)):
        if (err := ad.dense_error(v, n, fn)) is not None:
            raise err
    k1, k2 = ad.kind(x1.dtype), ad.kind(x2.dtype)
    if "b" in (k1, k2) or "?" in (k1, k2):
        raise TypeError(f"{fn}: operands must be numeric, got `x1` {ad.describe(x1)} and `x2` {ad.describe(x2)}")
    ad.check_same_device(x1, x2, "x1", "x2")
    return (ad, *common_dtype(ad, x1, x2))


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py): the library's own call with the arguments the checked path
# would pass it, for the common case: dense arrays of one floating dtype, the shapes
# checked that the library would not check itself; any refusal or error of the
# library takes the checked path, which names the argument.
# vecdot and cross: axis -1; tensordot: an int `axes`; matrix_power: n > 0.
def _np_pair(x1: Any, x2: Any) -> bool:
    return ((d := x1.dtype) is x2.dtype or d == x2.dtype) and d in NP_FLOAT


def _np_matrix_power(x: Any, n: int) -> Any:
    if x.dtype not in NP_FLOAT or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2]:
        return MISSING
    if n <= 3:  # numpy.linalg.matrix_power's own short cuts, without its checks
        return x if n == 1 else np.matmul(x, x) if n == 2 else np.matmul(np.matmul(x, x), x)
    return np.linalg.matrix_power(x, n)


def _np_tensordot(x1: Any, x2: Any, n: int) -> Any:
    if not _np_pair(x1, x2) or n > min(x1.ndim, x2.ndim):
        return MISSING
    try:
        return np.tensordot(x1, x2, axes=n)
    except ValueError:  # contracted axes of different sizes: named by the checked path
        return MISSING


_NP_VECDOT: Any = np.vecdot


def _np_vecdot(x1: Any, x2: Any) -> Any:
    if not _np_pair(x1, x2):
        return MISSING
    try:  # (the gufunc refuses 0-d operands and vectors of two lengths itself)
        return _NP_VECDOT(x1, x2, axis=-1)
    except ValueError:  # named by the checked path
        return MISSING


def _np_cross(x1: Any, x2: Any) -> Any:
    if not _np_pair(x1, x2) or not x1.ndim or not x2.ndim or not x1.shape[-1] == x2.shape[-1] == 3:
        return MISSING
    try:
        return np.cross(x1, x2, axis=-1)
    except ValueError:  # batch shapes that do not broadcast: named by the checked path
        return MISSING


def _native(call: Any, *args: Any, **kwargs: Any) -> Any:
    """The library's own call, or MISSING where it refuses (a shape, a device): the
    checked path names what is wrong."""
    try:
        return call(*args, **kwargs)
    except Exception:
        return MISSING


def _torch_products(torch: Any) -> dict[str, Any]:
    strided, ok, linalg = torch.strided, torch_float(torch), torch.linalg
    t_outer, l_vecdot, l_cross, t_tensordot = torch.outer, linalg.vecdot, linalg.cross, torch.tensordot

    # torch's calls refuse nested/mkldnn operands, wrong ranks, devices, (not outer)
    # two dtypes: their error goes to the checked path (test_fast_paths's hostile
    # tensors). Tested here: sparse (outer, vecdot), meta beside real (tensordot),
    # an axis of size 1 contracted with any size (tensordot; vecdot: 0-d raises).
    def outer(x1: Any, x2: Any) -> Any:
        same = (d := x1.dtype) is x2.dtype and d in ok and x1.layout is strided and x2.layout is strided
        return _native(t_outer, x1, x2) if same else MISSING

    def tensordot(x1: Any, x2: Any, n: int) -> Any:
        if x1.dtype not in ok or x1.is_meta is not x2.is_meta:
            return MISSING
        try:
            return MISSING if n and x1.shape[-n:] != x2.shape[:n] else t_tensordot(x1, x2, n)
        except Exception:
            return MISSING

    def vecdot(x1: Any, x2: Any) -> Any:
        if x1.dtype not in ok or x1.layout is not strided or x2.layout is not strided:
            return MISSING
        try:  # (vecdot's default: dim=-1; keywords cost torch's parsing)
            return MISSING if x1.shape[-1] != x2.shape[-1] else l_vecdot(x1, x2)
        except Exception:
            return MISSING

    def cross(x1: Any, x2: Any) -> Any:  # (an axis of length other than 3: refused)
        return _native(l_cross, x1, x2) if x1.dtype in ok else MISSING

    def matrix_power(x: Any, n: int) -> Any:
        ok_x = x.dtype in ok and x.layout is strided and not x.is_nested and x.numel()
        return _native(linalg.matrix_power, x, n) if ok_x else MISSING

    return {"outer": outer, "tensordot": tensordot, "vecdot": vecdot, "cross": cross,
            "matrix_power": matrix_power}


def _jax_products(jnp: Any) -> dict[str, Any]:
    linalg = jnp.linalg

    def pair(x1: Any, x2: Any) -> bool:
        return (d := x1.dtype) == x2.dtype and d in JAX_FLOAT

    def outer(x1: Any, x2: Any) -> Any:
        return linalg.outer(x1, x2) if pair(x1, x2) and x1.ndim == 1 and x2.ndim == 1 else MISSING

    def tensordot(x1: Any, x2: Any, n: int) -> Any:
        return _native(jnp.tensordot, x1, x2, axes=n) if pair(x1, x2) and n <= min(x1.ndim, x2.ndim) else MISSING

    # vecdot and cross: the library's default axis=-1, not passed (JAX's dispatch of
    # static keywords costs more than a product of small vectors)
    def vecdot(x1: Any, x2: Any) -> Any:
        if not pair(x1, x2) or not x1.ndim or not x2.ndim or x1.shape[-1] != x2.shape[-1]:
            return MISSING
        return _native(jnp.vecdot, x1, x2)

    def cross(x1: Any, x2: Any) -> Any:
        if not pair(x1, x2) or not x1.ndim or not x2.ndim or not x1.shape[-1] == x2.shape[-1] == 3:
            return MISSING
        return _native(linalg.cross, x1, x2)

    def matrix_power(x: Any, n: int) -> Any:
        if x.dtype not in JAX_FLOAT or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2]:
            return MISSING
        return linalg.matrix_power(x, n)

    return {"outer": outer, "tensordot": tensordot, "vecdot": vecdot, "cross": cross,
            "matrix_power": matrix_power}


_NP_PRODUCTS: dict[str, Any] = {
    # numpy.outer's own product of the two vectors, without its argument handling
    "outer": lambda x1, x2: (np.multiply(x1[:, None], x2[None, :]) if _np_pair(x1, x2) and x1.ndim == 1 and x2.ndim == 1
                             else MISSING),
    "tensordot": _np_tensordot, "vecdot": _np_vecdot, "cross": _np_cross, "matrix_power": _np_matrix_power,
}
_PAIRS = ("outer", "tensordot", "vecdot", "cross")


def _product_paths(name: str) -> dict[type, Any]:
    return fast_paths(
        name,
        np_maker(_NP_PRODUCTS[name]),
        torch_maker(lambda torch: _torch_products(torch)[name]),
        jax_maker(lambda jax, jnp: _jax_products(jnp)[name], one_device=name in _PAIRS),
    )


_OUTER_FAST = _product_paths("outer")
_TENSORDOT_FAST = _product_paths("tensordot")
_VECDOT_FAST = _product_paths("vecdot")
_CROSS_FAST = _product_paths("cross")
_MATRIX_POWER_FAST = _product_paths("matrix_power")


@declare(
    "linalg", args={"x1": "vector", "x2": "vector"}, reference=np.outer, dtypes="promote", batched=False,
    how="the standard's `linalg.outer` after NumPy's promotion table",
    bad_input={
        **_vectors(2),
        "bool": numeric_only("outer"),
        "batch": BadInput(Raises(ValueError, r"outer: `x1` and `x2` must be vectors",
                                 "outer: `x1` and `x2` must be vectors (1 dimension), got …"), args=_VEC_BATCH),
        "zero-batch": Raises(ValueError, r"outer: `x1` and `x2` must be vectors",
                             "outer: `x1` and `x2` must be vectors (1 dimension), got …"),
        "0-d": Raises(ValueError, r"outer: `x1` and `x2` must be vectors",
                      "outer: `x1` and `x2` must be vectors (1 dimension), got …"),
    },
)
def outer(x1: Array, x2: Array, /, *, xp: Namespace | None = None) -> Array:
    """Outer product of two vectors: ``out[i, j] = x1[i] * x2[j]``.

    Parameters
    ----------
    x1, x2 : array, shape ``(N,)`` and ``(M,)``
        Numeric; mixed dtypes are promoted by NumPy's table (as :func:`matmul`).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(N, M)``
        In the operands' library and device, in their common dtype.

    Raises
    ------
    ValueError
        If an operand is not one-dimensional.
    TypeError
        For bool or non-numeric operands, or operands of two libraries.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.outer(xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])), "numpy")
    array([[3., 4.],
           [6., 8.]])
    """
    if (xp is None and (t := type(x1)) is type(x2) and (f := _OUTER_FAST.get(t)) is not None
            and (r := f(x1, x2)) is not MISSING):
        return r
    ad, x1, x2 = _pair(x1, x2, "outer", xp)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"outer: `x1` and `x2` must be vectors (1 dimension), got `x1` {ad.describe(x1)} and "
            f"`x2` {ad.describe(x2)}"
        )
    return native_call(ad, "outer", lambda: ad.xp.linalg.outer(x1, x2), ("x1", x1), ("x2", x2))


@declare(
    "linalg", args={"x1": "vector", "x2": "vector"}, reference=np.tensordot,
    dtypes="promote", kwargs={"axes": 1}, batched=False,
    how="the standard's `tensordot` after NumPy's promotion table",
    bad_input={
        **_vectors(2),
        "bool": numeric_only("tensordot"),
        "mismatched": Raises(ValueError, r"tensordot: axis 0 of `x1` \(size 3\) and axis 0 of `x2` \(size 2\)",
                             "tensordot: axis 0 of `x1` (size 3) and axis 0 of `x2` (size 2) are contracted but differ"),
        "batch": BadInput(Raises(ValueError, r"tensordot: axis 1 of `x1` \(size 3\) and axis 0 of `x2` \(size 4\)",
                                 "tensordot: axis 1 of `x1` (size 3) and axis 0 of `x2` (size 4) are contracted but "
                                 "differ"), args=_VEC_BATCH),
        "zero-batch": Raises(ValueError, r"tensordot: axis 1 of `x1` \(size 3\) and axis 0 of `x2` \(size 0\)",
                             "tensordot: axis 1 of `x1` (size 3) and axis 0 of `x2` (size 0) are contracted but differ"),
        "0-d": Raises(ValueError, r"tensordot: `axes`=1 must be between 0 and the smaller number of dimensions",
                      "tensordot: `axes`=1 must be between 0 and the smaller number of dimensions …"),
    },
)
def tensordot(x1: Array, x2: Array, /, *, axes: Any = 2, xp: Namespace | None = None) -> Array:
    """Tensor contraction of `x1` and `x2` over `axes` (the standard's ``tensordot``).

    Parameters
    ----------
    x1, x2 : array
        Numeric; mixed dtypes promoted as by :func:`matmul`.
    axes : int or (sequence of ints, sequence of ints), optional
        An int N: the last N axes of `x1` with the first N of `x2`; two sequences:
        those axes, pairwise. Default 2.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The non-contracted axes of `x1`, then those of `x2`.

    Raises
    ------
    ValueError
        If the contracted axes differ in size, or `axes` does not fit the operands.
    TypeError
        For bool or non-numeric operands.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.tensordot(xp.ones((2, 3, 4)), xp.ones((3, 4, 5))).shape
    (2, 5)
    """
    if (xp is None and type(axes) is int and axes >= 0 and (t := type(x1)) is type(x2)
            and (f := _TENSORDOT_FAST.get(t)) is not None and (r := f(x1, x2, axes)) is not MISSING):
        return r
    ad, x1, x2 = _pair(x1, x2, "tensordot", xp)
    if isinstance(axes, bool):
        raise TypeError(f"tensordot: `axes` must be an int or a pair of sequences of ints, got {axes!r}")
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        n = operator.index(axes)
        if n < 0 or n > min(x1.ndim, x2.ndim):
            raise ValueError(
                f"tensordot: `axes`={n} must be between 0 and the smaller number of dimensions "
                f"of `x1` {ad.describe(x1)} and `x2` {ad.describe(x2)}"
            )
        pairs = (list(range(x1.ndim - n, x1.ndim)), list(range(n)))
    else:
        try:
            a1, a2 = axes
            pairs = ([operator.index(i) for i in a1], [operator.index(i) for i in a2])
        except (TypeError, ValueError):
            raise TypeError(
                f"tensordot: `axes` must be an int or a pair of sequences of ints, got {axes!r:.80}"
            ) from None
        if len(pairs[0]) != len(pairs[1]):
            raise ValueError(f"tensordot: `axes` pairs {len(pairs[0])} axes of `x1` with {len(pairs[1])} of `x2`")
    for i, j in zip(*pairs):
        for v, ax, nm in ((x1, i, "x1"), (x2, j, "x2")):
            if not -v.ndim <= ax < v.ndim:
                raise ValueError(f"tensordot: axis {ax} is out of range for `{nm}` {ad.describe(v)}")
        if _validate.sizes_differ(x1.shape[i], x2.shape[j]):
            raise ValueError(
                f"tensordot: axis {i} of `x1` (size {x1.shape[i]}) and axis {j} of `x2` (size "
                f"{x2.shape[j]}) are contracted but differ in size"
            )
    return native_call(ad, "tensordot", lambda: ad.xp.tensordot(x1, x2, axes=axes if isinstance(axes, int) else pairs),
                   ("x1", x1), ("x2", x2))


@declare(
    "linalg", args={"x1": "vector", "x2": "vector"}, reference=np.vecdot, dtypes="promote",
    how="the standard's `vecdot` after NumPy's promotion table",
    backends={"torch": "`torch.linalg.vecdot` (floating dtypes) after NumPy's promotion table"},
    bad_input={
        "bool": numeric_only("vecdot"),
        "mismatched": Raises(ValueError, r"vecdot: the vectors along axis -1 of `x1` \(3\) and `x2` \(2\) differ",
                             "vecdot: the vectors along axis -1 of `x1` (3) and `x2` (2) differ in length"),
        "batch": BadInput(Raises(ValueError, r"vecdot: the shapes of `x1` \(2, 3\) and `x2` \(4, 3\) do not broadcast",
                                 "vecdot: the shapes of `x1` (2, 3) and `x2` (4, 3) do not broadcast"),
                          args=_VEC_BATCH),
        "0-d": Raises(ValueError, r"vecdot: the vectors along axis -1 of `x1` \(1\) and `x2` \(2\) differ",
                      "vecdot: the vectors along axis -1 of `x1` (1) and `x2` (2) differ in length"),
    },
)
def vecdot(x1: Array, x2: Array, /, *, axis: int = -1, xp: Namespace | None = None) -> Array:
    """Dot product of vectors along `axis`: ``sum(conj(x1) * x2, axis)``, broadcast.

    Parameters
    ----------
    x1, x2 : array
        Numeric; their shapes broadcast; mixed dtypes promoted as by :func:`matmul`.
        `x1` is conjugated (complex input), as the standard says.
    axis : int, optional
        The axis of the vectors (after broadcasting); default -1. Negative only
        is what the standard requires of portable code.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The broadcast shape without `axis`.

    Raises
    ------
    ValueError
        If the shapes do not broadcast, or the vectors differ in length.
    TypeError
        For bool or non-numeric operands.

    Examples
    --------
    >>> import xlinalg as xl
    >>> float(xl.vecdot(xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])))
    11.0
    """
    if (xp is None and type(axis) is int and axis == -1 and (t := type(x1)) is type(x2)
            and (f := _VECDOT_FAST.get(t)) is not None and (r := f(x1, x2)) is not MISSING):
        return r
    k = int_arg(axis, "vecdot", "axis")
    ad, x1, x2 = _pair(x1, x2, "vecdot", xp)
    nd = max(x1.ndim, x2.ndim)
    if nd == 0 or not -nd <= k < nd:
        raise ValueError(f"vecdot: `axis` {k} is out of range for `x1` {ad.describe(x1)} and `x2` {ad.describe(x2)}")
    kk = k % nd
    n1 = x1.shape[kk - nd + x1.ndim] if kk - nd + x1.ndim >= 0 else 1
    n2 = x2.shape[kk - nd + x2.ndim] if kk - nd + x2.ndim >= 0 else 1
    if _validate.sizes_differ(n1, n2):
        raise ValueError(f"vecdot: the vectors along axis {k} of `x1` ({n1}) and `x2` ({n2}) differ in length")
    try:
        _validate.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"vecdot: the shapes of `x1` {tuple(x1.shape)} and `x2` {tuple(x2.shape)} do not broadcast") from None
    return native_call(ad, "vecdot", lambda: _vecdot(ad, x1, x2, k), ("x1", x1), ("x2", x2))


def _vecdot(ad: Adapter, x1: Any, x2: Any, k: int) -> Any:
    xpn = ad.xp
    if (r := ad.native_vecdot(x1, x2, k)) is not None:
        return r
    if k != -1:
        x1, x2 = xpn.broadcast_arrays(x1, x2)
        x1, x2 = xpn.moveaxis(x1, k, -1), xpn.moveaxis(x2, k, -1)
    return xpn.vecdot(x1, x2, axis=-1)


@declare(
    "linalg", args={"x1": "vector", "x2": "vector"}, reference=np.cross, dtypes="promote",
    how="the standard's `linalg.cross` after NumPy's promotion table",
    backends={"dask": "the standard's indexing and arithmetic, lazily"},
    bad_input={
        **_vectors(3),
        "bool": numeric_only("cross"),
        "mismatched": Raises(ValueError, r"cross: `x2` must have size 3 along axis -1",
                             "cross: `x2` must have size 3 along axis -1, got …"),
        "batch": BadInput(Raises(ValueError, r"cross: the shapes of `x1` \(2, 3\) and `x2` \(4, 3\) do not broadcast",
                                 "cross: the shapes of `x1` (2, 3) and `x2` (4, 3) do not broadcast"),
                          args=_VEC_BATCH),
        "0x0": Raises(ValueError, r"cross: `x1` must have size 3 along axis -1",
                      "cross: `x1` must have size 3 along axis -1, got …"),
        "0-d": Raises(ValueError, r"cross: `x1` must have size 3 along axis -1",
                      "cross: `x1` must have size 3 along axis -1, got …"),
    },
)
def cross(x1: Array, x2: Array, /, *, axis: int = -1, xp: Namespace | None = None) -> Array:
    """Cross product of 3-element vectors along `axis`, broadcast.

    Parameters
    ----------
    x1, x2 : array
        Numeric, of size 3 along `axis`; the other axes broadcast; mixed dtypes
        promoted as by :func:`matmul`.
    axis : int, optional
        The axis of the vectors; default -1.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The broadcast shape.

    Raises
    ------
    ValueError
        If `axis` does not have size 3 in both, or the shapes do not broadcast.
    TypeError
        For bool or non-numeric operands.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.cross(xp.asarray([1.0, 0.0, 0.0]), xp.asarray([0.0, 1.0, 0.0])), "numpy")
    array([0., 0., 1.])
    """
    if (xp is None and type(axis) is int and axis == -1 and (t := type(x1)) is type(x2)
            and (f := _CROSS_FAST.get(t)) is not None and (r := f(x1, x2)) is not MISSING):
        return r
    k = int_arg(axis, "cross", "axis")
    ad, x1, x2 = _pair(x1, x2, "cross", xp)
    for nm, v in (("x1", x1), ("x2", x2)):
        if not -v.ndim <= k < v.ndim or v.shape[k] != 3:
            raise ValueError(f"cross: `{nm}` must have size 3 along axis {k}, got {ad.describe(v)}")
    if x1.ndim != x2.ndim and k >= 0:
        raise ValueError(
            f"cross: a non-negative `axis` ({k}) needs `x1` and `x2` of one number of dimensions, "
            f"got {x1.ndim} and {x2.ndim}; pass a negative axis"
        )
    try:
        _validate.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cross: the shapes of `x1` {tuple(x1.shape)} and `x2` {tuple(x2.shape)} do not broadcast") from None
    if k >= 0:  # (one number of dimensions: array-api-strict takes negative axes only)
        k -= x1.ndim
    return native_call(ad, "cross", lambda: _cross(ad, x1, x2, k), ("x1", x1), ("x2", x2))


def _cross(ad: Adapter, x1: Any, x2: Any, k: int) -> Any:
    xpn = ad.xp
    if ad.namespace_linalg and hasattr(xpn.linalg, "cross"):
        return xpn.linalg.cross(x1, x2, axis=k)
    a = xpn.moveaxis(x1, k, -1)
    b = xpn.moveaxis(x2, k, -1)
    c = xpn.stack(
        [a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
         a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
         a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]],
        axis=-1,
    )
    return xpn.moveaxis(c, -1, k)


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.matrix_power, dtypes="linalg", kwargs={"n": 3},
    how="the standard's `linalg.matrix_power`; a negative power of xlinalg's `inv`",
    backends={"torch": "`torch.linalg.matrix_power`; a negative power of xlinalg's `inv`",
              "dask": ("repeated squaring with Dask's `matmul`", "lazy")},
)
def matrix_power(x: Array, /, n: int, *, errors: str = "raise", xp: Namespace | None = None) -> Array:
    """Raise a square matrix (or each of a stack) to the integer power `n` by matrix products.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64 (the linear-algebra rule).
    n : int
        The power: 0 gives the identity (for every `x`); a negative power is that
        power of :func:`inv` (``x``), with its singular-matrix contract.
    errors : {"raise", "nan"}, optional
        For negative `n`: what :func:`inv` does with singular members.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., M, M)``
        In `x`'s library and device, in its floating dtype.

    Raises
    ------
    LinAlgError
        For a negative `n` and singular members (``errors="raise"``).
    ValueError
        If `x` is not square.
    TypeError
        If `n` is not an int; for float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.matrix_power(xp.asarray([[1.0, 1.0], [0.0, 1.0]]), 3), "numpy")
    array([[1., 3.],
           [0., 1.]])
    """
    if (xp is None and errors == "raise" and type(n) is int and n > 0
            and (f := _MATRIX_POWER_FAST.get(type(x))) is not None and (r := f(x, n)) is not MISSING):
        return r
    k = int_arg(n, "matrix_power", "n")
    ad, x = matrix_input(x, "matrix_power", xp, square=True)
    xpn = ad.xp
    if k == 0 or 0 in tuple(x.shape):
        eye = xpn.eye(x.shape[-1], dtype=x.dtype, device=ad.device(x))
        return keep_subclass(xpn.zeros(tuple(x.shape), dtype=x.dtype, device=ad.device(x)) + eye, x)
    if k < 0:
        x = inv(x, errors=errors)
        k = -k
    elif errors != "raise":
        _validate.check_errors(errors)
    if ad.namespace_linalg:
        if (r := ad.native_matrix_power(x, k)) is not None:
            return r
        f = getattr(xpn.linalg, "matrix_power", None)
        if f is not None:
            r = f(x, k)
            return keep_subclass(r, x) if ad.numpy_arrays else r
    result = None
    base = x
    while k:
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if k:
            base = matmul(base, base)
    return result
