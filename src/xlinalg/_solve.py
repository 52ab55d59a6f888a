"""solve: ``a @ x = b`` with the singular-matrix rule, on every backend.

One body: infer the namespace from the arguments (cached by type), validate with
cheap attribute reads, apply xlinalg's semantics (the standard's right-hand-side
rule, one dtype rule, one singular-matrix error), and make one native call through
the library's adapter. The rest of the solve family builds on it:
:func:`xlinalg.solve_ex` (:mod:`._solve_ex`), :func:`xlinalg.solve_many`
(:mod:`._many`) and the unrolled solver (:mod:`._unrolled`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dispatch, _unrolled, _validate
from ._dispatch import adapter2 as _adapter2
from ._lib._declare import BadInput, Raises, Returns, all_nan, declare
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from .backends._base import MISSING as _MISSING
from .backends._base import Adapter

__all__ = ["solve"]

_FAST_SOLVE = _dispatch.FAST_SOLVE


def _solve_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy's solve with the standard's right-hand-side rule (a vector only when 1-D)."""
    if b.ndim == 1:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


_SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
_EYE2 = 2 * np.eye(2)
_TH = np.pi / 6
_ROT = np.array([[np.cos(_TH), -np.sin(_TH)], [np.sin(_TH), np.cos(_TH)]])
#: cond ~ 3e16: a pivot of rounding size, singular by the rule
_NEAR_SINGULAR = _ROT @ np.diag([1.0, 1e-17]) @ _ROT.T
_JAX_SOLVE_NOTE = "under `jax.jit`: NaN for singular members, never an exception"


@declare(
    "linalg", args={"a": "square", "b": "rhs"}, reference=_solve_reference, dtypes="linalg",
    how="the singular rule's LU vectorized over the batch (the standard's functions), then the "
        "standard's `linalg.solve` with singular members replaced by I",
    backends={
        "numpy": ("LAPACK's `gesv` through SciPy for one matrix and small stacks (the rule on its pivots, "
                  "after a screen); large stacks of small matrices: NumPy's solve gufunc and a `slogdet` screen",
                  "the singular rule on every path (docs/semantics.md)"),
        "torch-cpu": ("small tensors outside autograd: NumPy's path on zero-copy views; otherwise "
                      "`torch.linalg.lu_factor_ex` and `lu_solve` with those factors, the rule on the pivots",
                      "`b` of shape `a.shape[:-1]` is given a leading unit axis (torch alone would read a "
                      "batch of vectors)"),
        "torch-cuda": ("`torch.linalg.lu_factor_ex` and `lu_solve`; the rule on the pivots",
                       "`b` as on torch-cpu; `errors=\"raise\"` synchronizes the device (one bool), "
                       "`errors=\"nan\"` does not"),
        "cupy": ("the rule's LU vectorized over the batch, then `cupy.linalg.solve` on explicitly broadcast "
                 "operands", "`errors=\"raise\"` synchronizes the device"),
        "jax-cpu": ("one jitted call: `jnp.linalg.solve` and the rule on `lax.linalg.lu`'s pivots (XLA merges "
                    "the two factorizations), then a zero-copy host look at the result", _JAX_SOLVE_NOTE),
        "jax-gpu": ("one jitted call returning the solution (NaN for the rule's members) and a non-finite flag; "
                    "reading the flag waits (`errors=\"raise\"`)", _JAX_SOLVE_NOTE),
        "dask": ("NumPy's solve on each block (`map_blocks`), one task a chunk",
                 "lazy: a singular member raises when its block is computed"),
    },
    bad_input={
        "mismatched": BadInput(
            Raises(ValueError, r"solve: `b` must have 3 rows to match `a`",
                   "solve: `b` must have 3 rows to match `a` of shape (3, 3), got shape (2,)"),
            args=(np.eye(3), np.ones(2))),
        "singular": BadInput(
            Raises(LinAlgError, r"`a` is singular", "`a` is singular: solve needs an invertible matrix",
                   members=(0,)),
            args=(_SINGULAR, np.ones(2)),
            note="Dask: when computed. `errors=\"nan\"`: NaN. Under `jax.jit`: NaN."),
        "singular-member": BadInput(
            Raises(LinAlgError, r"`a` has 1 singular matrix in its batch of shape \(3,\), at batch index 1",
                   "`a` has 1 singular matrix in its batch of shape (3,), at batch index 1; pass "
                   "errors=\"nan\" …; `.members == (1,)`", members=(1,)),
            args=(np.stack([np.eye(2), _SINGULAR, _EYE2]), np.ones(2)),
            note="Dask: when computed. `errors=\"nan\"`: NaN for member 1 only. Under `jax.jit`: NaN for member 1."),
        "near-singular": BadInput(
            Raises(LinAlgError, r"`a` is singular",
                   "`a` is singular: solve needs an invertible matrix (an LU pivot <= n·eps·its column's "
                   "scale: one rule, every backend and method)", members=(0,)),
            args=(_NEAR_SINGULAR, np.ones(2)),
            note="Dask: when computed. `errors=\"nan\"`: NaN. Under `jax.jit`: NaN."),
        "nan": Returns("all NaN, no error (NaN input is not a singular matrix)", all_nan),
        "inf": Returns("all NaN, no error (inf input is not a singular matrix)", all_nan),
    },
)
def solve(a: Array, b: Array, /, *, errors: str = "raise", method: str = "auto", xp: Namespace | None = None) -> Array:
    """Solve ``a @ x = b`` for `x`, on whichever library owns `a` and `b`.

    Parameters
    ----------
    a : array, shape ``(..., M, M)``
        Coefficient matrix or stack of matrices.
    b : array, shape ``(M,)`` or ``(..., M, K)``
        Right-hand side. Following the array API standard, `b` is a vector only
        when ``b.ndim == 1`` (then it is used for every matrix in `a`); otherwise
        it is a matrix or a stack of matrices whose batch dimensions broadcast
        against those of `a`. A ``(B, M)`` `b` therefore means one ``B×M``
        matrix on every backend (PyTorch and CuPy would read it as B vectors).
    errors : {"raise", "nan"}, optional
        What to do with singular matrices: those whose LU with partial pivoting
        meets a pivot ``|u_kk| <= n * eps * max_i |a_ik|`` (one rule on every
        backend and method: docs/semantics.md). ``"raise"`` (default) raises
        :class:`xlinalg.LinAlgError` naming the failing batch members (on CUDA and
        JAX this waits for the result). ``"nan"`` returns NaN for those members
        and the solutions of the others, without waiting. Under ``jax.jit`` and
        on Dask before ``compute()`` no exception is possible: traced JAX gives
        NaN, Dask raises when computed.
    method : {"auto", "native", "unrolled"}, optional
        ``"native"``: the library's LAPACK/cuSOLVER routine. ``"unrolled"``:
        Gaussian elimination with partial pivoting unrolled for a fixed ``M <= 8``
        and compiled by the backend (``jax.jit``, ``torch.compile``, a CuPy
        kernel), much faster on large stacks of tiny systems (see
        ``docs/unrolled.md``). ``"auto"`` (default) picks the unrolled solver only
        where committed measurements show it wins on that backend, compile time
        included; otherwise native.
    xp : namespace, optional
        The array namespace; inferred from `a` and `b` by default.

    Returns
    -------
    array, shape ``(..., M)`` or ``(..., M, K)``
        The solution, in the inputs' library, on their device. Its dtype is the
        promoted floating dtype of `a` and `b`; integer and bool inputs are
        computed in float64 (float32 where the device has no float64).

    Raises
    ------
    LinAlgError
        If a matrix in `a` is singular by that rule and ``errors="raise"``. A member
        with NaN or inf in its `a` or `b` is never singular: its solution is NaN.
    ValueError
        If `a` is not square, or the shapes of `a` and `b` do not match.
    TypeError
        For float16/bfloat16 or non-numeric dtypes, or `a` and `b` from two
        different libraries.

    Examples
    --------
    >>> import xlinalg as xl
    >>> x = xl.solve(xp.asarray([[2.0, 0.0], [0.0, 4.0]]), xp.asarray([2.0, 2.0]))
    >>> xl.to(x, "numpy")
    array([1. , 0.5])
    """
    if (
        xp is None
        and errors == "raise"
        and method == "auto"
        and (t := type(a)) is type(b)
        and (fast := _FAST_SOLVE.get(t)) is not None
        and (x := fast(a, b)) is not _MISSING
    ):
        return x  # the library's call was the whole contract (see Adapter.solve_fast)
    ad, a, b = _adapter2(a, b, "a", "b", xp)
    try:
        sa = a.shape
        sb = b.shape
    except Exception as e:  # a nested tensor has no shape: named (native_error)
        _validate.reraise(ad, "solve", e, ("a", a), ("b", b))
    vector = len(sb) == 1
    # Fast path: the checks the native call would not make, as cheap attribute reads.
    if (
        len(sa) == 2
        and 0 < len(sb) <= 2
        and sa[0] == sa[1] == sb[0]
        and sa[0]
        and sb[-1]
        and (da := a.dtype) in ad.solve_dtypes  # (dtype is a Python property on JAX: read once)
        and b.dtype == da
        and method == "auto"  # one system: never unrolled automatically
    ):
        if errors != "raise":
            _validate.check_errors(errors)
        if ad.fast_device_check:  # the error must name `a` and `b` (strict, JAX, CuPy)
            ad.check_same_device(a, b, "a", "b")
        try:
            return ad.solve(a, b, vector, errors)
        except Exception as e:  # a sparse tensor or a dtype without a kernel: named
            _validate.reraise(ad, "solve", e, ("a", a), ("b", b))
    return _solve_checked(ad, a, b, vector, errors, method, sa, sb)


def _solve_checked(
    ad: Adapter, a: Any, b: Any, vector: bool, errors: str, method: str = "auto", sa: Any = None, sb: Any = None,
    make_error: Any = None,
) -> Any:
    """The general path of :func:`solve`: stacks, promotion, empty shapes, errors.

    `sa` and `sb`: the shapes of `a` and `b` where the caller has read them already
    (a read costs a Python call on torch and JAX: docs/performance.md). `make_error`
    (lazy libraries only: ``solve_many`` on Dask): the error a computed block
    raises, from the batch indices of its singular members.
    """
    if sa is None:
        sa, sb = a.shape, b.shape
    if (err := ad.dense_error(a, "a", "solve") or ad.dense_error(b, "b", "solve")) is not None:
        raise err
    if ad.unknown_sizes:  # the matrix axes of `a` and the rows of `b` (unknown batch axes are paired)
        _validate.unknown_sizes(ad, "solve", ("a", a, (-2, -1)), ("b", b, (0,) if vector else (-2,)))
    _validate.solve_shapes(ad, a, b, vector, sa, sb)
    if errors != "raise":
        _validate.check_errors(errors)
    if method not in _unrolled.METHODS:
        raise ValueError(f"solve: `method` must be one of {_unrolled.METHODS}, got {method!r}")
    if a.dtype != b.dtype or a.dtype not in ad.solve_dtypes:
        a, b = _validate.promote_linalg(ad, a, b, "solve")
    ad.check_same_device(a, b, "a", "b")
    if 0 in sa or 0 in sb:
        return keep_subclass(_validate.empty_solve(ad, a, b, vector), a, b)
    if method != "native" and _unrolled.use_unrolled(ad, a, b, vector, method):
        return _unrolled.solve_adapter(ad, a, b, vector, errors)
    if make_error is not None and ad.map_solve is not None:
        return ad.map_solve(a, b, vector, errors, None, make_error)
    return ad.solve(a, b, vector, errors)

