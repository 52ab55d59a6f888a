"""The hooks that replaced tests of which library an object is, on every backend.

The operations ask an adapter what its library can do (``numpy_arrays``,
``unknown_sizes``, ``namespace_linalg``, ``map_gufunc``/``map_members``/``map_solve``:
``backends/_adapter.py``), and the study asks a backend's bench facet how to copy,
densify, cast and take a softmax of its arrays (``copy``, ``contiguous``, ``cast``,
``softmax``), where each used to probe for a library (``ad is NUMPY``, ``ad.lazy``
standing for Dask, ``hasattr(x, "clone")  # torch``). These tests hold each hook to
its declaration on every installed backend, so that a new backend's defaults are
right or its module says otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from xlinalg.backends._adapter import Adapter


def _adapter(backend: Any) -> Adapter:
    return backend.be.adapter()


def test_numpy_arrays_is_declared_by_the_libraries_whose_arrays_are_ndarrays(backend: Any) -> None:
    x = backend.arr(np.eye(3))
    assert _adapter(backend).numpy_arrays == (type(x) is np.ndarray), backend.name


def test_the_operations_asking_numpy_arrays_return_the_librarys_own_arrays(backend: Any) -> None:
    # NumPy's results are wrapped by keep_subclass (tests/backends/test_numpy_subclasses.py),
    # every other library's returned as they are
    x = backend.arr(np.array([[4.0, 1.0], [1.0, 3.0]]))
    for out in (xl.cholesky(x), xl.eigvalsh(x), xl.pinv(x), xl.matrix_norm(x), xl.inv(x)):
        backend.check_owned(out)


def test_blockwise_operations_stay_lazy_and_name_members_when_computed(backend: Any) -> None:
    ad = _adapter(backend)
    if ad.map_members is None:
        pytest.skip(f"{backend.name} runs the operations at the call (no blocks)")
    good = np.stack([np.eye(2) * 2.0, np.array([[2.0, 1.0], [1.0, 2.0]])])
    bad = good.copy()
    bad[1] = [[1.0, 2.0], [2.0, 1.0]]  # not positive definite, not singular
    sing = good.copy()
    sing[1] = [[1.0, 1.0], [1.0, 1.0]]
    det = xl.det(backend.arr(good))  # map_gufunc
    low = xl.cholesky(backend.arr(bad))  # map_members: nothing raised yet
    inv = xl.inv(backend.arr(sing))  # map_solve with inv's own error
    for lazy in (det, low, inv):
        backend.check_owned(lazy)
    np.testing.assert_allclose(backend.np(det), np.linalg.det(good))
    with pytest.raises(xl.LinAlgError, match=r"cholesky.*\b1\b") as cholesky_error:
        backend.np(low)
    assert list(cholesky_error.value.indices) == [(1,)]
    with pytest.raises(xl.LinAlgError, match=r"inv.*\b1\b") as inv_error:
        backend.np(inv)
    assert list(inv_error.value.indices) == [(1,)]


def test_namespace_linalg_gives_the_standards_answer_either_way(backend: Any) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3))
    x = backend.arr(a)
    np.testing.assert_allclose(backend.np(xl.matrix_norm(x)), np.linalg.norm(a, axis=(-2, -1)), rtol=1e-12)
    np.testing.assert_allclose(backend.np(xl.vector_norm(x, axis=-1)), np.linalg.norm(a, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(backend.np(xl.matrix_power(x, 3)), np.linalg.matrix_power(a, 3), rtol=1e-12)
    b = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(backend.np(xl.cross(x, backend.arr(b), axis=-2)),
                               np.cross(a, b, axis=-2), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- the bench facet
def test_copy_makes_an_array_of_its_own(backend: Any) -> None:
    h = np.arange(12.0).reshape(3, 4)
    x = backend.arr(h)
    member = x[1, ...]
    out = backend.be.bench.copy(member)
    backend.check_owned(out)
    np.testing.assert_array_equal(backend.np(out), h[1])
    if not backend.lazy and not backend.gpu:  # memory of its own (not a view of x)
        host = backend.be.convert.host_view(out)
        src = backend.be.convert.host_view(x)
        if host is not None and src is not None:
            assert not np.shares_memory(host, src), backend.name


def test_contiguous_densifies_a_strided_view(backend: Any) -> None:
    if backend.lazy:
        pytest.skip("a lazy library's arrays are task graphs: no layout to densify (the layout case skips them)")
    h = np.arange(16.0).reshape(4, 4)
    x = backend.arr(h)
    out = backend.be.bench.contiguous(x[:, ::2])
    backend.check_owned(out)
    np.testing.assert_array_equal(backend.np(out), h[:, ::2])
    host = None if backend.gpu else backend.be.convert.host_view(out)
    if host is not None:
        assert host.flags.c_contiguous, backend.name


@pytest.mark.parametrize("target", ["float32", "float16"])
def test_cast_gives_the_native_dtype(backend: Any, target: str) -> None:
    bench = backend.be.bench
    if bench.missing_dtype(target) is not None:
        pytest.skip(bench.missing_dtype(target))
    nd = bench.native_dtype(target)
    out = bench.cast(backend.arr(np.array([[1.5, -2.0]])), nd)
    assert out.dtype == nd, backend.name
    np.testing.assert_array_equal(backend.np(out).astype(np.float64), [[1.5, -2.0]])


def test_softmax_is_the_stable_softmax_over_the_last_axis(backend: Any) -> None:
    h = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    out = backend.be.bench.softmax()(backend.arr(h))
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(backend.np(out), e / e.sum(axis=-1, keepdims=True), rtol=1e-12)
