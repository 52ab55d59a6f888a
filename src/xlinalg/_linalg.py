"""Public linear algebra: solve, matmul, svd, svdvals, qr.

Each function has one body: infer the namespace from the arguments (cached by
type), validate with cheap attribute reads, apply xlinalg's semantics (the
standard's right-hand-side rule, one dtype rule, one singular-matrix error), and
make one native call through the library's adapter.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _dispatch, _unrolled, _validate
from ._dispatch import adapter1 as _adapter1
from ._dispatch import adapter2 as _adapter2
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
)
from ._lib._declare import (
    NA,
    BadInput,
    Raises,
    Returns,
    all_nan,
    declare,
    reconstructs,
    some_nonfinite,
)
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
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
    if ad.lazy:  # the matrix axes of `a` and the rows of `b` (unknown batch axes are paired)
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
    if make_error is not None:
        return ad.solve(a, b, vector, errors, make_error)  # type: ignore[call-arg]
    return ad.solve(a, b, vector, errors)


@declare(
    "linalg", args={"a": "operand", "b": "operand"}, reference=np.matmul, dtypes="promote",
    how="the standard's `matmul`",
    backends={
        "torch": ("`torch.matmul` directly for one dtype; mixed dtypes promoted first",
                  "torch refuses mixed dtypes; xlinalg promotes them as NumPy does"),
        "jax": "`jnp.matmul` directly for one dtype",
        "numpy": "`np.matmul`",
    },
    bad_input={
        "non-square": NA("any M×K @ K×N is valid"),
        "mismatched": BadInput(
            Raises(ValueError, r"matmul: `a` has 3 columns but `b` has 2 rows",
                   "matmul: `a` has 3 columns but `b` has 2 rows (shapes (3, 3) and (2, 1))"),
            args=(np.ones((3, 3)), np.ones((2, 1)))),
        "bool": Raises(TypeError, r"matmul: operands must be numeric, got `a` .*bool",
                       "matmul: operands must be numeric, got `a` … bool and `b` … bool"),
        "0-d": Raises(ValueError, r"matmul: operands must have at least one dimension, got `a`",
                      "matmul: operands must have at least one dimension, got `a` … shape () …"),
    },
)
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
_SVD_FAST = _dispatch.fast_paths("svd", {
    "NumPy": np_maker(_np_svd_fast),
    "PyTorch": torch_maker(torch_looked(lambda t: lambda x, full: t.linalg.svd(x, full_matrices=full),
                                        look=1, wrap=SVDResult)),
    "JAX": jax_maker(jax_looked(lambda jnp, x, full: jnp.linalg.svd(x, full_matrices=full), look=1,
                                wrap=SVDResult, look_input=True), host_look=True),
})
_SVDVALS_FAST = _dispatch.fast_paths("svdvals", {
    "NumPy": np_maker(lambda x: _np_svd_fast(x, None)),
    "PyTorch": torch_maker(torch_looked(lambda t: t.linalg.svdvals)),
    "JAX": jax_maker(jax_looked(lambda jnp, x: jnp.linalg.svdvals(x), look_input=True), host_look=True),
})


def _qr_fast(call: Any, ok: frozenset[Any], size: Any, r_mode: bool) -> Any:
    """qr's fast path: `call(x, mode)` (the library's qr) on a non-empty (stack of)
    matrices of a dtype in `ok` (``size(x)``: the number of elements); `r_mode`:
    the library computes mode="r" itself (NumPy), else R of "reduced"."""

    def fast(x: Any, mode: str) -> Any:
        if x.dtype not in ok or x.ndim < 2 or not size(x):
            return _MISSING
        try:
            if mode == "r":
                return call(x, "r") if r_mode else call(x, "reduced")[1]
            q, r = call(x, mode)
        except Exception:  # named by the checked path
            return _MISSING
        return QRResult(q, r)

    return fast


def _size(x: Any) -> int:
    return x.size


def _numel(x: Any) -> int:
    return x.numel()


_QR_FAST = _dispatch.fast_paths("qr", {
    "NumPy": np_maker(_qr_fast(lambda x, m: np.linalg.qr(x, mode=m), NP_FLOAT, _size, True)),
    "PyTorch": torch_maker(lambda t: _qr_fast(lambda x, m: t.linalg.qr(x, mode=m), torch_float(t), _numel, False)),
    "JAX": jax_maker(lambda jax, jnp: _qr_fast(lambda x, m: jnp.linalg.qr(x, mode=m), JAX_FLOAT, _size, False)),
})


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
        return SVDResult(*(keep_subclass(f, x) for f in (U, S, Vh)))
    return SVDResult(*(keep_subclass(f, x) for f in ad.svd(x, bool(full_matrices))))


def _svdvals_reference(x: np.ndarray) -> np.ndarray:
    return np.linalg.svd(x, compute_uv=False)


@declare(
    "linalg", args={"x": "matrix"}, reference=_svdvals_reference, dtypes="linalg",
    how="the standard's `linalg.svdvals`, then a finite check",
    backends={
        "numpy": "`np.linalg.svd(..., compute_uv=False)`, then a finite check",
        "torch-cpu": "`torch.linalg.svdvals`, then a finite check",
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
    ad, x = _decomp_input(x, "svdvals", xp)
    if 0 in tuple(x.shape):
        k = min(x.shape[-2:])
        return keep_subclass(ad.xp.zeros((*x.shape[:-2], k), dtype=_real_dtype(ad, x), device=ad.device(x)), x)
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
    ad, x = _decomp_input(x, "qr", xp)
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
        if ad is NUMPY_ADAPTER:  # NumPy's own mode="r" skips forming Q
            return keep_subclass(np.linalg.qr(x, mode="r"), x)
        return keep_subclass(ad.qr(x, "reduced")[1], x)
    return QRResult(*ad.qr(x, "complete" if mode == "complete" else "reduced"))  # validated above
