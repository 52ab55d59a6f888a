"""xlinalg.eigh, eigvalsh, eig, eigvals and svd(hermitian=True) on every backend:
ascending real eigenvalues of Hermitian input (lower triangle read), complex results
of eig compared as sets, non-convergence for NaN/inf, empty shapes, dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, raises_at_compute, random

SHAPES = [(3, 3), (2, 4, 4), (2, 1, 3, 3), (1, 1)]
DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def _ct(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _herm(rng, shape, dtype) -> np.ndarray:
    a = random(rng, shape, dtype)
    return ((a + _ct(a)) / 2).astype(dtype)


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _cplx(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _same_set(got: np.ndarray, ref: np.ndarray, tol: float) -> None:
    """Each member's eigenvalues equal the reference's as multisets (any order)."""
    g = got.reshape(-1, got.shape[-1])
    r = ref.reshape(-1, ref.shape[-1])
    scale = max(1.0, float(np.abs(r).max(initial=0)))
    for gm, rm in zip(g, r):
        left = list(rm)
        for z in gm:
            j = int(np.argmin([abs(z - y) for y in left]))
            assert abs(z - left[j]) <= tol * scale, (gm, rm)
            left.pop(j)


def _tol(dtype) -> float:
    return 1e-9 if np.dtype(dtype) in (np.float64, np.complex128) else 1e-3


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eigh(backend: BackendCase, rng, shape, dtype) -> None:
    a = _herm(rng, shape, dtype)
    res = xl.eigh(backend.arr(a))
    assert isinstance(res, xl.EighResult)
    w, v = res
    backend.check_owned(w)
    backend.check_owned(v)
    w, v = backend.np(w), backend.np(v)
    assert w.dtype == _real(dtype)
    assert v.dtype == np.dtype(dtype)
    tol = _tol(dtype)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.complex128)), rtol=tol, atol=tol)
    assert (np.diff(w, axis=-1) >= 0).all(), "ascending"
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(backend.np(xl.eigvalsh(backend.arr(a))), w, rtol=tol, atol=tol)


def test_eigh_reads_the_lower_triangle(backend: BackendCase, rng) -> None:
    a = _herm(rng, (2, 3, 3), np.float64)
    junk = a + np.triu(rng.standard_normal((2, 3, 3)) * 10, 1)
    exp = np.linalg.eigvalsh(a)
    backend.assert_close(xl.eigvalsh(backend.arr(junk)), exp)
    backend.assert_close(xl.eigh(backend.arr(junk)).eigenvalues, exp)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_is_complex_and_a_set(backend: BackendCase, rng, shape, dtype) -> None:
    a = random(rng, shape, dtype)
    res = xl.eig(backend.arr(a))
    assert isinstance(res, xl.EigResult)
    w, v = (backend.np(t) for t in res)
    assert w.dtype == v.dtype == _cplx(dtype)
    tol = _tol(dtype) * 10
    ref = np.linalg.eigvals(a.astype(np.complex128))
    _same_set(w, ref, tol)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=tol)
    wv = backend.np(xl.eigvals(backend.arr(a)))
    assert wv.dtype == _cplx(dtype)
    _same_set(wv, ref, tol)


def test_eig_of_real_spectrum_is_still_complex(backend: BackendCase) -> None:
    # NumPy alone returns float64 here
    w = backend.np(xl.eigvals(backend.arr(np.diag([1.0, 2.0]))))
    assert w.dtype == np.complex128
    np.testing.assert_allclose(np.sort_complex(w), [1, 2])


@pytest.mark.parametrize("fn", ["eigh", "eigvalsh", "eig", "eigvals"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_does_not_converge(backend: BackendCase, fn, bad) -> None:
    a = np.stack([np.eye(2), [[1.0, 0.0], [bad, 1.0]]])
    with pytest.raises(xl.LinAlgError, match=rf"{fn}: the eigendecomposition of `x` did not converge"):
        raises_at_compute(backend, lambda: getattr(xl, fn)(backend.arr(a)))


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_integer_and_bool_compute_in_float64(backend: BackendCase, dtype) -> None:
    x = np.array([[2, 1], [1, 2]]).astype(dtype)
    f = x.astype(np.float64)
    backend.assert_close(xl.eigvalsh(backend.arr(x)), np.linalg.eigvalsh(f), dtype=np.float64)
    w = backend.np(xl.eigvals(backend.arr(x)))
    assert w.dtype == np.complex128


@pytest.mark.parametrize(("batch", "n"), [((), 0), ((0,), 2), ((2, 0), 3), ((3,), 0)], ids=str)
def test_empty_shapes(backend: BackendCase, batch, n) -> None:
    x = backend.arr(np.zeros((*batch, n, n)))
    w, v = (backend.np(t) for t in xl.eigh(x))
    assert w.shape == (*batch, n)
    assert v.shape == (*batch, n, n)
    assert backend.np(xl.eigvalsh(x)).shape == (*batch, n)
    w, v = (backend.np(t) for t in xl.eig(x))
    assert w.shape == (*batch, n)
    assert w.dtype == np.complex128
    assert v.shape == (*batch, n, n)
    assert backend.np(xl.eigvals(x)).dtype == np.complex128


@pytest.mark.parametrize("fn", ["eigh", "eigvalsh", "eig", "eigvals"])
def test_bad_input(backend: BackendCase, fn) -> None:
    with pytest.raises(ValueError, match=rf"{fn}: `x` must be a square matrix"):
        getattr(xl, fn)(backend.arr(np.ones((2, 3))))
    if backend.has_dtype(np.float16):
        with pytest.raises(TypeError, match=rf"{fn}: `x` has dtype float16"):
            getattr(xl, fn)(backend.arr(np.eye(2), np.float16))


# ---------------------------------------------------------------------- svd(hermitian=True), compute_uv, qr(mode="r")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_svd_hermitian(backend: BackendCase, rng, dtype) -> None:
    a = _herm(rng, (3, 4, 4), dtype)
    a[1] = np.diag([2.0, 0.0, -3.0, 1.0])  # a zero and a negative eigenvalue
    U, S, Vh = (backend.np(t) for t in xl.svd(backend.arr(a), hermitian=True))
    tol = _tol(dtype) * 10
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False), rtol=tol, atol=tol)
    assert (np.diff(S, axis=-1) <= tol).all(), "descending"
    np.testing.assert_allclose((U * S[..., None, :]) @ Vh, a, atol=tol * 10)
    np.testing.assert_allclose(backend.np(xl.svd(backend.arr(a), hermitian=True, compute_uv=False)), S, rtol=tol, atol=tol)


def test_svd_compute_uv_false_is_svdvals(backend: BackendCase, rng) -> None:
    a = random(rng, (2, 4, 3))
    s = xl.svd(backend.arr(a), compute_uv=False)
    backend.assert_close(s, np.linalg.svd(a, compute_uv=False))
    with pytest.raises(TypeError, match="svd: `compute_uv` must be a bool"):
        xl.svd(backend.arr(a), compute_uv="no")
    with pytest.raises(TypeError, match="svd: `hermitian` must be a bool"):
        xl.svd(backend.arr(a), hermitian=None)
    with pytest.raises(ValueError, match="svd: `x` must be a square matrix"):
        xl.svd(backend.arr(a), hermitian=True)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3), (2, 0, 3)], ids=str)
def test_qr_mode_r(backend: BackendCase, rng, shape) -> None:
    a = random(rng, shape)
    r = xl.qr(backend.arr(a), mode="r")
    backend.check_owned(r)
    got = backend.np(r)
    k = min(shape[-2:])
    assert got.shape == (*shape[:-2], k, shape[-1])
    ref = np.linalg.qr(a, mode="r")
    np.testing.assert_allclose(np.abs(got), np.abs(ref), atol=1e-10)  # rows unique up to sign
