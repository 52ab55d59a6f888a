"""xlinalg.solve_ex: the solution and the per-member singular mask together, on every
backend, with every method, without a host read (lazy on Dask, traced under jax.jit).

The derived tests (test_operations, test_bad_input, test_dispatch) cover its
declaration; these check the mask member by member against the rule's reference."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, kernel_input_converter, require_backend
from xlinalg._lib import _singular
from xlinalg.testing import assert_lazy_safe, assert_trace_safe


def _peers(n: int, dtype: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A mixed batch: well conditioned, exactly singular (zero column, repeated pivot
    row, zero matrix), numerically singular (cond ~3e16: singular by the rule, no
    zero pivot), NaN in `a`, inf in `a`, NaN in `b` only; two right-hand sides."""
    a = rng.standard_normal((9, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    a[1, :, 0] = 0
    if n > 1:
        a[2, 0, 0] = a[2, 1, 0] = 64
        a[2, 1, 1:] = a[2, 0, 1:]
        th = np.pi / 6
        q = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        a[3] = np.eye(n)
        a[3, :2, :2] = q @ np.diag([1.0, 1e-17]) @ q.T
    a[4] = 0
    a[5, 0, 0] = np.nan
    a[6, -1, -1] = np.inf
    b = rng.standard_normal((9, n, 2))
    b[7, 0, 1] = np.nan
    return a.astype(dtype), b.astype(dtype)


def _want(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask, finite) by the rule, in the inputs' precision."""
    scale = _singular.column_scale(np, a)
    fin = np.broadcast_to(_singular.finite_members(np, scale, b), np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    sing = np.broadcast_to(_singular.singular_mask(np, a), fin.shape) & fin
    return sing, fin


@pytest.mark.parametrize("method", ["auto", "native", "unrolled"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_mask_and_solution_member_by_member(backend: BackendCase, rng, n: int, dtype: str, method: str) -> None:
    a, b = _peers(n, dtype, rng)
    sing, fin = _want(a, b)
    assert sing[1]
    assert sing[4]
    assert (n == 1 or (sing[2] and sing[3]))
    assert not sing[5:8].any()  # NaN/inf input: never singular
    x, mask = xl.solve_ex(backend.arr(a), backend.arr(b), method=method)
    backend.check_owned(x)
    backend.check_owned(mask)
    m = backend.np(mask)
    assert m.dtype == np.bool_
    assert m.shape == (9,)
    np.testing.assert_array_equal(m, sing)
    xn = backend.np(x)
    assert xn.dtype == np.dtype(dtype)
    assert xn.shape == (9, n, 2)
    assert np.isnan(xn[sing | ~fin]).all()  # NaN for singular and non-finite members, whole
    ok = ~sing & fin
    ref = np.linalg.solve(a[ok].astype(np.float64), b[ok].astype(np.float64))
    np.testing.assert_allclose(xn[ok], ref, rtol=2e-3 if dtype == "float32" else 1e-9,
                               atol=2e-3 if dtype == "float32" else 1e-9)


def test_vector_rhs_and_broadcast_batches(backend: BackendCase, rng) -> None:
    """The mask has the broadcast batch shape of `a` and `b` (0-d for one system)."""
    a, _ = _peers(3, "float64", rng)
    a3 = a[:3].reshape(3, 1, 3, 3)  # member 1 is singular
    b = rng.standard_normal((4, 3, 2))
    x, mask = xl.solve_ex(backend.arr(a3), backend.arr(b))
    m = backend.np(mask)
    assert m.shape == (3, 4)
    np.testing.assert_array_equal(m, np.repeat(_want(a[:3], b[:1])[0][:, None], 4, axis=1))
    assert backend.np(x).shape == (3, 4, 3, 2)
    x1, m1 = xl.solve_ex(backend.arr(a[1]), backend.arr(np.ones(3)))  # one singular system, vector b
    assert backend.np(m1).shape == ()
    assert bool(backend.np(m1))
    assert backend.np(x1).shape == (3,)
    assert np.isnan(backend.np(x1)).all()
    x2, m2 = xl.solve_ex(backend.arr(a[0]), backend.arr(np.ones(3)))
    assert not bool(backend.np(m2))
    backend.assert_close(x2, np.linalg.solve(a[0], np.ones(3)))


def test_never_raises_where_solve_does(backend: BackendCase) -> None:
    a = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])
    if not backend.lazy:
        with pytest.raises(xl.LinAlgError):
            xl.solve(backend.arr(a), backend.arr(np.ones(2)))
    x, mask = xl.solve_ex(backend.arr(a), backend.arr(np.ones(2)))
    np.testing.assert_array_equal(backend.np(mask), [False, True])
    np.testing.assert_array_equal(backend.np(x)[0], [1.0, 1.0])


def test_bad_arguments_are_solves_errors(backend: BackendCase) -> None:
    with pytest.raises(ValueError, match="solve"):
        xl.solve_ex(backend.arr(np.ones((3, 4))), backend.arr(np.ones(3)))
    with pytest.raises(ValueError, match="method"):
        xl.solve_ex(backend.arr(np.eye(2)), backend.arr(np.ones(2)), method="fast")


def test_no_host_read_on_dask(rng) -> None:
    """Nothing is computed to build either output on Dask."""
    require_backend("dask")
    a, b = _peers(3, "float64", rng)
    sing, fin = _want(a, b)
    x, mask = assert_lazy_safe(xl.solve_ex, a, b)
    np.testing.assert_array_equal(np.asarray(mask.compute()), sing)
    assert np.isnan(np.asarray(x.compute())[sing | ~fin]).all()


def test_traced_under_jax_jit(rng) -> None:
    """Under jax.jit both outputs are traced (a host read would fail the trace)."""
    require_backend("jax-cpu")
    a, b = _peers(3, "float64", rng)
    sing, fin = _want(a, b)
    x, mask = assert_trace_safe(xl.solve_ex, a, b)
    np.testing.assert_array_equal(np.asarray(mask), sing)
    assert np.isnan(np.asarray(x)[sing | ~fin]).all()


@pytest.mark.parametrize("rhs", ["matrix", "vector", "broadcast"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["numpy", "torch-cpu", "jax-cpu"])
def test_the_kernels_mask_without_a_second_pass(rng, monkeypatch, name: str, dtype: str, rhs: str) -> None:
    """Where the numba kernel solves (numpy, and eager torch-cpu and jax-cpu through
    NumPy views), solve_ex returns the kernel's own mask: the rule's LU is never run
    a second time over the batch (it is made to fail here), and the mask equals the
    rule's reference member by member on the peer matrices scattered through a batch
    of several of the kernel's chunks, in the inputs' library."""
    pytest.importorskip("numba")
    from xlinalg._kernels import _numba

    conv = kernel_input_converter(name, dtype)
    n, nb = 5, 2 * _numba.CHUNK + 40
    peers_a, peers_b = _peers(n, dtype, rng)
    a = (rng.standard_normal((nb, n, n)) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)
    b = rng.standard_normal((nb, n, 2)).astype(dtype)
    at = 1 + rng.choice(nb - 1, size=(3, len(peers_a)), replace=False)  # (member 0 regular: b's source)
    for row in at:
        a[row], b[row] = peers_a, peers_b
    if rhs == "vector":
        b = b[0, :, 0].copy()
        sing, fin = _want(a, b[:, None])
    elif rhs == "broadcast":  # one right-hand side for every member, as a (1, n, 2) stack
        b = b[:1].copy()
        sing, fin = _want(a, b)
    else:
        sing, fin = _want(a, b)
    assert sing.sum() >= 3 * 4  # the peers' singular members are in
    want_x = np.asarray(xl.to(xl.solve(conv(a), conv(b), errors="nan", method="native"), "numpy"))

    def second_pass(*args: object, **kw: object) -> None:
        raise AssertionError("solve_ex ran the rule's LU over the batch a second time")

    monkeypatch.setattr(_singular, "lu_pivots", second_pass)
    x, mask = xl.solve_ex(conv(a), conv(b), method="unrolled")
    assert type(mask) is type(conv(a))
    m = np.asarray(xl.to(mask, "numpy"))
    assert m.dtype == np.bool_
    np.testing.assert_array_equal(m, sing)
    xn = np.asarray(xl.to(x, "numpy"))
    assert xn.shape == want_x.shape
    np.testing.assert_array_equal(np.isnan(xn).all(axis=(-2, -1) if rhs != "vector" else -1), sing | ~fin)
    ok = ~sing & fin
    tol = 2e-3 if dtype == "float32" else 1e-8
    np.testing.assert_allclose(xn[ok], want_x[ok], rtol=tol, atol=tol)
