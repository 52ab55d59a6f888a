"""xlinalg.lstsq, pinv and matrix_rank on every backend: NumPy's answers, the
standard's rtol default, rank deficiency, batches, Dask's tall-and-skinny path."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, raises_at_compute, random, require_backend

DTYPES = [np.float64, np.float32, np.complex128]


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _tol(dtype) -> float:
    return 1e-9 if np.dtype(dtype) in (np.float64, np.complex128) else 1e-3


def _rank_deficient(rng, m, n, r, dtype=np.float64) -> np.ndarray:
    return (random(rng, (m, r), dtype) @ random(rng, (r, n), dtype)).astype(dtype)


@pytest.mark.parametrize(("m", "n"), [(6, 3), (3, 6), (4, 4)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("vector", [True, False], ids=["vector", "matrix"])
def test_lstsq_matches_numpy(backend: BackendCase, rng, m, n, dtype, vector) -> None:
    a = random(rng, (m, n), dtype)
    b = random(rng, (m,) if vector else (m, 2), dtype)
    res = xl.lstsq(backend.arr(a), backend.arr(b))
    assert isinstance(res, xl.LstsqResult)
    x, r, rank, s = (backend.np(t) for t in res)
    ref = np.linalg.lstsq(a.astype(np.complex128), b.astype(np.complex128), rcond=None)
    tol = _tol(dtype) * 10
    assert x.dtype == np.dtype(dtype)
    np.testing.assert_allclose(x, ref[0], rtol=tol, atol=tol)
    assert int(rank) == ref[2]
    np.testing.assert_allclose(s, ref[3], rtol=tol, atol=tol)
    assert s.dtype == r.dtype == _real(dtype)
    exp_r = (np.abs(b - a @ ref[0]) ** 2).sum(axis=0)
    np.testing.assert_allclose(r, exp_r, rtol=tol, atol=tol)
    if ref[1].size:  # NumPy gives residuals only for full rank, m > n: then equal
        np.testing.assert_allclose(r, ref[1], rtol=tol, atol=tol)


def test_lstsq_rank_deficient_and_rcond(backend: BackendCase, rng) -> None:
    a = _rank_deficient(rng, 6, 4, 2)
    b = random(rng, (6, 3))
    x, _, rank, _ = (backend.np(t) for t in xl.lstsq(backend.arr(a), backend.arr(b)))
    ref = np.linalg.lstsq(a, b, rcond=None)
    assert int(rank) == 2
    np.testing.assert_allclose(x, ref[0], atol=1e-9)  # the minimum-norm solution
    # a large rcond drops more singular values, as NumPy's
    s = np.linalg.svd(a, compute_uv=False)
    rc = s[1] / s[0] * 1.01
    x2, _, rank2, _ = (backend.np(t) for t in xl.lstsq(backend.arr(a), backend.arr(b), rcond=rc))
    ref2 = np.linalg.lstsq(a, b, rcond=rc)
    assert int(rank2) == ref2[2] == 1
    np.testing.assert_allclose(x2, ref2[0], atol=1e-9)
    _, _, rank3, _ = xl.lstsq(backend.arr(a), backend.arr(b), rcond=-1)  # NumPy's legacy: eps
    assert int(backend.np(rank3)) == np.linalg.lstsq(a, b, rcond=-1)[2]


def test_lstsq_batched_with_broadcast(backend: BackendCase, rng) -> None:
    a = random(rng, (3, 1, 5, 3))
    b = random(rng, (2, 5, 2))
    x, r, rank, s = (backend.np(t) for t in xl.lstsq(backend.arr(a), backend.arr(b)))
    assert x.shape == (3, 2, 3, 2)
    assert r.shape == (3, 2, 2)
    assert rank.shape == (3, 1)
    assert s.shape == (3, 1, 3)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(x[i, j], np.linalg.lstsq(a[i, 0], b[j], rcond=None)[0], atol=1e-10)


def test_lstsq_empty_and_errors(backend: BackendCase, rng) -> None:
    x, r, rank, s = (backend.np(t) for t in xl.lstsq(backend.arr(np.zeros((3, 0))), backend.arr(np.ones((3, 2)))))
    assert x.shape == (0, 2)
    np.testing.assert_array_equal(r, [3.0, 3.0])
    assert int(rank) == 0
    assert s.shape == (0,)
    with pytest.raises(ValueError, match=r"lstsq: `b` must have 3 rows to match `a` of shape \(3, 2\)"):
        xl.lstsq(backend.arr(np.ones((3, 2))), backend.arr(np.ones(4)))
    with pytest.raises(ValueError, match="lstsq: `a` must be a matrix"):
        xl.lstsq(backend.arr(np.ones(3)), backend.arr(np.ones(3)))
    with pytest.raises(TypeError, match="lstsq: `rcond` must be None or a real number"):
        xl.lstsq(backend.arr(np.ones((3, 2))), backend.arr(np.ones(3)), rcond="auto")
    with pytest.raises(xl.LinAlgError, match="did not converge"):
        raises_at_compute(backend, lambda: xl.lstsq(backend.arr(np.full((3, 2), np.nan)), backend.arr(np.ones(3))))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_pinv_matches_numpy(backend: BackendCase, rng, shape, dtype) -> None:
    a = random(rng, shape, dtype)
    rt = max(shape[-2:]) * np.finfo(_real(dtype)).eps
    ref = np.linalg.pinv(a.astype(np.complex128), rtol=rt)
    got = backend.np(xl.pinv(backend.arr(a)))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, ref if np.dtype(dtype).kind == "c" else ref.real, rtol=_tol(dtype) * 10,
                               atol=_tol(dtype) * 10)


def test_rtol_default_is_the_standards(backend: BackendCase) -> None:
    # singular values 1 and 3e-16 (float64): max(M, N) * eps = 4.4e-16 drops the small
    # one; NumPy's pinv default (1e-15) would too, JAX's (10x) too: use 6e-16, kept by
    # the standard's 2 * eps and dropped by 10 * 2 * eps
    d = np.diag([1.0, 6e-16])
    assert int(backend.np(xl.matrix_rank(backend.arr(d)))) == 2
    np.testing.assert_allclose(backend.np(xl.pinv(backend.arr(d))), np.diag([1.0, 1 / 6e-16]), rtol=1e-12)
    d3 = np.diag([1.0, 6e-16, 0.0])  # 3 * eps = 6.7e-16: dropped
    assert int(backend.np(xl.matrix_rank(backend.arr(d3)))) == 1
    np.testing.assert_allclose(backend.np(xl.pinv(backend.arr(d3))), np.diag([1.0, 0.0, 0.0]))


def test_rtol_per_member(backend: BackendCase) -> None:
    d = np.stack([np.diag([1.0, 0.1]), np.diag([1.0, 0.1])])
    rt = backend.arr(np.array([0.05, 0.5]))
    np.testing.assert_array_equal(backend.np(xl.matrix_rank(backend.arr(d), rtol=rt)), [2, 1])
    np.testing.assert_array_equal(backend.np(xl.matrix_rank(backend.arr(d), rtol=0.5)), [1, 1])
    got = backend.np(xl.pinv(backend.arr(d), rtol=rt))
    np.testing.assert_allclose(got[1], np.diag([1.0, 0.0]))
    with pytest.raises(ValueError, match="`rtol` must be a non-negative number"):
        xl.matrix_rank(backend.arr(d), rtol=-1.0)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (2, 3, 5)], ids=str)
def test_matrix_rank_matches_numpy(backend: BackendCase, rng, shape) -> None:
    a = random(rng, shape)
    a[..., -1] = a[..., 0]  # one rank short
    got = backend.np(xl.matrix_rank(backend.arr(a)))
    np.testing.assert_array_equal(got, np.linalg.matrix_rank(a))
    assert got.dtype.kind == "i"


def test_empty(backend: BackendCase) -> None:
    assert backend.np(xl.pinv(backend.arr(np.zeros((2, 0, 3))))).shape == (2, 3, 0)
    np.testing.assert_array_equal(backend.np(xl.matrix_rank(backend.arr(np.zeros((2, 0, 3))))), [0, 0])


def test_dask_tall_skinny_lstsq_is_lazy_tsqr() -> None:
    be = require_backend("dask")
    import dask
    import dask.array as da

    rng = np.random.default_rng(1)
    a = rng.standard_normal((4000, 3))
    b = rng.standard_normal(4000)
    A = da.from_array(a, chunks=(500, 3))

    def refuse(*args, **kwargs):
        raise AssertionError("computed while building the graph")

    with dask.config.set(scheduler=refuse, **{"array.chunk-size": "8KiB"}):
        res = xl.lstsq(A, da.from_array(b, chunks=500))
    names = [str(k[0] if isinstance(k, tuple) else k) for k in res.solution.__dask_graph__()]
    # Dask's TSQR: a QR task per row block (8 here), then the SVD of the stacked R factors
    assert sum(n.startswith("qr-") for n in names) >= 8, names
    assert any(n.startswith("svd-") for n in names), names
    ref = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(be.to_numpy(res.solution), ref[0], atol=1e-10)
    np.testing.assert_allclose(be.to_numpy(res.residuals), ref[1][0], rtol=1e-9)
