"""inv, cholesky: factorizations with one failure contract.

A singular (``inv``) or not positive definite (``cholesky``) member raises
:class:`xlinalg.LinAlgError` naming the failing batch members on every backend,
or gives NaN for just those members with ``errors="nan"``; a member holding NaN or
inf is never reported (NaN in, NaN out). ``inv`` is ``solve(x, I)`` through the
adapter, as NumPy, PyTorch and JAX compute it themselves: what is singular is
exactly what :func:`xlinalg.solve` reports (docs/semantics.md). (``det`` and
``slogdet``, which never fail, are in :mod:`._det`.)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _validate
from ._dispatch import fast_paths
from ._fastpath import (
    MISSING,
    jax_looked,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    solve_maker,
    torch_float,
    torch_maker,
    torch_plain,
    torch_via_numpy,
)
from ._lib._declare import BadInput, Raises, Returns, all_nan, declare
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import (
    NP_LOOPS,
    block_member_error,
    fail_members,
    finite_members,
    matrix_input,
    member_error,
    np_square_loop,
)
from .backends._base import Adapter
from .backends._jax_adapter import jax_inv_ruled
from .backends._numpy_adapter import NUMPY

__all__ = ["cholesky", "inv"]

try:
    from numpy.linalg import _umath_linalg as _ul

    _NP_CHOL: Any = _ul.cholesky_lo
except (ImportError, AttributeError):  # pragma: no cover - a NumPy without it
    _NP_CHOL = None

_NP = np.ndarray

_INV_FIX = 'pass errors="nan" to get NaN for those members and the inverses of the rest'
_CHOL_FIX = (
    "cholesky needs Hermitian (symmetric) positive definite matrices (only the lower "
    'triangle is read); pass errors="nan" to get NaN for those members and the factors of the rest'
)


_TH = np.pi / 6
_Q = np.array([[np.cos(_TH), -np.sin(_TH)], [np.sin(_TH), np.cos(_TH)]])
_NEAR = _Q @ np.diag([1.0, 1e-17]) @ _Q.T  # the bad-input matrix's "numerically singular" input
_JIT_NAN = "Dask: when computed. `errors=\"nan\"`: NaN. Under `jax.jit`: NaN."


def _spd(rng: np.random.Generator) -> tuple[np.ndarray]:
    m = rng.standard_normal((3, 3))
    return (m @ m.T + 3 * np.eye(3),)


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py) of inv: one matrix, `solve(x, I)` by the adapter's solve (the
# call the checked path makes, without its shape reads); a singular or non-finite
# matrix, a stack, another dtype or layout take the checked path.
def _np_inv_fast(x: Any) -> Any:
    if x.ndim != 2 or x.dtype.char not in NP_LOOPS or (s := x.shape)[0] != s[1] or not s[0] or not x.dtype.isnative:
        return MISSING
    try:
        return NUMPY.solve(x, NUMPY.eye(x), False, "raise")
    except Exception:  # singular (or anything refused): the checked path names it
        return MISSING


def _inv_fast(ad: Adapter, solve: Any) -> Any:
    eye = ad.eye
    dense = ad.dense_error

    def fast(x: Any) -> Any:
        # the layout first: a nested or sparse tensor may not even have a shape
        if dense(x, "x", "inv") is not None or len(s := x.shape) != 2 or s[0] != s[1] or not s[0]:
            return MISSING
        return solve(x, eye(x))

    return fast


def _jax_inv(jnp: Any, x: Any) -> Any:
    """Traced (once per input signature): the checked path's program, `x` solved
    against the identity by the singular rule's LU, the identity made in the
    program (no argument, no cached array read); None for anything but one
    non-empty square matrix."""
    import jax

    if x.ndim != 2 or x.shape[0] != x.shape[1] or not x.shape[0]:
        return None
    return jax_inv_ruled(jax, jnp, x)


# (torch: one small CPU matrix, the checked path's own computation there, NumPy's
# gesv and the singular rule on a zero-copy view, without its identity made per call;
# JAX: one compiled call of `x` alone, then the host look, as the checked path's solve)
_INV_FAST = fast_paths("inv", np_maker(_np_inv_fast), torch_maker(torch_via_numpy(_np_inv_fast)),
                       jax_maker(jax_looked(_jax_inv), host_look=True), solve_maker(_inv_fast))


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.inv, dtypes="linalg",
    how="`solve(x, I)` through the backend's solve path (what each library's own `inv` computes): "
        "singular members as `solve` reports them",
    backends={
        "numpy": "NumPy's solve gufunc with a cached identity, as `solve`",
        "jax": ("`solve(x, I)` as for `solve`, the identity made once per (n, dtype, device)",
                "under `jax.jit`: NaN for singular members"),
        "dask": ("NumPy's solve with I on each block (`map_blocks`)", "lazy: raises when the block is computed"),
    },
    bad_input={
        "singular": BadInput(Raises(LinAlgError, r"inv: `x` is singular", "inv: `x` is singular; pass errors=\"nan\" …",
                                    members=(0,)), note=_JIT_NAN),
        "singular-member": BadInput(Raises(
            LinAlgError, r"inv: `x` has 1 singular matrix in its batch of shape \(2,\), at batch index 1",
            "inv: `x` has 1 singular matrix in its batch of shape (2,), at batch index 1; …", members=(1,)),
            note=_JIT_NAN),
        "near-singular": BadInput(Raises(LinAlgError, r"inv: `x` is singular",
                                         "inv: `x` is singular; pass errors=\"nan\" … (a pivot <= n·eps·its "
                                         "column's scale: solve's rule)", members=(0,)), note=_JIT_NAN),
        "nan": Returns("all NaN, no error (NaN input is not a singular matrix)", all_nan),
        "inf": Returns("all NaN, no error (inf input is not a singular matrix)", all_nan),
    },
)
def inv(x: Array, /, *, errors: str = "raise", xp: Namespace | None = None) -> Array:
    """Inverse of a square matrix or of each matrix of a stack.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64.
    errors : {"raise", "nan"}, optional
        ``"raise"`` (default): a singular member raises
        :class:`xlinalg.LinAlgError` naming the failing batch members, on every
        backend (JAX and CuPy would return inf/NaN silently). ``"nan"``: NaN for
        those members and the inverses of the others. Singular means what
        :func:`solve` reports: an LU pivot ``|u_kk| <= n * eps * max_i |a_ik|``
        (docs/semantics.md); a member holding NaN or inf is never reported (its
        whole inverse is NaN). Under
        ``jax.jit`` (and on Dask before ``compute()``) no exception is possible:
        NaN there (Dask raises when computed).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., M, M)``
        In the input's library, device and floating dtype.

    Raises
    ------
    LinAlgError
        For singular members with ``errors="raise"``.
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.inv(xp.asarray([[2.0, 0.0], [0.0, 4.0]])), "numpy")
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    if xp is None and errors == "raise" and (f := _INV_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    if (
        type(x) is _NP
        and xp is None
        and x.ndim == 2
        and x.dtype.char in NP_LOOPS
        and x.shape[0] == x.shape[1] != 0
        and x.dtype.isnative
    ):  # one NumPy matrix: the checks below read nothing more
        ad: Adapter = NUMPY
        batch: tuple[int, ...] = ()
    else:
        ad, x = matrix_input(x, "inv", xp, square=True)
        batch = tuple(x.shape[:-2])
        if 0 in tuple(x.shape):
            if errors != "raise":
                _validate.check_errors(errors)
            return keep_subclass(ad.xp.zeros(tuple(x.shape), dtype=x.dtype, device=ad.device(x)), x)
    if errors != "raise":
        _validate.check_errors(errors)
    try:
        # solve(x, I) through the backend's solve path: its singular-matrix rule
        # (docs/semantics.md), as each library's own inv is computed
        if ad.map_solve is not None:  # lazy blocks (Dask): each raises when computed
            return ad.map_solve(x, ad.eye(x), False, errors, None, functools.partial(_inv_error, batch))
        return ad.solve(x, ad.eye(x), False, errors)
    except LinAlgError as exc:
        if exc.indices and len(exc.indices[0]) == len(batch):
            raise member_error("inv", "singular", list(exc.indices), batch, _INV_FIX) from exc
        raise


def _inv_error(batch: tuple[int, ...], indices: list[tuple[int, ...]]) -> LinAlgError:
    note = " (in the chunk computed: Dask checks each chunk as it computes it)"
    return member_error("inv", "singular", indices, batch, _INV_FIX, note)


_NOT_PD = "cholesky: `x` is not positive definite"


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py) of cholesky: the library's kernel on a supported dtype, its
# result (or torch's info) looked at quickly. A failing member, NaN or inf takes the
# checked path, which computes the same way.
def _np_cholesky_fast(x: Any, upper: Any) -> Any:
    if (sig := np_square_loop(x, NP_LOOPS)) is None or _NP_CHOL is None:
        return MISSING
    token = np_quiet()
    try:
        low = _NP_CHOL(x, signature=sig)
    finally:
        np_loud(token)
    if not np_finite(low):
        return MISSING
    return np.swapaxes(np.conj(low) if low.dtype.kind == "c" else low, -1, -2) if upper else low


def _torch_cholesky_fast(torch: Any) -> Any:
    call = torch.linalg.cholesky_ex
    ok = torch_float(torch)
    plain = torch_plain(torch)

    def fast(x: Any, upper: Any) -> Any:
        if x.dtype not in ok or not plain(x):
            return MISSING
        try:
            low, info = call(x)
        except Exception:  # a shape or layout it refuses: named by the checked path
            return MISSING
        if info.item() if info.ndim == 0 else bool(info.any()):
            return MISSING
        if not upper:
            return low
        # (the checked path's conjugate is computed, not torch's lazy conjugate bit of .mH)
        return (low.conj_physical() if low.is_complex() else low).mT

    return fast


def _jax_cholesky(jnp: Any, x: Any, upper: bool) -> Any:
    low = jnp.linalg.cholesky(x, symmetrize_input=False)
    return jnp.matrix_transpose(jnp.conj(low) if jnp.iscomplexobj(low) else low) if upper else low


_CHOLESKY_FAST = fast_paths(
    "cholesky",
    np_maker(_np_cholesky_fast),
    torch_maker(_torch_cholesky_fast),
    jax_maker(jax_looked(_jax_cholesky), host_look=True),
)


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.cholesky, dtypes="linalg", sample=_spd,
    how="the standard's `linalg.cholesky` (lower triangle); a library that fails the whole batch is asked "
        "member by member on the failure path",
    backends={
        "numpy": "the gufunc behind `numpy.linalg.cholesky` (lower), in the input's precision: NaN for failing members",
        "torch-cpu": "`torch.linalg.cholesky_ex` (per-member info)",
        "torch-cuda": ("`torch.linalg.cholesky_ex` (per-member info)", "`errors=\"raise\"` reads the info: a device sync"),
        "cupy": ("the standard's `linalg.cholesky`, then a finite check",
                 "CuPy may return finite garbage for a matrix that is not positive definite (not run on a device here)"),
        "jax": ("`jnp.linalg.cholesky(symmetrize_input=False)`: NaN for failing members",
                "under `jax.jit`: NaN, never an exception"),
        "dask": ("NumPy's cholesky on each block", "lazy: raises when the block is computed"),
    },
    bad_input={
        "singular": BadInput(Raises(LinAlgError, _NOT_PD, _NOT_PD + "; …", members=(0,)), note=_JIT_NAN),
        "singular-member": BadInput(Raises(
            LinAlgError, r"cholesky: `x` has 1 not positive definite matrix in its batch of shape \(2,\), at batch index 1",
            "cholesky: `x` has 1 not positive definite matrix in its batch of shape (2,), at batch index 1; …",
            members=(1,)), note=_JIT_NAN),
        "near-singular": BadInput(Raises(LinAlgError, _NOT_PD, _NOT_PD + " (its smallest eigenvalue is below "
                                         "rounding)", members=(0,)), args=(_NEAR,)),
        "bool": Raises(LinAlgError, _NOT_PD, _NOT_PD + " ([[1, 0], [1, 1]] read as its lower triangle)"),
    },
)
def cholesky(x: Array, /, *, upper: bool = False, errors: str = "raise", xp: Namespace | None = None) -> Array:
    """Cholesky factor of a Hermitian (symmetric) positive definite matrix or stack.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Only the lower triangle is read, on every backend (JAX would symmetrize
        ``(x + x^H) / 2``; NumPy's ``upper=True`` reads the upper triangle).
        Integer and bool inputs are computed in float64.
    upper : bool, optional
        ``False`` (default): the lower factor `L`, ``x = L @ L^H``. ``True``: the
        upper factor ``U = L^H``, ``x = U^H @ U``.
    errors : {"raise", "nan"}, optional
        ``"raise"`` (default): a member that is not positive definite raises
        :class:`xlinalg.LinAlgError` naming the failing batch members, on every
        backend (JAX returns NaN silently, PyTorch raises with its own wording).
        ``"nan"``: NaN for those members, the factors of the others. A member whose
        lower triangle holds NaN or inf is never reported (its factor is NaN).
        Under ``jax.jit`` and ``torch.compile`` no exception is possible: NaN
        there; Dask raises when computed.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., M, M)``
        Triangular, in the input's library, device and floating dtype.

    Raises
    ------
    LinAlgError
        For members that are not positive definite, with ``errors="raise"``.
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes, or an `upper` that is not a bool.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.cholesky(xp.asarray([[4.0, 2.0], [2.0, 2.0]])), "numpy")
    array([[2., 0.],
           [1., 1.]])
    """
    if (
        xp is None
        and errors == "raise"
        and (upper is False or upper is True)
        and (f := _CHOLESKY_FAST.get(type(x))) is not None
        and (r := f(x, upper)) is not MISSING
    ):
        return r
    if not isinstance(upper, (bool, np.bool_)):
        raise TypeError(f"cholesky: `upper` must be a bool, got {type(upper).__name__} {upper!r:.80}")
    ad, x = matrix_input(x, "cholesky", xp, square=True)
    if errors != "raise":
        _validate.check_errors(errors)
    xpn = ad.xp
    if 0 in tuple(x.shape):
        return keep_subclass(xpn.zeros(tuple(x.shape), dtype=x.dtype, device=ad.device(x)), x)
    if ad.map_members is not None:  # lazy blocks (Dask): each raises when computed
        low = ad.map_members(x, _np_cholesky_block, errors, "cholesky",
                             block_member_error("cholesky", "not positive definite", _CHOL_FIX, tuple(x.shape[:-2])))
    else:
        low, failed = _cholesky_native(ad, x)
        low = fail_members(
            ad, x, low, failed, errors, "cholesky", "not positive definite", _CHOL_FIX,
            finite=lambda: finite_members(xpn, xpn.tril(x)),
        )
    if upper:
        low = xpn.matrix_transpose(xpn.conj(low) if ad.kind(low.dtype) == "c" else low)
    return keep_subclass(low, x) if ad.numpy_arrays else low


def _np_cholesky(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's gufunc in the input's precision: NaN for the members it fails on."""
    with np.errstate(all="ignore"):
        low = _NP_CHOL(x, signature=NP_LOOPS[x.dtype.char])
    return low, ~np.isfinite(low).all(axis=(-2, -1))


def _np_cholesky_block(x: np.ndarray, errors: str) -> np.ndarray:
    low, failed = _np_cholesky(x)
    return fail_members(NUMPY, x, low, failed, errors, "cholesky", "not positive definite", _CHOL_FIX,
                        finite=lambda: finite_members(np, np.tril(x)))


def _cholesky_native(ad: Adapter, x: Any) -> tuple[Any, Any]:
    """The lower factor and the mask of the members the library failed on."""
    xp = ad.xp
    if ad.numpy_arrays and _NP_CHOL is not None:
        return _np_cholesky(x)
    if (own := ad.cholesky_ex(x)) is not None:  # failures reported per member (torch)
        return own
    try:  # (JAX, reading the lower triangle: NaN where it fails, no error)
        low = xp.linalg.cholesky(x, **ad.lower_triangle)
    except Exception as exc:  # a library that raises for the whole batch (array-api-strict)
        if not isinstance(exc, (ValueError, RuntimeError)):
            raise
        failed = _failing_members(ad, x)
        eye = xp.eye(x.shape[-1], dtype=x.dtype, device=ad.device(x))
        low = xp.linalg.cholesky(xp.where(failed[..., None, None], eye, x))
        return low, failed
    return low, xp.logical_not(finite_members(xp, low))


def _failing_members(ad: Adapter, x: Any) -> Any:
    """The members whose own cholesky raises (a library that fails a whole batch at once)."""
    xp = ad.xp
    batch = tuple(x.shape[:-2])
    mask = np.zeros(batch, dtype=bool)
    for ix in np.ndindex(*batch):
        try:
            xp.linalg.cholesky(x[(*ix, ...)])
        except (ValueError, RuntimeError):
            mask[ix] = True
    return ad.asarray(mask, x, "x")


