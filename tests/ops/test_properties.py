"""Hypothesis properties, per backend: solve residual, QR and SVD reconstructions
and orthonormality, svdvals == svd(...).S, sigmoid against a float64 reference.

The examples are derandomized (the "xlinalg" profile in conftest.py): every run
and CI see the same ones; ``max_examples`` is modest to keep the suite fast.
"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xlinalg as xl
from conftest import BackendCase

FLOATS = st.sampled_from([np.float32, np.float64])
batch_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)


def _elements(dtype, bound: float = 10.0):
    return st.floats(-bound, bound, allow_nan=False, allow_subnormal=False, width=np.dtype(dtype).itemsize * 8)


@st.composite
def matrices(draw, *, square: bool = False, min_side: int = 1, max_side: int = 5):
    dtype = draw(FLOATS)
    batch = draw(batch_shapes)
    m = draw(st.integers(min_side, max_side))
    n = m if square else draw(st.integers(min_side, max_side))
    return draw(hnp.arrays(dtype, (*batch, m, n), elements=_elements(dtype)))


@st.composite
def systems(draw):
    """(a, b): diagonally dominant a (so invertible, cond <= ~3), b vector or matrix."""
    a = draw(matrices(square=True))
    n = a.shape[-1]
    a = a + (10.0 * n + 1) * np.eye(n, dtype=a.dtype)
    kind = draw(st.sampled_from(["vector", "matrix", "batched"]))
    if kind == "vector":
        shape = (n,)
    elif kind == "matrix":
        shape = (n, draw(st.integers(1, 3)))
    else:
        shape = (*a.shape[:-2], n, draw(st.integers(1, 3)))
    b = draw(hnp.arrays(a.dtype, shape, elements=_elements(a.dtype)))
    return a, b


def _eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def _ct(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2).conj()


@given(ab=systems())
def test_solve_residual(backend: BackendCase, ab) -> None:
    a, b = ab
    x = xl.solve(backend.arr(a), backend.arr(b))
    backend.check_owned(x)
    xh = backend.np(x)
    assert xh.dtype == a.dtype
    bm = b[..., None] if b.ndim == 1 else b
    xm = xh[..., None] if b.ndim == 1 else xh
    a64, x64 = a.astype(np.float64), xm.astype(np.float64)
    res = np.abs(a64 @ x64 - bm)
    bound = 50 * a.shape[-1] * _eps(a.dtype) * (np.abs(a64) @ np.abs(x64) + np.abs(bm))
    assert (res <= bound + 1e-300).all(), float((res - bound).max())


@given(x=matrices(), mode=st.sampled_from(["reduced", "complete"]))
def test_qr_properties(backend: BackendCase, x, mode) -> None:
    Q, R = xl.qr(backend.arr(x), mode=mode)
    q, r = backend.np(Q).astype(np.float64), backend.np(R).astype(np.float64)
    m, n = x.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert q.shape == (*x.shape[:-2], m, k)
    assert r.shape == (*x.shape[:-2], k, n)
    tol = 100 * max(m, n) * _eps(x.dtype)
    scale = max(1.0, float(np.abs(x).max(initial=0)))
    np.testing.assert_allclose(q @ r, x, atol=tol * scale)
    np.testing.assert_allclose(_ct(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), atol=tol)
    np.testing.assert_allclose(np.tril(r, -1), 0, atol=tol * scale)


@given(x=matrices(), full_matrices=st.booleans())
def test_svd_reconstructs(backend: BackendCase, x, full_matrices) -> None:
    U, S, Vh = xl.svd(backend.arr(x), full_matrices=full_matrices)
    u, s, vh = (backend.np(t).astype(np.float64) for t in (U, S, Vh))
    m, n = x.shape[-2:]
    k = min(m, n)
    assert u.shape[-1] == (m if full_matrices else k)
    assert vh.shape[-2] == (n if full_matrices else k)
    tol = 100 * max(m, n) * _eps(x.dtype)
    scale = max(1.0, float(np.abs(x).max(initial=0)))
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=tol * scale)
    np.testing.assert_allclose(_ct(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), atol=tol)
    np.testing.assert_allclose(vh @ _ct(vh), np.broadcast_to(np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2), atol=tol)
    assert (s >= -tol * scale).all()
    assert (np.diff(s, axis=-1) <= tol * scale).all()


@given(x=matrices())
def test_svdvals_equal_svd_s(backend: BackendCase, x) -> None:
    s1 = backend.np(xl.svdvals(backend.arr(x)))
    s2 = backend.np(xl.svd(backend.arr(x)).S)
    assert s1.dtype == s2.dtype == x.dtype
    tol = 100 * max(x.shape[-2:]) * _eps(x.dtype) * max(1.0, float(np.abs(x).max(initial=0)))
    np.testing.assert_allclose(s1, s2, atol=tol)
    np.testing.assert_allclose(s1, np.linalg.svd(x.astype(np.float64), compute_uv=False), atol=tol)


@given(
    x=st.sampled_from([np.float32, np.float64]).flatmap(
        lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=1, max_dims=2, max_side=20),
                              elements=st.floats(-1e6, 1e6, allow_nan=False, width=np.dtype(dt).itemsize * 8))
    )
)
@settings(max_examples=40)
def test_sigmoid_properties(backend: BackendCase, x) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow (or any) warning, any input
        y = backend.np(xl.sigmoid(backend.arr(x)))
    assert y.dtype == x.dtype
    assert y.shape == x.shape
    assert ((y >= 0) & (y <= 1)).all()
    with np.errstate(over="ignore"):
        ref = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    tiny = float(np.finfo(x.dtype).tiny)
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=8 * _eps(x.dtype), atol=tiny)
    order = np.argsort(x.ravel(), kind="stable")
    assert (np.diff(y.ravel()[order].astype(np.float64)) >= 0).all(), "monotone"
