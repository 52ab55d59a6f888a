"""Dask arrays with unknown (NaN) chunk sizes: errors name compute_chunk_sizes()
instead of blaming the shape (issue 34, point 11)."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import require_backend

PATTERN = r"with unknown \(NaN\) chunk sizes along axis {ax} .*call `{name}\.compute_chunk_sizes\(\)` first"


@pytest.fixture
def da():
    require_backend("dask")
    import dask.array

    return dask.array


def _unknown(da, host: np.ndarray, chunks=None):
    """`host` as a Dask array whose first axis has unknown sizes (boolean indexing)."""
    x = da.from_array(host, chunks=chunks or host.shape)
    return x[da.from_array(np.ones(host.shape[0], bool))]


def test_solve_names_compute_chunk_sizes(da, rng) -> None:
    a_h = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    b_h = rng.standard_normal((6, 2))
    a, b = da.from_array(a_h), da.from_array(b_h)
    ua, ub, uv = _unknown(da, a_h), _unknown(da, b_h), _unknown(da, b_h[:, 0])
    assert np.isnan(ua.shape[0])
    for args, name, ax in (((ua, b), "a", 0), ((a, ub), "b", 0), ((a, uv), "b", 0), ((ua, ub), "a", 0)):
        with pytest.raises(ValueError, match=r"^solve: `\w` is a Dask array .*" + PATTERN.format(ax=ax, name=name)):
            xl.solve(*args)
        with pytest.raises(ValueError, match=PATTERN.format(ax=ax, name=name)):
            xl.solve(*args, errors="nan")
    # the fix the message names works
    ua.compute_chunk_sizes()
    ub.compute_chunk_sizes()
    np.testing.assert_allclose(xl.solve(ua, ub).compute(), np.linalg.solve(a_h, b_h))


def test_solve_many_names_the_member(da, rng) -> None:
    a_h = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    good = da.from_array(a_h)
    with pytest.raises(ValueError, match=r"^solve_many: .*" + PATTERN.format(ax=0, name=r"a\[1\]")):
        xl.solve_many([good, _unknown(da, a_h)], [da.ones(3), da.ones(3)])
    with pytest.raises(ValueError, match=PATTERN.format(ax=0, name=r"b\[0\]")):
        xl.solve_many([good], [_unknown(da, np.ones(3))])


def test_elementwise_against_a_known_size(da) -> None:
    h = np.arange(12.0).reshape(4, 3)
    u = _unknown(da, h)
    for fn in (xl.add, xl.subtract, xl.multiply, xl.divide):
        with pytest.raises(ValueError, match=rf"^{fn.__name__}: `x1` is .*" + PATTERN.format(ax=0, name="x1")):
            fn(u, da.from_array(h))
        with pytest.raises(ValueError, match=PATTERN.format(ax=0, name="x2")):
            fn(da.from_array(h), u)
        # broadcasting against 1, or scalars, and unknown against unknown stay lazy and right
        np.testing.assert_allclose(fn(u, da.from_array(h[:1])).compute(), fn(h, h[:1]))
        np.testing.assert_allclose(fn(u, 2.0).compute(), fn(h, 2.0))


def test_matmul_and_decompositions_neighbours(da, rng) -> None:
    h = rng.standard_normal((8, 3))
    u = _unknown(da, h, chunks=(4, 3))
    # matmul contracts over an unknown axis, and keeps one in the result
    np.testing.assert_allclose(xl.matmul(u.T, u).compute(), h.T @ h)
    np.testing.assert_allclose(xl.matmul(u, da.from_array(np.eye(3))).compute(), h)
    # tall-and-skinny QR and singular values take unknown row sizes
    q, r = xl.qr(u)
    np.testing.assert_allclose((q @ r).compute(), h, atol=1e-12)
    np.testing.assert_allclose(xl.svdvals(u).compute(), np.linalg.svd(h, compute_uv=False))
    # factors whose shape depends on the unknown size: the message names the fix
    with pytest.raises(ValueError, match=r"unknown until computed.*pass full_matrices=False"):
        xl.svd(u)
    s = xl.svd(u, full_matrices=False).S
    np.testing.assert_allclose(s.compute(), np.linalg.svd(h, compute_uv=False))
    with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)"):
        xl.svd(_unknown(da, h.T.copy()), full_matrices=False)
