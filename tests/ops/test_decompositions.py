"""xlinalg.svd, svdvals and qr on every backend: shapes, reconstruction,
orthonormality, NamedTuple results, dtypes, empty shapes, errors."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, random, require_backend

SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4), (2, 2, 3, 3), (1, 1)]
DTYPES = [np.float64, np.float32, np.complex128]


def _ct(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _tol(dtype) -> float:
    return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-4


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("full_matrices", [True, False], ids=["full", "reduced"])
def test_svd(backend: BackendCase, rng, shape, dtype, full_matrices) -> None:
    x = random(rng, shape, dtype)
    res = xl.svd(backend.arr(x), full_matrices=full_matrices)
    assert isinstance(res, xl.SVDResult)
    U, S, Vh = res
    for t in res:
        backend.check_owned(t)
    U, S, Vh = backend.np(U), backend.np(S), backend.np(Vh)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    assert U.shape == (*batch, m, m if full_matrices else k)
    assert S.shape == (*batch, k)
    assert Vh.shape == (*batch, n if full_matrices else k, n)
    assert U.dtype == Vh.dtype == np.dtype(dtype)
    assert S.dtype == _real(dtype)
    tol = _tol(dtype)
    np.testing.assert_allclose(S, np.linalg.svd(x.astype(np.complex128), compute_uv=False), rtol=tol, atol=tol)
    assert (np.diff(S, axis=-1) <= tol).all(), "S is descending"
    np.testing.assert_allclose((U[..., :k] * S[..., None, :]) @ Vh[..., :k, :], x, atol=tol * 10)
    np.testing.assert_allclose(_ct(U) @ U, np.broadcast_to(np.eye(U.shape[-1]), U.shape[:-2] + (U.shape[-1],) * 2), atol=tol * 10)
    np.testing.assert_allclose(Vh @ _ct(Vh), np.broadcast_to(np.eye(Vh.shape[-2]), Vh.shape[:-2] + (Vh.shape[-2],) * 2), atol=tol * 10)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_svdvals_equals_svd_s(backend: BackendCase, rng, shape, dtype) -> None:
    x = random(rng, shape, dtype)
    s = xl.svdvals(backend.arr(x))
    got = backend.assert_close(s, np.linalg.svd(x.astype(np.complex128), compute_uv=False), dtype=_real(dtype))
    np.testing.assert_allclose(got, backend.np(xl.svd(backend.arr(x)).S), rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(backend: BackendCase, rng, shape, dtype, mode) -> None:
    x = random(rng, shape, dtype)
    res = xl.qr(backend.arr(x), mode=mode)
    assert isinstance(res, xl.QRResult)
    for t in res:
        backend.check_owned(t)
    Q, R = backend.np(res.Q), backend.np(res.R)
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert Q.shape == (*shape[:-2], m, k)
    assert R.shape == (*shape[:-2], k, n)
    assert Q.dtype == R.dtype == np.dtype(dtype)
    tol = _tol(dtype) * 10
    np.testing.assert_allclose(Q @ R, x, atol=tol)
    np.testing.assert_allclose(_ct(Q) @ Q, np.broadcast_to(np.eye(k), (*shape[:-2], k, k)), atol=tol)
    assert np.allclose(np.tril(R, -1), 0, atol=tol), "R is upper triangular"


def test_qr_default_mode_is_reduced(backend: BackendCase, rng) -> None:
    Q, R = xl.qr(backend.arr(random(rng, (5, 3))))
    assert backend.np(Q).shape == (5, 3)
    assert backend.np(R).shape == (3, 3)


def test_svd_default_is_full_matrices(backend: BackendCase, rng) -> None:
    U, _S, Vh = xl.svd(backend.arr(random(rng, (5, 3))))
    assert backend.np(U).shape == (5, 5)
    assert backend.np(Vh).shape == (3, 3)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_compute_in_float64(backend: BackendCase, dtype) -> None:
    x = np.array([[3, 0], [0, 1]]).astype(dtype)
    expected = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    backend.assert_close(xl.svdvals(backend.arr(x)), expected, dtype=np.float64)
    backend.assert_close(xl.svd(backend.arr(x)).S, expected, dtype=np.float64)
    Q, R = xl.qr(backend.arr(x))
    backend.assert_close(xl.matmul(Q, R), x.astype(np.float64), dtype=np.float64)


@pytest.mark.parametrize("fn", ["svd", "svdvals", "qr"])
def test_float16_is_refused(backend: BackendCase, fn) -> None:
    if not backend.has_dtype(np.float16):
        pytest.skip(f"{backend.name} has no float16 arrays")
    with pytest.raises(TypeError, match=rf"{fn}: `x` has dtype float16"):
        getattr(xl, fn)(backend.arr(np.eye(2), np.float16))


@pytest.mark.parametrize("fn", ["svd", "svdvals", "qr"])
@pytest.mark.parametrize("shape", [(3,), ()], ids=["1-d", "0-d"])
def test_fewer_than_two_dims(backend: BackendCase, fn, shape) -> None:
    with pytest.raises(ValueError, match=rf"{fn}: `x` must be a matrix or a stack of matrices"):
        getattr(xl, fn)(backend.arr(np.ones(shape)))


def test_options_are_checked(backend: BackendCase) -> None:
    x = backend.arr(np.eye(2))
    with pytest.raises(ValueError, match=r"qr: `mode` must be one of \('reduced', 'complete', 'r'\), got 'raw'"):
        xl.qr(x, mode="raw")
    with pytest.raises(TypeError, match=r"svd: `full_matrices` must be a bool"):
        xl.svd(x, full_matrices="yes")


@pytest.mark.parametrize("fn", ["svd", "svdvals"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_svd_of_nonfinite_input_raises(backend: BackendCase, fn, bad) -> None:
    x = np.stack([np.eye(2), [[1.0, bad], [0.0, 1.0]]])
    def call() -> None:
        out = getattr(xl, fn)(backend.arr(x))
        backend.np(out if fn == "svdvals" else out.S)  # Dask: raised when computed

    with pytest.raises(xl.LinAlgError, match=rf"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf"):
        call()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_qr_of_nonfinite_input_propagates(backend: BackendCase, bad) -> None:
    Q, R = xl.qr(backend.arr(np.array([[1.0, bad], [0.0, 1.0]])))
    got = np.concatenate([backend.np(Q).ravel(), backend.np(R).ravel()])
    assert not np.isfinite(got).all()  # which entries are NaN differs between LAPACKs


# ---------------------------------------------------------------------- empty shapes
EMPTY = [(0, 0), (0, 3), (3, 0), (0, 2, 3), (2, 0, 0), (0, 3, 2), (2, 0, 3)]


@pytest.mark.parametrize("shape", EMPTY, ids=str)
@pytest.mark.parametrize("full_matrices", [True, False], ids=["full", "reduced"])
def test_svd_empty(backend: BackendCase, shape, full_matrices) -> None:
    res = xl.svd(backend.arr(np.zeros(shape)), full_matrices=full_matrices)
    ref = np.linalg.svd(np.zeros(shape), full_matrices=full_matrices)
    for got, want in zip(res, ref):
        backend.check_owned(got)
        g = backend.np(got)
        assert g.shape == want.shape
        assert g.dtype == np.float64
    s = xl.svdvals(backend.arr(np.zeros(shape)))
    backend.check_owned(s)
    assert backend.np(s).shape == np.linalg.svd(np.zeros(shape), compute_uv=False).shape


@pytest.mark.parametrize("shape", EMPTY, ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_empty(backend: BackendCase, shape, mode) -> None:
    Q, R = xl.qr(backend.arr(np.zeros(shape)), mode=mode)
    rq, rr = np.linalg.qr(np.zeros(shape), mode=mode)
    for got, want in ((Q, rq), (R, rr)):
        backend.check_owned(got)
        assert backend.np(got).shape == want.shape
        assert backend.np(got).dtype == np.float64


def test_complex64_results(backend: BackendCase, rng) -> None:
    x = random(rng, (3, 2), np.complex64)
    U, S, _Vh = xl.svd(backend.arr(x), full_matrices=False)
    assert backend.np(S).dtype == np.float32
    assert backend.np(U).dtype == np.complex64
    np.testing.assert_allclose(backend.np(S), np.linalg.svd(x, compute_uv=False), rtol=1e-4)


def test_lists_are_host_data() -> None:
    s = xl.svdvals([[3.0, 0.0], [0.0, 4.0]])
    assert isinstance(s, np.ndarray)
    np.testing.assert_allclose(s, [4.0, 3.0])


def test_inputs_not_modified(backend: BackendCase, rng) -> None:
    x = random(rng, (2, 4, 3))
    xx = backend.arr(x)
    xl.svd(xx)
    xl.svdvals(xx)
    xl.qr(xx, mode="complete")
    np.testing.assert_array_equal(backend.np(xx), x)


def test_torch_function_transforms_run_through() -> None:
    # torch.func's vmap and grad cannot run Python that branches on values (the finite
    # check of S): it steps aside inside them, as under jax.jit; eager calls still raise
    require_backend("torch-cpu")
    import torch

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 3, dtype=torch.float64, generator=gen)
    torch.testing.assert_close(torch.func.vmap(xl.svdvals)(x), torch.linalg.svdvals(x))
    u, s, vh = torch.func.vmap(lambda m: tuple(xl.svd(m, full_matrices=False)))(x)
    torch.testing.assert_close(u @ torch.diag_embed(s) @ vh, x)
    q, r = torch.func.vmap(lambda m: tuple(xl.qr(m)))(x)
    torch.testing.assert_close(q @ r, x)
    a = x + 4 * torch.eye(3, dtype=torch.float64)
    b = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    torch.testing.assert_close(torch.func.vmap(xl.solve)(a, b), torch.linalg.solve(a, b))
    grad = torch.func.grad(lambda m: xl.svdvals(m).sum())(x[0])
    torch.testing.assert_close(grad, torch.func.grad(lambda m: torch.linalg.svdvals(m).sum())(x[0]))
    with pytest.raises(xl.LinAlgError, match=r"contains NaN or inf"):
        xl.svdvals(torch.full((2, 2), float("nan"), dtype=torch.float64))


def test_empty_input_factors_are_arrays_of_their_own(backend: BackendCase) -> None:
    # the identity factors of an empty stack were one broadcast identity: read-only on
    # NumPy, one memory for every member on torch (writing U[0] wrote U[1])
    U, _, _ = xl.svd(backend.arr(np.zeros((2, 3, 0))))
    Q, _ = xl.qr(backend.arr(np.zeros((2, 3, 0))), mode="complete")
    for f in (U, Q):
        np.testing.assert_array_equal(backend.np(f), np.broadcast_to(np.eye(3), (2, 3, 3)))
    if backend.name not in ("numpy", "torch-cpu", "torch-cuda", "cupy"):
        return  # arrays without item assignment
    for f in (U, Q):
        f[0, 0, 0] = 5.0  # as on any native result
        assert backend.np(f)[1, 0, 0] == 1.0


def test_an_overflowing_singular_value_is_inf_not_an_error(backend: BackendCase) -> None:
    # a finite matrix whose largest singular value is past its dtype's range: LAPACK
    # converges and gives inf, as every library's own call does (no "did not converge")
    with np.errstate(over="ignore"):  # (NumPy computes float32 in double: its cast warns)
        s = backend.np(xl.svdvals(backend.arr(np.array([[3e38, 3e38]], np.float32))))
    assert np.isposinf(s[0])
    _, S, _ = xl.svd(backend.arr(np.full((2, 2), 1e308)))
    S = backend.np(S)
    assert np.isposinf(S[0])
    with pytest.raises(xl.LinAlgError, match=r"contains NaN or inf"):  # inf in x still is one
        backend.np(xl.svdvals(backend.arr(np.array([[np.inf, 1.0]]))))


@pytest.mark.parametrize("bad", [np.array([True, False]), 2, 1.0, "yes", None])
def test_full_matrices_must_be_a_bool(backend: BackendCase, bad) -> None:
    with pytest.raises(TypeError, match=r"svd: `full_matrices` must be a bool, got "):
        xl.svd(backend.arr(np.eye(2)), full_matrices=bad)
    xl.svd(backend.arr(np.eye(2)), full_matrices=np.bool_(False))  # NumPy's bool is one


@pytest.mark.parametrize("name", ["numpy", "dask"])  # (the others convert big-endian data)
def test_big_endian_input_gives_native_factors(name: str) -> None:
    be = require_backend(name)
    arr = be.from_numpy(np.array([[2.0, 1.0], [1.0, 3.0]], dtype=">f8"))
    for res in (xl.svd(arr), xl.qr(arr), (xl.svdvals(arr),)):
        for f in res:
            assert f.dtype == np.dtype("=f8")
            assert be.to_numpy(f).dtype == f.dtype  # Dask: declared as computed
