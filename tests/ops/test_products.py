"""xlinalg.outer, tensordot, vecdot, cross, trace, diagonal, matrix_transpose and
matrix_power on every backend, against NumPy; mixed dtypes, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, raises_at_compute, random, well_conditioned

DTYPES = [np.float64, np.float32, np.complex128, np.int64]


def _tol(dtype) -> float:
    return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128, np.int64) else 2e-4


def _data(rng, shape, dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 5, shape).astype(dtype)
    return random(rng, shape, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_outer_tensordot_vecdot_cross(backend: BackendCase, rng, dtype) -> None:
    tol = _tol(dtype)
    u, v = _data(rng, (3,), dtype), _data(rng, (4,), dtype)
    backend.assert_close(xl.outer(backend.arr(u), backend.arr(v)), np.outer(u, v), dtype=dtype, rtol=tol, atol=tol)
    a, b = _data(rng, (2, 3, 4), dtype), _data(rng, (3, 4, 5), dtype)
    backend.assert_close(xl.tensordot(backend.arr(a), backend.arr(b)), np.tensordot(a, b), dtype=dtype, rtol=tol, atol=tol)
    backend.assert_close(xl.tensordot(backend.arr(a), backend.arr(b), axes=([1], [0])),
                         np.tensordot(a, b, axes=([1], [0])), rtol=tol, atol=tol)
    backend.assert_close(xl.tensordot(backend.arr(a), backend.arr(b), axes=0), np.tensordot(a, b, axes=0), rtol=tol, atol=tol)
    x, y = _data(rng, (2, 1, 4), dtype), _data(rng, (3, 4), dtype)
    exp = (np.conj(x) * y).sum(axis=-1)
    backend.assert_close(xl.vecdot(backend.arr(x), backend.arr(y)), exp, dtype=dtype, rtol=tol, atol=tol)
    x2, y2 = _data(rng, (4, 3), dtype), _data(rng, (4, 3), dtype)
    backend.assert_close(xl.vecdot(backend.arr(x2), backend.arr(y2), axis=-2), (np.conj(x2) * y2).sum(axis=0),
                         rtol=tol, atol=tol)
    c1, c2 = _data(rng, (2, 3), dtype), _data(rng, (3,), dtype)
    backend.assert_close(xl.cross(backend.arr(c1), backend.arr(c2)), np.cross(c1, c2), dtype=dtype, rtol=tol, atol=tol)
    c3, c4 = _data(rng, (3, 2), dtype), _data(rng, (3, 2), dtype)
    backend.assert_close(xl.cross(backend.arr(c3), backend.arr(c4), axis=0), np.cross(c3, c4, axis=0), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_views_keep_dtype(backend: BackendCase, rng, dtype) -> None:
    a = _data(rng, (2, 3, 4), dtype) if dtype is not np.bool_ else rng.integers(0, 2, (2, 3, 4)).astype(bool)
    got = backend.assert_close(xl.matrix_transpose(backend.arr(a)), np.swapaxes(a, -1, -2))
    assert got.dtype == np.dtype(dtype)
    for k in (0, 1, -2, 5):
        got = backend.assert_close(xl.diagonal(backend.arr(a), offset=k), np.diagonal(a, offset=k, axis1=-2, axis2=-1))
        assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64], ids=lambda d: np.dtype(d).name)
def test_trace(backend: BackendCase, rng, dtype) -> None:
    a = _data(rng, (2, 3, 4), dtype)
    for k in (0, 1, -1):
        backend.assert_close(xl.trace(backend.arr(a), offset=k), np.trace(a, offset=k, axis1=-2, axis2=-1),
                             rtol=_tol(dtype), atol=_tol(dtype))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -3])
def test_matrix_power(backend: BackendCase, rng, n) -> None:
    a = well_conditioned(rng, (2, 3, 3)) / 4
    backend.assert_close(xl.matrix_power(backend.arr(a), n), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-9)


def test_matrix_power_dtype_rule_and_singular(backend: BackendCase) -> None:
    m = np.array([[1, 1], [0, 1]])
    backend.assert_close(xl.matrix_power(backend.arr(m), 3), np.linalg.matrix_power(m, 3).astype(float),
                         dtype=np.float64)
    backend.assert_close(xl.matrix_power(backend.arr(np.zeros((2, 2))), 0), np.eye(2))  # identity, even singular
    with pytest.raises(xl.LinAlgError, match="inv: `x` is singular"):
        raises_at_compute(backend, lambda: xl.matrix_power(backend.arr(np.ones((2, 2))), -1))
    assert np.isnan(backend.np(xl.matrix_power(backend.arr(np.ones((2, 2))), -2, errors="nan"))).all()
    with pytest.raises(TypeError, match="matrix_power: `n` must be an int"):
        xl.matrix_power(backend.arr(m), 1.5)
    with pytest.raises(ValueError, match="matrix_power: `x` must be a square matrix"):
        xl.matrix_power(backend.arr(np.ones((2, 3))), 2)


def test_mixed_dtypes_promote_as_numpy(backend: BackendCase) -> None:
    u = np.array([1, 2, 3], np.int64)
    v = np.array([0.5, 1.0, 2.0], np.float32)
    got = backend.np(xl.outer(backend.arr(u), backend.arr(v)))
    assert got.dtype == np.float64
    got = backend.np(xl.vecdot(backend.arr(u), backend.arr(v)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, 8.5)


@pytest.mark.parametrize("scalar", [np.uint8(3), np.int8(-2), np.float32(1.5), np.float64(2.0), np.complex64(1j)],
                         ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_numpy_scalar_next_to_a_numpy_array_keeps_its_dtype(scalar, dtype) -> None:
    """docs/semantics.md: next to a NumPy array, NumPy's own rule (NEP 50): a NumPy
    scalar is a 0-d array of its dtype, in every function taking two operands (the
    standard's conformance suite found tensordot(uint8 array, np.uint8) giving int64)."""
    x = np.arange(3).astype(dtype)
    for args in ((x, scalar), (scalar, x)):
        got, want = xl.tensordot(*args, axes=0), np.tensordot(*args, axes=0)
        assert got.dtype == want.dtype, (args, got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)


def test_bad_arguments(backend: BackendCase) -> None:
    v3 = backend.arr(np.ones(3))
    with pytest.raises(ValueError, match="outer: `x1` and `x2` must be vectors"):
        xl.outer(backend.arr(np.ones((2, 2))), v3)
    with pytest.raises(TypeError, match="outer: operands must be numeric"):
        xl.outer(backend.arr(np.ones(2, bool)), v3)
    with pytest.raises(ValueError, match="cross: `x2` must have size 3 along axis -1"):
        xl.cross(v3, backend.arr(np.ones(2)))
    with pytest.raises(ValueError, match="vecdot: the vectors along axis -1"):
        xl.vecdot(v3, backend.arr(np.ones(2)))
    with pytest.raises(ValueError, match="tensordot: axis 1 of `x1`"):
        xl.tensordot(backend.arr(np.ones((2, 3))), backend.arr(np.ones((4, 2))), axes=([1], [0]))
    with pytest.raises(ValueError, match="matrix_transpose: `x` must be a matrix"):
        xl.matrix_transpose(v3)
    with pytest.raises(TypeError, match="diagonal: `offset` must be an int"):
        xl.diagonal(backend.arr(np.eye(2)), offset=1.0)
    with pytest.raises(TypeError, match="trace: `x` must be numeric"):
        xl.trace(backend.arr(np.eye(2, dtype=bool)))


def test_empty(backend: BackendCase) -> None:
    assert backend.np(xl.outer(backend.arr(np.ones(0)), backend.arr(np.ones(3)))).shape == (0, 3)
    assert backend.np(xl.matrix_transpose(backend.arr(np.ones((0, 2, 3))))).shape == (0, 3, 2)
    np.testing.assert_array_equal(backend.np(xl.trace(backend.arr(np.ones((2, 0, 0))))), [0, 0])
    assert backend.np(xl.matrix_power(backend.arr(np.ones((0, 2, 2))), 3)).shape == (0, 2, 2)
    assert backend.np(xl.cross(backend.arr(np.ones((0, 3))), backend.arr(np.ones((0, 3))))).shape == (0, 3)
