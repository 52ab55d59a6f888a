"""The one singular-matrix rule (docs/semantics.md, "solve: singular, non-finite and
subnormal input"): its helper module, on every backend's namespace.

A member is singular when LU with partial pivoting has a pivot ``|u_kk| <= n * eps *
max_i |a_ik|``; a member with NaN or inf in `a` or `b` is not finite (never singular).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BackendCase
from xlinalg._lib import _singular as S

#: the textbook rank-2 matrix: LAPACK's last pivot is 0 (NumPy, JAX) or 1.1e-16 (torch)
TEXTBOOK = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])

_L = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.25, 0.5, 1.0]])


def pivot_ladder(delta: float, dtype=np.float64) -> np.ndarray:
    """``L @ U`` with ``U = [[4,2,1],[0,2,1],[0,0,delta]]``: partial pivoting keeps the
    row order and every LU (any order of operations, FMA or not) computes the last
    pivot as `delta` exactly (all values dyadic). Column 2's largest modulus is 1.5,
    so the tolerance is ``3 * eps * 1.5``: float64 ``4.5 * 2**-52``."""
    u = np.array([[4.0, 2.0, 1.0], [0.0, 2.0, 1.0], [0.0, 0.0, delta]])
    a = (_L @ u).astype(dtype)
    assert float(a[2, 2]) == 0.75 + delta  # representable: the ladder is exact
    return a


#: (exponent k of delta = 2**-k, singular?) in float64 (tolerance 4.5 * 2**-52)
LADDER64 = [(10, False), (30, False), (40, False), (49, False), (50, True), (51, True), (52, True), (53, True)]
#: the same in float32 (tolerance 4.5 * 2**-23)
LADDER32 = [(5, False), (12, False), (20, False), (21, True), (22, True), (24, True)]


def _ns(backend: BackendCase):
    return backend.namespace()


def _host(backend: BackendCase, x) -> np.ndarray:
    return np.asarray(backend.np(x))


@pytest.mark.parametrize(
    ("dtype", "eps"),
    [(np.float64, 2.0**-52), (np.float32, 2.0**-23), (np.complex128, 2.0**-52), (np.complex64, 2.0**-23)],
)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_tolerance_is_n_eps_of_the_real_dtype(backend: BackendCase, dtype, eps: float, n: int) -> None:
    xp = _ns(backend)
    dt = backend.arr(np.zeros(1, dtype)).dtype
    assert S.tolerance(xp, dt, n) == n * eps


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (4, 3, 3), (2, 3, 6, 6)])
def test_lu_pivots_are_lapacks(backend: BackendCase, dtype, shape) -> None:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    got = _host(backend, S.lu_pivots(_ns(backend), backend.arr(a)))
    flat = a.reshape(-1, *shape[-2:])
    ref = np.array([np.diag(scipy_linalg.lu_factor(m, check_finite=False)[0]) for m in flat]).reshape(*shape[:-1])
    assert got.shape == ref.shape
    tol = 50 * np.finfo(dtype).eps * np.abs(a).max()
    assert np.abs(got - ref).max() <= tol


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_textbook_matrix_is_singular_at_any_scale(backend: BackendCase, dtype) -> None:
    xp = _ns(backend)
    scales = [1.0, 1e-300, 1e300, 2.0**-1000] if dtype == np.float64 else [1.0, 1e-30, 1e30]
    for s in scales:
        a = (s * TEXTBOOK).astype(dtype)
        assert _host(backend, S.singular_mask(xp, backend.arr(a))).tolist() is True, s
        assert _host(backend, S.singular_mask(xp, backend.arr(a.T))).tolist() is True, s


@pytest.mark.parametrize(("dtype", "ladder"), [(np.float64, LADDER64), (np.float32, LADDER32)])
def test_pivot_ladder_around_the_tolerance(backend: BackendCase, dtype, ladder) -> None:
    # a batch of members whose last pivot is 2**-k exactly: singular from the
    # tolerance down, regular above it, whatever the scale of the matrix
    a = np.stack([pivot_ladder(2.0**-k, dtype) for k, _ in ladder])
    want = [s for _, s in ladder]
    xp = _ns(backend)
    for scale in (1.0, 2.0**-60, 2.0**60, 3.0):
        got = _host(backend, S.singular_mask(xp, backend.arr(a * dtype(scale))))
        assert got.tolist() == want, scale


def test_pivots_are_measured_against_their_column(backend: BackendCase) -> None:
    xp = _ns(backend)
    a = np.stack([
        np.diag([1.0, 1e-20]),  # independent columns of very different sizes: regular
        np.diag([1e-20, 1.0]),
        np.array([[1.0, 1e-20], [1.0, 1e-20]]),  # equal columns up to scale: singular
        np.zeros((2, 2)),  # an exact zero pivot: always singular
        np.diag([1.0, 0.0]),
        np.array([[1.0, 1.0], [1.0, 1.0 + 2.0**-50]]),  # pivot 2**-50 > 2 eps (1 + ...): regular
        np.array([[1.0, 1.0], [1.0, 1.0 + 2.0**-52]]),  # pivot eps <= 2 eps: singular
    ])
    got = _host(backend, S.singular_mask(xp, backend.arr(a)))
    assert got.tolist() == [False, False, True, True, True, False, True]


def test_subnormal_columns_are_not_singular(backend: BackendCase) -> None:
    # 1e-310 * I: pivots 1e-310 against columns of 1e-310. XLA flushes subnormals to
    # zero in its own arithmetic, so the helper on JAX arrays sees zeros there: the JAX
    # adapter confirms such verdicts on the host (tests/ops/test_solve.py)
    xp = _ns(backend)
    a = np.stack([1e-310 * np.eye(2), np.diag([1e-310, 0.0])])
    got = _host(backend, S.singular_mask(xp, backend.arr(a))).tolist()
    if backend.library == "jax":
        assert got[1] is True
    else:
        assert got == [False, True]


def test_nonfinite_members(backend: BackendCase) -> None:
    xp = _ns(backend)
    a = np.stack([np.eye(2), np.array([[np.nan, 0.0], [0.0, 1.0]]), np.array([[np.inf, 1.0], [1.0, 1.0]]),
                  np.eye(2), TEXTBOOK[:2, :2] * 0])
    b = np.ones((5, 2, 1))
    b[3, 1, 0] = -np.inf
    scale = S.column_scale(xp, backend.arr(a))
    assert _host(backend, S.finite_members(xp, scale)).tolist() == [True, False, False, True, True]
    assert _host(backend, S.finite_members(xp, scale, backend.arr(b))).tolist() == [True, False, False, False, True]
    # singular_mask alone: never for a member holding NaN or inf, even a singular one
    a2 = np.stack([np.array([[np.nan, 2.0], [2.0, 4.0]]), np.array([[0.0, 0.0], [0.0, np.inf]]), np.zeros((2, 2))])
    assert _host(backend, S.singular_mask(xp, backend.arr(a2))).tolist() == [False, False, True]


def test_singular_from_pivots_compares_each_pivot_with_its_column(backend: BackendCase) -> None:
    xp = _ns(backend)
    piv = backend.arr(np.array([[1.0, 1e-9], [1.0, 1e-9], [np.nan, 1.0], [0.0, 5.0]]))
    scale = backend.arr(np.array([[1.0, 1e-9], [1.0, 1e7], [1.0, 1.0], [0.0, 5.0]]))
    got = _host(backend, S.singular_from_pivots(xp, piv, scale, 1e-15)).tolist()
    assert got == [False, True, False, True]
