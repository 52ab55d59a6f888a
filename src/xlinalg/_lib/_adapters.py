"""One adapter per array library: the few places where libraries must be told apart.

The public functions (``xlinalg._linalg``, ``xlinalg._elementwise``) are written
once against the array API standard. What the standard leaves to each library,
and what xlinalg promises to be the same everywhere, is settled here:

* how a *singular* matrix is detected (NumPy and PyTorch raise, JAX and CuPy
  return inf/NaN silently, Dask can only fail at ``compute()``);
* which native routine is called, with unambiguous arguments (torch and CuPy
  read a ``(B, M)`` right-hand side as a batch of vectors; CuPy does not
  broadcast batch dimensions);
* devices, laziness and tracing (no exception is possible under ``jax.jit``).

The base :class:`Adapter` is the pure-standard implementation; subclasses
override only what their library does differently or faster.
"""

from __future__ import annotations

import cmath
import itertools
import math
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._errors import LinAlgError
from ._typing import QRMode

__all__ = [
    "NUMPY",
    "Adapter",
    "adapter_for_namespace",
    "adapter_for_type",
    "backend_name",
]

def _to_batch(mask: np.ndarray, batch_shape: tuple[int, ...]) -> np.ndarray:
    """Reduce a mask over a broadcast batch to `batch_shape` (any over broadcast axes)."""
    if mask.shape == batch_shape:
        return mask
    lead = mask.ndim - len(batch_shape)
    if lead > 0:
        mask = np.asarray(mask.any(axis=tuple(range(lead))))
    axes = tuple(i for i, (s, t) in enumerate(zip(mask.shape, batch_shape)) if t == 1 and s != 1)
    return np.asarray(mask.any(axis=axes, keepdims=True)) if axes else mask


def _singular_message(indices: list[tuple[int, ...]], batch_shape: tuple[int, ...],
                      note: str = "") -> str:
    if not batch_shape:
        return "`a` is singular: solve needs an invertible matrix"
    shown = ", ".join(str(ix if len(ix) > 1 else ix[0]) for ix in indices[:10])
    more = f" and {len(indices) - 10} more" if len(indices) > 10 else ""
    return (
        f"`a` has {len(indices)} singular matri{'x' if len(indices) == 1 else 'ces'} "
        f"in its batch of shape {batch_shape}, at batch index {shown}{more}{note}; "
        'pass errors="nan" to get NaN for those members and solutions for the rest'
    )


def _extended(dtype: Any) -> bool:
    """Whether `dtype` is NumPy's extended precision (long double: float96/128, complex192/256)."""
    return isinstance(dtype, np.dtype) and (
        (dtype.kind == "f" and dtype.itemsize > 8) or (dtype.kind == "c" and dtype.itemsize > 16)
    )


def singular_members(xp: Any, zero: Any, a: Any, b: Any) -> Any:
    """xlinalg's rule for what ``solve`` reports as singular, per batch member.

    The one place that decides it (docs/semantics.md, "solve: singular, non-finite
    and subnormal input"); every backend's solve path calls it with its own
    zero-pivot mask:

    * a member is *singular* when LU with partial pivoting of its `a` meets an
      exact zero pivot, computed with IEEE subnormals kept (LAPACK's criterion: a
      subnormal pivot such as that of ``1e-310 * I`` is not zero; such a member's
      solution may overflow to inf/NaN, without an error);
    * a member whose `a` or `b` holds NaN or inf is never reported singular:
      NaN in, NaN out, without an error (also when its `a` is singular too).

    `zero` is the zero-pivot mask over `a`'s batch (or the broadcast batch); `a`
    ``(..., M, M)`` and `b` ``(..., M, K)`` (a vector given a trailing unit axis).
    Returns the mask over the broadcast batch of the members to report (raise for
    with ``errors="raise"``, NaN with ``errors="nan"``).
    """
    fin = xp.logical_and(
        xp.all(xp.isfinite(a), axis=(-2, -1)), xp.all(xp.isfinite(b), axis=(-2, -1))
    )
    return xp.logical_and(zero, fin)


class Adapter:
    """The standard-only implementation; the base of every library's adapter."""

    #: short library name used in messages
    library = "array API"
    #: lazy arrays (no exception possible before compute)
    lazy = False

    #: whether the fast path of solve must check devices (False where the native
    #: call itself refuses mixed devices and the adapter translates its error)
    fast_device_check = True
    #: whether every array of this library is on one device (caches may leave it out of keys)
    single_device = False

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        #: dtypes linalg routines take as they are (the floating dtypes)
        self.solve_dtypes: frozenset[Any] = frozenset(
            getattr(xp, n) for n in ("float32", "float64", "complex64", "complex128") if hasattr(xp, n)
        )
        #: native kernels for same-dtype operands of this library (add, matmul, ...)
        self.fast: dict[str, Any] = {}
        #: dtypes the native sigmoid kernel (fast["sigmoid"]) takes as they are
        self.sigmoid_dtypes: frozenset[Any] = frozenset(
            getattr(xp, n) for n in ("float32", "float64") if hasattr(xp, n)
        )
        #: dtypes the fast kernels must not see (the native call would accept them)
        self.fast_excluded: frozenset[Any] = frozenset()
        #: ops whose native kernel refuses operands of two dtypes and every dtype the
        #: contract refuses (torch.matmul): the fast path then reads no dtype at all
        self.fast_refuses_mixed: frozenset[str] = frozenset()
        #: ``f(a, b)`` for xl.solve with its defaults, or None. It returns the
        #: solution only where the library's own call is the whole contract for
        #: those operands (one matrix, one floating dtype, a finite result), else
        #: :data:`MISSING`: xl.solve then takes its checked path, which gives the
        #: same answer or the error naming the argument (a singular matrix is
        #: solved twice, to be named; a success pays nothing more)
        self.solve_fast: Callable[[Any, Any], Any] | None = None

    def solve_fast_for(self, cls: type) -> Callable[[Any, Any], Any] | None:
        """:attr:`solve_fast` for arrays of type `cls` (None: never for them)."""
        return self.solve_fast

    # ------------------------------------------------------------ description
    def device(self, x: Any) -> Any:
        return getattr(x, "device", None)

    def describe(self, x: Any) -> str:
        shape = tuple(x.shape)
        art = "an" if self.library[:1].lower() in "aeiou" else "a"
        return f"{art} {self.library} array of shape {shape} and dtype {self.dtype_name(x.dtype)}{self._where(x)}"

    def _where(self, x: Any) -> str:
        dev = self.device(x)
        return "" if dev is None or str(dev) == "cpu" else f" on device {dev}"

    def dtype_name(self, dtype: Any) -> str:
        return str(dtype).rsplit(".", 1)[-1]

    def backend(self, x: Any) -> str:
        from .. import backends

        return backends.backend_of(x)

    def traced(self, x: Any) -> bool:
        """Whether `x` is a tracer (no concrete values: no exceptions possible)."""
        return False

    # ------------------------------------------------------------ devices
    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        da, db = self.device(a), self.device(b)
        if da != db:
            raise ValueError(
                f"`{na}` is on device {da} but `{nb}` is on device {db}: "
                f"move one of them first, e.g. `xlinalg.to({nb}, {self.backend(a)!r})` "
                "or the library's own .to(device)"
            )

    # ------------------------------------------------------------ host data
    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        """Convert host data (list, tuple, scalar) to an array next to `like`."""
        xp = self.xp
        try:
            if like is None:
                return xp.asarray(obj)
            return xp.asarray(obj, device=self.device(like))
        except Exception as exc:
            raise TypeError(
                f"`{name}` could not be converted to a {self.library} array: {exc}"
            ) from exc

    # ------------------------------------------------------------ dtypes
    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        """The (float32, float64) dtypes of this namespace; float64 may be float32."""
        xp = self.xp
        f64 = xp.float64
        try:
            info = xp.__array_namespace_info__()
            if "float64" not in info.dtypes(device=self.device(x), kind="real floating"):
                f64 = xp.float32
        except Exception:
            pass
        return xp.float32, f64

    def kind(self, dtype: Any) -> str:
        """'f' real float, 'c' complex, 'i' integer, 'b' bool, 'h' half/bfloat16,
        'x' extended precision (NumPy's float128/complex256), '?' other."""
        if _extended(dtype):
            return "x"
        xp = self.xp
        name = self.dtype_name(dtype)
        if name in ("float16", "bfloat16", "half"):
            return "h"
        if xp.isdtype(dtype, "bool"):
            return "b"
        if xp.isdtype(dtype, "integral"):
            return "i"
        if xp.isdtype(dtype, "real floating"):
            return "f"
        if xp.isdtype(dtype, "complex floating"):
            return "c"
        return "?"

    def astype(self, x: Any, dtype: Any) -> Any:
        return x if x.dtype == dtype else self.xp.astype(x, dtype)

    # ------------------------------------------------------------ linalg kernels
    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        """Solve with `b` already of shape ``(..., M)`` (vector) or ``(..., M, K)``."""
        xp = self.xp
        bm = b[..., None] if vector else b
        try:
            x = xp.linalg.solve(a, bm)
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            x = self._solve_after_failure(a, bm, errors, exc)
        else:
            x = self._post_check(a, bm, x, errors)
        return x[..., 0] if vector else x

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, np.linalg.LinAlgError)

    def zero_pivots(self, a: Any) -> Any:
        """Boolean array over the batch: True where LU of `a` meets an exact zero pivot.

        LAPACK's criterion (``slogdet`` returns sign 0), with subnormals kept. What
        is *reported* singular is decided by :func:`singular_members`.
        """
        sign, _ = self.xp.linalg.slogdet(a)
        return sign == 0

    def singular_members(self, a: Any, b: Any) -> Any:
        """The members of ``solve(a, b)`` reported singular (:func:`singular_members`)."""
        return singular_members(self.xp, self.zero_pivots(a), a, b)

    def _raise_singular(self, mask: Any, batch_shape: tuple[int, ...], cause: Any = None) -> None:
        """Raise LinAlgError naming the singular members of `a` (batch shape `batch_shape`).

        `mask` may cover the batch broadcast against `b`'s; it is reduced to `a`'s.
        """
        m = _to_batch(np.asarray(self.to_host(mask)), batch_shape).reshape(batch_shape)
        indices: list[tuple[int, ...]] = (
            [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))] if batch_shape else [()]
        )
        members = [int(i) for i in np.flatnonzero(m)] if batch_shape else [0]
        raise LinAlgError(
            _singular_message(indices, batch_shape), indices=indices, members=members
        ) from cause

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def stack(self, arrays: list[Any]) -> Any:
        """One array from many of one shape, dtype and device (``solve_many``)."""
        return self.xp.stack(arrays, axis=0)

    def unstack(self, x: Any) -> list[Any]:
        """The members of `x` along its first axis, as views, in order (``solve_many``)."""
        unstack = getattr(self.xp, "unstack", None)
        if unstack is not None:
            return list(unstack(x, axis=0))
        return [x[i, ...] for i in range(x.shape[0])]

    def _solve_after_failure(self, a: Any, b: Any, errors: str, exc: BaseException) -> Any:
        """The native solve raised for singular members: name them, or NaN them."""
        xp = self.xp
        zero = self.zero_pivots(a)
        if not bool(xp.any(zero)):
            raise exc  # not what we think: let the library's error through
        if errors == "raise":
            sing = singular_members(xp, zero, a, b)
            if bool(xp.any(sing)):
                self._raise_singular(sing, tuple(a.shape[:-2]), exc)
            # only members with NaN/inf input met a zero pivot: NaN for them, no error
        return self._solve_masked(a, b, zero)

    def _solve_masked(self, a: Any, b: Any, mask: Any) -> Any:
        """Solve with singular members replaced by I, then set their solutions to NaN."""
        xp = self.xp
        n = a.shape[-1]
        eye = xp.eye(n, dtype=a.dtype, device=self.device(a))
        m3 = mask[..., None, None]
        a_safe = xp.where(m3, eye, a)
        x = xp.linalg.solve(a_safe, b)
        nan = xp.asarray(float("nan"), dtype=x.dtype, device=self.device(x))
        return xp.where(m3, nan, x)

    def _post_check(self, a: Any, b: Any, x: Any, errors: str) -> Any:
        """Hook for libraries that do not raise on singular input (JAX, CuPy)."""
        return x

    def _bad_members(self, a: Any, b: Any, x: Any) -> Any:
        """Members whose solution is not finite although `a` and `b` are: singular."""
        xp = self.xp
        fin_x = xp.all(xp.isfinite(x), axis=(-2, -1))
        fin_a = xp.all(xp.isfinite(a), axis=(-2, -1))
        fin_b = xp.all(xp.isfinite(b), axis=(-2, -1))
        return xp.logical_and(xp.logical_not(fin_x), xp.logical_and(fin_a, fin_b))

    def _check_nonfinite(
        self, a: Any, b: Any, x: Any, errors: str, batch_shape: tuple[int, ...] | None = None
    ) -> Any:
        """Singular detection from the result, for libraries that return inf/NaN.

        `batch_shape` is the batch shape of the caller's `a` (before broadcasting).
        """
        xp = self.xp
        if batch_shape is None:
            batch_shape = tuple(x.shape[:-2])
        if self.traced(x) or self.lazy:
            errors = "nan"  # no exception possible: documented NaN semantics
        if errors == "raise":
            # one reduction over the result where it lies, one bool read (a sync);
            # only when some entry is not finite does the rule run (a zero pivot with
            # finite input: an overflowing solution, 1e-310 * I, is not an error)
            if not bool(xp.all(xp.isfinite(x))):
                sing = self.singular_members(a, b)
                if bool(xp.any(sing)):
                    self._raise_singular(sing, batch_shape)
            return x
        bad = self._bad_members(a, b, x)
        nan = xp.asarray(float("nan"), dtype=x.dtype, device=self.device(x))
        return xp.where(bad[..., None, None], nan, x)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    # SVD of NaN or inf: LAPACK fails for NaN but returns NaN for inf, JAX returns
    # NaN for both. xlinalg raises LinAlgError for both, everywhere (NaN under a
    # trace); checking S costs a look at k numbers (a wait for the result on a GPU).
    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        try:
            out = tuple(self.xp.linalg.svd(a, full_matrices=full_matrices))
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            raise self._svd_error(a, "svd") from exc
        self._check_svd(a, out[1], "svd")
        return out

    def svdvals(self, a: Any) -> Any:
        try:
            s = self.xp.linalg.svdvals(a)
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            raise self._svd_error(a, "svdvals") from exc
        self._check_svd(a, s, "svdvals")
        return s

    def _check_svd(self, a: Any, s: Any, fn: str) -> None:
        if not self.traced(s) and not bool(self.xp.all(self.xp.isfinite(s))):
            raise self._svd_error(a, fn)

    def _svd_error(self, a: Any, fn: str) -> LinAlgError:
        """The one error for an SVD that did not converge (NaN or inf in `a`, mostly)."""
        xp = self.xp
        try:
            finite = bool(xp.all(xp.isfinite(a)))
        except Exception:  # pragma: no cover - a library without isfinite on this dtype
            finite = True
        why = "" if finite else ": `x` contains NaN or inf"
        return LinAlgError(f"{fn}: the SVD of `x` did not converge{why}")

    def qr(self, a: Any, mode: QRMode) -> tuple[Any, Any]:
        q, r = self.xp.linalg.qr(a, mode=mode)
        return q, r

    # ------------------------------------------------------------ elementwise
    def sigmoid(self, x: Any) -> Any:
        """Numerically stable logistic function from standard operations.

        ``e = exp(-|x|)``; ``x >= 0 -> 1 / (1 + e)``, else ``e / (1 + e)``. Neither
        branch overflows, for any |x|.
        """
        xp = self.xp
        if xp.isdtype(x.dtype, "complex floating"):
            # no order on C: the plain formula, as torch.sigmoid computes it
            return 1.0 / (1.0 + xp.exp(-x))
        e = xp.exp(-xp.abs(x))
        one_plus = 1.0 + e
        return xp.where(x >= 0, 1.0 / one_plus, e / one_plus)


# ====================================================================== NumPy
_NP_NON_NUMERIC = frozenset(np.dtype(c) for c in "?OUSVMm")

#: what an adapter's ``solve_fast`` returns when xl.solve must take its checked path
MISSING: Any = object()


class NumPyAdapter(Adapter):
    library = "NumPy"
    single_device = True

    def __init__(self) -> None:
        import array_api_compat.numpy as xnp

        super().__init__(xnp)
        self.fast_device_check = False
        self.solve_dtypes = frozenset(np.dtype(c) for c in "fdFD")
        self.sigmoid_dtypes = frozenset(np.dtype(c) for c in "fd")
        self.fast = {n: getattr(np, n) for n in ("add", "subtract", "multiply", "matmul")}
        self.fast_excluded = _NP_NON_NUMERIC
        # the gufuncs behind numpy.linalg.solve (compat does the same for NumPy 1.x);
        # None: a NumPy without them
        self._solve_gufunc: Callable[..., Any] | None = None
        self._solve1_gufunc: Callable[..., Any] | None = None
        try:
            from numpy.linalg import _umath_linalg

            self._solve_gufunc = _umath_linalg.solve
            self._solve1_gufunc = _umath_linalg.solve1
        except Exception:  # pragma: no cover - a NumPy without them
            pass
        self._expit: Any = None

    def device(self, x: Any) -> Any:
        return "cpu"

    def describe(self, x: Any) -> str:
        return f"a NumPy array of shape {tuple(x.shape)} and dtype {x.dtype}"

    def backend(self, x: Any) -> str:
        return "numpy"

    def dtype_name(self, dtype: Any) -> str:
        return np.dtype(dtype).name

    def kind(self, dtype: Any) -> str:
        k = dtype.kind
        if k == "f":
            return "h" if dtype.itemsize == 2 else ("f" if dtype.itemsize in (4, 8) else "x")
        if k == "c":
            return "c" if dtype.itemsize in (8, 16) else "x"
        if k in "iu":
            return "i"
        return "b" if k == "b" else "?"

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        return np.dtype(np.float32), np.dtype(np.float64)

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        return None

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        try:
            out = np.asarray(obj)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a NumPy array: {exc}") from exc
        if out.dtype == object or out.dtype.kind in "USV":
            raise TypeError(
                f"`{name}` must hold numbers, got a {type(obj).__name__} that converts to "
                f"dtype {out.dtype} (ragged or non-numeric?)"
            )
        return out

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        gufunc = self._solve1_gufunc if vector else self._solve_gufunc
        if gufunc is None:  # pragma: no cover
            return super().solve(a, b, vector, errors)
        # The gufunc behind numpy.linalg.solve, in the inputs' precision (see
        # _NP_SIGNATURES); it signals a zero pivot as "invalid".
        dt = np.result_type(a.dtype, b.dtype)
        sig = _NP_SIGNATURES[dt.char]
        try:
            with np.errstate(call=_np_raise, invalid="call", over="ignore", divide="ignore", under="ignore"):
                return gufunc(a, b, signature=sig)
        except _NumPySingular as exc:
            bm = b[..., None] if vector else b
            x = self._solve_after_failure(a, bm, errors, exc)
            return x[..., 0] if vector else x

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, (np.linalg.LinAlgError, _NumPySingular))

    def _solve_masked(self, a: Any, b: Any, mask: Any) -> Any:
        m3 = mask[..., None, None]
        a_safe = np.where(m3, np.eye(a.shape[-1], dtype=a.dtype), a)
        x = np.linalg.solve(a_safe, np.broadcast_to(b, (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), *b.shape[-2:])))
        x[np.broadcast_to(m3, x.shape)] = np.nan
        return x

    def zero_pivots(self, a: Any) -> Any:
        with np.errstate(all="ignore"):
            sign, _ = np.linalg.slogdet(a)
        return sign == 0

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        try:
            out = np.linalg.svd(a, full_matrices=full_matrices)
        except np.linalg.LinAlgError as exc:
            raise self._svd_error(a, "svd") from exc
        if not np.isfinite(out.S).all():
            raise self._svd_error(a, "svd")
        return tuple(out)  # type: ignore[return-value]

    def svdvals(self, a: Any) -> Any:
        try:
            s = np.linalg.svd(a, compute_uv=False)
        except np.linalg.LinAlgError as exc:
            raise self._svd_error(a, "svdvals") from exc
        if not np.isfinite(s).all():
            raise self._svd_error(a, "svdvals")
        return s

    def qr(self, a: Any, mode: QRMode) -> tuple[Any, Any]:
        q, r = np.linalg.qr(a, mode=mode)
        return q, r

    def matmul(self, a: Any, b: Any) -> Any:
        return np.matmul(a, b)

    def sigmoid(self, x: Any) -> Any:
        if self._expit is None:
            try:  # SciPy's expit is one stable ufunc; without SciPy, the standard formula
                from scipy.special import expit

                self._expit = expit
                self.fast["sigmoid"] = expit  # for sigmoid_dtypes (float32/64) from now on
            except ImportError:  # pragma: no cover
                self._expit = False
        if self._expit is False or x.dtype.kind not in "f" or x.dtype.itemsize < 4:
            with np.errstate(all="ignore"):  # complex: inf/inf is "invalid", quietly NaN
                return super().sigmoid(x)
        return self._expit(x)


class _NumPySingular(np.linalg.LinAlgError):
    pass


def _np_raise(err: Any, flag: Any) -> None:
    raise _NumPySingular("Singular matrix")


# The gufunc has single- and double-precision loops only ("dd->f" does not exist):
# float32 input is solved in float32 LAPACK (sgesv), as PyTorch, JAX and CuPy do.
_NP_SIGNATURES = {"f": "ff->f", "d": "dd->d", "F": "FF->F", "D": "DD->D"}


# ====================================================================== torch
class TorchAdapter(Adapter):
    library = "PyTorch"

    def __init__(self) -> None:
        import array_api_compat.torch as xt
        import torch

        super().__init__(xt)
        self.torch = torch
        self._linalg_error = torch.linalg.LinAlgError
        self._tsolve = torch.linalg.solve  # bound once: two attribute reads per call saved
        self._below_ad = getattr(torch._C, "_AutoDispatchBelowADInplaceOrView", None)
        self.fast_device_check = False  # torch refuses mixed devices; solve translates it
        self.solve_dtypes = frozenset((torch.float32, torch.float64, torch.complex64, torch.complex128))
        self.fast = {n: getattr(torch, n) for n in ("add", "subtract", "multiply", "matmul", "sigmoid")}
        self.sigmoid_dtypes = frozenset((torch.float32, torch.float64))
        self.solve_fast = _solve_fast(torch.linalg.solve, self.solve_dtypes)
        # torch.matmul raises for float32 @ float64, int64 @ float32, bool, ...: the
        # checked path then promotes by the standard or names the argument
        self.fast_refuses_mixed = frozenset({"matmul"})

    def describe(self, x: Any) -> str:
        return f"a PyTorch tensor of shape {tuple(x.shape)} and dtype {self.dtype_name(x.dtype)} on {x.device}"

    def backend(self, x: Any) -> str:
        t = x.device.type
        return f"torch-{t}"

    def kind(self, dtype: Any) -> str:
        t = self.torch
        if dtype.is_floating_point:
            return "f" if dtype in (t.float32, t.float64) else "h"
        if dtype.is_complex:
            return "c" if dtype in (t.complex64, t.complex128) else "?"
        if dtype == t.bool:
            return "b"
        return "i"

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        t = self.torch
        f64 = t.float32 if x.device.type == "mps" else t.float64
        return t.float32, f64

    def astype(self, x: Any, dtype: Any) -> Any:
        return x if x.dtype == dtype else x.to(dtype)

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        if a.device != b.device:
            raise ValueError(
                f"`{na}` is on device {a.device} but `{nb}` is on device {b.device}: "
                f"move one of them first, e.g. `xlinalg.to({nb}, {self.backend(a)!r})` "
                f"or `{nb}.to({na}.device)`"
            )

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        t = self.torch
        try:
            arr = np.asarray(obj)
            return t.as_tensor(arr, device=None if like is None else like.device)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a PyTorch tensor: {exc}") from exc

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.detach().cpu().numpy())

    def unstack(self, x: Any) -> list[Any]:
        # unbind makes every member a view that autograd tracks (a shared version
        # counter, view metadata): most of the cost of each member. A result that
        # needs no gradient needs none of it, and its members do not overlap, so
        # they are unbound below autograd's view tracking (as torch's own Python
        # does): plain tensors over the same storage, each with its own version
        # counter. Anything autograd or a compiler must see takes plain unbind.
        t = self.torch
        if (self._below_ad is not None and not x.requires_grad
                and not t.compiler.is_compiling() and not t._C._are_functorch_transforms_active()):
            with self._below_ad():
                return list(x.unbind(0))
        return list(x.unbind(0))

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        if not vector and b.ndim == a.ndim - 1:
            # torch reads b of shape a.shape[:-1] as a batch of vectors; the standard
            # reads it as one matrix broadcast over the batch. A leading unit axis
            # makes torch read it the standard's way (no copy).
            b = b.unsqueeze(0)
        if errors == "raise":
            try:
                return self._tsolve(a, b)
            except self._linalg_error as exc:
                self.check_same_device(a, b, "a", "b")  # (a "meta" operand fails this way)
                bm = b.unsqueeze(-1) if vector else b
                x = self._solve_after_failure(a, bm, errors, exc)
                return x[..., 0] if vector else x
            except RuntimeError:
                self.check_same_device(a, b, "a", "b")  # torch's own message names no argument
                raise
        # errors="nan": the info array flags singular members without a device sync
        self.check_same_device(a, b, "a", "b")
        x, info = self.torch.linalg.solve_ex(a, b, check_errors=False)
        bad = info != 0
        nan = self.torch.tensor(float("nan"), dtype=x.dtype, device=x.device)
        return self.torch.where(bad[..., None] if vector else bad[..., None, None], nan, x)

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, self._linalg_error)

    def svdvals(self, a: Any) -> Any:
        try:
            s = self.torch.linalg.svdvals(a)
        except self._linalg_error as exc:
            raise self._svd_error(a, "svdvals") from exc
        self._check_svd(a, s, "svdvals")
        return s

    def sigmoid(self, x: Any) -> Any:
        return self.torch.sigmoid(x)


def _solve_fast(call: Callable[[Any, Any], Any], ok: frozenset[Any]) -> Callable[[Any, Any], Any]:
    """An adapter's ``solve_fast`` (see :class:`Adapter`) around the library's `call`.

    Only one matrix (``a.ndim == 2``) of one dtype in `ok`: there torch and JAX read
    `b` as the standard does ((M,) a vector, (..., M, K) matrices) and check shapes
    and devices themselves. Any refusal, or :data:`MISSING` from `call`, sends the
    operands to xl.solve's checked path, which names the argument (a singular matrix
    included). Saves the shape reads (cost: docs/performance.md).
    """

    def solve_fast(a: Any, b: Any) -> Any:
        if a.ndim == 2 and ((da := a.dtype) is b.dtype) and da in ok:
            try:
                return call(a, b)
            except Exception:
                pass
        return MISSING

    return solve_fast


# ====================================================================== JAX
class JaxAdapter(Adapter):
    library = "JAX"

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp

        super().__init__(jnp)
        self.jax = jax
        self._tracer = jax.core.Tracer
        self._all_cpu = all(d.platform == "cpu" for d in jax.devices())
        # one device: nothing to mismatch, and reading .devices() costs microseconds
        self.fast_device_check = len(jax.devices()) > 1
        self.single_device = not self.fast_device_check
        self.solve_dtypes = frozenset(np.dtype(c) for c in "fdFD")
        self.fast = {n: getattr(jnp, n) for n in ("add", "subtract", "multiply", "matmul")}
        self.fast["sigmoid"] = jax.nn.sigmoid
        self.sigmoid_dtypes = frozenset(np.dtype(c) for c in "fd")
        self.fast_excluded = _NP_NON_NUMERIC
        self._solve_cpu = _finite_or_missing(jnp.linalg.solve)
        if self._all_cpu and not self.fast_device_check:
            self.solve_fast = _solve_fast(self._solve_cpu, self.solve_dtypes)
        # errors="raise" off the host look: one compiled function per `vector`
        # returning the solution and one flag, "some entry is not finite"
        self._solve_flagged = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_flagged(jax, jnp, a, b, v)) for v in (False, True)
        }
        # errors="nan" (and traced): the solution alone, so the call returns one
        # array, as jnp.linalg.solve does (each extra output costs time on every call)
        self._solve_nan = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_nan(jnp, a, b, v)) for v in (False, True)
        }

    def solve_fast_for(self, cls: type) -> Callable[[Any, Any], Any] | None:
        # traced arrays (under jax.jit) have no values to look at: the checked path
        return None if issubclass(cls, self._tracer) else self.solve_fast

    def describe(self, x: Any) -> str:
        if self.traced(x):
            return f"a traced JAX array of shape {tuple(x.shape)} and dtype {x.dtype}"
        return f"a JAX array of shape {tuple(x.shape)} and dtype {x.dtype}{self._where(x)}"

    def _where(self, x: Any) -> str:
        try:
            devs = sorted(str(d) for d in x.devices())
        except Exception:
            return ""
        return "" if all(d.startswith("TFRT_CPU") or "cpu" in d.lower() for d in devs) else f" on {', '.join(devs)}"

    def device(self, x: Any) -> Any:
        if self.traced(x):
            return None
        try:
            return x.device
        except Exception:
            return None

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        if self.traced(a) or self.traced(b):
            return
        try:
            da, db = a.devices(), b.devices()
        except Exception:
            return
        if da != db and len(da) == 1 and len(db) == 1:
            super().check_same_device(a, b, na, nb)

    def traced(self, x: Any) -> bool:
        return isinstance(x, self._tracer)

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        jnp = self.xp
        return jnp.float32, (jnp.float64 if self.jax.config.read("jax_enable_x64") else jnp.float32)

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        try:
            arr = self.xp.asarray(obj)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a JAX array: {exc}") from exc
        dev = None if like is None else self.device(like)
        return arr if dev is None else self.jax.device_put(arr, dev)

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def stack(self, arrays: list[Any]) -> Any:
        # On the CPU, NumPy reads every array in place (zero-copy) and stacks them in
        # one C loop; jnp.stack dispatches per element (about 3x slower for many small
        # arrays: docs/performance.md). On an accelerator (or under a trace) the
        # stacking stays on the device.
        if self._all_cpu and not any(isinstance(x, self._tracer) for x in arrays):
            if self.fast_device_check and len({self.device(x) for x in arrays}) > 1:
                raise ValueError("the arrays are on different devices")  # solve_many groups them
            return self.asarray(np.array(arrays), arrays[0], "a")
        return self.xp.stack(arrays, axis=0)

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        traced = isinstance(a, self._tracer) or isinstance(b, self._tracer)
        if traced or errors == "nan":
            # One compiled call: the solution with NaN for singular members. No wait.
            return self._solve_nan[vector](a, b)
        if self._all_cpu and a.size + b.size <= HOST_LOOK_MAX:
            # errors="raise" on the CPU, a small result: the native call, then a
            # host-side look at the result (zero-copy; waits for it), cheaper than a
            # second output. Only a non-finite result costs more.
            x = self._solve_cpu(a, b)
            if x is not MISSING:
                return x
        # A large result, an accelerator (or a non-finite result): the solution and
        # the flag "some entry is not finite", reduced inside the compiled call
        # while the result is written; reading the flag waits, and it alone
        # crosses to the host.
        x, nonfinite = self._solve_flagged[vector](a, b)
        if nonfinite.item():
            # a zero pivot, NaN/inf input or an overflowing solution: the rule
            # (a zero pivot with finite input) tells them apart
            sing = self.singular_members(a, b[..., None] if vector else b)
            if bool(self.xp.any(sing)):
                self._raise_singular(sing, tuple(a.shape[:-2]))
        return x

    def zero_pivots(self, a: Any) -> Any:
        # LAPACK's criterion from the LU factors: a zero pivot. (jnp.linalg.slogdet
        # reports sign 0 for tiny but non-zero determinants, e.g. 1e-300 * I.) XLA's
        # CPU code flushes subnormals to zero (its LU of 1e-310 * I has a zero pivot):
        # on the CPU the factors come from NumPy's LAPACK on a zero-copy host view.
        if self._all_cpu and not self.traced(a):
            return NUMPY.zero_pivots(np.asarray(a))
        lu = self.jax.lax.linalg.lu(a)[0]
        return self.xp.any(self.xp.diagonal(lu, axis1=-2, axis2=-1) == 0, axis=-1)

    def sigmoid(self, x: Any) -> Any:
        return self.jax.nn.sigmoid(x)


def _finite_or_missing(solve: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """JAX on the CPU: `solve`, then a zero-copy host look at its result (waits for it).

    The result if all finite, else :data:`MISSING`: a zero pivot and NaN in the
    input both give non-finite results, and only the checked program tells them apart.
    """

    def call(a: Any, b: Any) -> Any:
        x = solve(a, b)
        try:
            # JAX's CPU arrays export their memory (the buffer protocol; the export
            # waits for the result): a few elements are read as Python numbers
            # without making a NumPy array (a complex one as its real and imaginary
            # parts: the cast reads the parts' format). Their total is finite only
            # if every element is; a total that overflows just takes the slow path.
            # (No `with`: the views are released when the call returns, and the
            # context manager costs as much as it saves.)
            m = memoryview(x)
            if m.nbytes <= _HOST_SUM_BYTES:
                # (the ignore: typeshed's memoryview.cast takes only literal formats)
                return x if cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())) else MISSING  # type: ignore[call-overload]
        except (TypeError, ValueError, BufferError, NotImplementedError):
            pass  # no export (another layout or device), or a format the cast refuses
        return x if _host_finite(np.asarray(x)) else MISSING

    return call


#: the largest result (bytes) that _finite_or_missing sums as Python numbers
_HOST_SUM_BYTES = 512


def _host_finite(h: np.ndarray) -> bool:
    """Whether a host array is all finite, as cheaply as the size allows (a quick test).

    Small arrays: the Python sum of their elements (no ufunc machinery, cheaper
    than one ufunc call at these sizes; ``cmath`` takes real and complex totals);
    larger ones: one BLAS dot product of non-negative terms. Either way inf or
    NaN anywhere makes the total non-finite and no floating-point warning is
    raised. ``False`` can also mean a huge finite result that overflows the
    total: callers then run their exact check, so that only costs time.
    """
    if h.size <= 64:
        try:  # a vector: no ravel, no dtype or ndim read (the one-system fast path)
            return cmath.isfinite(sum(h.tolist()))
        except TypeError:  # nested lists (a matrix), or a 0-d array's scalar
            return cmath.isfinite(sum(h.ravel().tolist()))
    return math.isfinite(np.vdot(h, h).real)


#: JaxAdapter.solve on the CPU, errors="raise": up to this many elements of `a` and
#: `b` together, the result is checked by a host look, above by a flag computed
#: inside the compiled call (docs/performance.md: where each is cheaper)
HOST_LOOK_MAX = 32768


def _jax_solve_flagged(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> tuple[Any, Any]:
    """Traced body: the solution and whether any of its entries is not finite.

    The barrier makes XLA reduce the written solution rather than fuse a second
    copy of the solve into the reduction.
    """
    bm = b[..., None] if vector else b
    x = jnp.linalg.solve(a, bm)
    nonfinite = ~jnp.all(jnp.isfinite(jax.lax.optimization_barrier(x)))
    return (x[..., 0] if vector else x), nonfinite


def _jax_solve_nan(jnp: Any, a: Any, b: Any, vector: bool) -> Any:
    """Traced body: the solution, NaN for members whose finite input gives inf/NaN."""
    bm = b[..., None] if vector else b
    x = jnp.linalg.solve(a, bm)
    fin_x = jnp.all(jnp.isfinite(x), axis=(-2, -1))
    fin_in = jnp.all(jnp.isfinite(a), axis=(-2, -1)) & jnp.all(jnp.isfinite(bm), axis=(-2, -1))
    x = jnp.where((~fin_x & fin_in)[..., None, None], jnp.nan, x)  # a zero pivot
    return x[..., 0] if vector else x


# ====================================================================== CuPy
class CuPyAdapter(Adapter):
    library = "CuPy"

    def __init__(self) -> None:
        import array_api_compat.cupy as xc
        import cupy

        super().__init__(xc)
        self.cupy = cupy

    def describe(self, x: Any) -> str:
        return f"a CuPy array of shape {tuple(x.shape)} and dtype {x.dtype} on cuda:{x.device.id}"

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.get())

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        try:
            if like is None:
                return self.cupy.asarray(obj)
            with like.device:
                return self.cupy.asarray(obj)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a CuPy array: {exc}") from exc

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        cp = self.cupy
        bm = b[..., None] if vector else b
        # CuPy neither broadcasts batch dimensions nor reads (B, M) the standard's way:
        # hand it equal batch shapes and a matrix right-hand side.
        batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(bm.shape[:-2]))
        a_b = cp.broadcast_to(a, (*batch, *a.shape[-2:]))
        b_b = cp.broadcast_to(bm, (*batch, *bm.shape[-2:]))
        with a.device:
            x = cp.linalg.solve(a_b, b_b)  # CuPy returns inf/NaN for singular input
            # errors="raise" syncs the device
            x = self._check_nonfinite(a_b, b_b, x, errors, tuple(a.shape[:-2]))
        return x[..., 0] if vector else x

    def sigmoid(self, x: Any) -> Any:
        try:
            from cupyx.scipy.special import expit

            if x.dtype.kind == "f":
                return expit(x)
        except ImportError:  # pragma: no cover
            pass
        return super().sigmoid(x)


# ====================================================================== Dask
class DaskAdapter(Adapter):
    """Dask arrays: each block of a stack is handled by the NumPy adapter.

    The matrix axes are made one chunk each (rechunked if needed); the batch axes
    keep their chunks, so stacks of matrices are processed in parallel blocks.
    Nothing is computed here: a singular member raises :class:`LinAlgError` when
    the result is computed (errors="raise"), with its global batch index.
    """

    library = "Dask"
    lazy = True
    single_device = True

    def __init__(self) -> None:
        import array_api_compat.dask.array as xd
        import dask.array as da

        super().__init__(xd)
        self.da = da

    def device(self, x: Any) -> Any:
        return "cpu"

    def describe(self, x: Any) -> str:
        return f"a Dask array of shape {tuple(x.shape)} and dtype {x.dtype}"

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        return self.da.from_array(NUMPY.asarray(obj, None, name))

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.compute() if hasattr(x, "compute") else x)

    def stack(self, arrays: list[Any]) -> Any:
        # da.stack makes one chunk per array (per system of solve_many): a task per
        # system at every later step. Dask's automatic chunk size groups them.
        return self.da.stack(arrays, axis=0).rechunk({0: "auto"})

    def _core_whole(self, x: Any, ncore: int = 2) -> Any:
        chunks = {i: -1 for i in range(x.ndim - ncore, x.ndim)}
        return x.rechunk(chunks) if any(len(c) > 1 for c in x.chunks[-ncore:]) else x

    def solve(self, a: Any, b: Any, vector: bool, errors: str,
              make_error: Callable[[list[tuple[int, ...]]], Exception] | None = None) -> Any:
        return self.map_solve(a, b, vector, errors, _numpy_solve, make_error)

    def map_solve(self, a: Any, b: Any, vector: bool, errors: str, kernel: Callable[..., Any],
                  make_error: Callable[[list[tuple[int, ...]]], Exception] | None = None) -> Any:
        """``kernel(ab, bb, vector, errors)`` (an eager NumPy solve) on each block: one task
        a chunk, as ``da.map_blocks`` of the native call.

        The batch axes keep their chunks (a shared `a` keeps `b`'s, and the other
        way round; where both are chunked, Dask's common refinement); the matrix
        axes are made one chunk each. With ``errors="raise"`` each block checks
        its own members: computing a chunk that holds a singular member raises
        :class:`LinAlgError` naming its global batch index (or what
        ``make_error(global batch indices)`` returns), and computing a slice pays
        only for its chunks.
        """
        da = self.da
        a = self._core_whole(a)
        n = a.shape[-1]
        a_batch = tuple(a.shape[:-2])
        paired: tuple[tuple[int, int], ...] = ()
        if vector:
            b = b.rechunk(-1) if b.numblocks[0] > 1 else b
            chunks = (*a.chunks[:-2], (n,))
        else:
            b = self._core_whole(b)
            nb = max(a.ndim, b.ndim) - 2
            letters = "abcdefghijklmnopqrstuvw"[:nb]
            ia, ib = letters[nb - (a.ndim - 2):] + "yx", letters[nb - (b.ndim - 2):] + "xz"
            if _unknown(a.chunks[:-2]) or _unknown(b.chunks[:-2]):
                out, paired = self._unknown_batch_chunks(a, b, ia, ib, letters)
            else:
                cks, (a, b) = da.core.unify_chunks(a, ia, b, ib)
                out = tuple(cks[c] for c in letters)
            chunks = (*out, (n,), b.chunks[-1])
        meta = np.empty((0,) * len(chunks), a.dtype)
        return da.map_blocks(
            _dask_solve_block, a, b, kernel, vector, errors, a_batch,
            tuple(_block_starts(c) for c in a.chunks[:-2]), len(chunks) - (1 if vector else 2),
            make_error, paired, dtype=a.dtype, chunks=chunks, meta=meta, drop_axis=[a.ndim - 1] if vector else None,
        )

    def _unknown_batch_chunks(self, a: Any, b: Any, ia: str, ib: str,
                              letters: str) -> tuple[tuple[Any, ...], tuple[tuple[int, int], ...]]:
        """Output batch chunks where some are unknown (``A[mask]``): blocks pair up one
        to one (each block then checks that its `a` and `b` agree: the pairs of
        axes returned), or broadcast from a single block of size 1."""
        out, paired = [], []
        for c in letters:
            ca = a.chunks[ia.index(c)] if c in ia else (1,)
            cb = b.chunks[ib.index(c)] if c in ib else (1,)
            if cb == (1,) or ca == (1,):
                out.append(ca if cb == (1,) else cb)
            elif len(ca) == len(cb):
                out.append(ca if _unknown((cb,)) else cb)
                paired.append((ia.index(c), ib.index(c)))
            else:
                raise ValueError(
                    f"solve: `a` {self.describe(a)} and `b` {self.describe(b)} have unknown "
                    f"chunk sizes (NaN in .shape) and {len(ca)} against {len(cb)} chunks along "
                    "a batch axis: call .compute_chunk_sizes() on both first"
                )
        return tuple(out), tuple(paired)

    def _gufunc(self, fn: Any, sig: str, a: Any, nout: int, sizes: dict[str, int], dtypes: Any) -> Any:
        # meta given explicitly: dask would derive it by casting a sample of `a`
        # (a complex -> real cast warns with ComplexWarning)
        core = [c.count(",") + 1 for c in sig.split("->")[1].strip("()").split("),(")]
        nb = a.ndim - 2
        metas = [np.empty((0,) * (nb + n), dtype=d) for n, d in zip(core, dtypes if nout > 1 else [dtypes])]
        return self.da.apply_gufunc(
            fn, sig, self._core_whole(a), meta=tuple(metas) if nout > 1 else metas[0],
            output_sizes=sizes, allow_rechunk=False,
        )

    def _blocked(self, a: Any) -> Any:
        """A matrix in more than one chunk, its short axis made one chunk, for Dask's
        tall-and-skinny (TSQR) or short-and-fat algorithms; None for stacks and
        single chunks (those run NumPy's call per matrix). Unknown row counts
        (``A[mask]``) count as tall."""
        if a.ndim != 2 or a.numblocks == (1, 1):
            return None
        m, n = a.shape
        return a.rechunk({0: -1}) if m < n else a.rechunk({1: -1})

    def _too_large(self, a: Any, fn: str, what: str, instead: str) -> ValueError:
        m = a.shape[0]
        size = "" if math.isnan(m) else f" ({m * m * a.dtype.itemsize / 2**30:.3g} GiB)"
        return ValueError(
            f"{fn}: `x` is {self.describe(a)} in chunks of {a.chunksize}: {what} would be a "
            f"({m}, {m}) array{size} in one piece; pass {instead} (Dask's tall-and-skinny "
            "algorithm, the factors chunked as `x`)"
        )

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        m, n = a.shape[-2:]
        blocked = self._blocked(a)
        if blocked is not None:
            if full_matrices and m != n:
                raise self._too_large(a, "svd", "U with full_matrices=True", "full_matrices=False")
            return tuple(self.da.linalg.svd(self._finite(blocked, "svd")))
        k = min(m, n)
        real = np.empty(0, a.dtype).real.dtype
        um, vn = (m, n) if full_matrices else (k, k)
        u, s, vh = self._gufunc(
            lambda x: NUMPY.svd(x, full_matrices), "(m,n)->(m,p),(k),(q,n)", a, 3,
            {"p": um, "k": k, "q": vn}, [a.dtype, real, a.dtype],
        )
        return u, s, vh

    def svdvals(self, a: Any) -> Any:
        blocked = self._blocked(a)
        if blocked is not None:  # (a compute of S alone culls the tasks of U)
            return self.da.linalg.svd(self._finite(blocked, "svdvals"))[1]
        real = np.empty(0, a.dtype).real.dtype
        k = min(a.shape[-2:])
        return self._gufunc(NUMPY.svdvals, "(m,n)->(k)", a, 1, {"k": k}, real)

    def _finite(self, a: Any, fn: str) -> Any:
        # each block raises xlinalg's error for NaN/inf (LAPACK's SVD of the
        # combined R factor would raise its own, or return NaN)
        return a.map_blocks(_finite_block, fn, dtype=a.dtype)

    def qr(self, a: Any, mode: QRMode) -> tuple[Any, Any]:
        m, n = a.shape[-2:]
        blocked = self._blocked(a)
        if blocked is not None:
            if mode == "complete" and not m <= n:
                raise self._too_large(a, "qr", 'Q with mode="complete"', 'mode="reduced"')
            return tuple(self.da.linalg.qr(blocked))
        k = m if mode == "complete" else min(m, n)
        q, r = self._gufunc(
            lambda x: NUMPY.qr(x, mode), "(m,n)->(m,p),(p,n)", a, 2, {"p": k}, [a.dtype, a.dtype],
        )
        return q, r

    def sigmoid(self, x: Any) -> Any:
        return x.map_blocks(NUMPY.sigmoid, dtype=x.dtype)


def _finite_block(x: np.ndarray, fn: str) -> np.ndarray:
    if not np.isfinite(x).all():
        raise LinAlgError(f"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf")
    return x


def _unknown(chunks: Any) -> bool:
    return any(math.isnan(c) for cs in chunks for c in cs)


def _numpy_solve(ab: np.ndarray, bb: np.ndarray, vector: bool, errors: str) -> np.ndarray:
    return NUMPY.solve(ab, bb, vector, errors)


def _block_starts(chunks: tuple[Any, ...]) -> Any:
    """Where the blocks along one axis start, compactly (each task carries it): the
    common block size (all blocks but the last equal), the starts, or None (unknown)."""
    if _unknown((chunks,)):
        return None
    if all(c == chunks[0] for c in chunks[:-1]):
        return int(chunks[0])
    return tuple(itertools.accumulate(chunks[:-1], initial=0))


def _dask_solve_block(ab: np.ndarray, bb: np.ndarray, kernel: Callable[..., Any], vector: bool,
                      errors: str, a_batch: tuple[int, ...], starts: tuple[Any, ...], nb_out: int,
                      make_error: Callable[[list[tuple[int, ...]]], Exception] | None,
                      paired: tuple[tuple[int, int], ...], block_id: Any = None) -> np.ndarray:
    """One block of :meth:`DaskAdapter.map_solve` (a task on a worker).

    `starts`: :func:`_block_starts` of each batch axis of `a`; `block_id`: this
    block's index in the output, whose last `nb_out` batch axes are `a`'s.
    (``block_id`` rather than ``block_info``: Dask builds the latter for every
    block while the graph is built; the cost is in docs/performance.md.)
    """
    if any(ab.shape[i] != bb.shape[j] for i, j in paired):
        raise ValueError(
            f"solve: a block of `a` of shape {ab.shape} meets a block of `b` of shape "
            f"{bb.shape} (unknown chunk sizes that differ): call .compute_chunk_sizes() on "
            "both first"
        )
    try:
        return kernel(ab, bb, vector, errors)
    except LinAlgError as exc:
        ids = tuple(block_id or ())[nb_out - len(a_batch): nb_out] or (0,) * len(a_batch)
        raise _global_singular(exc, ids, starts, a_batch, make_error) from None


def _global_singular(exc: LinAlgError, ids: tuple[int, ...], starts: tuple[Any, ...],
                     a_batch: tuple[int, ...],
                     make_error: Callable[[list[tuple[int, ...]]], Exception] | None) -> Exception:
    """A block's LinAlgError (indices into the block of `a`, the block at `ids` along
    `a`'s batch axes) with global batch indices."""
    if any(st is None for st in starts):  # unknown chunk sizes: no global index exists
        shown = ", ".join(str(ix if len(ix) > 1 else ix[0]) for ix in exc.indices[:10])
        return LinAlgError(
            f"`a` has a singular matrix at index {shown} of its batch chunk {ids} (unknown "
            "chunk sizes: call .compute_chunk_sizes() for global indices); "
            'pass errors="nan" to get NaN for those members and solutions for the rest',
            indices=exc.indices, members=exc.members,
        )
    # (a broadcast axis of a, of one block, has id 0 whatever the output's block)
    offsets = [0 if n == 1 else (st * i if isinstance(st, int) else st[i])
               for st, i, n in zip(starts, ids, a_batch)]
    indices = [tuple(int(i + o) for i, o in zip(ix, offsets)) for ix in exc.indices]
    members = ([int(np.ravel_multi_index(ix, a_batch)) for ix in indices] if a_batch
               else [0] * len(indices))
    if make_error is not None:
        return make_error(indices)
    note = " (in the chunk computed: Dask checks each chunk as it computes it)"
    return LinAlgError(_singular_message(indices, a_batch, note), indices=indices, members=members)


# ====================================================================== strict
class StrictAdapter(Adapter):
    library = "array-api-strict"

    def to_host(self, x: Any) -> np.ndarray:
        from ..backends import strict_to_numpy

        return strict_to_numpy(x)


NUMPY = NumPyAdapter()

_BY_LIBRARY: dict[str, Any] = {
    "numpy": lambda: NUMPY,
    "torch": TorchAdapter,
    "jax": JaxAdapter,
    "jaxlib": JaxAdapter,
    "cupy": CuPyAdapter,
    "dask": DaskAdapter,
}
_INSTANCES: dict[str, Adapter] = {"numpy": NUMPY}
#: taken only to create an adapter (the miss path): one adapter per library even
#: when two threads meet it first at once (two would make every later call with
#: arrays of both "mix array libraries"). Re-entrant: an adapter's constructor may
#: look up another.
_INSTANCES_LOCK = threading.RLock()


def _instance(lib: str, make: Callable[[], Adapter] | None = None) -> Adapter:
    """The one adapter of library `lib`, created on first use (double-checked lock)."""
    key = "jax" if lib == "jaxlib" else lib
    ad = _INSTANCES.get(key)
    if ad is None:
        with _INSTANCES_LOCK:
            ad = _INSTANCES.get(key)
            if ad is None:
                ad = _INSTANCES[key] = (make or _BY_LIBRARY[key])()
    return ad


def adapter_for_type(cls: type) -> Adapter | None:
    """The adapter for arrays of type `cls`, or None if `cls` is not an array type.

    Decided by the library's array base classes, so that subclasses map to the
    one adapter of their library (``torch.nn.Parameter`` and a user's Tensor
    subclass, JAX tracers, NumPy subclasses). Only libraries already imported are
    asked: an array of a library cannot exist before it is imported.
    """
    if issubclass(cls, np.ndarray):
        return NUMPY if not issubclass(cls, np.matrix) else None
    for lib, bases in _ARRAY_BASES.items():
        if lib in sys.modules:
            try:
                types = bases()
            except Exception:  # a broken install: not this library's array
                continue
            if issubclass(cls, types):
                return _instance(lib, _strict_adapter if lib == "array_api_strict" else None)
    return None


def _torch_bases() -> tuple[type, ...]:
    import torch

    return (torch.Tensor,)


def _jax_bases() -> tuple[type, ...]:
    import jax

    return (jax.Array, jax.core.Tracer)


def _cupy_bases() -> tuple[type, ...]:
    import cupy

    return (cupy.ndarray,)


def _dask_bases() -> tuple[type, ...]:
    import dask.array as da

    return (da.Array,)


def _strict_bases() -> tuple[type, ...]:
    import array_api_strict

    return (type(array_api_strict.asarray(0)),)


#: library -> its array base classes (asked only once the library is imported)
_ARRAY_BASES: dict[str, Callable[[], tuple[type, ...]]] = {
    "torch": _torch_bases,
    "jax": _jax_bases,
    "cupy": _cupy_bases,
    "dask": _dask_bases,
    "array_api_strict": _strict_bases,
}


def _strict_adapter() -> Adapter:
    import array_api_strict

    return StrictAdapter(array_api_strict)


def adapter_for_namespace(xp: Any) -> Adapter:
    """The adapter for a namespace given explicitly as ``xp=``."""
    name = getattr(xp, "__name__", "")
    for lib, key in (
        ("array_api_compat.numpy", "numpy"),
        ("numpy", "numpy"),
        ("array_api_compat.torch", "torch"),
        ("torch", "torch"),
        ("jax.numpy", "jax"),
        ("array_api_compat.cupy", "cupy"),
        ("cupy", "cupy"),
        ("array_api_compat.dask.array", "dask"),
        ("dask.array", "dask"),
    ):
        if name == lib:
            return _instance(key)
    if name.startswith("array_api_strict"):
        return adapter_for_type(type(xp.asarray(0))) or Adapter(xp)
    return Adapter(xp)


def backend_name(x: Any) -> str:
    """Backend id of `x` for messages (never raises)."""
    from .. import backends

    try:
        return backends.backend_of(x)
    except Exception:
        return "numpy"
