"""solve's singular verdict: one rule on every backend and method (issue 34, points 3, 16).

docs/semantics.md, "solve: singular, non-finite and subnormal input": a member is
singular when an LU pivot is ``<= n * eps * max_i |a_ik|``; NaN or inf in a member's
`a` or `b` gives an all-NaN solution and no error. Before, the textbook rank-2 matrix
raised on NumPy, JAX, Dask and strict, solved to 1e15 on torch, and gave finite
garbage with ``method="unrolled"`` everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, require_backend
from test_singular_rule import LADDER32, LADDER64, TEXTBOOK, pivot_ladder

METHODS = ["auto", "native", "unrolled"]


def _arr(backend: BackendCase, x: np.ndarray):
    """`x` on the backend; Dask in one chunk (an error then names every member)."""
    y = backend.arr(x)
    return y.rechunk(-1) if backend.name == "dask" else y


def _solve(backend: BackendCase, a, b, **kw) -> np.ndarray:
    with np.errstate(all="ignore"):
        return backend.np(xl.solve(_arr(backend, a), _arr(backend, b), **kw))


def conditioned(n: int, cond: float, seed: int, dtype=np.float64) -> np.ndarray:
    """``Q1 diag(s) Q2`` with s from 1 down to 1/cond (geometric), random orthogonal Q."""
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.geomspace(1.0, 1.0 / cond, n)
    return ((q1 * s) @ q2).astype(dtype)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_textbook_matrix_is_singular_everywhere(backend: BackendCase, method: str, dtype) -> None:
    scales = [1.0, 1e-300, 1e300] if np.dtype(dtype) != np.float32 else [1.0, 1e-30, 1e30]
    for s in scales:
        a = (s * TEXTBOOK).astype(dtype)
        b = np.ones(3, dtype)
        with pytest.raises(xl.LinAlgError, match=r"`a` is singular") as info:
            _solve(backend, a, b, method=method)
        assert info.value.members == (0,)
        x = _solve(backend, a, b, method=method, errors="nan")
        assert x.shape == (3,)
        assert np.isnan(x).all(), (s, x)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_mixed_batch_names_exactly_the_singular_members(backend: BackendCase, method: str, vector: bool) -> None:
    members = [
        np.eye(3),  # 0
        TEXTBOOK,  # 1: singular (a pivot of 0 or 1e-16)
        pivot_ladder(2.0**-49),  # 2: last pivot 2**-49, above the tolerance 4.5 * 2**-52
        pivot_ladder(2.0**-51),  # 3: last pivot 2**-51, below it
        conditioned(3, 1e10, 1),  # 4: ill-conditioned, solvable
        TEXTBOOK.T * 1e-300,  # 5: singular, tiny
        2 * np.eye(3),  # 6
        pivot_ladder(0.0),  # 7: an exact zero pivot
    ]
    a = np.stack(members)
    b = np.arange(1.0, 4.0) if vector else np.arange(1.0, 3 * 2 * 8 + 1).reshape(8, 3, 2)
    with pytest.raises(xl.LinAlgError, match=r"4 singular matrices .* batch index 1, 3, 5, 7") as info:
        _solve(backend, a, b, method=method)
    assert info.value.members == (1, 3, 5, 7)
    x = _solve(backend, a, b, method=method, errors="nan")
    bad = [1, 3, 5, 7]
    assert np.isnan(x[bad]).all()
    good = [0, 2, 4, 6]
    assert np.isfinite(x[good]).all()
    bm = b[:, None] if vector else b[good]
    xg = x[good][..., None] if vector else x[good]
    # the residual of a backward-stable solve: small against |a| |x|
    res = np.abs(a[good] @ xg - bm).max(axis=(-2, -1))
    size = np.abs(a[good]).max(axis=(-2, -1)) * np.abs(xg).max(axis=(-2, -1))
    assert (res <= 1e-12 * size).all(), res / size


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("dtype", "ladder"), [(np.float64, LADDER64), (np.float32, LADDER32)])
def test_pivot_ladder_verdicts(backend: BackendCase, method: str, dtype, ladder) -> None:
    # pivots computed exactly by every LU: regular down to the tolerance, singular from it
    a = np.stack([pivot_ladder(2.0**-k, dtype) for k, _ in ladder])
    want = tuple(i for i, (_, s) in enumerate(ladder) if s)
    for scale in (1.0, 2.0**-900 if dtype == np.float64 else 2.0**-100, 2.0**900 if dtype == np.float64 else 2.0**100):
        a_s = (a * scale).astype(dtype)
        b = np.ones(3, dtype)
        with pytest.raises(xl.LinAlgError) as info:
            _solve(backend, a_s, b, method=method)
        assert info.value.members == want, scale
        x = _solve(backend, a_s, b, method=method, errors="nan")
        assert np.isnan(x[list(want)]).all()
        assert np.isfinite(x[[i for i in range(len(ladder)) if i not in want]]).all()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("dtype", "conds"),
    [(np.float64, [1e3, 1e8, 1e10, 1e12]), (np.float32, [1e2, 1e3, 1e4])],
)
def test_ill_conditioned_but_solvable_is_not_refused(backend: BackendCase, method: str, dtype, conds) -> None:
    # cond < 1 / (n**2 eps) is never singular by the rule (docs/semantics.md): the
    # solution has the accuracy LAPACK gives it
    n = 4
    a = np.stack([conditioned(n, c, seed, dtype) for seed, c in enumerate(conds)])
    xt = np.random.default_rng(9).standard_normal((len(conds), n, 1)).astype(dtype)
    b = (a.astype(np.float64) @ xt.astype(np.float64)).astype(dtype)
    x = _solve(backend, a, b, method=method)
    assert np.isfinite(x).all()
    eps = np.finfo(dtype).eps
    err = np.abs(x - xt).max(axis=(-2, -1)) / np.abs(xt).max(axis=(-2, -1))
    assert (err <= 100 * n * eps * np.asarray(conds)).all(), err


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("dtype", "delta", "singular"),
    [
        # [[1, 1], [1, 1 + delta]]: pivot delta exactly, cond about 4 / delta
        (np.float64, 2.0**-40, False),  # cond 4e12
        (np.float64, 2.0**-50, False),  # cond 4.5e15: pivot 2**-50 > tolerance 2**-51 (1 + delta)
        (np.float64, 2.0**-52, True),  # cond 1.8e16
        (np.float64, 2.0**-56, True),  # rounds to exactly singular (cond 1e17 and beyond)
        (np.float32, 2.0**-12, False),  # cond 1.6e4
        (np.float32, 2.0**-21, False),  # cond 8e6
        (np.float32, 2.0**-23, True),  # cond 3e7
        (np.float32, 2.0**-27, True),  # cond 5e8: exactly singular in float32
    ],
)
def test_near_singular_at_several_condition_numbers(backend: BackendCase, method: str, dtype, delta, singular) -> None:
    a = np.array([[1.0, 1.0], [1.0, 1.0 + delta]], dtype=dtype)
    b = np.array([1.0, 2.0], dtype=dtype)
    if singular:
        with pytest.raises(xl.LinAlgError):
            _solve(backend, a, b, method=method)
        assert np.isnan(_solve(backend, a, b, method=method, errors="nan")).all()
    else:
        x = _solve(backend, a, b, method=method)
        d = float(np.asarray(a[1, 1], np.float64) - 1.0)
        np.testing.assert_allclose(x, [1.0 - 1.0 / d, 1.0 / d], rtol=1e-6 if dtype == np.float64 else 1e-3)


@pytest.mark.parametrize("method", METHODS)
def test_random_rank_deficient_members_are_singular(backend: BackendCase, method: str) -> None:
    # a rank-2 product of random factors: LU meets a pivot of rounding size (about
    # eps * c_k), under the tolerance n * eps * c_k; scaled, the same
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 4, 2)) @ rng.standard_normal((6, 2, 4))
    # decimal scales (not powers of two: the entries round differently) down to where
    # n * eps * c_k is itself subnormal (1e-300 * 2.2e-16 * 4: 1e-315), up to 1e300
    a = np.concatenate([a, 2.0**-600 * a, 2.0**600 * a, 1e-300 * a, 1e300 * a])
    with pytest.raises(xl.LinAlgError) as info:
        _solve(backend, a, np.ones(4), method=method)
    assert info.value.members == tuple(range(30))
    # and regular members at the same scales stay regular
    q = np.stack([conditioned(4, 1e6, seed) for seed in range(3)])
    q = np.concatenate([q, 1e-300 * q, 1e300 * q])
    x = _solve(backend, q, np.ones(4), method=method)
    assert np.isfinite(x).all()


@pytest.mark.parametrize("method", METHODS)
def test_solve_many_follows_the_rule(backend: BackendCase, method: str) -> None:
    if method != "auto":
        pytest.skip("solve_many takes no method: it calls solve's default")
    a = [np.eye(3), TEXTBOOK, 2 * np.eye(3), pivot_ladder(2.0**-51), np.array([[np.inf, 1.0], [1.0, 1.0]])]
    b = [np.ones(3), np.ones(3), np.ones(3), np.ones(3), np.ones(2)]
    A = [backend.arr(x) for x in a]
    B = [backend.arr(x) for x in b]
    with pytest.raises(xl.LinAlgError) as info:
        [backend.np(x) for x in xl.solve_many(A, B)]
    if backend.name != "dask":  # Dask names the positions of the chunk that raised
        assert info.value.members == (1, 3)
    else:
        assert set(info.value.members) <= {1, 3}
        assert info.value.members
    xs = [backend.np(x) for x in xl.solve_many(A, B, errors="nan")]
    assert [bool(np.isnan(x).all()) for x in xs] == [False, True, False, True, True]
    np.testing.assert_allclose(xs[2], 0.5)


def test_dask_chunks_each_follow_the_rule() -> None:
    require_backend("dask")
    import dask.array as da

    a = np.stack([np.eye(3), TEXTBOOK, 2 * np.eye(3), pivot_ladder(2.0**-51), np.eye(3), TEXTBOOK.T])
    x = xl.solve(da.from_array(a, chunks=(2, 3, 3)), da.from_array(np.ones(3)), errors="nan").compute()
    assert [bool(np.isnan(m).all()) for m in x] == [False, True, False, True, False, True]
    for method in ("native", "unrolled"):
        with pytest.raises(xl.LinAlgError) as info:
            xl.solve(da.from_array(a, chunks=(2, 3, 3)), da.from_array(np.ones(3)), method=method)[4:].compute()
        assert info.value.members == (5,)  # the chunk computed: members 4 and 5


@pytest.mark.parametrize("method", ["auto", "unrolled"])
def test_jax_jit_gives_nan_for_the_rule_s_members(method: str) -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    a = np.stack([np.eye(3), TEXTBOOK, pivot_ladder(2.0**-49), pivot_ladder(2.0**-51),
                  np.array([[np.inf, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])])
    f = jax.jit(lambda a, b: xl.solve(a, b, method=method))  # errors="raise": no exception possible
    x = np.asarray(f(jnp.asarray(a), jnp.ones(3)))
    assert [bool(np.isnan(m).all()) for m in x] == [False, True, False, True, True]
    assert np.isfinite(x[[0, 2]]).all()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("errors", ["raise", "nan"])
def test_nonfinite_members_are_all_nan_beside_regular_ones(backend: BackendCase, method: str, errors: str) -> None:
    a = np.stack([np.eye(2), np.array([[np.inf, 1.0], [1.0, 1.0]]), np.array([[1.0, np.nan], [0.0, 1.0]]),
                  2 * np.eye(2), np.eye(2)])
    b = np.ones((5, 2, 1))
    b[4, 0, 0] = -np.inf
    x = _solve(backend, a, b, method=method, errors=errors)
    assert [bool(np.isnan(m).all()) for m in x] == [False, True, True, False, True]
    np.testing.assert_allclose(x[[0, 3], :, 0], [[1.0, 1.0], [0.5, 0.5]])


ROUTES = ["numpy", "numpy-without-scipy", "torch-host", "torch-ops"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("copies", [1, 3, 40], ids=["one-each", "small-stack", "large-stack"])
def test_every_route_of_the_native_path_gives_the_rule_s_verdict(route: str, copies: int, monkeypatch) -> None:
    # The native path has several routes, chosen by size and by what is installed
    # (docs/performance.md, "singular rule"): NumPy's one gesv a matrix with a screen,
    # one gesv a member for small stacks, the slogdet screen for large ones, the
    # rule's vectorized LU without SciPy; torch through zero-copy NumPy views for small
    # CPU tensors, torch's own LU otherwise. Every route gives the same verdicts.
    from xlinalg.backends import _numpy_adapter, _torch  # noqa: F401 - _torch needs torch below

    if route.startswith("torch"):
        require_backend("torch-cpu")
        import torch

        if route == "torch-ops":
            monkeypatch.setattr("xlinalg.backends._torch_adapter.HOST_SOLVE_MAX_N", 0)
        put = torch.from_numpy
    else:
        put = np.asarray
    if route == "numpy-without-scipy":
        monkeypatch.setattr(_numpy_adapter, "_LAPACK", dict.fromkeys("fdFD"))
    inf_member = np.eye(3)
    inf_member[0, 0] = np.inf  # LAPACK solves it to the finite [0, 1, 1]
    members = [
        np.eye(3),  # regular
        TEXTBOOK,  # singular
        pivot_ladder(2.0**-49),  # regular: last pivot above n·eps
        pivot_ladder(2.0**-51),  # singular: below it
        conditioned(3, 1e10, 1),  # regular, ill-conditioned
        1e-300 * TEXTBOOK.T,  # singular, tiny
        1e300 * TEXTBOOK,  # singular, huge
        1e-300 * conditioned(3, 1e6, 2),  # regular, tiny
        pivot_ladder(0.0),  # an exact zero pivot
        inf_member,  # inf in a: NaN, never singular
    ]
    singular = {1, 3, 5, 6, 8}
    nan_rows = singular | {9}
    a = np.stack(members * copies)
    b = np.ones((len(a), 3, 1))
    b[2, 1, 0] = np.nan  # NaN in b: member 2's solution NaN too, not singular
    nan_rows = {i for i in range(len(a)) if i % len(members) in nan_rows} | {2}
    sing = tuple(i for i in range(len(a)) if i % len(members) in singular)
    # one member at a time (the single-matrix route) and the whole stack
    for i, m in enumerate(members):
        if i in singular:
            with pytest.raises(xl.LinAlgError, match=r"`a` is singular"):
                xl.solve(put(m), put(np.ones(3)))
        with np.errstate(all="ignore"):
            x = np.asarray(xl.solve(put(m), put(np.ones(3)), errors="nan"))
        assert np.isnan(x).all() == (i in singular | {9}), (i, x)
        if i not in singular | {9}:
            np.testing.assert_allclose(m @ x, np.ones(3), rtol=1e-4 if i in (4, 7) else 1e-12)
    with pytest.raises(xl.LinAlgError) as info:
        xl.solve(put(a), put(b))
    assert info.value.members == sing
    with np.errstate(all="ignore"):
        x = np.asarray(xl.solve(put(a), put(b), errors="nan"))
    got = {i for i in range(len(a)) if np.isnan(x[i]).all()}
    assert got == nan_rows
    assert np.isfinite(x[sorted(set(range(len(a))) - nan_rows)]).all()
    # no singular member at all: the inf member is still all NaN, no error
    clean = np.stack([np.eye(3), inf_member, conditioned(3, 1e3, 3)] * copies)
    for errors in ("raise", "nan"):
        with np.errstate(all="ignore"):
            x = np.asarray(xl.solve(put(clean), put(np.ones(3)), errors=errors))
        assert [bool(np.isnan(r).all()) for r in x] == [False, True, False] * copies
        assert np.isfinite(x[0::3]).all()
        assert np.isfinite(x[2::3]).all()
