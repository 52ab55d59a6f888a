"""Public linear algebra: solve, matmul, svd, svdvals, qr.

Each function has one body: infer the namespace from the arguments (cached by
type), validate with cheap attribute reads, apply xlinalg's semantics (the
standard's right-hand-side rule, one dtype rule, one singular-matrix error), and
make one native call through the library's adapter.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _unrolled
from ._lib import _dispatch, _validate
from ._lib._dispatch import adapter1 as _adapter1
from ._lib._dispatch import adapter2 as _adapter2
from ._lib._typing import Array, Namespace
from .backends._base import MISSING as _MISSING
from .backends._base import Adapter
from .backends._numpy import NUMPY as NUMPY_ADAPTER

__all__ = ["QRResult", "SVDResult", "matmul", "qr", "solve", "svd", "svdvals"]

_NP = np.ndarray
_np_matmul = np.matmul
_NP_MATMUL_OK = frozenset(np.dtype(c) for c in "efdgFDGbBhHiIlLqQ")
_FAST_MATMUL = _dispatch.FAST_OPS["matmul"]
_FAST_SOLVE = _dispatch.FAST_SOLVE


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``U @ diag(S) @ Vh == x``."""

    U: Array
    S: Array
    Vh: Array


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``Q @ R == x``."""

    Q: Array
    R: Array


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
        What to do with exactly singular matrices. ``"raise"`` (default) raises
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
        If a matrix in `a` is exactly singular and ``errors="raise"``.
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
    _validate.solve_shapes(ad, a, b, vector, sa, sb)
    if errors != "raise":
        _validate.check_errors(errors)
    if method not in _unrolled.METHODS:
        raise ValueError(f"solve: `method` must be one of {_unrolled.METHODS}, got {method!r}")
    if a.dtype != b.dtype or a.dtype not in ad.solve_dtypes:
        a, b = _validate.promote_linalg(ad, a, b, "solve")
    ad.check_same_device(a, b, "a", "b")
    if 0 in sa or 0 in sb:
        return _validate.empty_solve(ad, a, b, vector)
    if method != "native" and _unrolled.use_unrolled(ad, a, b, vector, method):
        return _unrolled.solve_adapter(ad, a, b, vector, errors)
    if make_error is not None:
        return ad.solve(a, b, vector, errors, make_error)  # type: ignore[call-arg]
    return ad.solve(a, b, vector, errors)


def matmul(a: Array, b: Array, /, *, xp: Namespace | None = None) -> Array:
    """Matrix product with the standard's broadcasting rules.

    Parameters
    ----------
    a, b : array
        At least one dimension each; 1-D operands are promoted as in
        :func:`numpy.matmul` and the promoted axis is removed from the result.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        ``a @ b`` in the inputs' library and device, with the standard's type
        promotion (float32 × float64 gives float64 on every backend, PyTorch
        included). Integer matrices give integer products.

    Raises
    ------
    ValueError
        If an operand is 0-D, or the contracted dimensions differ (known sizes:
        Dask's unknown, NaN, sizes are checked by Dask when blocks meet).
    TypeError
        For bool or non-numeric dtypes, or operands from two libraries.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.matmul(xp.eye(2), xp.asarray([1.0, 2.0])), "numpy")
    array([1., 2.])
    """
    if xp is None:
        t = type(a)
        if t is _NP:
            if type(b) is _NP and (dt := a.dtype) is b.dtype and dt in _NP_MATMUL_OK:
                try:
                    return _np_matmul(a, b)
                except ValueError:
                    pass  # diagnosed by the checked path below
        elif t is type(b) and (k := _FAST_MATMUL.get(t)) is not None and (
            k[2]  # the kernel refuses mixed dtypes itself (torch): no dtype read
            # (else each dtype read once: each shows against a small torch matmul)
            or (((dt := a.dtype) is (db := b.dtype) or dt == db) and dt not in k[1])
        ):
            try:
                r = k[0](a, b)
            except Exception:  # noqa: S110 -- any refusal is re-raised by the checked path below
                pass
            else:
                # torch skips its dtype check when a broadcast batch is empty (the
                # result then takes one operand's dtype): empty results take the
                # checked path, which promotes by the contract
                if not k[2] or r.numel():
                    return r
    return _matmul_checked(a, b, xp)


def _matmul_checked(a: Any, b: Any, xp: Any) -> Any:
    ad, a, b = _adapter2(a, b, "a", "b", xp)
    try:  # a sparse or nested tensor, or a dtype without a kernel: named (native_error)
        sa, sb = a.shape, b.shape
        if not sa or not sb:
            raise ValueError(
                f"matmul: operands must have at least one dimension, got `a` {ad.describe(a)} "
                f"and `b` {ad.describe(b)}"
            )
        ka = sa[-1]
        kb = sb[0] if len(sb) == 1 else sb[-2]
        if _validate.sizes_differ(ka, kb):
            raise ValueError(
                f"matmul: `a` has {ka} columns but `b` has {kb} rows "
                f"(shapes {tuple(sa)} and {tuple(sb)})"
            )
        da, db = ad.kind(a.dtype), ad.kind(b.dtype)
        if "b" in (da, db) or "?" in (da, db):
            raise TypeError(
                f"matmul: operands must be numeric, got `a` {ad.describe(a)} and `b` {ad.describe(b)}"
            )
        ad.check_same_device(a, b, "a", "b")
        if len(sa) > 2 and len(sb) > 2:
            _validate.batches("matmul", sa, sb)
        if a.dtype != b.dtype:
            # NumPy's table for mixed kinds (int64 x float32 -> float64) on every backend
            dt = _validate.mixed_dtype(ad, a, b)
            if dt is None:
                dt = ad.xp.result_type(a.dtype, b.dtype)
            a, b = ad.astype(a, dt), ad.astype(b, dt)
        return ad.matmul(a, b)
    except Exception as e:
        _validate.reraise(ad, "matmul", e, ("a", a), ("b", b))


def _decomp_input(x: Any, fn: str, xp: Any) -> tuple[Adapter, Any]:
    ad, x = _adapter1(x, "x", xp)
    if (err := ad.dense_error(x, "x", fn)) is not None:
        raise err
    _validate.matrix(ad, x, "x", fn)
    dt = _validate.linalg_dtype(ad, x, "x", fn)
    if isinstance(dt, np.dtype) and not dt.isnative:  # big-endian NumPy data: the factors
        dt = dt.newbyteorder("=")  # come in native order (Dask would declare one, compute another)
    return ad, ad.astype(x, dt)


def _real_dtype(ad: Adapter, x: Any) -> Any:
    if ad.kind(x.dtype) != "c":
        return x.dtype
    return ad.xp.real(ad.xp.zeros((), dtype=x.dtype, device=ad.device(x))).dtype


def _eye_stack(ad: Adapter, batch: tuple[int, ...], n: int, x: Any) -> Any:
    """A stack of identities, each its own memory (writable, as a native result is;
    a broadcast view would be read-only on NumPy and shared by every member on torch)."""
    xp = ad.xp
    eye = xp.eye(n, dtype=x.dtype, device=ad.device(x))
    return xp.zeros((*batch, n, n), dtype=x.dtype, device=ad.device(x)) + eye if batch else eye


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

        return hermitian_svd(x, bool(compute_uv), xp)
    if not compute_uv:
        return svdvals(x, xp=xp)
    ad, x = _decomp_input(x, "svd", xp)
    m, n = x.shape[-2:]
    if 0 in tuple(x.shape):
        xp_ = ad.xp
        batch = tuple(x.shape[:-2])
        k = min(m, n)
        um, vn = (m, n) if full_matrices else (k, k)
        dev = ad.device(x)
        U = _eye_stack(ad, batch, m, x)[..., :um]
        Vh = _eye_stack(ad, batch, n, x)[..., :vn, :]
        S = xp_.zeros((*batch, k), dtype=_real_dtype(ad, x), device=dev)
        return SVDResult(U, S, Vh)
    return SVDResult(*ad.svd(x, bool(full_matrices)))


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
    ad, x = _decomp_input(x, "svdvals", xp)
    if 0 in tuple(x.shape):
        k = min(x.shape[-2:])
        return ad.xp.zeros((*x.shape[:-2], k), dtype=_real_dtype(ad, x), device=ad.device(x))
    return ad.svdvals(x)


_QR_MODES = ("reduced", "complete", "r")


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
    if mode not in _QR_MODES:
        raise ValueError(f"qr: `mode` must be one of {_QR_MODES}, got {mode!r}")
    ad, x = _decomp_input(x, "qr", xp)
    if 0 in tuple(x.shape):
        m, n = x.shape[-2:]
        batch = tuple(x.shape[:-2])
        k = m if mode == "complete" else min(m, n)
        Q = _eye_stack(ad, batch, m, x)[..., :k]
        R = ad.xp.zeros((*batch, k, n), dtype=x.dtype, device=ad.device(x))
        return R if mode == "r" else QRResult(Q, R)
    if mode == "r":
        if ad is NUMPY_ADAPTER:  # NumPy's own mode="r" skips forming Q
            return np.linalg.qr(x, mode="r")
        return ad.qr(x, "reduced")[1]
    return QRResult(*ad.qr(x, "complete" if mode == "complete" else "reduced"))  # validated above
