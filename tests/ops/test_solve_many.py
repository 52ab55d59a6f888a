"""xlinalg.solve_many: a list of independent systems, solved as a few batched calls,
on every backend, against a loop of NumPy float64 solves."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, random, well_conditioned

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def _compute(backend: BackendCase, xs: list) -> list[np.ndarray]:
    return [backend.np(x) for x in xs]


def test_one_shape_matches_a_loop_of_solves(backend: BackendCase, rng) -> None:
    a = [well_conditioned(rng, (4, 4)) for _ in range(20)]
    b = [random(rng, (4,)) for _ in range(20)]
    xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])
    assert isinstance(xs, list)
    assert len(xs) == 20
    for x, m, v in zip(xs, a, b):
        backend.assert_close(x, np.linalg.solve(m, v), dtype=np.float64)


def test_mixed_shapes_and_rhs_kinds_keep_the_order(backend: BackendCase, rng) -> None:
    # sizes differ, vector and matrix right-hand sides alternate: several groups
    sizes = [2, 3, 2, 5, 3, 1, 5, 2]
    a = [well_conditioned(rng, (n, n)) for n in sizes]
    b = [random(rng, (n,)) if i % 2 else random(rng, (n, 3)) for i, n in enumerate(sizes)]
    xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])
    assert len(xs) == len(sizes)
    for x, m, v in zip(xs, a, b):
        backend.assert_close(x, np.linalg.solve(m, v))


def test_mixed_dtypes_follow_solves_dtype_rule(backend: BackendCase, rng) -> None:
    a = [well_conditioned(rng, (3, 3), np.float32), well_conditioned(rng, (3, 3)),
         well_conditioned(rng, (3, 3), np.float32)]
    b = [random(rng, (3,), np.float32), random(rng, (3,)), random(rng, (3,), np.float32)]
    xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])
    for x, m, v in zip(xs, a, b):
        one = xl.solve(backend.arr(m), backend.arr(v))
        assert x.dtype == one.dtype
        backend.assert_close(x, np.linalg.solve(m.astype(np.float64), v.astype(np.float64)),
                             dtype=m.dtype)


def test_stacked_members_broadcast_within_each_system(backend: BackendCase, rng) -> None:
    # a[i] a stack of 2 matrices, b[i] one vector / one matrix for both: as solve(a[i], b[i])
    a = [well_conditioned(rng, (2, 3, 3)) for _ in range(3)]
    for b in ([random(rng, (3,)) for _ in range(3)], [random(rng, (3, 2)) for _ in range(3)]):
        xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])
        for x, m, v in zip(xs, a, b):
            backend.assert_close(x, np.linalg.solve(m, v if v.ndim == 2 else v[:, None])
                                 [..., 0] if v.ndim == 1 else np.linalg.solve(m, v))


@pytest.mark.parametrize("grouped", [False, True], ids=["one-shape", "grouped"])
def test_singular_systems_are_named_by_list_position(backend: BackendCase, grouped: bool) -> None:
    a = [np.eye(2), 2 * np.eye(2), np.eye(2), SINGULAR, np.eye(2), np.eye(2), 3 * np.eye(2),
         np.zeros((2, 2))]
    b = [np.ones(2) for _ in a]
    if grouped:  # a 3x3 singular system in a second group, between the 2x2 ones
        a.insert(2, np.zeros((3, 3)))
        b.insert(2, np.ones(3))
    want = [2, 4, 8] if grouped else [3, 7]

    def run() -> list[np.ndarray]:
        return _compute(backend, xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b]))

    if backend.lazy:
        xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])  # no error yet
        if grouped:
            # Dask: a result raises when computed, naming the list positions in its chunk
            # (here one chunk per group): the 3x3 group's result names position 2 only
            with pytest.raises(xl.LinAlgError, match=r"1 singular system at list position 2;"):
                backend.np(xs[2])
            want = [4, 8]
            xs = xs[:2]

        def run() -> list[np.ndarray]:
            return _compute(backend, xs)

    with pytest.raises(xl.LinAlgError, match=r"singular systems at list positions "
                       + ", ".join(map(str, want))) as info:
        run()
    assert list(info.value.members) == want
    assert isinstance(info.value, np.linalg.LinAlgError)


def test_errors_nan_gives_nan_for_singular_systems_only(backend: BackendCase, rng) -> None:
    a = [well_conditioned(rng, (2, 2)), SINGULAR, well_conditioned(rng, (3, 3)), np.zeros((3, 3))]
    b = [random(rng, (2,)), np.ones(2), random(rng, (3,)), np.ones(3)]
    xs = _compute(backend, xl.solve_many([backend.arr(m) for m in a],
                                         [backend.arr(v) for v in b], errors="nan"))
    np.testing.assert_allclose(xs[0], np.linalg.solve(a[0], b[0]), rtol=1e-10)
    np.testing.assert_allclose(xs[2], np.linalg.solve(a[2], b[2]), rtol=1e-10)
    assert np.isnan(xs[1]).all()
    assert np.isnan(xs[3]).all()


def test_solve_rule_for_nan_and_subnormal_systems(backend: BackendCase) -> None:
    # docs/semantics.md, "solve: singular, non-finite and subnormal input": only the
    # finite singular system (position 2) is reported; NaN in, NaN out; 1e-310 * I
    # is invertible (its solution overflows)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    nan_sing = sing.copy()
    nan_sing[0, 0] = np.nan
    a = [backend.arr(x) for x in (np.eye(2), nan_sing, sing, 1e-310 * np.eye(2))]
    b = [backend.arr(np.ones(2)) for _ in a]
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as info:
        [backend.np(x) for x in xl.solve_many(a, b)]
    assert info.value.members == (2,)
    with np.errstate(all="ignore"):
        x = [backend.np(r) for r in xl.solve_many(a, b, errors="nan")]
    np.testing.assert_array_equal(x[0], [1.0, 1.0])
    assert np.isnan(x[2]).all()
    assert not np.isfinite(x[1]).all()
    assert not np.isfinite(x[3]).all()


def test_bad_arguments_are_named(backend: BackendCase) -> None:
    assert xl.solve_many([], []) == []
    one = backend.arr(np.eye(2))
    with pytest.raises(ValueError, match=r"`a` has 2 systems but `b` has 1"):
        xl.solve_many([one, one], [backend.arr(np.ones(2))])
    with pytest.raises(TypeError, match=r"sequences .* for one stacked array use xlinalg.solve"):
        xl.solve_many(one, [backend.arr(np.ones(2))])
    with pytest.raises(ValueError, match=r"errors"):
        xl.solve_many([one], [backend.arr(np.ones(2))], errors="ignore")


def _system_error(backend: BackendCase, a: list, b: list) -> str:
    with pytest.raises((ValueError, TypeError)) as info:
        _compute(backend, xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b]))
    return str(info.value)


def test_a_bad_system_is_named_by_its_list_position(backend: BackendCase) -> None:
    # the message names the system as the caller passed it, not the stacked group
    eye3 = np.eye(3)
    msg = _system_error(backend, [eye3], [np.ones(2)])
    assert msg.startswith("solve_many: the system at list position 0: ")
    assert "`b[0]` must have 3 rows to match `a[0]` of shape (3, 3), got shape (2,)" in msg
    assert "(1, " not in msg  # no stacked shape
    # in a uniform list, and in a group of a mixed one: the first of the group, and how many
    msg = _system_error(backend, [eye3] * 4, [np.ones((2, 1))] * 4)
    assert "list position 0 (and 3 more systems of its shapes and dtypes)" in msg
    assert "got shape (2, 1)" in msg
    msg = _system_error(backend, [np.eye(2), eye3, np.eye(2), eye3], [np.ones(2), np.ones(4), np.ones(2), np.ones(4)])
    assert "list position 1 (and 1 more system of its shapes and dtypes)" in msg
    msg = _system_error(backend, [np.ones((2, 3))], [np.ones(2)])
    assert "`a[0]` must be a square matrix" in msg
    # a 0-d b[i] is refused as solve refuses it (stacked, it would make a (1, 1) system)
    msg = _system_error(backend, [np.eye(1)] * 2, [np.float64(1.0)] * 2)
    assert "`b[0]` must be a vector (M,) or a matrix" in msg
    # a dtype no backend solves is named with its position
    if backend.has_dtype(np.float16):
        msg = _system_error(backend, [np.eye(2), np.eye(2, dtype=np.float16)], [np.ones(2)] * 2)
        assert "list position 1: `a[1]` has dtype float16" in msg


def test_host_data_systems_join_their_right_hand_sides_device(backend: BackendCase) -> None:
    # a[i] as a list was converted on the default device (CPU) beside a b[i] on a GPU,
    # where xl.solve(list, b) converts it on b's device
    b = backend.arr(np.array([2.0, 4.0]))
    out = xl.solve_many([[[2.0, 0.0], [0.0, 2.0]], ((1.0, 0.0), (0.0, 1.0))], [b, b])
    for x, want in zip(out, ([1.0, 2.0], [2.0, 4.0])):
        backend.check_owned(x)
        backend.assert_close(x, want)
    host_b = xl.solve_many([backend.arr(np.eye(2) * 2)], [[2.0, 4.0]])[0]  # and b[i] joins a[i]
    backend.check_owned(host_b)
    backend.assert_close(host_b, [1.0, 2.0])


def test_two_libraries_in_one_list_is_an_error(backend: BackendCase) -> None:
    if backend.name == "numpy":
        pytest.skip("needs a second library: the numpy row is covered by every other backend")
    with pytest.raises(TypeError, match=r"NumPy|numpy"):
        xl.solve_many([backend.arr(np.eye(2)), np.eye(2)],
                      [backend.arr(np.ones(2)), np.ones(2)])


def test_inputs_are_not_modified(backend: BackendCase, rng) -> None:
    a = [well_conditioned(rng, (3, 3)) for _ in range(4)]
    b = [random(rng, (3,)) for _ in range(4)]
    aa, bb = [backend.arr(m) for m in a], [backend.arr(v) for v in b]
    _compute(backend, xl.solve_many(aa, bb))
    for x, m in zip(aa + bb, a + b):
        np.testing.assert_array_equal(backend.np(x), m)


def test_large_systems_are_solved_one_by_one_with_the_same_results(backend: BackendCase,
                                                                    rng) -> None:
    # above LOOP_ABOVE no stack is made (no copy); results, order and errors are the same
    from xlinalg._many import LOOP_ABOVE

    n = LOOP_ABOVE + 2
    a = [well_conditioned(rng, (n, n)) for _ in range(3)] + [well_conditioned(rng, (3, 3))]
    b = [random(rng, (n,)) for _ in range(3)] + [random(rng, (3,))]
    xs = xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b])
    for x, m, v in zip(xs, a, b):
        backend.assert_close(x, np.linalg.solve(m, v))
    a[1] = np.zeros((n, n))
    with pytest.raises(xl.LinAlgError) as info:
        _compute(backend, xl.solve_many([backend.arr(m) for m in a], [backend.arr(v) for v in b]))
    assert list(info.value.members) == [1]
    assert "1 singular system at list position 1;" in str(info.value)


# -- NumPy: the stack is built from the arrays' raw bytes when they allow it ---------

def _loop(a: list, b: list) -> list[np.ndarray]:
    return [np.linalg.solve(m, v) for m, v in zip(a, b)]


@pytest.mark.parametrize(
    "layout", ["c", "fortran-member", "strided-rhs", "big-endian", "int"],
)
def test_numpy_stack_of_any_layout_matches_the_loop(layout: str, rng) -> None:
    """Every memory layout and dtype the byte join may meet gives the loop's answers.

    A member that is not C-contiguous cannot export its bytes as they lie: the
    stack must fall back to NumPy's copy (a wrong fallback mixes up elements).
    """
    a = [well_conditioned(rng, (4, 4)) for _ in range(12)]
    b = [random(rng, (4,)) for _ in range(12)]
    want = _loop(a, b)
    if layout == "fortran-member":
        a[5] = np.asfortranarray(a[5])
        assert not a[5].flags.c_contiguous
    elif layout == "strided-rhs":
        b[7] = np.repeat(b[7], 2)[::2]
        assert not b[7].flags.c_contiguous
    elif layout == "big-endian":
        a = [m.astype(">f8") for m in a]
        b = [v.astype(">f8") for v in b]
    elif layout == "int":
        a = [np.rint(m * 4).astype(np.int64) + 9 * np.eye(4, dtype=np.int64) for m in a]
        b = [np.rint(v * 4).astype(np.int32) for v in b]
        want = _loop([m.astype(np.float64) for m in a], [v.astype(np.float64) for v in b])
    xs = xl.solve_many(a, b)
    for x, w in zip(xs, want):
        assert x.dtype == np.float64
        np.testing.assert_allclose(x, w, rtol=1e-12, atol=1e-12)
        assert x.flags.writeable  # a solution the caller may modify, as the loop's


def test_numpy_same_byte_count_but_different_shapes_is_not_stacked(rng) -> None:
    """(4,) and (4, 1) right-hand sides have the same bytes: the shapes decide."""
    a = [well_conditioned(rng, (4, 4)), well_conditioned(rng, (4, 4))]
    b = [random(rng, (4,)), random(rng, (4, 1))]
    xs = xl.solve_many(a, b)
    for x, w in zip(xs, _loop(a, b)):
        assert x.shape == w.shape
        np.testing.assert_allclose(x, w, rtol=1e-12)


def test_numpy_stack_copies_the_inputs(rng) -> None:
    a = [well_conditioned(rng, (3, 3)) for _ in range(4)]
    b = [random(rng, (3,)) for _ in range(4)]
    xs = xl.solve_many(a, b)
    want = [x.copy() for x in xs]
    a2, b2 = a[2].copy(), b[2].copy()
    a[0][...] = 0.0  # later changes to the inputs do not reach the solutions
    b[1][...] = 7.0
    xs[2][...] = -1.0  # and the solutions are not views of the inputs
    for i in (0, 1, 3):
        np.testing.assert_array_equal(xs[i], want[i])
    np.testing.assert_array_equal(a[2], a2)
    np.testing.assert_array_equal(b[2], b2)


@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_torch_results_are_independent_tensors_in_order(rng, vector: bool) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    a = [well_conditioned(rng, (3, 3)) for _ in range(6)]
    b = [random(rng, (3,) if vector else (3, 2)) for _ in range(6)]
    xs = xl.solve_many([torch.from_numpy(m) for m in a], [torch.from_numpy(v) for v in b])
    want = [np.linalg.solve(m, v) for m, v in zip(a, b)]
    for x, w in zip(xs, want):
        assert type(x) is torch.Tensor
        assert not x.requires_grad
        assert tuple(x.shape) == w.shape
        np.testing.assert_allclose(x.numpy(), w, rtol=1e-12)
    xs[2].add_(1.0)  # a write to one member reaches no other
    assert xs[2]._version == 1
    for i in (0, 1, 3, 4, 5):
        np.testing.assert_allclose(xs[i].numpy(), want[i], rtol=1e-12)
        assert xs[i]._version == 0


def test_torch_results_carry_gradients(rng) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    a = [torch.from_numpy(well_conditioned(rng, (3, 3))).requires_grad_() for _ in range(4)]
    b = [torch.from_numpy(random(rng, (3,))) for _ in range(4)]
    xs = xl.solve_many(a, b)
    sum(x.square().sum() for x in xs).backward()
    for m, v in zip(a, b):
        want = torch.autograd.grad(torch.linalg.solve(m, v).square().sum(), m)[0]
        torch.testing.assert_close(m.grad, want)
