"""What the linalg-extension functions share: input checks, member errors.

The functions of ``_factor``, ``_det``, ``_eig``, ``_orthogonal``, ``_norms``,
``_views``, ``_products``, ``_matmul`` and ``_lstsq`` are written once against the
array API standard through the arguments' adapter; this module holds the parts they
have in common:

* :func:`matrix_input`: the argument checks of a function of one matrix (the
  library, dense, at least 2-D, square where asked) and xlinalg's dtype rule;
* :func:`common_dtype`: two operands in one dtype, by NumPy's promotion table;
* :func:`int_arg`, :func:`native_call`, :func:`numeric_only`: an int option, the
  library's own kernel with its refusals named, the declared error for bool input;
* :func:`member_error`: the one :class:`LinAlgError` naming failing batch members;
* :func:`fail_members`: raise for, or NaN, the members a native call failed on;
* :func:`block_member_error`: the error a block of a lazy library's array raises
  when computed (``Adapter.map_members``), naming global batch indices;
* :data:`NP_LOOPS` and :func:`np_square_loop`: the loop of a NumPy gufunc
  (``numpy.linalg._umath_linalg``) in the input's own precision.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _validate
from ._dispatch import adapter1
from ._lib._declare import Raises
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from .backends._base import Adapter

__all__ = [
    "NP_LOOPS",
    "block_member_error",
    "common_dtype",
    "converge_check",
    "fail_members",
    "finite_members",
    "int_arg",
    "matrix_input",
    "member_error",
    "native_call",
    "np_square_loop",
    "numeric_only",
    "real_dtype",
]

#: dtype char -> the gufuncs' loop of one output in the input's own precision
#: (numpy.linalg computes float32 in double; PyTorch, JAX and CuPy in float32, and so
#: does xlinalg everywhere)
NP_LOOPS = {"f": "f->f", "d": "d->d", "F": "F->F", "D": "D->D"}


def np_square_loop(x: Any, loops: dict[str, str]) -> str | None:
    """The gufunc loop (of `loops`) for a non-empty NumPy (stack of) square matrices, else None."""
    sig = loops.get(x.dtype.char)
    if sig is None or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2]:
        return None
    return sig


def matrix_input(x: Any, fn: str, xp: Any, *, square: bool = False, name: str = "x") -> tuple[Adapter, Any]:
    """The adapter of `x` and `x` in the dtype it is computed in (xlinalg's rule:
    float32/float64/complex64/complex128 kept, integers and bool in float64,
    float16/bfloat16 and long double refused with a ``TypeError`` naming `name`)."""
    ad, x = adapter1(x, name, xp)
    if (err := ad.dense_error(x, name, fn)) is not None:
        raise err
    _validate.matrix(ad, x, name, fn, square=square)
    dt = _validate.linalg_dtype(ad, x, name, fn)
    if isinstance(dt, np.dtype) and not dt.isnative:  # big-endian NumPy data: LAPACK's order
        dt = dt.newbyteorder("=")
    return ad, ad.astype(x, dt)


def common_dtype(ad: Adapter, x1: Any, x2: Any) -> tuple[Any, Any]:
    """`x1` and `x2` in their common dtype: NumPy's table for mixed kinds (int64 x
    float32 -> float64) on every backend, the library's own promotion otherwise."""
    if x1.dtype == x2.dtype:
        return x1, x2
    dt = _validate.mixed_dtype(ad, x1, x2)
    if dt is None:
        dt = ad.xp.result_type(x1.dtype, x2.dtype)
    return ad.astype(x1, dt), ad.astype(x2, dt)


def int_arg(v: Any, fn: str, name: str) -> int:
    """`v` as an int (``operator.index``); a bool or anything else is a ``TypeError`` naming `name`."""
    if isinstance(v, bool):
        raise TypeError(f"{fn}: `{name}` must be an int, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fn}: `{name}` must be an int, got {type(v).__name__} {v!r:.80}") from None


def native_call(ad: Adapter, fn: str, call: Any, *named: tuple[str, Any]) -> Any:
    """``call()``, the library's own kernel; a dtype it has no kernel for (torch's
    float8, complex32 or uint16-64 sums, ml_dtypes' int4 in NumPy) is named with the
    cast to make (:func:`xlinalg._validate.native_error`). A NumPy result is
    wrapped as NumPy wraps a ufunc's (:func:`keep_subclass`: NumPy's own ``outer``,
    ``cross`` and ``tensordot`` drop a subclass, its ``trace`` makes a 0-d array)."""
    try:
        out = call()
    except Exception as e:
        _validate.reraise(ad, fn, e, *named)
    return keep_subclass(out, *(v for _, v in named)) if ad.numpy_arrays else out


def numeric_only(fn: str, names: str = "`x1`") -> Raises:
    """The declared outcome of bool input to `fn` (the bad-input matrix): a ``TypeError``."""
    return Raises(TypeError, rf"{fn}: operands must be numeric|{fn}: `x` must be numeric",
                  f"{fn}: operands must be numeric, got {names} … bool …")


def real_dtype(ad: Adapter, x: Any) -> Any:
    """The real dtype of `x`'s (floating) dtype: float64 for complex128."""
    if ad.kind(x.dtype) != "c":
        return x.dtype
    return ad.xp.real(ad.xp.zeros((), dtype=x.dtype, device=ad.device(x))).dtype


def complex_dtype(ad: Adapter, x: Any) -> Any:
    """The complex dtype of `x`'s (floating) dtype: complex128 for float64."""
    xp = ad.xp
    if ad.kind(x.dtype) == "c":
        return x.dtype
    return xp.complex64 if x.dtype == xp.float32 else xp.complex128


def finite_members(xp: Any, x: Any) -> Any:
    """Boolean array over the batch of `x` (..., M, N): True where the member is all finite."""
    return xp.all(xp.isfinite(x), axis=(-2, -1))


def _indices(mask: np.ndarray, batch: tuple[int, ...]) -> tuple[list[tuple[int, ...]], list[int]]:
    m = np.asarray(mask, dtype=bool).reshape(batch)
    if not batch:
        return ([()], [0]) if bool(m) else ([], [])
    idx = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))]
    return idx, [int(i) for i in np.flatnonzero(m)]


def member_error(fn: str, what: str, indices: list[tuple[int, ...]], batch: tuple[int, ...],
                 fix: str, note: str = "") -> LinAlgError:
    """xlinalg's error for failing members of `x` (batch shape `batch`).

    `what`: the failure, as an adjective of a matrix ("singular", "not positive
    definite"); `fix`: what to do about it. The members are named by their batch
    indices (at most ten shown), as :attr:`LinAlgError.indices` and ``.members``.
    """
    members = [int(np.ravel_multi_index(ix, batch)) for ix in indices] if batch else [0] * len(indices)
    if not batch:
        msg = f"{fn}: `x` is {what}; {fix}"
    else:
        shown = ", ".join(str(ix if len(ix) > 1 else ix[0]) for ix in indices[:10])
        more = f" and {len(indices) - 10} more" if len(indices) > 10 else ""
        k = len(indices)
        msg = (
            f"{fn}: `x` has {k} {what} matri{'x' if k == 1 else 'ces'} in its batch of shape "
            f"{batch}, at batch index {shown}{more}{note}; {fix}"
        )
    return LinAlgError(msg, indices=indices, members=members)


def fail_members(ad: Adapter, x: Any, out: Any, failed: Any, errors: str, fn: str, what: str,
                 fix: str, finite: Any = None) -> Any:
    """`out` with NaN for the members in `failed`; or the error naming them.

    `failed` (over the batch): where the native call failed. A member whose input
    is not all finite (`finite`: the mask of those that are, or a callable making
    it when a member failed; by default over all of `x`) is never reported: NaN in, NaN out. With ``errors="raise"`` the others
    raise :func:`member_error`, except where no exception is possible (a traced
    `x`: ``jax.jit``, ``torch.compile``): NaN there.
    """
    xp = ad.xp
    if errors == "raise" and not ad.traced(x) and not ad.traced(out):
        if not bool(xp.any(failed)):  # the common case: no member failed, nothing to fill
            return out
        if finite is None:
            finite = finite_members(xp, x)
        elif callable(finite):
            finite = finite()
        bad = xp.logical_and(failed, finite)
        if bool(xp.any(bad)):
            batch = tuple(x.shape[:-2])
            idx, _ = _indices(ad.to_host(bad), batch)
            raise member_error(fn, what, idx, batch, fix)
    return ad.fill_nan(failed[..., None, None], out)


def converge_check(ad: Adapter, x: Any, vals: Any, fn: str, what: str) -> None:
    """Raise the error of a decomposition that did not converge: non-finite `vals`
    from an `x` holding NaN or inf (or NaN `vals` from any `x`). Nothing under a trace."""
    xp = ad.xp
    if ad.traced(vals) or ad.traced(x) or ad.lazy:
        return
    if not bool(xp.all(xp.isfinite(vals))) and (
        bool(xp.any(xp.isnan(vals))) or not bool(xp.all(xp.isfinite(x)))
    ):
        raise not_converged(ad, x, fn, what)


def not_converged(ad: Adapter, x: Any, fn: str, what: str) -> LinAlgError:
    xp = ad.xp
    try:
        finite = bool(xp.all(xp.isfinite(x)))
    except Exception:  # pragma: no cover - a library without isfinite on this dtype
        finite = True
    why = "" if finite else ": `x` contains NaN or inf"
    return LinAlgError(f"{fn}: the {what} of `x` did not converge{why}")


# ---------------------------------------------------------------------- blocks
def block_member_error(fn: str, what: str, fix: str,
                       batch: tuple[int, ...]) -> Callable[[list[tuple[int, ...]]], LinAlgError]:
    """The ``make_error`` of ``Adapter.map_members`` and ``map_solve``: global batch
    indices -> the error a computed block raises (:func:`member_error`)."""
    return functools.partial(_global_error, fn, what, fix, batch)


def _global_error(fn: str, what: str, fix: str, batch: tuple[int, ...], indices: list[tuple[int, ...]]) -> LinAlgError:
    note = " (in the chunk computed: Dask checks each chunk as it computes it)"
    return member_error(fn, what, indices, batch, fix, note)
