"""Argument checks shared by the public functions: cheap attribute reads only."""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from ._lib._shapes import broadcast_shapes
from .backends._base import Adapter

__all__ = [
    "batches",
    "broadcast_shapes",
    "check_errors",
    "empty_solve",
    "linalg_dtype",
    "matrix",
    "mixed_dtype",
    "native_error",
    "promote_linalg",
    "reraise",
    "solve_shapes",
]

ERRORS = ("raise", "nan")


def native_error(ad: Adapter, fn: str, exc: BaseException, *args: tuple[str, Any]) -> TypeError | None:
    """The error to raise instead of `exc`, raised by the library's own call, or None
    when `exc` is to be re-raised as it is. `args`: (name, argument) pairs.

    * A sparse or nested PyTorch tensor among `args` (which torch takes in some
      kernels and not others): the error naming it and ``to_dense()``.
    * A library without a kernel of `fn` for these dtypes: PyTorch has no arithmetic
      on float8 and no add or matmul on uint16-uint64 (NotImplementedError "add_stub
      not implemented for 'UInt16'"); JAX and XLA answer "UNIMPLEMENTED"; NumPy's
      reductions call ml_dtypes' int2/int4 "Invalid integer data type". The error
      names each argument, its dtype and library, and the cast to make.
    """
    arrays = [(n, x) for n, x in args if hasattr(x, "dtype") and not isinstance(x, np.generic)]
    for n, x in arrays:
        if (err := ad.dense_error(x, n, fn)) is not None:
            return err
    if not isinstance(exc, NotImplementedError) and not (
        type(exc).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and str(exc).startswith("UNIMPLEMENTED")
    ) and not (  # NumPy's reductions on ml_dtypes' int2/int4 (a 'V' void dtype to them)
        isinstance(exc, (TypeError, ValueError)) and "Invalid integer data type" in str(exc)
    ):
        return None
    why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    dtypes = sorted({ad.dtype_name(x.dtype) for _, x in arrays})
    got = " and ".join(f"`{n}` {ad.describe(x)}" for n, x in arrays)
    return TypeError(
        f"{fn}: {ad.library} has no {fn} for dtype {' and '.join(dtypes)} ({why}), got {got}; "
        f"cast first to a dtype it computes in, e.g. `xp.astype({arrays[0][0]}, xp.float32)`"
    )


def reraise(ad: Adapter, fn: str, exc: BaseException, *args: tuple[str, Any]) -> NoReturn:
    """Raise :func:`native_error`'s error from `exc`, or `exc` itself."""
    err = native_error(ad, fn, exc, *args)
    if err is None:
        raise exc
    raise err from exc


def check_errors(errors: str) -> None:
    if errors not in ERRORS:
        raise ValueError(f"`errors` must be one of {ERRORS}, got {errors!r}")


def matrix(ad: Adapter, x: Any, name: str, fn: str, *, square: bool = False) -> None:
    """Check that `x` is a matrix or a stack of matrices (square if asked)."""
    shape = x.shape
    if len(shape) < 2:
        what = "a square matrix or a stack of square matrices" if square else "a matrix or a stack of matrices"
        raise ValueError(
            f"{fn}: `{name}` must be {what} (at least 2 dimensions), got {ad.describe(x)}"
        )
    if square and shape[-1] != shape[-2]:
        raise ValueError(
            f"{fn}: `{name}` must be a square matrix or a stack of square matrices, "
            f"got shape {tuple(shape)} (last two dimensions {shape[-2]}×{shape[-1]})"
        )


def unknown_sizes(ad: Adapter, fn: str, *named: tuple[str, Any, Any]) -> None:
    """Raise ValueError naming ``compute_chunk_sizes()`` where an axis that `fn` must
    know has an unknown (NaN) size: Dask's ``x[mask]``. `named`: ``(name, array,
    axes)``, the axes `fn` needs known (negative indices)."""
    for name, x, axes in named:
        shape = tuple(x.shape)
        bad = [ax for ax in axes if -len(shape) <= ax < len(shape) and shape[ax] != shape[ax]]
        if bad:
            raise ValueError(
                f"{fn}: `{name}` is {ad.describe(x)}, with unknown (NaN) chunk sizes along axis "
                f"{', '.join(str(len(shape) + ax if ax < 0 else ax) for ax in bad)} (as after boolean "
                f"indexing); {fn} needs those sizes to check and lay out the blocks: call "
                f"`{name}.compute_chunk_sizes()` first (it computes them once, in place)"
            )


def sizes_differ(m: Any, n: Any) -> bool:
    """Whether two axis lengths are both known and differ. Unknown: Dask's NaN
    (``x[mask]``), the standard's None; the library checks those when it computes."""
    return m != n and m is not None and n is not None and m == m and n == n


def batches(fn: str, sa: Any, sb: Any) -> None:
    """Check that the batch shapes (all but the last two axes) of `a` and `b` broadcast."""
    try:
        broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(
            f"{fn}: the batch shapes of `a` {tuple(sa[:-2])} and `b` {tuple(sb[:-2])} "
            "do not broadcast"
        ) from None


def solve_shapes(ad: Adapter, a: Any, b: Any, vector: bool, sa: Any = None, sb: Any = None) -> None:
    """The shape rules of ``solve(a, b)``: square `a`, matching rows, broadcastable batches.

    `sa` and `sb`: the shapes of `a` and `b`, where the caller has them.
    """
    if sa is None:
        sa, sb = a.shape, b.shape
    if len(sa) < 2 or sa[-1] != sa[-2]:
        matrix(ad, a, "a", "solve", square=True)
    if not sb:
        raise ValueError(f"solve: `b` must be a vector (M,) or a matrix (..., M, K), got {ad.describe(b)}")
    if sb[0 if vector else -2] != sa[-1]:
        raise ValueError(
            f"solve: `b` must have {sa[-1]} rows to match `a` of shape {tuple(sa)}, "
            f"got shape {tuple(sb)}"
            + ("" if vector else " (for a matrix right-hand side the rows are axis -2)")
        )
    if not vector and (len(sa) > 2 or len(sb) > 2):
        batches("solve", sa, sb)


def empty_solve(ad: Adapter, a: Any, b: Any, vector: bool) -> Any:
    """The solution of a solve with an empty `a` or `b`: zeros of the result's shape."""
    xp = ad.xp
    if vector:
        shape = (*a.shape[:-2], b.shape[-1])
    else:
        batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
        shape = (*batch, *b.shape[-2:])
    return xp.zeros(shape, dtype=a.dtype, device=ad.device(a))


def linalg_dtype(ad: Adapter, x: Any, name: str, fn: str) -> Any:
    """The floating dtype `x` is computed in, per xlinalg's dtype rule.

    float32/float64/complex64/complex128 are kept; integers and bool become
    float64 (float32 where the device has no float64); float16/bfloat16 and extended
    precision (float128/complex256: no LAPACK routine) raise.
    """
    k = ad.kind(x.dtype)
    if k in "fc":
        return x.dtype
    if k in "ib":
        return ad.float_dtypes(x)[1]
    if k == "h":
        raise TypeError(
            f"{fn}: `{name}` has dtype {ad.dtype_name(x.dtype)}, which no backend's linear "
            "algebra supports uniformly; cast it first, e.g. "
            f"`xp.astype({name}, xp.float32)`, and cast the result back if needed"
        )
    if k == "x":
        raise TypeError(
            f"{fn}: `{name}` has extended precision ({ad.dtype_name(x.dtype)}), which is not "
            f"supported on this path: LAPACK (and so every backend's {fn}) has no long-double "
            f"routines. Cast it first, e.g. `{name}.astype(numpy.float64)` (complex256: "
            "complex128), losing the extra precision"
        )
    raise TypeError(
        f"{fn}: `{name}` must have a real or complex floating dtype (or an integer or "
        f"bool dtype, computed in float64), got {ad.dtype_name(x.dtype)}"
    )


def promote_linalg(ad: Adapter, a: Any, b: Any, fn: str, na: str = "a", nb: str = "b") -> tuple[Any, Any]:
    """Cast `a` and `b` to their common floating dtype (the standard's promotion)."""
    da = linalg_dtype(ad, a, na, fn)
    db = linalg_dtype(ad, b, nb, fn)
    if da != db:
        dt = ad.xp.result_type(da, db)
    else:
        dt = da
    if isinstance(dt, np.dtype) and not dt.isnative:  # big-endian NumPy data: LAPACK's order, as
        dt = dt.newbyteorder("=")  # numpy.linalg answers (and one kernel per dtype stays right)
    return ad.astype(a, dt), ad.astype(b, dt)


_WIDE = {"float64": "float32", "complex128": "complex64"}
_WIDE_INT = {"int64": "int32", "uint64": "uint32"}


def mixed_dtype(ad: Adapter, x1: Any, x2: Any) -> Any:
    """The common dtype of two arrays of different dtypes: NumPy's promotion table.

    The standard leaves mixed kinds (integer with float) undefined: PyTorch and JAX
    give ``int64 + float32 -> float32``, array-api-strict raises. xlinalg uses
    NumPy's table on every backend (``int64 + float32 -> float64``,
    ``int8 + float32 -> float32``), with float64 narrowed to float32 on devices
    without float64, and int64 to int32 where the library makes no 64-bit integers
    (JAX's default mode). None where a dtype has no NumPy equivalent (bfloat16).
    """
    try:
        name = np.result_type(np.dtype(ad.dtype_name(x1.dtype)), np.dtype(ad.dtype_name(x2.dtype))).name
    except TypeError:
        return None
    if name in _WIDE and ad.float_dtypes(x1)[1] == ad.xp.float32:
        name = _WIDE[name]
    elif name in _WIDE_INT and not ad.has_int64(x1):
        name = _WIDE_INT[name]
    return getattr(ad.xp, name, None)
