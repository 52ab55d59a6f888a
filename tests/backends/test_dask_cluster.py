"""xlinalg on Dask at scale: graph costs against plain Dask, chunk-aware algorithms,
and a real dask.distributed cluster (a LocalCluster of 2 worker processes on the
loopback interface, started once for this module and closed at its end).

Plain Dask is ``da.map_blocks`` of the native NumPy call on the same chunks: xlinalg
must build the same number of tasks for the same result (the singular check travels
inside each block) and never compute while building the graph.
"""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("chunks", [(3, 1, 4), (4, 4), (2, 2, 2, 2)], ids=["irregular", "two", "regular"])
@pytest.mark.parametrize("vector", [False, True])
def test_global_index_from_any_chunking(chunks, vector: bool) -> None:
    A = np.broadcast_to(np.eye(2), (8, 2, 2)).copy()
    A[5] = SINGULAR
    b = da.ones(2) if vector else da.ones((8, 2, 1), chunks=(chunks, 2, 1))
    x = xl.solve(da.from_array(A, chunks=(chunks, 2, 2)), b)
    with pytest.raises(xl.LinAlgError, match=r"batch index 5 ") as info:
        x.compute()
    assert (info.value.indices, info.value.members) == (((5,),), (5,))


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


@pytest.mark.parametrize("b_chunks", [(3, 4, 3, 1), (4, 4, 3, 1), (1, 4, 3, 1)])
def test_a_known_batch_axis_beside_an_unknown_one_is_unified(b_chunks) -> None:
    # a known axis chunked differently in a and b was paired block to block like an
    # unknown one: (2, 2) against (3, 1) failed at compute, (2, 2) against (4,) when
    # the graph was built, both naming compute_chunk_sizes(), which could not help
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((4, 12, 3, 3)) + 3 * np.eye(3)
    b_np = rng.standard_normal((4, 12, 3, 1))
    keep = np.arange(12) % 4 != 1
    a = da.from_array(a_np, chunks=(2, 4, 3, 3))[:, da.from_array(keep, chunks=4)]
    b = da.from_array(b_np, chunks=b_chunks)[:, da.from_array(keep, chunks=4)]
    assert np.isnan(a.shape[1])
    x = xl.solve(a, b)
    assert x.chunks[0] == (2, 2)  # a's chunks along the known axis
    np.testing.assert_allclose(x.compute(), np.linalg.solve(a_np[:, keep], b_np[:, keep]))


def test_matmul_contracts_over_an_unknown_size() -> None:
    # X[mask] has NaN rows: the Gram matrix X.T @ X contracts over them. Dask's own
    # matmul takes it (the chunks are the same); nan != nan is not a mismatch
    rng = np.random.default_rng(1)
    keep = da.from_array(np.arange(40) % 3 != 0, chunks=10)
    xm = da.from_array(rng.random((40, 3)), chunks=(10, 3))[keep]
    vm = da.from_array(rng.random(40), chunks=10)[keep]
    assert np.isnan(xm.shape[0])
    hx, hv = xm.compute(), vm.compute()
    with dask.config.set(scheduler=_refuse):  # the graph is built without computing
        gram, dot, proj = xl.matmul(xm.T, xm), xl.matmul(vm, vm), xl.matmul(vm, xm)
    np.testing.assert_allclose(gram.compute(), hx.T @ hx)
    np.testing.assert_allclose(dot.compute(), hv @ hv)
    np.testing.assert_allclose(proj.compute(), hv @ hx)
    # known sizes that differ are still refused when the graph is built
    with pytest.raises(ValueError, match=r"`a` has 3 columns but `b` has 4 rows"):
        xl.matmul(xm, da.ones((4, 2)))


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
#: Dask's automatic chunk size for these tests: TALL (28 KiB) fits one chunk of the
#: default 128 MiB, and a matrix that does takes NumPy's call, not Dask's TSQR
SMALL_CHUNKS = {"array.chunk-size": "4KiB"}


def test_a_small_chunked_matrix_takes_numpys_call_whatever_its_chunks() -> None:
    # full factors of a chunked non-square matrix that fits one automatic chunk: the
    # answer does not depend on how it was chunked
    for chunks in ((100, 6), (600, 3), (4, 6)):
        x = da.from_array(TALL, chunks=chunks)
        U, S, Vh = xl.svd(x)
        Q, R = xl.qr(x, mode="complete")
        assert U.shape == Q.shape == (600, 600)
        np.testing.assert_allclose(((U[:, :6] * S) @ Vh).compute(), TALL, atol=1e-10)
        np.testing.assert_allclose((Q @ R).compute(), TALL, atol=1e-10)


@pytest.mark.parametrize("chunks", [(100, 6), (100, 3), (4, 6)], ids=["rows", "rows-cols", "short-blocks"])
def test_tall_skinny_runs_dasks_tsqr_chunked_as_x(chunks) -> None:
    x = da.from_array(TALL, chunks=chunks)
    with dask.config.set(scheduler=_refuse, **SMALL_CHUNKS):  # (else it fits one chunk)
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
    with dask.config.set(SMALL_CHUNKS):
        Q, R = xl.qr(x, mode="complete")  # (complete is reduced when M <= N)
        U, S, Vh = xl.svd(x, full_matrices=False)
    assert Vh.chunks[1] == x.chunks[1]
    np.testing.assert_allclose((Q @ R).compute(), TALL.T, atol=1e-10)
    np.testing.assert_allclose(((U * S) @ Vh).compute(), TALL.T, atol=1e-10)
    sq = TALL[:60, :6] @ TALL[:6, :6].T @ np.ones((6, 60)) + np.eye(60)
    y = da.from_array(sq, chunks=(20, 20))
    U, S, Vh = xl.svd(y)  # square: full_matrices=True is the reduced SVD
    np.testing.assert_allclose(((U * S) @ Vh).compute(), sq, atol=1e-9)


def test_short_and_fat_in_column_chunks_narrower_than_its_rows() -> None:
    # Dask's short-and-fat QR needs column blocks at least as wide as the rows: x's
    # 4-wide blocks are widened to 6, where Dask raised its own ValueError
    x = da.from_array(TALL.T, chunks=(6, 4))
    with dask.config.set(SMALL_CHUNKS):
        Q, R = xl.qr(x)
        U, S, Vh = xl.svd(x, full_matrices=False)
    assert Vh.numblocks[1] > 1
    np.testing.assert_allclose((Q @ R).compute(), TALL.T, atol=1e-10)
    np.testing.assert_allclose(((U * S) @ Vh).compute(), TALL.T, atol=1e-10)
    np.testing.assert_allclose(xl.svdvals(x).compute(), np.linalg.svd(TALL, compute_uv=False))


def test_full_factors_of_a_wide_array_name_vh_and_its_size() -> None:
    x = da.zeros((20, 2_000_000), chunks=(20, 250_000))
    with dask.config.set(scheduler=_refuse), pytest.raises(ValueError, match=r"Vh with full_matrices=True would "
                                                                             r"be a \(2000000, 2000000\) array"):
        xl.svd(x, full_matrices=True)


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


def test_a_matrix_chunked_along_its_short_side_only_is_split_not_merged() -> None:
    # (600, 6) in column chunks: merging the columns made one chunk of the whole
    # matrix (one task, one worker's memory); its rows are split into Dask's
    # automatic chunk size instead (and a wide one's columns)
    x = da.from_array(TALL, chunks=(600, 3))
    w = da.from_array(TALL.T, chunks=(3, 600))
    with dask.config.set({"array.chunk-size": "8KiB"}):
        with dask.config.set(scheduler=_refuse):
            Q, R = xl.qr(x)
            U, S, Vh = xl.svd(x, full_matrices=False)
            uw, sw, vhw = xl.svd(w, full_matrices=False)
        assert Q.numblocks[0] > 1
        assert U.numblocks[0] > 1
        assert vhw.numblocks[1] > 1
    np.testing.assert_allclose((Q @ R).compute(), TALL, atol=1e-10)
    np.testing.assert_allclose(((U * S) @ Vh).compute(), TALL, atol=1e-10)
    np.testing.assert_allclose(((uw * sw) @ vhw).compute(), TALL.T, atol=1e-10)
    # one that fits an automatic chunk: NumPy's call on it, full factors included
    U, S, Vh = xl.svd(x)
    assert U.shape == (600, 600)
    np.testing.assert_allclose(((U[:, :6] * S) @ Vh).compute(), TALL, atol=1e-10)
    Q, R = xl.qr(x, mode="complete")
    assert Q.shape == (600, 600)


def test_an_unknown_matrix_size_in_one_chunk_names_compute_chunk_sizes() -> None:
    # x[:, mask] in one chunk: the factors' sizes depend on the unknown one (Python's
    # min(5, nan) is 5: S would have been declared (5,) with 3 values in it)
    host = np.random.default_rng(4).standard_normal((5, 12))
    keep = np.arange(12) % 4 == 0
    for x in (da.from_array(host, chunks=(5, 12))[:, da.from_array(keep, chunks=12)],
              da.from_array(host.T, chunks=(12, 5))[da.from_array(keep, chunks=12)]):
        assert np.isnan(x.shape).any()
        for call in (xl.svdvals, xl.svd, xl.qr):
            with pytest.raises(ValueError, match=r"unknown \(NaN\) size.*x.compute_chunk_sizes\(\)"):
                call(x)
        x.compute_chunk_sizes()
        want = np.linalg.svd(x.compute(), compute_uv=False)
        np.testing.assert_allclose(xl.svdvals(x).compute(), want)


def test_a_singular_member_with_nan_in_another_column_block_is_not_singular() -> None:
    # NaN anywhere in a member's b means NaN out, no error (docs/semantics.md): a block
    # of some of b's columns alone cannot see it, so b's columns are one chunk
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    b = np.array([[1.0, np.nan], [1.0, np.nan]])
    with np.errstate(all="ignore"):
        x = xl.solve(da.from_array(a), da.from_array(b, chunks=(2, 1))).compute()
        want = xl.solve(a, b)  # NumPy's answer: no error
    assert not np.isfinite(x).all()
    assert np.isnan(x).all() == np.isnan(want).all()


def test_chunks_that_are_not_numpy_arrays_are_refused_up_front() -> None:
    # CuPy chunks (here: masked arrays) would fail inside NumPy's kernels at compute
    meta = np.ma.masked_array(np.empty((0, 0)))
    x = da.from_array(np.eye(3), chunks=3).map_blocks(np.ma.masked_array, meta=meta)
    for call in (xl.svd, xl.svdvals, xl.qr, lambda m: xl.solve(m, da.ones(3)), lambda m: xl.solve(m, da.ones((3, 1)))):
        with pytest.raises(TypeError, match=r"whose chunks are numpy\.ma(\.core)?\.MaskedArray, not NumPy arrays"):
            call(x)


def test_solve_many_stacks_b_in_as_chunks() -> None:
    # a (8, 8) system and its (8,) b take different automatic chunks: b followed its
    # own, and the solve rechunked it again to pair the blocks
    from xlinalg import _dispatch

    rng = np.random.default_rng(3)
    A = rng.random((200, 8, 8)) + 8 * np.eye(8)
    B = rng.random((200, 8))
    a, b = [da.from_array(m) for m in A], [da.from_array(v) for v in B]
    with dask.config.set({"array.chunk-size": "32KiB"}):
        ad = _dispatch.adapter_for((a[0],), ("a",), None)
        sa = ad.stack(a)
        assert ad.stack(b).chunks[0] != sa.chunks[0]
        assert ad.stack(b, like=sa).chunks[0] == sa.chunks[0]
        xs = xl.solve_many(a, b)
    np.testing.assert_allclose(np.stack(dask.compute(*xs)), np.linalg.solve(A, B[..., None])[..., 0])


# ---------------------------------------------------------------------- a real cluster
WORKER_MEMORY = 256 * 2**20


@pytest.fixture(scope="module")
def client():
    """A LocalCluster on loopback: 2 worker processes of 1 thread and 256 MiB each."""
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install 'xlinalg[dask]')"
    )
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0", memory_limit=WORKER_MEMORY, timeout=60,
    )
    c = distributed.Client(cluster, timeout=60)
    try:
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def _on(client, *xs):
    """Compute on the cluster (bounded wait)."""
    futures = client.compute(list(xs))
    # bounded, but past a cold numba compile of the unrolled kernel in each worker
    # process (tens of seconds per shape and dtype on a loaded 2-core machine)
    return [f.result(timeout=600) for f in futures]


def test_every_function_on_the_cluster(client) -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((40, 4, 4)) + 4 * np.eye(4)
    B = rng.standard_normal((40, 4, 2))
    a, b = da.from_array(A, chunks=(10, 4, 4)), da.from_array(B, chunks=(10, 4, 2))
    tall = rng.standard_normal((400, 5))
    t = da.from_array(tall, chunks=(100, 5))
    with dask.config.set(scheduler=_refuse):  # nothing runs while the graphs are built
        lazy = [
            xl.solve(a, b), xl.solve(a, b, errors="nan"), xl.solve(a, b[:, :, 0][0]),
            xl.solve(a, b, method="unrolled"), xl.matmul(a, b), xl.sigmoid(b),
            xl.add(b, b), xl.qr(a).R, xl.svd(a).S, xl.svdvals(a), xl.qr(t).R,
            xl.svd(t, full_matrices=False).S, xl.svdvals(t),
            *xl.solve_many(list(a[:3]), list(b[:3])),
        ]
    got = _on(client, *lazy)
    want = [
        np.linalg.solve(A, B), np.linalg.solve(A, B), np.linalg.solve(A, B[0, :, 0]),
        np.linalg.solve(A, B), A @ B, 1 / (1 + np.exp(-B)), 2 * B,
        np.abs(np.linalg.qr(A).R), np.linalg.svd(A).S, np.linalg.svd(A).S,
        np.abs(np.linalg.qr(tall).R), np.linalg.svd(tall).S, np.linalg.svd(tall).S,
        *np.linalg.solve(A[:3], B[:3]),
    ]
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.abs(g) if i in (7, 10) else g  # R up to signs
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10, err_msg=f"result {i}")
    assert xl.backend_of(lazy[0]) == "dask"


def test_singular_error_comes_from_a_worker_with_global_indices(client) -> None:
    A = np.broadcast_to(np.eye(2), (12, 2, 2)).copy()
    A[9] = SINGULAR
    x = xl.solve(da.from_array(A, chunks=(4, 2, 2)), da.ones((12, 2, 1), chunks=(4, 2, 1)))
    with pytest.raises(xl.LinAlgError, match=r"batch index 9 ") as info:
        _on(client, x)
    assert (info.value.indices, info.value.members) == (((9,),), (9,))
    [head] = _on(client, x[:8])  # the chunks without it compute
    np.testing.assert_allclose(head, np.ones((8, 2, 1)))
    xs = xl.solve_many([da.from_array(m) for m in A], [da.ones(2) for _ in A])
    with pytest.raises(xl.LinAlgError, match=r"list position 9;") as info:
        _on(client, *xs)
    assert info.value.members == (9,)


def test_bench_records_the_active_client(client) -> None:
    from xlinalg.backends import _dask_cluster as _dask
    from xlinalg.bench import _fairness as _env

    undo = _dask.configure(threads=1)  # an active Client: used as it is
    try:
        assert dask.config.get("scheduler", None) != "threads"
        state = _env.backend_state("dask")["dask"]
    finally:
        undo()
    assert state["scheduler"] == "distributed"
    assert state["scheduler_address"] == client.scheduler.address
    assert state["dask_workers"] == 2
    assert state["worker_memory_limit"] == [WORKER_MEMORY, WORKER_MEMORY]
    assert "batch" in state["chunking"]


def test_bench_cli_runs_on_a_named_scheduler(client, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    cmd = [sys.executable, "-m", "xlinalg", "bench", "--backends", "dask", "--cases", "a1_gemm",
           "--sizes", "8", "--quick", "--no-calibrate", "--no-report", "--no-progress", "--no-isolate",
           "--scheduler", client.scheduler.address, "--out", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    cells = [r for r in map(json.loads, out.read_text().splitlines()) if "fairness" in r]
    assert cells
    for r in cells:
        assert r["fairness"]["dask"]["scheduler_address"] == client.scheduler.address
        assert r["fairness"]["dask"]["dask_workers"] == 2


def test_bench_starts_and_closes_its_local_cluster(monkeypatch) -> None:
    from distributed import Client

    from xlinalg.backends import _dask_cluster as _dask

    monkeypatch.delenv(_dask.ENV, raising=False)
    with _dask.local_cluster(1, 256 * 2**20, None) as address:
        assert _dask.scheduler_address() == address  # what the timing processes read
        with Client(address, timeout=30) as c:
            info = c.scheduler_info()["workers"]
            assert [w["memory_limit"] for w in info.values()] == [256 * 2**20]
    assert _dask.ENV not in os.environ
    with pytest.raises(OSError):  # closed: nothing listens there any more
        Client(address, timeout=2)


@pytest.mark.parametrize(("argv", "message"), [
    (["--scheduler", "not an address"], "--scheduler: a Dask scheduler address looks like tcp://"),
    (["--dask-memory-limit", "1GiB"], "--dask-memory-limit needs --dask-workers N"),
])
def test_bench_dask_options_are_checked(argv, message, capsys) -> None:
    from xlinalg import cli

    assert cli.main(["bench", "--backends", "dask", "--no-report", *argv]) == cli.ExitCode.USAGE
    assert message in capsys.readouterr().err


def test_bench_refuses_a_scheduler_that_does_not_answer(monkeypatch, capsys) -> None:
    # a well-formed address where nothing listens: one usage error at the start, not
    # a 30 s wait in every timing process and every dask cell failed
    import socket

    from xlinalg import cli
    from xlinalg.backends import _dask_cluster as _dask

    pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'xlinalg[dask]')")
    monkeypatch.setattr(_dask, "PROBE_TIMEOUT_S", 2.0)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["bench", "--backends", "dask", "--cases", "a1_gemm", "--quick", "--no-report",
            "--scheduler", f"tcp://127.0.0.1:{port}"]
    assert cli.main(argv) == cli.ExitCode.USAGE
    assert f"--scheduler: no Dask scheduler answered at tcp://127.0.0.1:{port} within 2 s" in capsys.readouterr().err
    # a scheduler with no worker: said so, with the command that starts one
    from distributed import LocalCluster

    monkeypatch.setattr(_dask, "WORKERS_TIMEOUT_S", 1.0)
    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=":0") as empty:
        argv[-1] = empty.scheduler_address
        assert cli.main(argv) == cli.ExitCode.USAGE
    assert f"has no worker after 1 s; start one (`dask worker {empty.scheduler_address}`)" in capsys.readouterr().err


def test_bench_names_a_bad_scheduler_variable(monkeypatch) -> None:
    from xlinalg.backends import _dask_cluster as _dask

    monkeypatch.setenv(_dask.ENV, "http://x y")
    with pytest.raises(ValueError, match=r"environment variable DASK_SCHEDULER_ADDRESS: .*tcp://HOST:PORT"):
        _dask.configure(None)


def _well_posed(n: int, chunk: int, seed: int):
    """A batch with solution all ones: a random, b = a @ 1 (generated on the workers)."""
    rs = da.random.RandomState(seed)
    a = rs.random_sample((n, 5, 5), chunks=(chunk, 5, 5)) + 5 * da.eye(5)
    return a, a.sum(axis=-1, keepdims=True)


def test_streams_a_batch_larger_than_a_worker(client) -> None:
    n = 1_600_000  # a alone: 305 MiB, more than one worker's 256 MiB
    a, b = _well_posed(n, 50_000, 4)
    assert a.nbytes > WORKER_MEMORY
    [total] = _on(client, xl.solve(a, b).sum())
    assert abs(total - 5 * n) < 1e-6 * n


def test_survives_a_worker_killed_mid_run(client, tmp_path) -> None:
    """A worker killed while it runs a task: every task waits at a gate the test
    opens only after the kill, so the victim certainly dies mid-task, and the result
    needs its task run again elsewhere. Each task leaves a file per start (its
    worker's pid) and one when done, so the test proves the event: the victim ran a
    task, its process is gone, its task never finished there and ran again on
    another worker, and the nanny brought the cluster back to two workers. Every
    wait is bounded."""
    import signal
    import time

    import psutil

    marks = tmp_path / "marks"
    marks.mkdir()
    gate = tmp_path / "gate"
    nchunks = 16
    a, b = _well_posed(nchunks * 4_000, 4_000, 5)
    before = set(client.scheduler_info()["workers"])
    # meta given: Dask must not call _gated on the client to infer it (that would wait at the gate)
    x = xl.solve(a, b).map_blocks(_gated, gate=str(gate), marks=str(marks), dtype=a.dtype,
                                  meta=np.empty((0, 0, 0), dtype=a.dtype))
    future = client.compute(x.sum())

    def started() -> list[int]:
        return [int(f.name.split("-")[1]) for f in marks.glob("start-*")]

    deadline = time.monotonic() + 300  # past a cold numba compile of the kernel in a worker
    while not started():  # a task running in a worker, waiting at the gate
        assert not future.done(), future.exception(timeout=5) if future.status == "error" else future
        assert time.monotonic() < deadline, "no task started on the cluster"
        time.sleep(0.05)
    victim = started()[0]
    os.kill(victim, signal.SIGKILL)  # (a worker of this module's cluster: its nanny starts a new one)
    deadline = time.monotonic() + 60
    while psutil.pid_exists(victim) and psutil.Process(victim).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"worker process {victim} did not die"
        time.sleep(0.05)
    assert not future.done()  # nothing could finish: every task waits at the gate
    gate.touch()
    assert abs(future.result(timeout=300) - 5 * nchunks * 4_000) < 1e-6
    done = [int(f.name.split("-")[1]) for f in marks.glob("done-*")]
    assert victim not in done  # the victim's task never finished there...
    assert len(done) == nchunks  # ...every chunk finished once, elsewhere
    assert len(started()) >= nchunks + 1  # so the killed task ran again
    client.wait_for_workers(2, timeout=120)  # the nanny restarted it
    after = set(client.scheduler_info()["workers"])
    assert len(after) == 2
    assert after != before  # a new worker (address) in place of the dead one


def _gated(x, gate, marks):
    """`x`, once the file `gate` exists (the test creates it); a file in `marks` names
    this process when the task starts and when it is done."""
    import os
    import time
    import uuid

    if x.size == 0:  # never called for meta (it is given), but never waits for one either
        return x
    tag = f"{os.getpid()}-{uuid.uuid4().hex}"
    open(os.path.join(marks, f"start-{tag}"), "w").close()
    deadline = time.monotonic() + 600
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the gate {gate} was never opened")
        time.sleep(0.01)
    open(os.path.join(marks, f"done-{tag}"), "w").close()
    return x
