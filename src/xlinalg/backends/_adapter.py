"""The standard-only :class:`Adapter`: the base of every library's adapter.

The public functions (``xlinalg._solve``, ``xlinalg._elementwise``, ...) are written
once against the array API standard. What the standard leaves to each library,
and what xlinalg promises to be the same everywhere, is settled by the adapter
of the arguments' library:

* how a *singular* matrix is detected (NumPy and PyTorch raise, JAX and CuPy
  return inf/NaN silently, Dask can only fail at ``compute()``);
* which native routine is called, with unambiguous arguments (torch and CuPy
  read a ``(B, M)`` right-hand side as a batch of vectors; CuPy does not
  broadcast batch dimensions);
* devices, laziness and tracing (no exception is possible under ``jax.jit``).

This base is the pure-standard implementation; each library's module
(``_numpy.py``, ``_torch.py``, ...) overrides only what its library does
differently or faster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .._lib import _singular
from .._lib._errors import LinAlgError
from .._lib._typing import QRMode
from ._speed import NP_NON_NUMERIC, FastPaths, native_function

__all__ = [
    "MISSING",
    "NARROW_FLOATS",
    "NP_NON_NUMERIC",
    "Adapter",
    "make_solve_fast",
    "nan_members",
    "singular_members",
    "singular_message",
    "to_batch",
]

#: what an adapter's ``solve_fast`` returns when xl.solve must take its checked path
MISSING: Any = object()



def to_batch(mask: np.ndarray, batch_shape: tuple[int, ...]) -> np.ndarray:
    """Reduce a mask over a broadcast batch to `batch_shape` (any over broadcast axes)."""
    if mask.shape == batch_shape:
        return mask
    lead = mask.ndim - len(batch_shape)
    if lead > 0:
        mask = np.asarray(mask.any(axis=tuple(range(lead))))
    axes = tuple(i for i, (s, t) in enumerate(zip(mask.shape, batch_shape)) if t == 1 and s != 1)
    return np.asarray(mask.any(axis=axes, keepdims=True)) if axes else mask


def singular_message(indices: list[tuple[int, ...]], batch_shape: tuple[int, ...],
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


def singular_members(xp: Any, sing: Any, scale: Any, b: Any) -> Any:
    """The members of a solve reported singular (docs/semantics.md, "solve: singular,
    non-finite and subnormal input"; the rule itself is ``_lib/_singular.py``).

    `sing` is the rule's verdict over `a`'s batch (members with a finite `a` whose LU
    meets a pivot ``<= n * eps * c_k``), `scale` ``column_scale(a)``, `b` ``(..., M, K)``
    (a vector given a trailing unit axis). A member meeting a `b` with NaN or inf is
    never reported. Returns the mask over the broadcast batch.
    """
    return xp.logical_and(sing, _singular.finite_members(xp, scale, b))


def nan_members(xp: Any, sing: Any, scale: Any, b: Any) -> Any:
    """Members whose whole solution is NaN: the singular ones and those with NaN or
    inf in `a` or `b` (mask over the broadcast batch)."""
    return xp.logical_or(sing, xp.logical_not(_singular.finite_members(xp, scale, b)))


class Adapter:
    """The standard-only implementation; the base of every library's adapter."""

    #: short library name used in messages
    library = "array API"
    #: the backend id of this library's arrays where one id fits all (else :meth:`backend`)
    backend_id = ""
    #: lazy arrays: no value can be read and no exception raised before compute
    #: (a check on values is skipped; building a stack costs nothing up front)
    lazy = False
    #: whether a shape may hold unknown (NaN) sizes until computed (Dask's
    #: ``x[mask]``): the checks that read sizes name such an argument first
    unknown_sizes = False
    #: ``deferred_blocks(fn, *arrays)``: NumPy function `fn` applied to the library's
    #: arrays block by block, where its work runs later, outside the caller's
    #: ``np.errstate`` (Dask: `fn` silences its own warnings in each block); None: the
    #: library's work runs at the call, under the caller's ``np.errstate``
    deferred_blocks: Callable[..., Any] | None = None
    #: ``map_gufunc(kernel, signature, x, metas, sizes, fn)``: NumPy function `kernel`
    #: of one stack applied lazily over the blocks of `x` as a generalized ufunc of
    #: `signature` (``"(m,m)->()"``), the matrix axes made one chunk; `metas` is each
    #: output's (core ndim, dtype), `sizes` the new core sizes, `fn` the operation
    #: named by an error. None: the operations call the library's own routines
    map_gufunc: Callable[..., Any] | None = None
    #: ``map_members(x, kernel, errors, fn, make_error)``: ``kernel(block, errors)``
    #: (NumPy, a result of the block's shape) over the blocks of `x`, lazily; a
    #: block's :class:`LinAlgError` is raised when computed, as ``make_error(global
    #: batch indices)`` returns it. None: the library's work runs at the call
    map_members: Callable[..., Any] | None = None
    #: ``map_solve(a, b, vector, errors, kernel=None, make_error=None)``: ``kernel(ab,
    #: bb, vector, errors)`` (an eager NumPy solve; None: NumPy's adapter's) on each
    #: block, lazily; a block's singular members raise when computed, as
    #: ``make_error(global batch indices)`` returns it (None: solve's message).
    #: None: solve runs at the call and raises there
    map_solve: Callable[..., Any] | None = None
    #: the call that makes one array of this library from a list of its arrays (messages)
    stack_call = "xp.stack"

    #: the library's fast paths, declared as data (``_speed.py``): read once, here
    speed = FastPaths()
    #: whether every array of this library is on one device (caches may leave it out of keys)
    single_device = False
    #: solve hands the library explicitly broadcast operands (CuPy: see _native_safe)
    solve_broadcasts = False

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        speed = self.speed
        #: whether the fast path of solve must check devices (:attr:`FastPaths.device_check`)
        self.fast_device_check = speed.device_check
        #: dtypes linalg routines take as they are (the floating dtypes)
        self.solve_dtypes: frozenset[Any] = speed.dtype_set(speed.solve_dtypes, xp)
        #: native kernels for same-dtype operands of this library (add, matmul, ...);
        #: an optional one joins on its first use (:meth:`optional_op`)
        self.fast: dict[str, Any] = {op: native_function(p) for op, p in speed.ops.items()}
        #: dtypes the native sigmoid kernel (fast["sigmoid"]) takes as they are
        self.sigmoid_dtypes: frozenset[Any] = speed.dtype_set(speed.sigmoid_dtypes, xp)
        #: dtypes the fast kernels must not see (the native call would accept them)
        self.fast_excluded: frozenset[Any] = NP_NON_NUMERIC if speed.numeric_only else frozenset()
        #: op -> more dtypes that op's fast kernel must not see (torch's complex add)
        self.fast_excluded_ops: dict[str, frozenset[Any]] = {
            op: speed.dtype_set(names, xp) for op, names in speed.excluded_ops.items()}
        #: ops whose native kernel refuses operands of two dtypes and every dtype the
        #: contract refuses (torch.matmul): the fast path then reads no dtype at all
        self.fast_refuses_mixed: frozenset[str] = speed.refuses_mixed
        #: ``f(a, b)`` for xl.solve with its defaults, or None. It returns the
        #: solution only where the library's own call is the whole contract for
        #: those operands (one matrix, one floating dtype, a finite result), else
        #: :data:`MISSING`: xl.solve then takes its checked path, which gives the
        #: same answer or the error naming the argument (a singular matrix is
        #: solved twice, to be named; a success pays nothing more)
        self.solve_fast: Callable[[Any, Any], Any] | None = None
        #: the optional ops looked for (:meth:`optional_op`): op -> found
        self._optional: dict[str, bool] = {}

    def optional_op(self, op: str) -> Callable[..., Any] | None:
        """The native function of `op` (``fast[op]``), importing an optional one
        (:attr:`FastPaths.optional_ops`) on the first call that asks; None where
        there is none (the package is not installed)."""
        fn = self.fast.get(op)
        if fn is None and op not in self._optional and op in self.speed.optional_ops:
            try:
                fn = native_function(self.speed.optional_ops[op])
            except (ImportError, AttributeError):
                fn = None
            if fn is not None:
                self.fast[op] = fn  # the fast paths take it from now on
            self._optional[op] = fn is not None
        return fn

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
        """The backend id of `x`, an array of this library (``xlinalg.backend_of``'s answer)."""
        return self.backend_id or type(x).__module__.partition(".")[0]

    def traced(self, x: Any) -> bool:
        """Whether `x` is a tracer (no concrete values: no exceptions possible)."""
        return False

    def dense_error(self, x: Any, name: str, fn: str) -> TypeError | None:
        """The error naming `name` if `x` is not a dense array (PyTorch's sparse and
        nested tensors), else None. Array API arrays are dense."""
        return None

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
        """Convert host data (list, tuple, scalar) to an array next to `like`.

        The callers (``_dispatch.host_array``, ``xlinalg.to``) have checked that a
        list holds host data only (``_host.foreign_in_sequence``).
        """
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
    def has_int64(self, x: Any) -> bool:
        """Whether `x`'s library makes 64-bit integers now (JAX in its default 32-bit
        mode does not: it would truncate them to 32 bits, with a warning)."""
        return True

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        """The (float32, float64) dtypes of this namespace; float64 may be float32."""
        xp = self.xp
        f64 = xp.float64
        try:
            info = xp.__array_namespace_info__()
            if "float64" not in info.dtypes(device=self.device(x), kind="real floating"):
                f64 = xp.float32
        except (AttributeError, RuntimeError, TypeError, ValueError):
            # no inspection API (a namespace before the 2023.12 standard; array-api-strict
            # set to an older version raises RuntimeError) or one that refuses this
            # device: the standard's default, float64 exists
            pass
        return xp.float32, f64

    def kind(self, dtype: Any) -> str:
        """'f' real float, 'c' complex, 'i' integer, 'b' bool, 'h' half/bfloat16/float8-,
        'x' extended precision (NumPy's float128/complex256), '?' other."""
        if _extended(dtype):
            return "x"
        xp = self.xp
        name = self.dtype_name(dtype)
        if name in ("float16", "bfloat16", "half") or name.startswith(NARROW_FLOATS):
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

    # ------------------------------------------------------------ the library's own linalg
    #: whether its arrays are NumPy's ndarrays, in host memory: the operations may
    #: call NumPy's own functions and gufuncs on them (``numpy.linalg``'s, without its
    #: per-call checks), NumPy scalars are its own 0-d values (not weak scalars beside
    #: its arrays), results keep an ``ndarray`` subclass of the input as NumPy's
    #: ufuncs do (``_lib._subclass.keep_subclass``), its exact class has the dispatch's
    #: own fast paths (its subclasses, masked arrays and ``np.matrix`` among them,
    #: take the checked ones) and the unrolled solver reads its verdicts on the host
    numpy_arrays = False
    #: whether the operations call the namespace's own linalg extension functions
    #: (``cross``, ``matrix_power``, ``vector_norm``, ``matrix_norm``) where it has
    #: them; False: they compose the standard's elementwise operations and reductions
    #: (Dask: array-api-compat's wrappers over ``dask.array.linalg``, whose SVD
    #: wants a matrix in one column chunk; the composition takes any chunks)
    namespace_linalg = True
    #: the keywords with which the library's ``eigh`` and ``cholesky`` read the lower
    #: triangle only, as the standard says (JAX symmetrizes the input by default)
    lower_triangle: Mapping[str, Any] = MappingProxyType({})

    def native_matrix_norm(self) -> Callable[[Any, Any, bool], Any] | None:
        """``f(x, ord, keepdims)``: the library's own matrix norm, called rather than
        the standard's; None: the standard's ``linalg.matrix_norm`` where it has one."""
        return None

    def native_vector_norm(self, x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
        """The library's own vector norm of `x`, or None: the standard's path."""
        return None

    def native_matrix_power(self, x: Any, k: int) -> Any:
        """The library's own ``matrix_power(x, k)`` (``k >= 0``), or None: the standard's path."""
        return None

    def native_vecdot(self, x1: Any, x2: Any, axis: int) -> Any:
        """The library's own ``vecdot`` along `axis`, or None: the standard's path."""
        return None

    def cholesky_ex(self, x: Any) -> tuple[Any, Any] | None:
        """``(lower factor, failed members)`` from the library's own batched Cholesky
        that reports failures per member, or None: the standard's ``cholesky``."""
        return None

    # ------------------------------------------------------------ linalg kernels
    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        """Solve with `b` already of shape ``(..., M)`` (vector) or ``(..., M, K)``."""
        bm = b[..., None] if vector else b
        sing, scale = self.verdict(a)
        x, sing = self._native_safe(a, bm, sing, scale)
        x = self.finish(a, bm, x, sing, scale, errors)
        return x[..., 0] if vector else x

    def _native_safe(self, a: Any, bm: Any, sing: Any, scale: Any) -> tuple[Any, Any]:
        """The library's solve with the members that get NaN anyway (singular, or NaN or
        inf in `a`) replaced by I: the native call then has nothing to refuse.
        Returns the solution and `sing` (with any member the library refused added)."""
        xp = self.xp
        skip = xp.logical_or(sing, xp.logical_not(xp.all(xp.isfinite(scale), axis=-1)))
        a_safe = xp.where(skip[..., None, None], xp.eye(a.shape[-1], dtype=a.dtype, device=self.device(a)), a)
        if self.solve_broadcasts:
            # a library that neither broadcasts batch dimensions nor reads (B, M) the
            # standard's way (CuPy): equal batch shapes and a matrix right-hand side
            batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(bm.shape[:-2]))
            a_safe = xp.broadcast_to(a_safe, (*batch, *a.shape[-2:]))
            bm = xp.broadcast_to(bm, (*batch, *bm.shape[-2:]))
        try:
            return xp.linalg.solve(a_safe, bm), sing
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            # the library's LU met an exact zero pivot where the rule's LU did not
            # (rounding): those members are singular too, by the library's own word
            zero = self.zero_pivots(a_safe)
            if not bool(xp.any(zero)):
                raise
            a_safe = xp.where(zero[..., None, None], xp.eye(a.shape[-1], dtype=a.dtype, device=self.device(a)), a_safe)
            return xp.linalg.solve(a_safe, bm), xp.logical_or(sing, zero)

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, np.linalg.LinAlgError)

    def lu_pivots(self, a: Any) -> Any:
        """The pivots ``u_kk`` ``(..., n)`` of LU with partial pivoting of `a`: the rule's
        factorization vectorized over the batch (a library with its own LU overrides)."""
        return _singular.lu_pivots(self.xp, a)

    def verdict(self, a: Any) -> tuple[Any, Any]:
        """``(sing, scale)``: the singular rule over `a`'s batch (members with a finite
        `a` only) and ``column_scale(a)`` (``_lib/_singular.py``)."""
        xp = self.xp
        scale = _singular.column_scale(xp, a)
        tol = _singular.tolerance(xp, a.dtype, a.shape[-1])
        with np.errstate(all="ignore"):  # NumPy underneath (strict): NaN/inf members, quietly
            sing = _singular.singular_from_pivots(xp, self.lu_pivots(a), scale, tol)
        return xp.logical_and(sing, xp.all(xp.isfinite(scale), axis=-1)), scale

    def finish(self, a: Any, bm: Any, x: Any, sing: Any, scale: Any, errors: str) -> Any:
        """Rule 3 on a native solution `x` (broadcast batch): raise for the reported
        singular members (eager, ``errors="raise"``), then NaN for every member that
        is singular or has NaN or inf in `a` or `bm` (rule 2)."""
        xp = self.xp
        if errors == "raise" and not (self.lazy or self.traced(x)) and bool(xp.any(sing)):
            rep = singular_members(xp, sing, scale, bm)
            if bool(xp.any(rep)):
                self._raise_singular(rep, tuple(a.shape[:-2]))
        return self.fill_nan(nan_members(xp, sing, scale, bm)[..., None, None], x)

    def zero_pivots(self, a: Any) -> Any:
        """Boolean array over the batch: True where the library's LU meets an exact
        zero pivot (``slogdet`` returns sign 0): a library's own refusal, which the
        rule's verdict (:meth:`verdict`) contains up to rounding."""
        sign, _ = self.xp.linalg.slogdet(a)
        return sign == 0

    def singular_members(self, a: Any, b: Any) -> Any:
        """The members of ``solve(a, b)`` reported singular (:func:`singular_members`)."""
        sing, scale = self.verdict(a)
        return singular_members(self.xp, sing, scale, b)

    def _raise_singular(self, mask: Any, batch_shape: tuple[int, ...], cause: Any = None) -> None:
        """Raise LinAlgError naming the singular members of `a` (batch shape `batch_shape`).

        `mask` may cover the batch broadcast against `b`'s; it is reduced to `a`'s.
        """
        m = to_batch(np.asarray(self.to_host(mask)), batch_shape).reshape(batch_shape)
        indices: list[tuple[int, ...]] = (
            [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))] if batch_shape else [()]
        )
        members = [int(i) for i in np.flatnonzero(m)] if batch_shape else [0]
        raise LinAlgError(
            singular_message(indices, batch_shape), indices=indices, members=members
        ) from cause

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def numpy_view(self, x: Any) -> np.ndarray | None:
        """`x`'s values as a NumPy array sharing its memory, where `x` is a concrete
        array in the host's memory that needs nothing a view would drop (a gradient,
        a trace), else None: the unrolled solver then runs NumPy's compiled kernel
        on it (``xlinalg._unrolled._solve``) and :meth:`from_numpy_view` wraps the result."""
        return None

    def small_numpy_view(self, x: Any) -> np.ndarray | None:
        """:meth:`numpy_view` of a small array, whose decompositions run NumPy's
        LAPACK on that view (cheaper than the library's own dispatch there:
        docs/performance.md), else None: the library's own kernel."""
        return None

    def from_numpy_view(self, arr: np.ndarray, like: Any) -> Any:
        """A NumPy result of a :meth:`numpy_view` computation as an array like `like`
        (same library and device), sharing `arr`'s memory where the library can. The
        caller hands `arr` over: nothing else may hold or write it afterwards (an
        immutable library's array may alias it)."""
        raise NotImplementedError

    def stack(self, arrays: list[Any], like: Any = None) -> Any:
        """One array from many of one shape, dtype and device (``solve_many``); `like`:
        a stack whose chunking to follow along the new axis (Dask), else unused."""
        return self.xp.stack(arrays, axis=0)

    def unstack(self, x: Any) -> list[Any]:
        """The members of `x` along its first axis, as views, in order (``solve_many``)."""
        unstack = getattr(self.xp, "unstack", None)
        if unstack is not None:
            return list(unstack(x, axis=0))
        return [x[i, ...] for i in range(x.shape[0])]

    def fill_nan(self, mask: Any, x: Any) -> Any:
        """`x` with NaN where `mask` (broadcast against it) is True.

        A library whose host-to-device copy of the NaN would wait for the device
        (CUDA from pageable memory: torch, CuPy) overrides this with a fill that
        copies nothing.
        """
        xp = self.xp
        nan = xp.asarray(float("nan"), dtype=x.dtype, device=self.device(x))
        return xp.where(mask, nan, x)

    def matmul(self, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    def eye(self, like: Any) -> Any:
        """The identity of `like`'s last two axes' size, in its dtype and on its device.

        Operations that need one (``inv`` is ``solve(x, I)``) take it from here, so a
        library whose eager identity is slow can hand out a cached one: the result
        may be shared and read-only, so it is an input only, never written to or
        returned to the caller.
        """
        return self.xp.eye(like.shape[-1], dtype=like.dtype, device=self.device(like))

    # SVD of NaN or inf: LAPACK fails for NaN but returns NaN for inf, JAX returns
    # NaN for both. xlinalg raises LinAlgError for both, everywhere (NaN under a
    # trace); checking S costs a look at k numbers (a wait for the result on a GPU),
    # and only when S is not finite a look at x (an overflowing S is inf, no error).
    # The input is looked at first (a concrete one): OpenBLAS's gesdd, which NumPy
    # and so array-api-strict call, loops forever on some non-finite matrices.
    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        self._refuse_nonfinite_svd_input(a, "svd")
        try:
            out = tuple(self.xp.linalg.svd(a, full_matrices=full_matrices))
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            raise self._svd_error(a, "svd") from exc
        self._check_svd(a, out[1], "svd")
        return out

    def svdvals(self, a: Any) -> Any:
        self._refuse_nonfinite_svd_input(a, "svdvals")
        try:
            s = self.xp.linalg.svdvals(a)
        except Exception as exc:
            if not self._is_singular_error(exc):
                raise
            raise self._svd_error(a, "svdvals") from exc
        self._check_svd(a, s, "svdvals")
        return s

    def _refuse_nonfinite_svd_input(self, a: Any, fn: str) -> None:
        xp = self.xp
        if not self.traced(a) and not bool(xp.all(xp.isfinite(a))):
            raise self._svd_error(a, fn)

    def _check_svd(self, a: Any, s: Any, fn: str) -> None:
        # a non-finite S is a failure when it holds NaN or `a` is not finite; a finite
        # `a` whose largest singular value overflows gets inf, as natively
        xp = self.xp
        if not self.traced(s) and not bool(xp.all(xp.isfinite(s))) and (
            bool(xp.any(xp.isnan(s))) or not bool(xp.all(xp.isfinite(a)))
        ):
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
    def binary(self, name: str) -> Callable[[Any, Any], Any]:
        """The library's ``add``/``subtract``/``multiply``/``divide`` for operands the
        contract has already checked and promoted (a Python scalar may stand beside
        an array)."""
        fn: Callable[[Any, Any], Any] = getattr(self.xp, name)
        return fn

    def sigmoid(self, x: Any) -> Any:
        """Numerically stable logistic function from standard operations.

        ``e = exp(-|x|)``; ``x >= 0 -> 1 / (1 + e)``, else ``e / (1 + e)``. Neither
        branch overflows, for any |x|.
        """
        xp = self.xp
        try:
            complex_ = xp.isdtype(x.dtype, "complex floating")
        except TypeError:  # NumPy refuses ml_dtypes' dtypes (bfloat16, float8_*): real all
            complex_ = False
        if complex_:
            # no order on C: the plain formula, as torch.sigmoid computes it
            return 1.0 / (1.0 + xp.exp(-x))
        e = xp.exp(-xp.abs(x))
        one_plus = 1.0 + e
        return xp.where(x >= 0, 1.0 / one_plus, e / one_plus)


#: name prefixes of the sub-16-bit floats (ml_dtypes' float8_e4m3fn, float4_e2m1fn, ...
#: in NumPy and JAX): low precision as float16 is, with no linear algebra anywhere
NARROW_FLOATS = ("float8_", "float6_", "float4_")

def make_solve_fast(
    call: Callable[[Any, Any], Any], ok: frozenset[Any], *, meta: bool = False
) -> Callable[[Any, Any], Any]:
    """An adapter's ``solve_fast`` (see :class:`Adapter`) around the library's `call`.

    Only one matrix (``a.ndim == 2``) of one dtype in `ok`: there torch and JAX read
    `b` as the standard does ((M,) a vector, (..., M, K) matrices) and check shapes
    and devices themselves. Any refusal, or :data:`MISSING` from `call`, sends the
    operands to xl.solve's checked path, which names the argument (a singular matrix
    included). Saves the shape reads (cost: docs/performance.md). `meta` (torch): a
    "meta" operand beside a real one goes to the checked path too, which refuses the
    mix (torch.linalg.solve runs LAPACK on the missing data instead).
    """

    def solve_fast(a: Any, b: Any) -> Any:
        if a.ndim == 2 and ((da := a.dtype) is b.dtype) and da in ok and (not meta or a.is_meta is b.is_meta):
            try:
                return call(a, b)
            except Exception:  # noqa: S110 -- xl.solve's checked path re-raises, naming the argument
                pass
        return MISSING

    return solve_fast
