"""xlinalg.inv, cholesky, det and slogdet on every backend: values against NumPy,
batches, dtypes, empty shapes, and the failure contract (singular / not positive
definite members named by LinAlgError, or NaN with errors="nan")."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, raises_at_compute, random, well_conditioned

SHAPES = [(3, 3), (2, 4, 4), (2, 1, 3, 3), (1, 1)]
DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def _ct(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _spd(rng, shape, dtype=np.float64) -> np.ndarray:
    a = random(rng, shape, dtype)
    n = shape[-1]
    return (a @ _ct(a) + n * np.eye(n)).astype(dtype)


def _as(x: np.ndarray, dtype) -> np.ndarray:
    """A complex128 reference in `dtype` (its real part for a real dtype)."""
    return (x if np.dtype(dtype).kind == "c" else x.real).astype(dtype)


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_inv_matches_numpy(backend: BackendCase, rng, shape, dtype) -> None:
    a = well_conditioned(rng, shape, dtype)
    backend.assert_close(xl.inv(backend.arr(a)), _as(np.linalg.inv(a.astype(np.complex128)), dtype), dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_matches_numpy(backend: BackendCase, rng, shape, dtype, upper) -> None:
    a = _spd(rng, shape, dtype)
    low = np.linalg.cholesky(a.astype(np.complex128))
    exp = _ct(low) if upper else low
    got = backend.assert_close(xl.cholesky(backend.arr(a), upper=upper), _as(exp, dtype), dtype=dtype)
    assert np.allclose(np.triu(got, 1) if not upper else np.tril(got, -1), 0)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_det_and_slogdet_match_numpy(backend: BackendCase, rng, shape, dtype) -> None:
    a = random(rng, shape, dtype)
    ref = a.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    backend.assert_close(xl.det(backend.arr(a)), np.linalg.det(ref).astype(dtype), dtype=dtype)
    sign, logabs = xl.slogdet(backend.arr(a))
    rs, rl = np.linalg.slogdet(ref)
    backend.assert_close(sign, rs.astype(dtype), dtype=dtype)
    backend.assert_close(logabs, rl.astype(_real(dtype)), dtype=_real(dtype))
    assert isinstance(xl.slogdet(backend.arr(a)), xl.SlogdetResult)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_compute_in_float64(backend: BackendCase, dtype) -> None:
    x = np.array([[2, 1], [1, 1]]).astype(dtype) if dtype is not np.bool_ else np.array([[1, 0], [1, 1]], bool)
    f = x.astype(np.float64)
    backend.assert_close(xl.inv(backend.arr(x)), np.linalg.inv(f), dtype=np.float64)
    backend.assert_close(xl.det(backend.arr(x)), np.linalg.det(f), dtype=np.float64)
    backend.assert_close(xl.slogdet(backend.arr(x)).logabsdet, np.linalg.slogdet(f)[1], dtype=np.float64)
    if dtype is not np.bool_:
        backend.assert_close(xl.cholesky(backend.arr(x)), np.linalg.cholesky(f), dtype=np.float64)


@pytest.mark.parametrize(("batch", "n"), [((), 0), ((0,), 0), ((0,), 2), ((2, 0), 2), ((3,), 0)], ids=str)
def test_empty_shapes(backend: BackendCase, batch, n) -> None:
    x = backend.arr(np.zeros((*batch, n, n)))
    assert backend.np(xl.inv(x)).shape == (*batch, n, n)
    assert backend.np(xl.cholesky(x)).shape == (*batch, n, n)
    d = backend.np(xl.det(x))
    assert d.shape == batch
    assert d.dtype == np.float64
    assert (d == 1).all()  # the determinant of a 0x0 matrix is 1 (and an empty batch has none)
    s, la = (backend.np(t) for t in xl.slogdet(x))
    assert s.shape == la.shape == batch
    assert (s == 1).all()
    assert (la == 0).all()


def _singular_stack() -> np.ndarray:
    a = np.stack([np.eye(3) * 2, np.ones((3, 3)), np.eye(3), np.diag([1.0, 0.0, 1.0])])
    return a.reshape(2, 2, 3, 3)


def test_inv_names_singular_members(backend: BackendCase) -> None:
    a = _singular_stack()
    with pytest.raises(xl.LinAlgError, match=r"inv: `x` has [12] singular matri.* batch of shape \(2, 2\)") as info:
        raises_at_compute(backend, lambda: xl.inv(backend.arr(a)))
    _named(backend, info.value, ((0, 1), (1, 1)), (1, 3))
    # one matrix: the message says so, with no batch
    with pytest.raises(xl.LinAlgError, match=r"inv: `x` is singular"):
        raises_at_compute(backend, lambda: xl.inv(backend.arr(np.ones((2, 2)))))


def _named(backend: BackendCase, err: xl.LinAlgError, indices: tuple, members: tuple) -> None:
    """Every failing member named; on Dask those of the chunk computed (one chunk per
    leading index in the test backend): a non-empty subset, consistently."""
    if backend.lazy:
        assert err.indices
        assert set(err.indices) <= set(indices)
        assert set(err.members) <= set(members)
        assert len(err.members) == len(err.indices)
        assert "(in the chunk computed" in str(err)
    else:
        assert err.indices == indices
        assert err.members == members


def test_inv_errors_nan(backend: BackendCase) -> None:
    a = _singular_stack()
    got = backend.np(xl.inv(backend.arr(a), errors="nan"))
    assert np.isnan(got[0, 1]).all()
    assert np.isnan(got[1, 1]).all()
    np.testing.assert_allclose(got[0, 0], np.eye(3) / 2)
    np.testing.assert_allclose(got[1, 0], np.eye(3))
    with pytest.raises(ValueError, match="`errors` must be one of"):
        xl.inv(backend.arr(a), errors="ignore")


def test_inv_nan_member_is_nan_without_error(backend: BackendCase) -> None:
    a = np.stack([np.eye(2), np.full((2, 2), np.nan), np.zeros((2, 2)) + [[1, 0], [0, np.inf]]])
    got = backend.np(xl.inv(backend.arr(a)))
    np.testing.assert_allclose(got[0], np.eye(2))
    assert np.isnan(got[1]).all()  # (the inf member: no error; its values are the library's)


def _not_pd_stack() -> np.ndarray:
    return np.stack([np.eye(2) * 4, [[1.0, 2.0], [2.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]], np.eye(2)])


def test_cholesky_names_members_not_positive_definite(backend: BackendCase) -> None:
    a = _not_pd_stack()
    with pytest.raises(xl.LinAlgError, match=r"cholesky: `x` has [12] not positive definite matri.* at batch index [12]") as info:
        raises_at_compute(backend, lambda: xl.cholesky(backend.arr(a)))
    _named(backend, info.value, ((1,), (2,)), (1, 2))
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(xl.LinAlgError, match=r"cholesky: `x` is not positive definite"):
        raises_at_compute(backend, lambda: xl.cholesky(backend.arr(a[1])))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_errors_nan(backend: BackendCase, upper) -> None:
    a = _not_pd_stack()
    got = backend.np(xl.cholesky(backend.arr(a), errors="nan", upper=upper))
    assert np.isnan(got[1]).all()
    assert np.isnan(got[2]).all()
    np.testing.assert_allclose(got[0], np.eye(2) * 2)
    np.testing.assert_allclose(got[3], np.eye(2))


def test_cholesky_reads_the_lower_triangle_only(backend: BackendCase, rng) -> None:
    a = _spd(rng, (2, 3, 3))
    junk = a + np.triu(rng.standard_normal((2, 3, 3)) * 100, 1)  # the upper triangle is not read
    junk[0, 0, 2] = np.nan
    backend.assert_close(xl.cholesky(backend.arr(junk)), np.linalg.cholesky(a))
    backend.assert_close(xl.cholesky(backend.arr(junk), upper=True), _ct(np.linalg.cholesky(a)))


def test_cholesky_nan_in_lower_triangle_is_nan_without_error(backend: BackendCase) -> None:
    a = np.stack([np.eye(2), [[1.0, 0.0], [np.nan, 1.0]]])
    got = backend.np(xl.cholesky(backend.arr(a)))
    np.testing.assert_allclose(got[0], np.eye(2))
    assert np.isnan(got[1]).all()


def test_det_of_singular_is_zero_without_error(backend: BackendCase) -> None:
    a = _singular_stack()
    d = backend.np(xl.det(backend.arr(a)))
    np.testing.assert_allclose(d, [[8.0, 0.0], [1.0, 0.0]], atol=1e-12)
    s, la = (backend.np(t) for t in xl.slogdet(backend.arr(a)))
    assert (s[:, 1] == 0).all()
    assert (la[:, 1] == -np.inf).all()


def test_complex_slogdet_sign_has_modulus_one(backend: BackendCase, rng) -> None:
    a = random(rng, (3, 4, 4), np.complex128)
    s = backend.np(xl.slogdet(backend.arr(a)).sign)
    np.testing.assert_allclose(np.abs(s), 1.0)
    np.testing.assert_allclose(s, np.linalg.slogdet(a)[0])


@pytest.mark.parametrize("fn", ["inv", "cholesky", "det", "slogdet"])
def test_bad_input(backend: BackendCase, fn) -> None:
    f = getattr(xl, fn)
    with pytest.raises(ValueError, match=rf"{fn}: `x` must be a square matrix or a stack of square matrices"):
        f(backend.arr(np.ones((2, 3))))
    with pytest.raises(ValueError, match=rf"{fn}: `x` must be a square matrix .*at least 2 dimensions"):
        f(backend.arr(np.ones(3)))
    if backend.has_dtype(np.float16):
        with pytest.raises(TypeError, match=rf"{fn}: `x` has dtype float16"):
            f(backend.arr(np.eye(2), np.float16))


def test_cholesky_upper_must_be_bool(backend: BackendCase) -> None:
    with pytest.raises(TypeError, match="cholesky: `upper` must be a bool"):
        xl.cholesky(backend.arr(np.eye(2)), upper="yes")


def test_results_keep_backend(backend: BackendCase, rng) -> None:
    a = backend.arr(_spd(rng, (2, 3, 3)))
    for out in (xl.inv(a), xl.cholesky(a), xl.det(a), *xl.slogdet(a)):
        backend.check_owned(out)


def test_inputs_not_modified(backend: BackendCase, rng) -> None:
    a = _spd(rng, (2, 3, 3))
    x = backend.arr(a)
    for fn in (xl.inv, xl.cholesky, xl.det, xl.slogdet):
        fn(x)
    np.testing.assert_array_equal(backend.np(x), a)


def test_inv_identity_made_once_is_never_the_callers(backend: BackendCase, rng) -> None:
    """inv's right-hand side identity may be cached per (n, dtype, device) (an eager
    identity is slow on JAX): the same n in every dtype back to back gets its own,
    and what the caller gets is a new array, writable where the library's are."""
    for dtype in DTYPES:
        for _ in range(2):
            a = well_conditioned(rng, (4, 4), dtype)
            got = backend.assert_close(xl.inv(backend.arr(a)), _as(np.linalg.inv(a.astype(np.complex128)), dtype), dtype=dtype)
            assert got.dtype == np.dtype(dtype)
    x = xl.inv(backend.arr(np.eye(4)))
    if isinstance(x, np.ndarray):  # NumPy's inv result is writable and its own memory
        assert x.flags.writeable
        x[0, 0] = 7.0
        assert np.array_equal(xl.to(xl.inv(backend.arr(np.eye(4))), "numpy"), np.eye(4))
