"""xlinalg.matrix_norm and vector_norm on every backend: every ord of the standard,
keepdims, axes, dtypes, empty reductions, against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, raises_at_compute, random

MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]
VECTOR_ORDS = [2, 1, 0, -1, -2, 3, 0.5, math.inf, -math.inf]


def _real(dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _tol(dtype) -> float:
    return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-4


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (2, 1, 3, 3)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(backend: BackendCase, rng, ord, shape, dtype, keepdims) -> None:
    a = random(rng, shape, dtype)
    exp = np.linalg.norm(a.astype(np.complex128), ord=ord, axis=(-2, -1), keepdims=keepdims)
    tol = _tol(dtype)
    backend.assert_close(xl.matrix_norm(backend.arr(a), ord=ord, keepdims=keepdims), exp.astype(_real(dtype)),
                         dtype=_real(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
@pytest.mark.parametrize(("shape", "axis"), [((5,), None), ((3, 4), None), ((3, 4), 1), ((3, 4), -2),
                                              ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0, 1)), ((), None)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm(backend: BackendCase, rng, ord, shape, axis, dtype, keepdims) -> None:
    a = random(rng, shape, dtype)
    a.flat[:1] = 0  # a zero entry (ord 0 counts, negative ords meet 1/0)
    ax = tuple(range(a.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    m = np.abs(a.astype(np.complex128))
    if ord == math.inf:
        exp = m.max(axis=ax, keepdims=keepdims)
    elif ord == -math.inf:
        exp = m.min(axis=ax, keepdims=keepdims)
    elif ord == 0:
        exp = (m != 0).sum(axis=ax, keepdims=keepdims).astype(float)
    else:
        with np.errstate(divide="ignore"):
            exp = (m**ord).sum(axis=ax, keepdims=keepdims) ** (1.0 / ord)
    tol = _tol(dtype)
    backend.assert_close(xl.vector_norm(backend.arr(a), axis=axis, ord=ord, keepdims=keepdims),
                         np.asarray(exp).astype(_real(dtype)), dtype=_real(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_integers_compute_in_float64(backend: BackendCase, dtype) -> None:
    a = np.array([[3, 0], [4, 1]]).astype(dtype)
    f = a.astype(np.float64)
    backend.assert_close(xl.vector_norm(backend.arr(a)), np.linalg.norm(f), dtype=np.float64)
    backend.assert_close(xl.matrix_norm(backend.arr(a), ord=1), np.linalg.norm(f, 1), dtype=np.float64)


@pytest.mark.parametrize(("ord", "value"), [(2, 0.0), (1, 0.0), (0, 0.0), (math.inf, 0.0), (-1, math.inf),
                                           (-math.inf, math.inf)], ids=str)
def test_vector_norm_over_no_values(backend: BackendCase, ord, value) -> None:
    got = backend.np(xl.vector_norm(backend.arr(np.zeros((3, 0))), axis=-1, ord=ord))
    np.testing.assert_array_equal(got, np.full(3, value))
    assert backend.np(xl.vector_norm(backend.arr(np.zeros((0, 3))), axis=-1, ord=ord)).shape == (0,)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 3, 3)], ids=str)
@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norm_of_empty(backend: BackendCase, shape, ord) -> None:
    m, n = shape[-2:]
    summed = ord in ("fro", "nuc") or (ord in (1, -1) and n) or (ord in (math.inf, -math.inf) and m) or (
        0 in shape[:-2] and m and n)  # no members: an empty result
    x = backend.arr(np.zeros(shape))
    if summed:
        np.testing.assert_array_equal(backend.np(xl.matrix_norm(x, ord=ord)), np.zeros(shape[:-2]))
    else:
        with pytest.raises(ValueError, match=r"matrix_norm: ord=.* is a max or min over no values"):
            xl.matrix_norm(x, ord=ord)


def test_bad_ord_axis_keepdims(backend: BackendCase) -> None:
    x = backend.arr(np.ones((2, 3)))
    for bad in (3, "inf", None, True, 1.5):
        with pytest.raises(ValueError, match="matrix_norm: `ord` must be one of"):
            xl.matrix_norm(x, ord=bad)
    for bad in ("fro", None, True, math.nan, 1j):
        with pytest.raises(ValueError, match="vector_norm: `ord` must be a real number"):
            xl.vector_norm(x, ord=bad)
    with pytest.raises(ValueError, match="vector_norm: `axis` 2 is out of range"):
        xl.vector_norm(x, axis=2)
    with pytest.raises(ValueError, match=r"vector_norm: `axis` \(0, -2\) repeats an axis"):
        xl.vector_norm(x, axis=(0, -2))
    with pytest.raises(TypeError, match="vector_norm: `axis` must be None, an int or a tuple"):
        xl.vector_norm(x, axis=[0])
    with pytest.raises(TypeError, match="`keepdims` must be a bool"):
        xl.matrix_norm(x, keepdims="yes")
    with pytest.raises(ValueError, match="matrix_norm: `x` must be a matrix"):
        xl.matrix_norm(backend.arr(np.ones(3)))


@pytest.mark.parametrize("ord", [2, -2, "nuc"], ids=str)
def test_singular_value_norms_of_nan_raise(backend: BackendCase, ord) -> None:
    with pytest.raises(xl.LinAlgError, match="did not converge"):
        raises_at_compute(backend, lambda: xl.matrix_norm(backend.arr(np.array([[np.nan, 0.0], [0.0, 1.0]])), ord=ord))


@pytest.mark.parametrize("ord", ["fro", 1, math.inf], ids=str)
def test_other_norms_of_nan_are_nan(backend: BackendCase, ord) -> None:
    got = backend.np(xl.matrix_norm(backend.arr(np.array([[np.nan, 0.0], [0.0, 1.0]])), ord=ord))
    assert np.isnan(got)
    assert np.isnan(backend.np(xl.vector_norm(backend.arr(np.array([np.nan, 1.0])))))
