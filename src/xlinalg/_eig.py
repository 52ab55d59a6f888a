"""eigh, eigvalsh, eig, eigvals: eigendecompositions with one contract.

``eigh``/``eigvalsh`` read the lower triangle only and return ascending real
eigenvalues on every backend (JAX would symmetrize the input). ``eig``/``eigvals``
return complex results on every backend (NumPy returns real arrays when every
eigenvalue is real), in LAPACK's order, which no backend promises: they are
documented unordered. NaN or inf in `x` raises :class:`xlinalg.LinAlgError` "did not
converge" everywhere (as for ``svd``; NaN under a trace, at compute on Dask).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._dispatch import fast_paths
from ._fastpath import (
    MISSING,
    FastMaker,
    jax_looked,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    torch_looked,
    torch_maker,
    torch_via_numpy,
)
from ._lib._declare import BadInput, Raises, declare
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import (
    complex_dtype,
    converge_check,
    matrix_input,
    not_converged,
    real_dtype,
)
from .backends._base import Adapter
from .backends._numpy_adapter import NUMPY

__all__ = ["EigResult", "EighResult", "eig", "eigh", "eigvals", "eigvalsh"]

try:
    from numpy.linalg import _umath_linalg as _ul

    _NP_EIGH: Any = _ul.eigh_lo
    _NP_EIGVALSH: Any = _ul.eigvalsh_lo
except (ImportError, AttributeError):  # pragma: no cover - a NumPy without them
    _NP_EIGH = _NP_EIGVALSH = None

# the input's own precision (numpy.linalg computes float32 in double)
_SIG_EIGH = {"f": "f->ff", "d": "d->dd", "F": "F->fF", "D": "D->dD"}
_SIG_EIGVALSH = {"f": "f->f", "d": "d->d", "F": "F->f", "D": "D->d"}


class EighResult(NamedTuple):
    """Result of :func:`eigh`: ``x @ eigenvectors == eigenvectors * eigenvalues``."""

    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    """Result of :func:`eig`: ``x @ eigenvectors == eigenvectors * eigenvalues`` (complex)."""

    eigenvalues: Array
    eigenvectors: Array


def _hermitian_lower(x: np.ndarray) -> np.ndarray:
    """The Hermitian matrix whose lower triangle is `x`'s (what eigh reads)."""
    low = np.tril(x)
    return low + np.conj(np.swapaxes(np.tril(x, -1), -1, -2))


def _eigh_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eigh(x)
    return w, v


def _compare_eigh(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
                  dtype: np.dtype) -> None:
    """Eigenvalues as NumPy's (ascending, real); eigenvectors unique up to phase:
    ``H @ v == v * w`` for H built from `x`'s lower triangle, and orthonormal."""
    from ._lib._compare import compare_values

    tol = 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9
    w, v = got
    assert w.dtype == np.empty(0, dtype).real.dtype, w.dtype
    assert v.dtype == dtype, v.dtype
    compare_values(w, np.asarray(ref[0]), rtol=tol * 10)
    h = _hermitian_lower(np.asarray(args[0]).astype(np.complex128))
    # (LAPACK reads the real part of the diagonal)
    h = h - 1j * np.eye(h.shape[-1]) * np.diagonal(h, axis1=-2, axis2=-1).imag[..., None, :]
    scale = max(1.0, float(np.abs(h).max(initial=0)))
    compare_values(h @ v, v * w[..., None, :], rtol=tol * 10, scale=scale)


def _compare_eigvals(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
                     dtype: np.dtype) -> None:
    """Complex eigenvalues equal NumPy's as a multiset per member (no order promised)."""
    w = got[0]
    assert w.dtype == np.result_type(dtype, np.complex64), w.dtype
    r = np.asarray(ref[0]).astype(np.complex128)
    assert w.shape == r.shape
    if not w.size:
        return
    tol = 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-8
    scale = max(1.0, float(np.abs(r).max(initial=0)))
    for gm, rm in zip(w.reshape(-1, w.shape[-1]), r.reshape(-1, r.shape[-1])):
        left = list(rm)
        for z in gm:
            j = int(np.argmin([abs(z - y) for y in left]))
            assert abs(z - left[j]) <= tol * scale, (gm, rm)
            left.pop(j)


def _compare_eig(got: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...],
                 dtype: np.dtype) -> None:
    """Eigenvalues as a set (:func:`_compare_eigvals`); ``x @ v == v * w``, unit columns."""
    from ._lib._compare import compare_values

    _compare_eigvals(got[:1], ref[:1], args, dtype)
    w, v = got
    assert v.dtype == w.dtype
    x = np.asarray(args[0]).astype(np.complex128)
    tol = 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-8
    scale = max(1.0, float(np.abs(x).max(initial=0)))
    compare_values(x @ v, v * w[..., None, :], rtol=tol * 10, scale=scale)


def _eig_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eig(x)
    return w.astype(np.complex128), v.astype(np.complex128)


def _eigvals_reference(x: np.ndarray) -> np.ndarray:
    return np.linalg.eigvals(x).astype(np.complex128)


def _sym(rng: np.random.Generator) -> tuple[np.ndarray]:
    m = rng.standard_normal((3, 3))
    return (m + m.T,)


def _fails(fn: str) -> BadInput:
    msg = rf"{fn}: the eigendecomposition of `x` did not converge: `x` contains NaN or inf"
    return BadInput(Raises(LinAlgError, msg, msg.replace("\\", "")), note="Dask: when computed. Under `jax.jit`: NaN.")


_EIGH_CELLS: dict[str, str | tuple[str, str]] = {
    "numpy": "the gufunc behind `numpy.linalg.eigh` (lower triangle), in the input's precision",
    "jax": ("`jnp.linalg.eigh(symmetrize_input=False)`", "under `jax.jit`: NaN, no error"),
    "dask": ("NumPy's on each matrix (a gufunc over the batch)", "lazy"),
}
_EIG_CELLS: dict[str, str | tuple[str, str]] = {
    "numpy": "`np.linalg.eig`, cast to complex",
    "jax-gpu": ("`jnp.linalg.eig`", "not run on a device here"),
    "dask": ("NumPy's on each matrix (a gufunc over the batch)", "lazy"),
}


def _np_eigh(x: np.ndarray, values_only: bool) -> Any:
    with np.errstate(all="ignore"):
        if values_only:
            w = _NP_EIGVALSH(x, signature=_SIG_EIGVALSH[x.dtype.char])
        else:
            w, v = _NP_EIGH(x, signature=_SIG_EIGH[x.dtype.char])
    if not np.isfinite(w).all():  # NaN for the members LAPACK failed on (NaN/inf input)
        converge_check(NUMPY, x, w, "eigvalsh" if values_only else "eigh", "eigendecomposition")
    return w if values_only else (w, v)


def _np_eigh_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _np_eigh(x, False)


def _np_eigvalsh_block(x: np.ndarray) -> np.ndarray:
    return _np_eigh(x, True)


def _nonconvergence(exc: BaseException) -> bool:
    """Whether a library's exception says its eigensolver did not converge, or refused
    NaN or inf (torch.linalg.eig: "input tensor should not contain infs or NaNs")."""
    msg = str(exc).lower()
    return isinstance(exc, (ValueError, RuntimeError)) and ("conver" in msg or "nan" in msg)


def _native_eigh(ad: Adapter, x: Any, fn: str, values_only: bool) -> Any:
    xp = ad.xp
    if ad.numpy_arrays and _NP_EIGH is not None:
        return _np_eigh(x, values_only)
    if values_only and _NP_EIGH is not None and (xn := ad.small_numpy_view(x)) is not None:
        return ad.from_numpy_view(_np_eigh(xn, True), x)  # (torch: cheaper than its own)
    try:
        if ad.lower_triangle:  # the lower triangle, as everywhere (JAX symmetrizes by default)
            w, v = xp.linalg.eigh(x, **ad.lower_triangle)
            out = w if values_only else (w, v)
        else:
            out = xp.linalg.eigvalsh(x) if values_only else tuple(xp.linalg.eigh(x))
    except Exception as exc:
        if not _nonconvergence(exc):
            raise
        raise not_converged(ad, x, fn, "eigendecomposition") from exc
    converge_check(ad, x, out if values_only else out[0], fn, "eigendecomposition")
    return out


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py): one call of the library's eigensolver and a quick look at the
# eigenvalues; anything else (another dtype, NaN or inf: "did not converge") takes
# the checked path below, which computes the same way
def _np_eigh_fast(x: Any, values_only: bool) -> Any:
    sig = (_SIG_EIGVALSH if values_only else _SIG_EIGH).get(x.dtype.char)
    if sig is None or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2]:
        return MISSING
    token = np_quiet()
    try:
        out = (_NP_EIGVALSH if values_only else _NP_EIGH)(x, signature=sig)
    finally:
        np_loud(token)
    if values_only:
        return out if np_finite(out) else MISSING
    return EighResult(*out) if np_finite(out[0]) else MISSING


def _jax_eigh(jnp: Any, x: Any, values_only: bool) -> Any:
    w, v = jnp.linalg.eigh(x, symmetrize_input=False)
    return w if values_only else (w, v)


def _eigh_makers(values_only: bool) -> tuple[FastMaker, ...]:
    look, wrap = (None, None) if values_only else (0, EighResult)
    np_fast = lambda x: _np_eigh_fast(x, values_only)  # noqa: E731
    return (
        np_maker(np_fast),
        # (torch: eigvalsh by NumPy's gufunc on a view of a small CPU matrix, as the
        # checked path; eigh by torch's own, cheaper than NumPy's with its vectors)
        torch_maker(torch_via_numpy(np_fast) if values_only else torch_looked(lambda t: t.linalg.eigh,
                                                                              look=0, wrap=EighResult)),
        jax_maker(jax_looked(lambda jnp, x: _jax_eigh(jnp, x, values_only), look=look, wrap=wrap),
                  host_look=True),
    )


_EIGH_FAST = fast_paths("eigh", *_eigh_makers(False))
_EIGVALSH_FAST = fast_paths("eigvalsh", *_eigh_makers(True))


@declare(
    "linalg", args={"x": "square"}, reference=_eigh_reference, dtypes="linalg", sample=_sym, compare=_compare_eigh,
    how="the standard's `linalg.eigh` (lower triangle), then a finite check", backends=_EIGH_CELLS,
)
def eigh(x: Array, /, *, xp: Namespace | None = None) -> EighResult:
    """Compute the eigenvalues and eigenvectors of a Hermitian (real symmetric) matrix or stack.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Only the lower triangle is read, on every backend. Integer and bool inputs
        are computed in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    EighResult
        NamedTuple ``(eigenvalues, eigenvectors)``: eigenvalues real, shape
        ``(..., M)``, in ascending order on every backend; eigenvectors
        ``(..., M, M)`` orthonormal columns, in `x`'s dtype. Each eigenvector is
        unique only up to sign (phase), which differs between backends.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf ("did not converge"; NaN under ``jax.jit``, at
        compute on Dask).
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.eigh(xp.asarray([[2.0, 1.0], [1.0, 2.0]])).eigenvalues, "numpy")
    array([1., 3.])
    """
    if xp is None and (f := _EIGH_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "eigh", xp, square=True)
    xpn = ad.xp
    if 0 in tuple(x.shape):
        n = x.shape[-1]
        w = xpn.zeros((*x.shape[:-1],), dtype=real_dtype(ad, x), device=ad.device(x))
        v = xpn.zeros(tuple(x.shape), dtype=x.dtype, device=ad.device(x))
        return keep_subclass(EighResult(w, v + xpn.eye(n, dtype=x.dtype, device=ad.device(x)) if n else v), x)
    if ad.map_gufunc is not None:  # lazy blocks (Dask): NumPy's on each
        w, v = ad.map_gufunc(_np_eigh_block, "(m,m)->(m),(m,m)", x,
                             [(1, real_dtype(ad, x)), (2, x.dtype)], {}, "eigh")
        return EighResult(w, v)
    w, v = _native_eigh(ad, x, "eigh", False)
    return keep_subclass(EighResult(w, v), x) if ad.numpy_arrays else EighResult(w, v)


@declare(
    "linalg", args={"x": "square"}, reference=np.linalg.eigvalsh, dtypes="linalg", sample=_sym,
    how="the standard's `linalg.eigvalsh` (lower triangle), then a finite check", backends=_EIGH_CELLS,
)
def eigvalsh(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Compute the eigenvalues of a Hermitian (real symmetric) matrix or stack, ascending.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Only the lower triangle is read, on every backend.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., M)``
        Real, ascending on every backend; equal to ``eigh(x).eigenvalues``.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf (NaN under ``jax.jit``, at compute on Dask).
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.eigvalsh(xp.asarray([[2.0, 1.0], [1.0, 2.0]])), "numpy")
    array([1., 3.])
    """
    if xp is None and (f := _EIGVALSH_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "eigvalsh", xp, square=True)
    if 0 in tuple(x.shape):
        return keep_subclass(ad.xp.zeros((*x.shape[:-1],), dtype=real_dtype(ad, x), device=ad.device(x)), x)
    if ad.map_gufunc is not None:
        return ad.map_gufunc(_np_eigvalsh_block, "(m,m)->(m)", x, [(1, real_dtype(ad, x))], {}, "eigvalsh")
    w = _native_eigh(ad, x, "eigvalsh", True)
    return keep_subclass(w, x) if ad.numpy_arrays else w


def _np_eig(x: np.ndarray, values_only: bool, fn: str) -> Any:
    cdt = np.result_type(x.dtype, np.complex64)
    try:
        with np.errstate(all="ignore"):
            out = np.linalg.eigvals(x) if values_only else np.linalg.eig(x)
    except np.linalg.LinAlgError as exc:
        raise not_converged(NUMPY, x, fn, "eigendecomposition") from exc
    if values_only:
        w = np.asarray(out).astype(cdt, copy=False)
        converge_check(NUMPY, x, w, fn, "eigendecomposition")
        return w
    w, v = out
    w, v = w.astype(cdt, copy=False), v.astype(cdt, copy=False)
    converge_check(NUMPY, x, w, fn, "eigendecomposition")
    return w, v


def _np_eig_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _np_eig(x, False, "eig")


def _np_eigvals_block(x: np.ndarray) -> np.ndarray:
    return _np_eig(x, True, "eigvals")


def _native_eig(ad: Adapter, x: Any, fn: str, values_only: bool) -> Any:
    if ad.numpy_arrays:
        return _np_eig(x, values_only, fn)
    if (xn := ad.small_numpy_view(x)) is not None:  # (torch: cheaper than its own)
        out = _np_eig(xn, values_only, fn)
        return ad.from_numpy_view(out, x) if values_only else tuple(ad.from_numpy_view(t, x) for t in out)
    xp = ad.xp
    cdt = complex_dtype(ad, x)
    if not ad.traced(x) and not bool(xp.all(xp.isfinite(x))):
        # NumPy refuses NaN/inf up front; LAPACK's balancing can leave them unseen
        # (torch's eigvals of [[1, 0], [nan, 1]] is [1, 1])
        raise not_converged(ad, x, fn, "eigendecomposition")
    try:
        out = xp.linalg.eigvals(x) if values_only else tuple(xp.linalg.eig(x))
    except Exception as exc:
        if "requires API version" in str(exc):
            # array-api-strict gates eig/eigvals (standard 2025.12) behind its api_version flag
            raise NotImplementedError(
                f"{fn}: {ad.library} has no `linalg.{'eigvals' if values_only else 'eig'}` at the "
                f"array API version it is set to ({exc}); `x` is {ad.describe(x)}. Set a newer "
                f"version (array_api_strict.set_array_api_strict_flags(api_version='2025.12'))"
            ) from exc
        if not _nonconvergence(exc):
            raise
        raise not_converged(ad, x, fn, "eigendecomposition") from exc
    out = ad.astype(out, cdt) if values_only else tuple(ad.astype(t, cdt) for t in out)
    converge_check(ad, x, out if values_only else out[0], fn, "eigendecomposition")
    return out


# the fast paths (see eigh's): NaN or inf in `x` first (LAPACK's balancing can leave
# them unseen), then the library's eigensolver and a look at the eigenvalues
# NumPy's eig gufunc loops (numpy.linalg.eig computes float32 in double, then casts)
_SIG_EIG = {"f": ("d->DD", np.complex64), "d": ("d->DD", None), "F": ("D->DD", np.complex64),
            "D": ("D->DD", None)}
_NP_EIG_GU: Any = getattr(_ul, "eig", None) if _NP_EIGH is not None else None
_NP_EIGVALS_GU: Any = getattr(_ul, "eigvals", None) if _NP_EIGH is not None else None


def _np_eig_fast(x: Any, values_only: bool) -> Any:
    how = _SIG_EIG.get(x.dtype.char)
    gufunc = _NP_EIGVALS_GU if values_only else _NP_EIG_GU
    if how is None or gufunc is None or x.ndim < 2 or not x.size or (s := x.shape)[-1] != s[-2] or not np_finite(x):
        return MISSING
    sig, cast = how
    token = np_quiet()
    try:
        out = gufunc(x, signature=sig[:-1] if values_only else sig)
    finally:
        np_loud(token)
    if values_only:
        return (out if cast is None else out.astype(cast)) if np_finite(out) else MISSING
    w, v = out
    if not np_finite(w):
        return MISSING
    return EigResult(w, v) if cast is None else EigResult(w.astype(cast), v.astype(cast))


def _eig_makers(values_only: bool) -> tuple[FastMaker, ...]:
    look, wrap = (None, None) if values_only else (0, EigResult)
    np_fast = lambda x: _np_eig_fast(x, values_only)  # noqa: E731
    return (
        np_maker(np_fast),
        torch_maker(torch_via_numpy(np_fast)),  # (NumPy's on a view of a small CPU matrix, as checked)
        jax_maker(jax_looked(lambda jnp, x: jnp.linalg.eigvals(x) if values_only else jnp.linalg.eig(x),
                             look=look, wrap=wrap, look_input=True), host_look=True),
    )


_EIG_FAST = fast_paths("eig", *_eig_makers(False))
_EIGVALS_FAST = fast_paths("eigvals", *_eig_makers(True))


@declare(
    "linalg", args={"x": "square"}, reference=_eig_reference, dtypes="linalg", compare=_compare_eig,
    how="the standard's `linalg.eig`, cast to complex, after a finite check of `x`", backends=_EIG_CELLS,
    bad_input={"nan": _fails("eig"), "inf": _fails("eig")},
)
def eig(x: Array, /, *, xp: Namespace | None = None) -> EigResult:
    """Compute the eigenvalues and right eigenvectors of a general square matrix or stack.

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    EigResult
        NamedTuple ``(eigenvalues, eigenvectors)``, always complex (complex64 for
        float32 and complex64 input, complex128 otherwise) on every backend; NumPy
        alone would return real arrays when every eigenvalue is real. The order
        is LAPACK's and is **unspecified**: compare eigenvalues as sets and
        eigenvectors through ``x @ v == v * w``. Each eigenvector has unit norm,
        unique up to a phase.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf (NaN under ``jax.jit``, at compute on Dask).
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> w = xl.to(xl.eig(xp.asarray([[0.0, -1.0], [1.0, 0.0]])).eigenvalues, "numpy")
    >>> sorted(w.tolist(), key=lambda z: z.imag)
    [-1j, 1j]
    """
    if xp is None and (f := _EIG_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "eig", xp, square=True)
    cdt = complex_dtype(ad, x)
    if 0 in tuple(x.shape):
        n = x.shape[-1]
        w = ad.xp.zeros((*x.shape[:-1],), dtype=cdt, device=ad.device(x))
        v = ad.xp.zeros(tuple(x.shape), dtype=cdt, device=ad.device(x))
        return keep_subclass(EigResult(w, v + ad.xp.eye(n, dtype=cdt, device=ad.device(x)) if n else v), x)
    if ad.map_gufunc is not None:
        w, v = ad.map_gufunc(_np_eig_block, "(m,m)->(m),(m,m)", x, [(1, cdt), (2, cdt)], {}, "eig")
        return EigResult(w, v)
    w, v = _native_eig(ad, x, "eig", False)
    return keep_subclass(EigResult(w, v), x) if ad.numpy_arrays else EigResult(w, v)


@declare(
    "linalg", args={"x": "square"}, reference=_eigvals_reference, dtypes="linalg", compare=_compare_eigvals,
    how="the standard's `linalg.eigvals`, cast to complex, after a finite check of `x`", backends=_EIG_CELLS,
    bad_input={"nan": _fails("eigvals"), "inf": _fails("eigvals")},
)
def eigvals(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Compute the eigenvalues of a general square matrix or stack (complex, unordered).

    Parameters
    ----------
    x : array, shape ``(..., M, M)``
        Integer and bool inputs are computed in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., M)``
        Complex on every backend, in LAPACK's (unspecified) order: equal to
        ``eig(x).eigenvalues`` as a set.

    Raises
    ------
    LinAlgError
        If `x` holds NaN or inf (NaN under ``jax.jit``, at compute on Dask).
    ValueError
        If `x` is not square, or has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> sorted(xl.to(xl.eigvals(xp.asarray([[2.0, 0.0], [0.0, 1.0]])), "numpy").tolist(), key=abs)
    [(1+0j), (2+0j)]
    """
    if xp is None and (f := _EIGVALS_FAST.get(type(x))) is not None and (r := f(x)) is not MISSING:
        return r
    ad, x = matrix_input(x, "eigvals", xp, square=True)
    cdt = complex_dtype(ad, x)
    if 0 in tuple(x.shape):
        return keep_subclass(ad.xp.zeros((*x.shape[:-1],), dtype=cdt, device=ad.device(x)), x)
    if ad.map_gufunc is not None:
        return ad.map_gufunc(_np_eigvals_block, "(m,m)->(m)", x, [(1, cdt)], {}, "eigvals")
    w = _native_eig(ad, x, "eigvals", True)
    return keep_subclass(w, x) if ad.numpy_arrays else w


def _np_hermitian_svd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w, v = _np_eigh(x, False)
    return _order_hermitian(np, w, v)


def _order_hermitian(xp: Any, w: Any, v: Any) -> tuple[Any, Any, Any]:
    """SVD factors from an eigendecomposition: S = |w| descending, U = v, Vh = sign·v^H."""
    s = xp.abs(w)
    order = xp.argsort(s, axis=-1, descending=True, stable=True) if xp is not np else np.argsort(-s, axis=-1, kind="stable")
    s = xp.take_along_axis(s, order, axis=-1)
    neg = xp.take_along_axis(w, order, axis=-1) < 0
    sgn = 1.0 - 2.0 * (xp.astype(neg, s.dtype) if xp is not np else neg.astype(s.dtype))
    u = xp.take_along_axis(v, order[..., None, :], axis=-1)
    cplx = xp.isdtype(v.dtype, "complex floating") if xp is not np else v.dtype.kind == "c"
    uh = xp.conj(u) if cplx else u
    vh = xp.matrix_transpose(uh * xp.astype(sgn, v.dtype)[..., None, :]) if xp is not np else np.swapaxes(
        uh * sgn.astype(v.dtype)[..., None, :], -1, -2)
    return u, s, vh


def hermitian_svd(x: Any, xp: Any) -> tuple[Any, Any, Any]:
    """``svd(x, hermitian=True)``: ``(U, S, Vh)`` from :func:`eigh` (see :func:`xlinalg.svd`,
    which wraps them in its ``SVDResult``)."""
    fn = "svd"
    ad, x = matrix_input(x, fn, xp, square=True)
    xpn = ad.xp
    if 0 in tuple(x.shape):
        w, v = eigh(x)
        return v, w, v
    if ad.map_gufunc is not None:
        u, s, vh = ad.map_gufunc(_np_hermitian_svd, "(m,m)->(m,m),(m),(m,m)", x,
                                 [(2, x.dtype), (1, real_dtype(ad, x)), (2, x.dtype)], {}, fn)
        return u, s, vh
    w, v = _native_eigh(ad, x, fn, False)
    u, s, vh = _order_hermitian(xpn, w, v)
    return u, s, vh
