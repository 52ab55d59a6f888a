"""inv, cholesky, det, slogdet: factorizations with one failure contract.

A singular (``inv``) or not positive definite (``cholesky``) member raises
:class:`xlinalg.LinAlgError` naming the failing batch members on every backend,
or gives NaN for just those members with ``errors="nan"``; a member holding NaN or
inf is never reported (NaN in, NaN out). ``inv`` is ``solve(x, I)`` through the
adapter, as NumPy, PyTorch and JAX compute it themselves: what is singular is
exactly what :func:`xlinalg.solve` reports (docs/semantics.md).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from . import _validate
from ._dispatch import fast_paths
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    jax_looked,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    torch_finite,
    torch_float,
    torch_maker,
    torch_plain,
)
from ._lib._declare import (
    BadInput,
    Raises,
    Returns,
    all_nan,
    declare,
)
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import (
    dask_gufunc,
    dask_members,
    fail_members,
    finite_members,
    matrix_input,
    member_error,
    real_dtype,
)
from .backends._base import Adapter
from .backends._numpy import NUMPY

__all__ = ["SlogdetResult", "cholesky", "det", "inv", "slogdet"]

try:
    from numpy.linalg import _umath_linalg as _ul

    _NP_CHOL: Any = _ul.cholesky_lo
    _NP_DET: Any = _ul.det
    _NP_SLOGDET: Any = _ul.slogdet
except (ImportError, AttributeError):  # pragma: no cover - a NumPy without them
    _NP_CHOL = _NP_DET = _NP_SLOGDET = None

_NP = np.ndarray
# the gufuncs' loops in the input's own precision (numpy.linalg computes float32 in
# double; PyTorch, JAX and CuPy in float32, and so does xlinalg everywhere)
_SIG1 = {"f": "f->f", "d": "d->d", "F": "F->F", "D": "D->D"}
_SIG_SLOGDET = {"f": "f->ff", "d": "d->dd", "F": "F->Ff", "D": "D->Dd"}

_INV_FIX = 'pass errors="nan" to get NaN for those members and the inverses of the rest'
_CHOL_FIX = (
    "cholesky needs Hermitian (symmetric) positive definite matrices (only the lower "
    'triangle is read); pass errors="nan" to get NaN for those members and the factors of the rest'
)


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: ``det(x) == sign * exp(logabsdet)``."""

    sign: Array
    logabsdet: Array


_TH = np.pi / 6
_Q = np.array([[np.cos(_TH), -np.sin(_TH)], [np.sin(_TH), np.cos(_TH)]])
_NEAR = _Q @ np.diag([1.0, 1e-17]) @ _Q.T  # the bad-input matrix's "numerically singular" input
_JIT_NAN = "Dask: when computed. `errors=\"nan\"`: NaN. Under `jax.jit`: NaN."


def _spd(rng: np.random.Generator) -> tuple[np.ndarray]:
    m = rng.standard_normal((3, 3))
    return (m @ m.T + 3 * np.eye(3),)


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.inv, dtypes="linalg",
    how="`solve(x, I)` through the backend's solve path (what each library's own `inv` computes): "
        "singular members as `solve` reports them",
    backends={
        "numpy": "NumPy's solve gufunc with a cached identity, as `solve`",
        "jax": ("`solve(x, I)` as for `solve`", "under `jax.jit`: NaN for singular members"),
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
    if (
        type(x) is _NP
        and xp is None
        and x.ndim == 2
        and x.dtype.char in _SIG1
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
        if ad.lazy:
            return ad.solve(x, _eye(ad, x), False, errors, functools.partial(_inv_error, batch))  # type: ignore[call-arg]
        return ad.solve(x, _eye(ad, x), False, errors)
    except LinAlgError as exc:
        if exc.indices and len(exc.indices[0]) == len(batch):
            raise member_error("inv", "singular", list(exc.indices), batch, _INV_FIX) from exc
        raise


#: (n, dtype) -> a read-only NumPy identity (inv's right-hand side, made once)
_NP_EYES: dict[tuple[int, Any], np.ndarray] = {}


def _eye(ad: Adapter, x: Any) -> Any:
    n = x.shape[-1]
    if ad is NUMPY:
        key = (n, x.dtype)
        eye = _NP_EYES.get(key)
        if eye is None:
            eye = np.eye(n, dtype=x.dtype)
            eye.flags.writeable = False
            if n <= 64:  # small ones only: a cache of large identities would hold memory
                _NP_EYES[key] = eye
        return eye
    return ad.xp.eye(n, dtype=x.dtype, device=ad.device(x))


def _inv_error(batch: tuple[int, ...], indices: list[tuple[int, ...]]) -> LinAlgError:
    note = " (in the chunk computed: Dask checks each chunk as it computes it)"
    return member_error("inv", "singular", indices, batch, _INV_FIX, note)


_NOT_PD = "cholesky: `x` is not positive definite"
_NAN_DET = Returns("NaN for a member holding NaN or inf, no error (NumPy's LU may skip it: 1.0)", all_nan)


def _finite(got: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    assert all(np.isfinite(g).all() for g in got), got


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py) of cholesky, det and slogdet: the library's kernel on a supported
# dtype; cholesky's result (or torch's info) and det's input looked at quickly. A
# failing member, NaN or inf takes the checked path, which computes the same way.
def _np_square(x: Any, sigs: dict[str, str]) -> str | None:
    """The gufunc signature for a non-empty NumPy (stack of) square matrices, else None."""
    sig = sigs.get(x.dtype.char)
    if sig is None or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2]:
        return None
    return sig


def _np_cholesky_fast(x: Any, upper: Any) -> Any:
    if (sig := _np_square(x, _SIG1)) is None or _NP_CHOL is None:
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
        return (low.mH if low.is_complex() else low.mT) if upper else low

    return fast


def _jax_cholesky(jnp: Any, x: Any, upper: bool) -> Any:
    low = jnp.linalg.cholesky(x, symmetrize_input=False)
    return jnp.matrix_transpose(jnp.conj(low) if jnp.iscomplexobj(low) else low) if upper else low


_CHOLESKY_FAST = fast_paths("cholesky", {
    "NumPy": np_maker(_np_cholesky_fast),
    "PyTorch": torch_maker(_torch_cholesky_fast),
    "JAX": jax_maker(jax_looked(_jax_cholesky), host_look=True),
})


def _np_det_fast(x: Any, slog: bool) -> Any:
    if (sig := _np_square(x, _SIG_SLOGDET if slog else _SIG1)) is None or _NP_DET is None:
        return MISSING
    token = np_quiet()
    try:
        out = (_NP_SLOGDET if slog else _NP_DET)(x, signature=sig)
    finally:
        np_loud(token)
    if not np_finite(x):  # NaN for those members: the checked path
        return MISSING
    return SlogdetResult(*out) if slog else out


def _torch_det_fast(slog: bool) -> Any:
    def build(torch: Any) -> Any:
        call = torch.linalg.slogdet if slog else torch.linalg.det
        ok = torch_float(torch)
        plain = torch_plain(torch)

        def fast(x: Any) -> Any:
            if x.dtype not in ok or not plain(x):
                return MISSING
            try:
                if not torch_finite(torch, x):  # NaN for those members: the checked path
                    return MISSING
                out = call(x)
            except Exception:  # a shape or layout it refuses: named by the checked path
                return MISSING
            return SlogdetResult(out[0], out[1]) if slog else out

        return fast

    return build


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


def _det_makers(slog: bool) -> dict[str, Any]:
    return {
        "NumPy": np_maker(lambda x: _np_det_fast(x, slog)),
        "PyTorch": torch_maker(_torch_det_fast(slog)),
        "JAX": jax_maker(_jax_det_fast(slog)),
    }


_DET_FAST = fast_paths("det", _det_makers(False))
_SLOGDET_FAST = fast_paths("slogdet", _det_makers(True))


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
    if ad.lazy:
        low = dask_members(ad, x, _np_cholesky_block, errors, "cholesky", "not positive definite", _CHOL_FIX)
    else:
        low, failed = _cholesky_native(ad, x)
        low = fail_members(
            ad, x, low, failed, errors, "cholesky", "not positive definite", _CHOL_FIX,
            finite=lambda: finite_members(xpn, xpn.tril(x)),
        )
    if upper:
        low = xpn.matrix_transpose(xpn.conj(low) if ad.kind(low.dtype) == "c" else low)
    return keep_subclass(low, x) if ad is NUMPY else low


def _np_cholesky(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's gufunc in the input's precision: NaN for the members it fails on."""
    with np.errstate(all="ignore"):
        low = _NP_CHOL(x, signature=_SIG1[x.dtype.char])
    return low, ~np.isfinite(low).all(axis=(-2, -1))


def _np_cholesky_block(x: np.ndarray, errors: str) -> np.ndarray:
    low, failed = _np_cholesky(x)
    return fail_members(NUMPY, x, low, failed, errors, "cholesky", "not positive definite", _CHOL_FIX,
                        finite=lambda: finite_members(np, np.tril(x)))


def _cholesky_native(ad: Adapter, x: Any) -> tuple[Any, Any]:
    """The lower factor and the mask of the members the library failed on."""
    xp = ad.xp
    lib = ad.library
    if lib == "NumPy" and _NP_CHOL is not None:
        return _np_cholesky(x)
    if lib == "PyTorch":
        low, info = ad.torch.linalg.cholesky_ex(x)  # type: ignore[attr-defined]
        return low, info != 0
    if lib == "JAX":
        low = xp.linalg.cholesky(x, symmetrize_input=False)  # NaN where it fails
        return low, xp.logical_not(finite_members(xp, low))
    try:
        low = xp.linalg.cholesky(x)
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
    if ad.library == "NumPy" and _NP_DET is not None:
        return keep_subclass(_np_det_block(x), x)
    if ad.lazy:
        return dask_gufunc(ad, _np_det_block, "(m,m)->()", x, [(0, x.dtype)], {}, "det")
    return _nan_where_not_finite(ad, x, ad.xp.linalg.det(x))


def _nan_where_not_finite(ad: Adapter, x: Any, out: Any) -> Any:
    """`out` (over the batch) with NaN for the members of `x` holding NaN or inf: LU
    may never touch them (NumPy's det of [[1, nan], [0, 1]] is 1.0, torch's NaN)."""
    return ad.fill_nan(ad.xp.logical_not(finite_members(ad.xp, x)), out)


def _np_det_block(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        d = _NP_DET(x, signature=_SIG1[x.dtype.char])
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
    if ad.library == "NumPy" and _NP_SLOGDET is not None:
        return keep_subclass(SlogdetResult(*_np_slogdet_block(x)), x)
    if ad.lazy:
        sign, logabs = dask_gufunc(
            ad, _np_slogdet_block, "(m,m)->(),()", x, [(0, x.dtype), (0, real_dtype(ad, x))], {}, "slogdet",
        )
        return SlogdetResult(sign, logabs)
    sign, logabs = ad.xp.linalg.slogdet(x)
    return SlogdetResult(_nan_where_not_finite(ad, x, sign), _nan_where_not_finite(ad, x, logabs))


def _np_slogdet_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        sign, logabs = _NP_SLOGDET(x, signature=_SIG_SLOGDET[x.dtype.char])
        bad = ~np.isfinite(x).all(axis=(-2, -1))
    if bad.any():
        sign, logabs = np.where(bad, np.nan, sign), np.where(bad, np.nan, logabs)
    return sign, logabs
