"""svd, svdvals, qr: the orthogonal decompositions.

The library's kernel on a supported dtype (its fast path); the checked path makes
xlinalg's dtype rule, the empty shapes (identities and zeros, as NumPy gives them),
and the one error of an SVD that does not converge (NaN or inf input) on every
backend. Dask runs NumPy's kernel on each matrix, or its tall-and-skinny algorithms
for a matrix in several chunks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._dispatch import fast_paths
from ._fastpath import (
    JAX_FLOAT,
    NP_FLOAT,
    jax_looked,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    torch_float,
    torch_looked,
    torch_maker,
    torch_via_numpy,
)
from ._lib._declare import BadInput, Raises, Returns, declare, reconstructs, some_nonfinite
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._matrix import matrix_input, real_dtype
from .backends._base import MISSING as _MISSING
from .backends._base import Adapter

__all__ = ["QRResult", "SVDResult", "qr", "svd", "svdvals"]


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``U @ diag(S) @ Vh == x``."""

    U: Array
    S: Array
    Vh: Array


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``Q @ R == x``."""

    Q: Array
    R: Array


def _eye_stack(ad: Adapter, batch: tuple[int, ...], n: int, x: Any) -> Any:
    """A stack of identities, each its own memory (writable, as a native result is;
    a broadcast view would be read-only on NumPy and shared by every member on torch)."""
    xp = ad.xp
    eye = xp.eye(n, dtype=x.dtype, device=ad.device(x))
    return xp.zeros((*batch, n, n), dtype=x.dtype, device=ad.device(x)) + eye if batch else eye


def _svd_rebuild(u: np.ndarray, s: np.ndarray, vh: np.ndarray) -> np.ndarray:
    k = s.shape[-1]
    return (u[..., :k] * s[..., None, :]) @ vh[..., :k, :]


def _svd_fails(fn: str) -> BadInput:
    return BadInput(Raises(LinAlgError, rf"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf",
                           f"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf"),
                    note="Dask: when computed. Under `jax.jit`: NaN.")


# ---------------------------------------------------------------------- fast paths
# (see _fastpath.py) of svd, svdvals and qr: the library's kernel on a supported
# dtype, S looked at quickly (NaN or inf: the checked path raises "did not converge")
try:
    from numpy.linalg import _umath_linalg as _ul

    _NP_SVD: Any = {True: _ul.svd_f, False: _ul.svd_s, None: _ul.svd}
except (ImportError, AttributeError):  # pragma: no cover - a NumPy without them
    _NP_SVD = None
# numpy.linalg.svd's loops: float32 in double, then cast (U/Vh dtype, S dtype)
_NP_SVD_SIG = {
    "f": ("d->ddd", "d->d", np.float32, np.float32), "d": ("d->ddd", "d->d", None, None),
    "F": ("D->DdD", "D->d", np.complex64, np.float32), "D": ("D->DdD", "D->d", None, None),
}


def _np_svd_fast(x: Any, full: bool | None) -> Any:
    """NumPy's SVD gufunc (`full` None: singular values only), as numpy.linalg.svd calls it."""
    how = _NP_SVD_SIG.get(x.dtype.char)
    if how is None or _NP_SVD is None or x.ndim < 2 or not x.size or not np_finite(x):
        return _MISSING  # (NaN or inf: "did not converge", raised before LAPACK sees it)
    token = np_quiet()
    try:
        out = _NP_SVD[full](x, signature=how[1] if full is None else how[0])
    finally:
        np_loud(token)
    if full is None:
        return (out if how[3] is None else out.astype(how[3])) if np_finite(out) else _MISSING
    if not np_finite(out[1]):
        return _MISSING
    if how[2] is None:
        return SVDResult(*out)
    return SVDResult(out[0].astype(how[2]), out[1].astype(how[3]), out[2].astype(how[2]))


# (JAX: `x` looked at first, NaN or inf: LAPACK may loop on it)
_SVD_FAST = fast_paths(
    "svd",
    np_maker(_np_svd_fast),
    torch_maker(torch_looked(lambda t: t.linalg.svd, look=1, wrap=SVDResult)),  # (full_matrices positional)
    jax_maker(jax_looked(lambda jnp, x, full: jnp.linalg.svd(x, full_matrices=full), look=1,
                         wrap=SVDResult, look_input=True), host_look=True),
)
_SVDVALS_FAST = fast_paths(
    "svdvals",
    np_maker(lambda x: _np_svd_fast(x, None)),
    torch_maker(torch_via_numpy(lambda x: _np_svd_fast(x, None))),  # (as checked: TorchAdapter.svdvals)
    jax_maker(jax_looked(lambda jnp, x: jnp.linalg.svdvals(x), look_input=True), host_look=True),
)


def _qr_fast(call: Any, ok: frozenset[Any], numel: bool, r_mode: bool) -> Any:
    """qr's fast path: `call(x)` / `call(x, mode)` (the library's qr; its default mode
    is "reduced", not passed: JAX's dispatch of a static keyword costs more than a
    small QR) on a non-empty (stack of) matrices of a dtype in `ok` (`numel`: the
    size is ``x.numel()``, else ``x.size``); `r_mode`: the library computes mode="r"
    itself (NumPy), else R of "reduced"."""

    new = tuple.__new__  # (the NamedTuple made from the library's pair: its __new__ skipped)

    def fast(x: Any, mode: str) -> Any:
        # (fewer than two dimensions: each library's qr refuses them itself)
        if x.dtype not in ok or not (x.numel() if numel else x.size):
            return _MISSING
        try:
            if mode == "reduced":
                return new(QRResult, call(x))
            if mode == "r":
                return call(x, "r") if r_mode else call(x)[1]
            return new(QRResult, call(x, mode))
        except Exception:  # named by the checked path
            return _MISSING

    return fast


_QR_FAST = fast_paths(
    "qr",
    np_maker(_qr_fast(np.linalg.qr, NP_FLOAT, False, True)),
    torch_maker(lambda t: _qr_fast(t.linalg.qr, torch_float(t), True, False)),
    jax_maker(lambda jax, jnp: _qr_fast(jnp.linalg.qr, JAX_FLOAT, False, False)),
)


_SVD_ON_DEVICE = ("the standard's `linalg.svd`, then a finite check of `S`", "reading `S` synchronizes the device")


@declare(
    "linalg", args={"x": "matrix"}, reference=np.linalg.svd, dtypes="linalg",
    compare=reconstructs(_svd_rebuild, unique=(1,)),
    how="the standard's `linalg.svd`, then a finite check of `S`",
    backends={
        "numpy": "`np.linalg.svd`, then a finite check of `S`",
        "torch-cuda": _SVD_ON_DEVICE,
        "cupy": _SVD_ON_DEVICE,
        "jax-cpu": ("`jnp.linalg.svd`, then a finite check of `S`", "under `jax.jit`: NaN, no error"),
        "jax-gpu": ("`jnp.linalg.svd`, then a finite check of `S`", "reading `S` waits; under `jax.jit`: NaN, no error"),
        "dask": ("NumPy's SVD on each matrix (a gufunc over the batch) when a matrix is in one chunk or fits one "
                 "automatic chunk; Dask's tall-and-skinny SVD (`da.linalg.svd`) for a larger chunked matrix",
                 "a chunked non-square matrix larger than one automatic chunk with `full_matrices=True` raises "
                 "`ValueError`"),
    },
    bad_input={"nan": _svd_fails("svd"), "inf": _svd_fails("svd")},
)
def svd(
    x: Array, /, *, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
    xp: Namespace | None = None,
) -> Any:
    """Singular value decomposition ``x = U @ diag(S) @ Vh``.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Matrix or stack of matrices; integer and bool inputs are computed in float64.
    full_matrices : bool, optional
        ``True`` (the standard's default): `U` is ``(..., M, M)`` and `Vh`
        ``(..., N, N)``. ``False``: ``(..., M, K)`` and ``(..., K, N)`` with
        ``K = min(M, N)``. On Dask, a matrix in several chunks runs Dask's
        tall-and-skinny (or short-and-fat) SVD, which gives the reduced factors
        only: pass ``False`` there (``True`` raises ValueError unless M == N or
        the matrix fits one automatic chunk); stacks run NumPy's SVD per matrix
        (docs/dask.md). A bool (or 0/1); anything else raises TypeError.
    compute_uv : bool, optional
        NumPy's keyword: ``False`` returns the singular values alone (an array,
        as NumPy does; the same as :func:`svdvals`). Default ``True``.
    hermitian : bool, optional
        NumPy's keyword: ``True`` says `x` is Hermitian (real symmetric; square),
        and its SVD is computed from :func:`eigh` (only the lower triangle is
        read): ``S = |eigenvalues|`` in descending order, ``U`` the eigenvectors,
        ``Vh`` their conjugate transpose with the eigenvalues' signs (a zero
        eigenvalue counts as positive, so ``U @ diag(S) @ Vh == x`` always holds;
        NumPy gives a zero row of ``Vh`` there). Default ``False``.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    SVDResult
        NamedTuple ``(U, S, Vh)``; `S` is real, descending, shape ``(..., K)``
        (with ``compute_uv=False``: `S` alone).
        Singular vectors are unique only up to sign (phase), which differs
        between backends and devices; compare reconstructions, not vectors.

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes, or a `full_matrices` that is
        not a bool.
    LinAlgError
        If the SVD does not converge, as for any `x` with NaN or inf entries (on
        every backend; Dask when computed; NaN instead under ``jax.jit``, inside
        ``torch.func`` transforms and on torch meta tensors). A finite `x` whose
        largest singular value overflows its dtype gets inf in `S`, no error.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.svd(xp.asarray([[3.0, 0.0], [0.0, 1.0]])).S, "numpy")
    array([3., 1.])
    """
    if (
        xp is None
        and compute_uv is True
        and hermitian is False
        and (full_matrices is True or full_matrices is False)
        and (f := _SVD_FAST.get(type(x))) is not None
        and (r := f(x, full_matrices)) is not _MISSING
    ):
        return r
    if not (isinstance(full_matrices, (bool, np.bool_)) or (type(full_matrices) is int and full_matrices in (0, 1))):
        raise TypeError(
            f"svd: `full_matrices` must be a bool, got {type(full_matrices).__name__} {full_matrices!r:.80}"
        )
    if not isinstance(compute_uv, (bool, np.bool_)):
        raise TypeError(f"svd: `compute_uv` must be a bool, got {type(compute_uv).__name__} {compute_uv!r:.80}")
    if not isinstance(hermitian, (bool, np.bool_)):
        raise TypeError(f"svd: `hermitian` must be a bool, got {type(hermitian).__name__} {hermitian!r:.80}")
    if hermitian:
        from ._eig import hermitian_svd

        u, s, vh = hermitian_svd(x, xp)
        return SVDResult(u, s, vh) if compute_uv else s
    if not compute_uv:
        return svdvals(x, xp=xp)
    ad, x = matrix_input(x, "svd", xp)
    m, n = x.shape[-2:]
    if 0 in tuple(x.shape):
        xp_ = ad.xp
        batch = tuple(x.shape[:-2])
        k = min(m, n)
        um, vn = (m, n) if full_matrices else (k, k)
        dev = ad.device(x)
        U = _eye_stack(ad, batch, m, x)[..., :um]
        Vh = _eye_stack(ad, batch, n, x)[..., :vn, :]
        S = xp_.zeros((*batch, k), dtype=real_dtype(ad, x), device=dev)
        return SVDResult(*(keep_subclass(f, x) for f in (U, S, Vh)))
    return SVDResult(*(keep_subclass(f, x) for f in ad.svd(x, bool(full_matrices))))


def _svdvals_reference(x: np.ndarray) -> np.ndarray:
    return np.linalg.svd(x, compute_uv=False)


@declare(
    "linalg", args={"x": "matrix"}, reference=_svdvals_reference, dtypes="linalg",
    how="the standard's `linalg.svdvals`, then a finite check",
    backends={
        "numpy": "`np.linalg.svd(..., compute_uv=False)`, then a finite check",
        "torch-cpu": "up to 16 matrices of sides up to 64 outside autograd: NumPy's SVD gufunc on a "
                     "zero-copy view; otherwise `torch.linalg.svdvals`; then a finite check",
        "torch-cuda": ("`torch.linalg.svdvals`, then a finite check", "reading the values synchronizes the device"),
        "cupy": ("the standard's `linalg.svdvals`, then a finite check", "reading the values synchronizes the device"),
        "dask": "NumPy's singular values on each matrix (a gufunc) when a matrix is in one chunk or fits one "
                "automatic chunk; `S` of Dask's tall-and-skinny SVD for a larger chunked matrix",
    },
    bad_input={"nan": _svd_fails("svdvals"), "inf": _svd_fails("svdvals")},
)
def svdvals(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Singular values of `x` (without computing singular vectors).

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Matrix or stack of matrices.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array, shape ``(..., min(M, N))``
        Real, in descending order; equal to ``svd(x).S``.

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.
    LinAlgError
        If the SVD does not converge, as for any `x` with NaN or inf entries (on
        every backend; Dask when computed; NaN instead under ``jax.jit``, inside
        ``torch.func`` transforms and on torch meta tensors). A finite `x` whose
        largest singular value overflows its dtype gets inf, no error.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.svdvals(xp.asarray([[1.0, 0.0], [0.0, 2.0]])), "numpy")
    array([2., 1.])
    """
    if xp is None and (f := _SVDVALS_FAST.get(type(x))) is not None and (r := f(x)) is not _MISSING:
        return r
    ad, x = matrix_input(x, "svdvals", xp)
    if 0 in tuple(x.shape):
        k = min(x.shape[-2:])
        return keep_subclass(ad.xp.zeros((*x.shape[:-2], k), dtype=real_dtype(ad, x), device=ad.device(x)), x)
    return keep_subclass(ad.svdvals(x), x)


_QR_MODES = ("reduced", "complete", "r")


def _qr_rebuild(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    return q @ r


_QR_NONFINITE = Returns("non-finite Q and R, no error (which entries: LAPACK-dependent)", some_nonfinite)


@declare(
    "linalg", args={"x": "matrix"}, reference=np.linalg.qr, dtypes="linalg", compare=reconstructs(_qr_rebuild),
    how="the standard's `linalg.qr`",
    backends={
        "numpy": "`np.linalg.qr`",
        "dask": ("NumPy's QR on each matrix (a gufunc) when a matrix is in one chunk or fits one automatic chunk; "
                 "Dask's tall-and-skinny QR (`da.linalg.qr`) for a larger chunked matrix",
                 "a chunked tall matrix larger than one automatic chunk with `mode=\"complete\"` raises "
                 "`ValueError`"),
    },
    bad_input={"nan": _QR_NONFINITE, "inf": _QR_NONFINITE},
)
def qr(x: Array, /, *, mode: str = "reduced", xp: Namespace | None = None) -> Any:
    """QR decomposition ``x = Q @ R``.

    Parameters
    ----------
    x : array, shape ``(..., M, N)``
        Matrix or stack of matrices.
    mode : {"reduced", "complete", "r"}, optional
        ``"reduced"``: `Q` is ``(..., M, K)``, `R` ``(..., K, N)`` with
        ``K = min(M, N)``; ``"complete"``: `Q` is ``(..., M, M)``, `R` ``(..., M, N)``;
        ``"r"`` (NumPy's): `R` alone, ``(..., K, N)``, returned as an array.
        On Dask, a tall matrix in several chunks runs Dask's TSQR (``"reduced"``
        only: ``"complete"`` raises ValueError there unless the matrix fits one
        automatic chunk; docs/dask.md).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    QRResult
        NamedTuple ``(Q, R)``: `Q` has orthonormal columns, `R` is upper triangular
        (``mode="r"``: `R` alone).

    Raises
    ------
    ValueError
        If `x` has fewer than two dimensions, or `mode` is not a valid mode.
    TypeError
        For float16/bfloat16 or non-numeric dtypes.

    Examples
    --------
    >>> import xlinalg as xl
    >>> Q, R = xl.qr(xp.eye(2))
    >>> R.shape
    (2, 2)
    """
    if (
        xp is None
        and type(mode) is str
        and mode in _QR_MODES
        and (f := _QR_FAST.get(type(x))) is not None
        and (r := f(x, mode)) is not _MISSING
    ):
        return r
    if mode not in _QR_MODES:
        raise ValueError(f"qr: `mode` must be one of {_QR_MODES}, got {mode!r}")
    ad, x = matrix_input(x, "qr", xp)
    if 0 in tuple(x.shape):
        m, n = x.shape[-2:]
        batch = tuple(x.shape[:-2])
        k = m if mode == "complete" else min(m, n)
        Q = _eye_stack(ad, batch, m, x)[..., :k]
        R = ad.xp.zeros((*batch, k, n), dtype=x.dtype, device=ad.device(x))
        if mode == "r":
            return keep_subclass(R, x)
        return QRResult(keep_subclass(Q, x), keep_subclass(R, x))
    if mode == "r":
        if ad.numpy_arrays:  # NumPy's own mode="r" skips forming Q
            return keep_subclass(np.linalg.qr(x, mode="r"), x)
        return keep_subclass(ad.qr(x, "reduced")[1], x)
    return QRResult(*ad.qr(x, "complete" if mode == "complete" else "reduced"))  # validated above
