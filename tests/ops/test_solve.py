"""xlinalg.solve: the right-hand-side rule, broadcasting, singular matrices, dtypes,
empty shapes and laziness, on every backend, against NumPy float64."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, random, require_backend, well_conditioned

# (a shape, b shape): the standard's rule — b is a vector only when b.ndim == 1
SHAPES = [
    ((3, 3), (3,)),  # one vector
    ((3, 3), (3, 1)),  # one column
    ((3, 3), (3, 4)),  # several columns
    ((2, 3, 3), (3,)),  # a stack, one vector for all
    ((2, 3, 3), (2, 3, 2)),  # a stack of matrices
    ((3, 3, 3), (3, 3)),  # a (B, M) b with B == M: ONE matrix (torch/CuPy would read vectors)
    ((4, 3, 3), (3, 2)),  # a matrix broadcast over the batch
    ((2, 1, 3, 3), (4, 3, 2)),  # batch dims broadcast (2,1) x (4,) -> (2,4)
    ((1, 3, 3), (5, 3, 1)),  # a broadcast over b's batch
    ((1, 1), (1,)),
]


def _ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), b)


@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_solve_matches_numpy(backend: BackendCase, rng, sa, sb, dtype) -> None:
    a = well_conditioned(rng, sa, dtype)
    b = random(rng, sb, dtype)
    x = xl.solve(backend.arr(a), backend.arr(b))
    backend.assert_close(x, _ref(a, b), dtype=dtype)


def test_matrix_rhs_with_b_ndim_equal_a_ndim_minus_1(backend: BackendCase, rng) -> None:
    # a:(3,3,3), b:(3,3): the standard (and NumPy 2) read b as one 3x3 matrix for every
    # member; torch.linalg.solve would read three vectors. xlinalg == NumPy everywhere.
    a = well_conditioned(rng, (3, 3, 3))
    b = random(rng, (3, 3))
    x = backend.assert_close(xl.solve(backend.arr(a), backend.arr(b)), np.linalg.solve(a, b))
    assert x.shape == (3, 3, 3)
    stacked_vectors = np.stack([np.linalg.solve(a[i], b[i]) for i in range(3)])
    assert not np.allclose(x[..., 0], stacked_vectors)


def test_stacked_vectors_shape_is_an_error(backend: BackendCase, rng) -> None:
    # a:(3,2,2), b:(3,2) is a 3x2 matrix whose 3 rows do not match a's 2: NumPy 2 raises.
    a = well_conditioned(rng, (3, 2, 2))
    with pytest.raises(ValueError, match=r"`b` must have 2 rows"):
        xl.solve(backend.arr(a), backend.arr(random(rng, (3, 2))))
    # the explicit way to solve a batch of vectors: add the column axis
    x = xl.solve(backend.arr(a), backend.arr(random(rng, (3, 2, 1))))
    assert backend.np(x).shape == (3, 2, 1)


@pytest.mark.parametrize("method", ["auto", "native", "unrolled"])
@pytest.mark.parametrize("shape", [(2, 2), (3, 2, 2)], ids=["one", "stack"])
def test_zero_dimensional_b_is_an_error_naming_b(backend: BackendCase, rng, shape, method: str) -> None:
    # a 0-d `b` has no rows: the message names `b`, on the fast path of one matrix too
    a = backend.arr(well_conditioned(rng, shape))
    for b in (backend.arr(np.float64(2.0)), 2.0, np.float64(2.0)):
        with pytest.raises(ValueError, match=r"solve: `b` must be a vector \(M,\) or a matrix .*shape \(\)"):
            xl.solve(a, b, method=method)


def test_incompatible_batches(backend: BackendCase, rng) -> None:
    with pytest.raises(ValueError, match=r"batch shapes of `a` \(2,\) and `b` \(3,\) do not broadcast"):
        xl.solve(backend.arr(well_conditioned(rng, (2, 3, 3))), backend.arr(random(rng, (3, 3, 1))))


# ---------------------------------------------------------------------- singular
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def test_singular_raises_one_error_class(backend: BackendCase) -> None:
    with pytest.raises(xl.LinAlgError, match=r"`a` is singular") as info:
        backend.np(xl.solve(backend.arr(SINGULAR), backend.arr(np.ones(2))))
    err = info.value
    # one class that every existing except clause catches
    assert isinstance(err, np.linalg.LinAlgError)
    assert isinstance(err, ValueError)
    assert isinstance(err, RuntimeError)
    assert err.members == (0,)
    assert err.indices == ((),)


@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_singular_member_of_a_batch(backend: BackendCase, vector: bool) -> None:
    a = np.stack([np.eye(2), SINGULAR, 2 * np.eye(2), np.zeros((2, 2))])
    b = np.ones(2) if vector else np.ones((4, 2, 3))
    if backend.name == "dask":  # each chunk checks its own members: see test_dask_*
        a_, b_ = backend.arr(a).rechunk(-1), backend.arr(b).rechunk(-1)
    else:
        a_, b_ = backend.arr(a), backend.arr(b)
    with pytest.raises(xl.LinAlgError, match=r"2 singular matrices .* batch index 1, 3") as info:
        backend.np(xl.solve(a_, b_))
    assert info.value.members == (1, 3)
    assert info.value.indices == ((1,), (3,))


def test_singular_member_indices_are_in_a_batch(backend: BackendCase) -> None:
    # a:(3,1,2,2) broadcast against b:(4,2,1): the error names a's member (1, 0), once
    a = np.stack([np.eye(2), SINGULAR, 2 * np.eye(2)])[:, None]
    with pytest.raises(xl.LinAlgError) as info:
        backend.np(xl.solve(backend.arr(a), backend.arr(np.ones((4, 2, 1)))))
    assert info.value.indices == ((1, 0),)
    assert info.value.members == (1,)


@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_errors_nan_only_for_singular_members(backend: BackendCase, rng, vector: bool) -> None:
    good = well_conditioned(rng, (2, 2))
    a = np.stack([good, SINGULAR, 2 * good])[:, None]  # (3,1,2,2), broadcast against b
    b = random(rng, (2,) if vector else (4, 2, 3))
    x = backend.np(xl.solve(backend.arr(a), backend.arr(b), errors="nan"))
    assert x.shape == ((3, 1, 2) if vector else (3, 4, 2, 3))
    assert np.isnan(x[1]).all()
    ok = np.delete(a, 1, axis=0)
    np.testing.assert_allclose(np.delete(x, 1, axis=0), np.linalg.solve(ok, b[..., None])[..., 0] if vector else np.linalg.solve(ok, b), rtol=1e-10)


def test_errors_nan_unbatched(backend: BackendCase) -> None:
    x = backend.np(xl.solve(backend.arr(SINGULAR), backend.arr(np.ones(2)), errors="nan"))
    assert x.shape == (2,)
    assert np.isnan(x).all()


@pytest.mark.parametrize("errors", ["warn", "ignore", None, "RAISE"])
def test_errors_option_is_checked(backend: BackendCase, errors) -> None:
    with pytest.raises(ValueError, match=r"`errors` must be one of \('raise', 'nan'\)"):
        xl.solve(backend.arr(np.eye(2)), backend.arr(np.ones(2)), errors=errors)


@pytest.mark.parametrize("method", ["auto", "native", "unrolled"])
def test_numerically_singular_is_singular(backend: BackendCase, method: str) -> None:
    # cond ~ 3e16: LAPACK may or may not meet an exact zero pivot (before: finite
    # garbage ~1e16 on every backend); the rule (docs/semantics.md) calls a pivot
    # below n * eps * its column's scale singular, everywhere
    th = np.pi / 6
    q = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    a = q @ np.diag([1.0, 1e-17]) @ q.T
    assert np.linalg.cond(a) > 1e15
    with pytest.raises(xl.LinAlgError, match=r"`a` is singular"):
        backend.np(xl.solve(backend.arr(a), backend.arr(np.ones(2)), method=method))
    assert np.isnan(backend.np(xl.solve(backend.arr(a), backend.arr(np.ones(2)), errors="nan", method=method))).all()


# LU in float32 meets an exact zero pivot (l = fl32(1/3) = a22, so u22 = 0); in float64
# the pivot is about -1e-8. Backends that solve float32 in float32 must call it
# singular, and the check that names the member must agree with the solve.
SINGULAR_IN_F32 = np.array([[3.0, 1.0], [1.0, 1.0 / 3.0]], dtype=np.float32)


@pytest.mark.parametrize("method", ["auto", "native", "unrolled"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_zero_pivot_in_single_precision_is_singular(backend: BackendCase, dtype, method: str) -> None:
    a = np.stack([np.eye(2), SINGULAR_IN_F32, 2 * np.eye(2)]).astype(dtype)
    b = np.ones(2, dtype)
    # (array-api-strict solves through numpy.linalg.solve, in double precision, where
    # the pivot is about -1e-8: the rule's LU runs in the input's precision there too)
    a_ = backend.arr(a)
    if backend.name == "dask":
        a_ = a_.rechunk(-1)
    with pytest.raises(xl.LinAlgError, match=r"batch index 1") as info:
        backend.np(xl.solve(a_, backend.arr(b), method=method))
    assert info.value.members == (1,)
    x = backend.np(xl.solve(a_, backend.arr(b), errors="nan", method=method))
    assert np.isnan(x[1]).all()
    np.testing.assert_allclose(x[[0, 2]], [[1, 1], [0.5, 0.5]], rtol=1e-6)
    with pytest.raises(xl.LinAlgError, match=r"`a` is singular"):  # one matrix: the fast paths
        backend.np(xl.solve(backend.arr(a[1]), backend.arr(b), method=method))


def test_numpy_members_beside_a_singular_one_keep_their_precision() -> None:
    # errors="nan" with a singular member re-solves the others: in float32, as the
    # same batch without it is solved (numpy.linalg.solve would compute in double)
    rng = np.random.default_rng(5)
    good = (rng.random((3, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.random((3, 4, 2)).astype(np.float32)
    a = good.copy()
    a[1] = 0.0
    x = xl.solve(a, b, errors="nan")
    assert x.dtype == np.float32
    assert np.isnan(x[1]).all()
    alone = xl.solve(good, b)
    np.testing.assert_array_equal(x[[0, 2]], alone[[0, 2]])


@pytest.mark.parametrize("name", ["torch-cuda", "cupy"])
def test_errors_nan_does_not_wait_for_the_gpu(name: str) -> None:
    # errors="nan" is the throughput path on a GPU: no host read of the result, and
    # no blocking host-to-device copy of the NaN (either would synchronize the device)
    be = require_backend(name)
    a = be.from_numpy(np.stack([2 * np.eye(3), [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]]]))
    b = be.from_numpy(np.ones((2, 3, 1)))
    be.synchronize()
    if name == "torch-cuda":
        import torch

        torch.cuda.set_sync_debug_mode("error")
        try:
            x = xl.solve(a, b, errors="nan", method="native")
        finally:
            torch.cuda.set_sync_debug_mode(0)
    else:
        import cupyx

        with cupyx.allow_synchronize(False):
            x = xl.solve(a, b, errors="nan", method="native")
    got = be.to_numpy(x)
    np.testing.assert_allclose(got[0], 0.5)
    assert np.isnan(got[1]).all()


# ---------------------------------------------------------------------- the rule
# docs/semantics.md, "solve: singular, non-finite and subnormal input": a member is
# reported singular iff its a and b are finite and LU meets a pivot <= n * eps * c_k
# (subnormals kept); NaN/inf input gives an all-NaN solution and no error.
NAN_CASES = {
    # name: (a, b)
    "singular-a-with-nan": (np.array([[np.nan, 2.0], [2.0, 4.0]]), np.ones(2)),
    "singular-a-nan-in-b": (SINGULAR, np.array([np.nan, 1.0])),
    "zero-row-and-inf": (np.array([[0.0, 0.0], [0.0, np.inf]]), np.ones(2)),
    "zero-row-and-nan": (np.array([[0.0, 0.0], [0.0, np.nan]]), np.ones(2)),
    "invertible-nan-in-a": (np.array([[np.nan, 0.0], [0.0, 1.0]]), np.ones(2)),
    "invertible-inf-in-b": (np.eye(2), np.array([np.inf, 1.0])),
    # LAPACK's arithmetic gives the finite [0, 1] here (inf times a skipped zero)
    "invertible-inf-in-a": (np.array([[np.inf, 1.0], [1.0, 1.0]]), np.ones(2)),
    "invertible-ninf-in-a": (np.array([[1.0, 1.0], [-np.inf, 1.0]]), np.ones(2)),
    "invertible-nan-in-b": (2 * np.eye(2), np.array([1.0, np.nan])),
}
METHODS = ["auto", "native", "unrolled"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("errors", ["raise", "nan"])
@pytest.mark.parametrize("case", list(NAN_CASES))
def test_nonfinite_input_is_never_singular(backend: BackendCase, case: str, errors: str, method: str) -> None:
    a, b = NAN_CASES[case]
    with np.errstate(all="ignore"):
        x = backend.np(xl.solve(backend.arr(a), backend.arr(b), errors=errors, method=method))
    assert x.shape == (2,)
    assert np.isnan(x).all()  # rule 2: the whole member, whatever the library's arithmetic


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_batch_names_only_the_finite_singular_members(backend: BackendCase, vector: bool, method: str) -> None:
    nan_sing = np.array([[np.nan, 2.0], [2.0, 4.0]])
    a = np.stack([np.eye(2), nan_sing, SINGULAR, SINGULAR, 2 * np.eye(2)])
    b = np.ones((5, 2, 1))
    b[3, 0, 0] = np.nan  # member 3: singular a, NaN in b: no error for it
    bb = b[0, :, 0] if vector else b
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as info:
        backend.np(xl.solve(backend.arr(a), backend.arr(bb), method=method))
    assert info.value.members == ((2, 3) if vector else (2,))
    with np.errstate(all="ignore"):
        x = backend.np(xl.solve(backend.arr(a), backend.arr(bb), errors="nan", method=method))
    assert np.isnan(x[2]).all()
    assert np.isnan(x[1]).all()
    assert np.isnan(x[3]).all()
    np.testing.assert_allclose(x[[0, 4]].reshape(2, -1), [[1, 1], [0.5, 0.5]])


@pytest.mark.parametrize("method", METHODS)
def test_subnormal_pivot_is_not_singular(backend: BackendCase, method: str) -> None:
    # 1e-310 * I is invertible: LAPACK's pivots are 1e-310, not 0 (XLA's CPU code
    # flushes subnormals to zero: JAX must not call it singular). The solution
    # overflows; which entries are inf or NaN is each library's own arithmetic.
    a = 1e-310 * np.eye(2)
    with np.errstate(all="ignore"):
        x = backend.np(xl.solve(backend.arr(a), backend.arr(np.ones(2)), method=method))
        assert x.shape == (2,)
        y = backend.np(xl.solve(backend.arr(a), backend.arr(1e-310 * np.ones((2, 1))), method=method))
    assert y.shape == (2, 1)
    with pytest.raises(xl.LinAlgError):  # a true zero pivot next to a tiny one still raises
        backend.np(xl.solve(backend.arr(np.diag([1e-300, 0.0])), backend.arr(np.ones(2)), method=method))


def test_jax_cpu_arrays_keep_the_cpu_rule_on_a_gpu_machine(monkeypatch) -> None:
    # jax.devices() lists the default backend's devices only: on a GPU machine the
    # adapter took itself for GPU-only, so a jax-cpu array's zero pivots came from
    # XLA's LU (subnormals flushed: 1e-310 * I singular) and devices went unchecked
    require_backend("jax-cpu")
    import types

    import jax

    from xlinalg.backends import _jax_adapter as J

    cpu = jax.devices("cpu")[0]
    monkeypatch.setattr(J, "_every_jax_device", lambda jax: [cpu, types.SimpleNamespace(platform="gpu")])
    ad = J.JaxAdapter()
    # (the fast path checks devices where the default backend has several; the
    # unrolled kernels' cache keys on the device wherever there is more than one)
    assert (ad._all_cpu, ad.fast_device_check, ad.single_device) == (False, False, False)
    a = jax.device_put(np.stack([1e-310 * np.eye(2), np.diag([1.0, 0.0])]), cpu)
    assert ad.zero_pivots(a).tolist() == [False, True]


# ---------------------------------------------------------------------- lazy/traced
def test_jax_jit_gives_nan_for_singular_member() -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    a = jnp.asarray(np.stack([np.eye(2), SINGULAR, 2 * np.eye(2)]))
    f = jax.jit(lambda a, b: xl.solve(a, b))  # errors="raise" cannot raise under a trace
    x = np.asarray(f(a, jnp.ones((3, 2, 1))))
    assert np.isnan(x[1]).all()
    np.testing.assert_allclose(x[[0, 2], :, 0], [[1, 1], [0.5, 0.5]])
    xv = np.asarray(jax.jit(lambda a, b: xl.solve(a, b, errors="nan"))(a, jnp.ones(2)))
    assert np.isnan(xv[1]).all()
    assert np.isfinite(xv[[0, 2]]).all()


def _forbid_compute(*args, **kwargs):  # a Dask scheduler that must not be called
    raise AssertionError("xlinalg forced a Dask compute while building the graph")


def test_dask_builds_a_graph_and_raises_at_compute() -> None:
    require_backend("dask")
    import dask
    import dask.array as da

    a = da.from_array(np.stack([np.eye(2), SINGULAR, np.eye(2), np.eye(2)]), chunks=(2, 2, 2))
    with dask.config.set(scheduler=_forbid_compute):
        x = xl.solve(a, da.ones((2, 1), chunks=-1))  # no compute here
        xn = xl.solve(a, da.ones(2, chunks=-1), errors="nan")
    assert xl.backend_of(x) == "dask"
    with pytest.raises(xl.LinAlgError) as info:
        x.compute()
    assert info.value.indices == ((1,),)  # global index, though the member is in block 0
    v = xn.compute()
    assert np.isnan(v[1]).all()
    assert np.isfinite(v[[0, 2, 3]]).all()


@pytest.mark.parametrize("method", ["native", "unrolled"])
def test_dask_member_in_a_later_block(method: str) -> None:
    require_backend("dask")
    import dask.array as da

    a = np.stack([np.eye(2)] * 5 + [SINGULAR])
    x = xl.solve(da.from_array(a, chunks=(2, 2, 2)), da.ones((2, 1)), method=method)
    with pytest.raises(xl.LinAlgError, match=r"batch index 5 \(in the chunk computed") as info:
        x.compute()
    assert info.value.indices == ((5,),)
    assert info.value.members == (5,)
    # the check travels with each block: chunks without the member compute
    np.testing.assert_allclose(x[:4].compute(), np.ones((4, 2, 1)))


def test_dask_singular_index_in_a_broadcast_batch() -> None:
    # a (2, 3, 2, 2) in chunks of (1, 2) against b (3, 2, 1) in chunks of 1: the
    # error names a's global index in a chunk away from the origin
    require_backend("dask")
    import dask.array as da

    a = np.broadcast_to(np.eye(2), (2, 3, 2, 2)).copy()
    a[1, 2] = SINGULAR
    x = xl.solve(da.from_array(a, chunks=(1, 2, 2, 2)), da.ones((3, 2, 1), chunks=(1, 2, 1)))
    assert x.chunks[:2] == ((1, 1), (1, 1, 1))  # the common refinement, no merge
    with pytest.raises(xl.LinAlgError) as info:
        x.compute()
    assert info.value.indices == ((1, 2),)
    assert info.value.members == (5,)
    np.testing.assert_allclose(x[0].compute(), np.ones((3, 2, 1)))


def test_dask_uneven_chunks_keep_the_graph_linear() -> None:
    # each task carried the starts of every block along uneven batch chunks: a graph
    # pickled task by task (as a cluster ships it) grew with the square of the blocks
    require_backend("dask")
    import cloudpickle
    import dask.array as da

    def solve_tasks_bytes(nblocks: int) -> tuple[int, tuple[object, int]]:
        sizes = (1, 2) * (nblocks // 2)  # uneven: no common block size
        a = np.broadcast_to(np.eye(2), (sum(sizes), 2, 2)).copy()
        a[-2] = SINGULAR  # in the last block, whose start is the last one
        x = xl.solve(da.from_array(a, chunks=(sizes, 2, 2)), da.ones((2, 1), chunks=-1))
        layer = x.__dask_graph__().layers[x.name]
        return sum(len(cloudpickle.dumps(t)) for t in dict(layer).values()), (x, len(a) - 2)

    small, _ = solve_tasks_bytes(100)
    big, (x, member) = solve_tasks_bytes(400)
    assert big < 6 * small, (small, big)  # 4x the blocks: about 4x the bytes, not 16x
    with pytest.raises(xl.LinAlgError) as info:
        x.compute()
    assert info.value.indices == ((member,),)  # the global index, through the shared starts
    np.testing.assert_allclose(x[:5].compute(), np.ones((5, 2, 1)))


# ---------------------------------------------------------------------- dtypes
@pytest.mark.parametrize(
    ("da_", "db", "expected"),
    [
        (np.float32, np.float32, np.float32),
        (np.float64, np.float64, np.float64),
        (np.float32, np.float64, np.float64),
        (np.int64, np.int64, np.float64),
        (np.int32, np.float32, np.float64),  # integers compute in float64
        (np.bool_, np.bool_, np.float64),
        (np.complex64, np.float64, np.complex128),
        (np.complex64, np.complex64, np.complex64),
    ],
)
def test_dtype_rule(backend: BackendCase, da_, db, expected) -> None:
    a = np.array([[2, 0], [0, 1]]).astype(da_)
    b = np.array([1, 1]).astype(db)
    x = xl.solve(backend.arr(a), backend.arr(b))
    backend.assert_close(x, [0.5 if da_ is not np.bool_ else 1.0, 1.0], dtype=expected)


def test_float16_is_refused(backend: BackendCase) -> None:
    if not backend.has_dtype(np.float16):
        pytest.skip(f"{backend.name} has no float16 arrays")
    with pytest.raises(TypeError, match=r"`a` has dtype float16"):
        xl.solve(backend.arr(np.eye(2), np.float16), backend.arr(np.ones(2), np.float16))
    with pytest.raises(TypeError, match=r"`b` has dtype float16"):
        xl.solve(backend.arr(np.eye(2)), backend.arr(np.ones(2), np.float16))


# ---------------------------------------------------------------------- empty shapes
@pytest.mark.parametrize(
    ("sa", "sb", "out"),
    [
        ((0, 0), (0,), (0,)),
        ((0, 0), (0, 3), (0, 3)),
        ((0, 3, 3), (0, 3, 2), (0, 3, 2)),
        ((0, 3, 3), (3,), (0, 3)),
        ((2, 0, 0), (2, 0, 1), (2, 0, 1)),
        ((3, 3), (3, 0), (3, 0)),
        ((2, 1, 3, 3), (0, 3, 1), (2, 0, 3, 1)),
    ],
)
def test_empty_shapes(backend: BackendCase, sa, sb, out) -> None:
    x = xl.solve(backend.arr(np.zeros(sa)), backend.arr(np.zeros(sb)))
    backend.check_owned(x)
    got = backend.np(x)
    assert got.shape == out
    assert got.dtype == np.float64
    # NumPy agrees on the shape (with invertible a: NumPy 2.4 checks a even when b is
    # empty; xlinalg has nothing to solve and returns the empty result)
    eye = np.broadcast_to(np.eye(sa[-1]), sa)
    assert np.linalg.solve(eye, np.zeros(sb)).shape == out


# ---------------------------------------------------------------------- host data
def test_lists_follow_the_array(backend: BackendCase) -> None:
    x = xl.solve(backend.arr(np.diag([2.0, 4.0])), [2.0, 2.0])
    backend.assert_close(x, [1.0, 0.5])
    y = xl.solve([[2.0, 0.0], [0.0, 4.0]], backend.arr(np.ones(2)))
    backend.assert_close(y, [0.5, 0.25])


def test_only_lists_give_numpy() -> None:
    x = xl.solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 2.0])
    assert isinstance(x, np.ndarray)
    np.testing.assert_allclose(x, [1.0, 0.5])


def test_inputs_not_modified(backend: BackendCase, rng) -> None:
    a = np.stack([well_conditioned(rng, (3, 3)), np.zeros((3, 3))])
    b = random(rng, (3, 2))
    xa, xb = backend.arr(a), backend.arr(b)
    backend.np(xl.solve(xa, xb, errors="nan"))
    np.testing.assert_array_equal(backend.np(xa), a)
    np.testing.assert_array_equal(backend.np(xb), b)


def test_broadcast_shapes_agrees_with_numpy() -> None:
    # the pure-Python broadcast used on solve's hot path (NumPy's costs ~4 us a call)
    import itertools

    from xlinalg._lib._shapes import broadcast_shapes

    shapes = [(), (1,), (3,), (2, 1), (1, 3), (2, 3), (4, 1, 3), (4, 2, 3), (5,), (0,), (1, 0)]
    for s1, s2 in itertools.product(shapes, shapes):
        try:
            want = np.broadcast_shapes(s1, s2)
        except ValueError:
            with pytest.raises(ValueError, match="do not broadcast"):
                broadcast_shapes(s1, s2)
        else:
            assert broadcast_shapes(s1, s2) == want


# ---------------------------------------------------------------------- what the check reads
@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_jax_large_result_is_checked_by_a_flag_from_the_program(rng, monkeypatch, vector: bool) -> None:
    """errors="raise" on a large JAX result (issue 21): the compiled call reduces it
    to one flag; the result itself is never looked at on the host (no host look)."""
    be = require_backend("jax-cpu")
    from xlinalg import _dispatch
    from xlinalg.backends import _jax

    n = 4
    batch = _jax.HOST_LOOK_MAX // (n * n) + 1
    a = well_conditioned(rng, (batch, n, n))
    b = random(rng, (n,) if vector else (batch, n, 2))
    ad = _dispatch.adapter_for((be.from_numpy(a),), ("a",))

    def no_host_look(a, b):
        raise AssertionError("a large result was read on the host")

    monkeypatch.setattr(ad, "_solve_cpu", no_host_look)
    x = xl.solve(be.from_numpy(a), be.from_numpy(b), method="native")
    np.testing.assert_allclose(np.asarray(x), _ref(a, b[:, None])[..., 0] if vector else _ref(a, b),
                               rtol=1e-9, atol=1e-12)
    a[7] = 0.0  # singular
    a[9, 0, 0] = np.nan  # NaN in: NaN out, never reported (the rule)
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as info:
        xl.solve(be.from_numpy(a), be.from_numpy(b), method="native")
    assert info.value.members == (7,)


def test_cupy_raise_reduces_the_result_on_the_device(rng, monkeypatch) -> None:
    """CuPy: errors="raise" reduces the rule's verdict on the device to one bool (no
    per-member mask of finite input unless it is set)."""
    be = require_backend("cupy")
    from xlinalg import _dispatch

    a = well_conditioned(rng, (50, 3, 3))
    b = random(rng, (50, 3, 1))
    ad = _dispatch.adapter_for((be.from_numpy(a),), ("a",))
    from xlinalg.backends import _adapter

    assert ad.solve_broadcasts
    with monkeypatch.context() as m:
        m.setattr(_adapter, "singular_members", lambda *args: pytest.fail("per-member masks built"))
        x = xl.solve(be.from_numpy(a), be.from_numpy(b), method="native")
    np.testing.assert_allclose(be.to_numpy(x), _ref(a, b), rtol=1e-9)
    a[3] = 0.0
    with pytest.raises(xl.LinAlgError) as info:
        xl.solve(be.from_numpy(a), be.from_numpy(b), method="native")
    assert info.value.members == (3,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (100,)])
def test_host_finite_check_of_a_result(dtype, shape) -> None:
    """The host look behind JAX's one-system check: any inf or NaN, anywhere, in
    any dtype and shape, makes it say False (and only that, for ordinary values)."""
    from xlinalg.backends._jax_adapter import _host_finite

    h = np.ones(shape, dtype)
    assert _host_finite(h)
    for bad in (np.nan, np.inf, -np.inf) + ((complex(0, np.inf),) if h.dtype.kind == "c" else ()):
        g = h.copy()
        g[(-1,) * g.ndim] = bad
        assert not _host_finite(g), (bad, shape)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("bshape", [(3,), (3, 2), (3, 40)], ids=["vector", "matrix", "wide"])
def test_jax_host_look_of_one_system(dtype: str, bshape) -> None:
    """JAX's one-system check reads the result through the buffer protocol (or, for
    a larger result, NumPy): a non-finite entry anywhere, in a real or an imaginary
    part, sends the call to the checked path (MISSING); a finite result comes back."""
    be = require_backend("jax-cpu")
    import jax.numpy as jnp

    from xlinalg.backends import _base, _jax_adapter

    look = _jax_adapter._finite_or_missing(jnp.linalg.solve)
    a = jnp.asarray(2 * np.eye(3), dtype=dtype)
    b = np.ones(bshape, dtype=dtype)
    x = look(a, jnp.asarray(b))
    assert x is not _base.MISSING
    np.testing.assert_allclose(be.to_numpy(x), b / 2)
    bad = [np.nan, np.inf] + ([complex(1, np.inf), complex(np.nan, 0)] if "complex" in dtype else [])
    for v in bad:
        c = b.copy()
        c[(-1,) * c.ndim] = v
        assert look(a, jnp.asarray(c)) is _base.MISSING, v


def test_jax_solve_fast_refuses_what_the_checked_path_must_answer() -> None:
    """JAX's ``solve_fast`` is one jitted program with no per-call checks: a stack,
    an integer or mixed dtype (a compiled program returning None) and a shape JAX
    refuses must come back as MISSING, so that xl.solve's checked path promotes,
    or raises naming the argument; a well-posed system comes back solved."""
    require_backend("jax-cpu")
    import jax.numpy as jnp

    from xlinalg import _dispatch
    from xlinalg.backends import _base

    a = jnp.asarray(2 * np.eye(3))
    b = jnp.ones(3)
    xl.solve(a, b)  # the first call meets the type
    fast = _dispatch.FAST_SOLVE.get(type(a))
    if fast is None:
        pytest.skip("JAX has more than one device here: no solve_fast (the device check is per call)")
    np.testing.assert_allclose(np.asarray(fast(a, b)), np.full(3, 0.5))
    refused = {
        "stack": (jnp.stack([a, a]), b),
        "integer": (jnp.asarray(2 * np.eye(3, dtype=np.int32)), jnp.ones(3, dtype=jnp.int32)),
        "mixed": (a, jnp.ones(3, dtype=jnp.float32)),
        "shape": (a, jnp.ones(4)),
    }
    for what, (ra, rb) in refused.items():
        for _ in range(2):  # the second call meets the cached program
            assert fast(ra, rb) is _base.MISSING, what
    np.testing.assert_allclose(np.asarray(xl.solve(*refused["integer"])), np.full(3, 0.5))
    with pytest.raises(ValueError, match="b"):
        xl.solve(a, jnp.ones(4))
