"""xlinalg on Dask at scale: graph costs against plain Dask, chunk-aware algorithms,
and a real dask.distributed cluster (a LocalCluster of 2 worker processes on the
loopback interface, started once for this module and closed at its end).

Plain Dask is ``da.map_blocks`` of the native NumPy call on the same chunks: xlinalg
must build the same number of tasks for the same result (the singular check travels
inside each block) and never compute while building the graph.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import xlinalg as xl
from conftest import require_backend
from xlinalg import _unrolled as U

dask = pytest.importorskip("dask", reason="dask is not installed (pip install 'xlinalg[dask]')")
da = pytest.importorskip("dask.array", reason="dask is installed without dask.array")


@pytest.fixture(autouse=True)
def _dask_backend() -> None:
    require_backend("dask")  # (fails instead of skipping in CI)

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def _refuse(*args, **kwargs):  # a Dask scheduler that must never be called
    raise AssertionError("xlinalg computed while building the graph")


def _tasks(x) -> int:
    return len(x.__dask_graph__())


def _batch(n: int, m: int, chunks: int, k: int = 1, seed: int = 0):
    rs = da.random.RandomState(seed)
    a = rs.random_sample((n, m, m), chunks=(chunks, m, m)) + m * da.eye(m)
    return a, rs.random_sample((n, m, k), chunks=(chunks, m, k))


def _plain(a, b):
    return da.map_blocks(np.linalg.solve, a, b, dtype=a.dtype)


# ---------------------------------------------------------------------- graphs
@pytest.mark.parametrize("call", [
    pytest.param(lambda a, b: xl.solve(a, b), id="raise"),
    pytest.param(lambda a, b: xl.solve(a, b, errors="nan"), id="nan"),
    pytest.param(lambda a, b: xl.solve(a, b, method="unrolled"), id="unrolled-raise"),
    pytest.param(lambda a, b: xl.solve(a, b, method="unrolled", errors="nan"), id="unrolled-nan"),
    pytest.param(lambda a, b: U.solve_unrolled(a, b), id="solve_unrolled"),
])
@pytest.mark.parametrize("nchunks", [1, 7])
def test_solve_builds_plain_dasks_graph(call, nchunks: int) -> None:
    a, b = _batch(70, 4, 70 // nchunks)
    with dask.config.set(scheduler=_refuse):
        x = call(a, b)
    assert x.chunks == b.chunks
    assert _tasks(x) == _tasks(_plain(a, b))  # one task a chunk, as plain Dask
    np.testing.assert_allclose(x.compute(), _plain(a, b).compute(), rtol=1e-9)


def test_vector_b_and_shared_a_keep_the_batch_chunks() -> None:
    a, b = _batch(64, 3, 8)
    v = da.ones(3, chunks=-1)
    with dask.config.set(scheduler=_refuse):
        xv = xl.solve(a, v)
        shared = xl.solve(a[0], b)  # one matrix against a chunked batch of b
    assert xv.chunks == (a.chunks[0], (3,))
    assert _tasks(xv) == _tasks(a) + _tasks(v) + a.numblocks[0]  # one task a chunk
    assert shared.chunks == b.chunks
    assert _tasks(shared) == _tasks(b) + _tasks(a[0]) + b.numblocks[0]
    np.testing.assert_allclose(shared.compute(), np.linalg.solve(a[0].compute(), b.compute()))


def test_a_slice_pays_for_its_chunks_only() -> None:
    a, b = _batch(80, 3, 10)
    head, plain = xl.solve(a, b)[:10], _plain(a, b)[:10]

    def culled(x) -> int:  # the tasks a compute of `x` runs
        return len(x.__dask_optimize__(x.__dask_graph__(), x.__dask_keys__()))

    # the check travels with each block: the slice computes its chunk, as plain Dask
    assert culled(head) == culled(plain) < 8


def test_unknown_chunk_sizes_work_or_name_compute_chunk_sizes() -> None:
    a, b = _batch(60, 3, 10)
    keep = da.from_array(np.arange(60) % 4 != 1, chunks=10)
    am, bm = a[keep], b[keep]
    assert np.isnan(am.shape[0])
    want = np.linalg.solve(am.compute(), bm.compute())
    np.testing.assert_allclose(xl.solve(am, bm).compute(), want)
    np.testing.assert_allclose(xl.solve(am, b[0]).compute(), np.linalg.solve(am.compute(), b[0].compute()))
    # different chunk counts along the batch: refused when the graph is built
    b3 = b.rechunk((20, 3, 1))[da.from_array(np.arange(60) % 4 != 1, chunks=20)]
    with pytest.raises(ValueError, match=r"6 against 3 chunks .*compute_chunk_sizes\(\)"):
        xl.solve(am, b3)
    # blocks that pair up but differ in size: the error comes when they meet
    bo = b[da.from_array(np.arange(60) % 5 != 1, chunks=10)]
    with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)"):
        xl.solve(am, bo).compute()


def test_linalgerror_pickles_with_its_indices() -> None:
    # a worker raises it; the client unpickles it
    err = xl.LinAlgError("m", indices=[(1, 2)], members=[5])
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.indices, back.members) == (xl.LinAlgError, "m", ((1, 2),), (5,))


def test_solve_many_groups_into_chunks() -> None:
    from dask.highlevelgraph import HighLevelGraph

    rng = np.random.default_rng(0)
    A = rng.random((40, 3, 3)) + 3 * np.eye(3)
    B = rng.random((40, 3))
    a = [da.from_array(m) for m in A]
    b = [da.from_array(v) for v in B]
    xs = xl.solve_many(a, b)
    solve_layers = [k for k in xs[0].__dask_graph__().layers if "solve" in k]
    assert len(solve_layers) == 1
    [layer] = solve_layers
    assert len(xs[0].__dask_graph__().layers[layer]) == 1  # one chunk for 40 small systems
    tasks = len(HighLevelGraph.merge(*[x.__dask_graph__() for x in xs]))
    # plain Dask for the same list: stack, rechunk, map_blocks, one slice per system
    sa = da.stack(a).rechunk({0: "auto"})
    sb = da.stack(b).rechunk({0: "auto"})
    x = da.map_blocks(np.linalg.solve, sa, sb[..., None], dtype=float)[..., 0]
    plain = len(HighLevelGraph.merge(*[x[i].__dask_graph__() for i in range(40)]))
    assert tasks <= plain + 4
    np.testing.assert_allclose(np.array(dask.compute(*xs)), np.linalg.solve(A, B[..., None])[..., 0])


# ---------------------------------------------------------------------- decompositions
TALL = np.random.default_rng(1).standard_normal((600, 6))


@pytest.mark.parametrize("chunks", [(100, 6), (100, 3), (4, 6)], ids=["rows", "rows-cols", "short-blocks"])
def test_tall_skinny_runs_dasks_tsqr_chunked_as_x(chunks) -> None:
    x = da.from_array(TALL, chunks=chunks)
    with dask.config.set(scheduler=_refuse):
        Q, R = xl.qr(x)
        U, S, Vh = xl.svd(x, full_matrices=False)
        s = xl.svdvals(x)
    # never merged into one chunk: the factors keep x's row chunks
    assert Q.chunks[0] == U.chunks[0] == x.chunks[0]
    assert (Q.shape, R.shape, U.shape, S.shape, Vh.shape) == ((600, 6), (6, 6), (600, 6), (6,), (6, 6))
    np.testing.assert_allclose((Q @ R).compute(), TALL, atol=1e-10)
    np.testing.assert_allclose(((U * S) @ Vh).compute(), TALL, atol=1e-10)
    want = np.linalg.svd(TALL, compute_uv=False)
    np.testing.assert_allclose(s.compute(), want)
    np.testing.assert_allclose(S.compute(), want)


def test_short_and_fat_and_square() -> None:
    x = da.from_array(TALL.T, chunks=(6, 100))
    Q, R = xl.qr(x, mode="complete")  # (complete is reduced when M <= N)
    U, S, Vh = xl.svd(x, full_matrices=False)
    assert Vh.chunks[1] == x.chunks[1]
    np.testing.assert_allclose((Q @ R).compute(), TALL.T, atol=1e-10)
    np.testing.assert_allclose(((U * S) @ Vh).compute(), TALL.T, atol=1e-10)
    sq = TALL[:60, :6] @ TALL[:6, :6].T @ np.ones((6, 60)) + np.eye(60)
    y = da.from_array(sq, chunks=(20, 20))
    U, S, Vh = xl.svd(y)  # square: full_matrices=True is the reduced SVD
    np.testing.assert_allclose(((U * S) @ Vh).compute(), sq, atol=1e-9)


@pytest.mark.parametrize(("call", "name"), [
    (lambda x: xl.svd(x), "full_matrices=False"),
    (lambda x: xl.svd(x, full_matrices=True), "full_matrices=False"),
    (lambda x: xl.qr(x, mode="complete"), 'mode="reduced"'),
])
def test_full_factors_of_a_tall_array_are_refused_up_front(call, name) -> None:
    x = da.zeros((2_000_000, 20), chunks=(250_000, 20))  # U would be 29 TiB
    with dask.config.set(scheduler=_refuse), pytest.raises(ValueError, match=name) as info:
        call(x)
    assert "(2000000, 2000000)" in str(info.value)


def test_tall_skinny_with_unknown_rows_and_nan() -> None:
    keep = np.arange(600) % 3 != 0
    x = da.from_array(TALL, chunks=(100, 6))[da.from_array(keep, chunks=100)]
    Q, R = xl.qr(x)
    np.testing.assert_allclose((Q @ R).compute(), TALL[keep], atol=1e-10)
    np.testing.assert_allclose(xl.svdvals(x).compute(), np.linalg.svd(TALL[keep], compute_uv=False))
    bad = TALL.copy()
    bad[350, 2] = np.nan
    with pytest.raises(xl.LinAlgError, match=r"svdvals: the SVD of `x` did not converge: `x` contains NaN"):
        xl.svdvals(da.from_array(bad, chunks=(100, 6))).compute()
