"""NumPy array subclasses: one rule for every result, empty or not (issue 34, point 7).

The rule (docs/semantics.md): a NumPy result is wrapped as NumPy's ufuncs wrap
theirs, by the subclass input's ``__array_wrap__`` (``return_scalar`` for a 0-d
result): a subclass input gives the subclass for every output, 0-d ones included;
a plain ndarray gives ndarrays, and a NumPy scalar where the result is 0-d. The
functions and their inputs come from the declarations (every public operation that
takes arrays), each called on its sample, a stack of two samples, an empty stack
and 0-size matrices or vectors, with the keywords that take paths of their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from xlinalg._lib._declare import OPERATIONS
from xlinalg._lib._subclass import keep_subclass


class Tagged(np.ndarray):
    pass


class Scalarish(np.ndarray):
    """A subclass whose ``__array_wrap__`` makes a NumPy scalar of a 0-d result
    when asked to (``return_scalar``), as a ufunc asks."""

    def __array_wrap__(self, arr, context=None, return_scalar=False):  # type: ignore[no-untyped-def]
        if return_scalar:
            return arr[()]
        return super().__array_wrap__(arr, context, return_scalar)


#: keywords with code paths of their own (one call each, beside the declared ones)
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "svd": [{"full_matrices": False}, {"compute_uv": False}, {"hermitian": True}],
    "qr": [{"mode": "r"}, {"mode": "complete"}],
    "cholesky": [{"upper": True}],
    "matrix_norm": [{"ord": o} for o in ("nuc", 1, -1, 2, -2, math.inf, -math.inf)] + [{"keepdims": True}],
    "vector_norm": [{"ord": o} for o in (1, 0, math.inf, -math.inf, 3)] + [{"keepdims": True}, {"axis": -1}],
    "trace": [{"offset": 1}],
    "diagonal": [{"offset": 1}],
    "matrix_power": [{"n": 0}, {"n": 1}, {"n": -1}],
    "tensordot": [{"axes": 0}],
    "pinv": [{"rtol": 0.5}],
    "matrix_rank": [{"rtol": 0.5}],
    "lstsq": [{"rcond": 0.5}],
}

#: (function, keywords) that refuse 0-size matrices or vectors by contract (a
#: ValueError on plain input too): a cross product needs 3-vectors; a max or min
#: over no values is undefined
REFUSES_ZERO_SIZE = {("cross", ())} | {
    ("matrix_norm", (("ord", o),)) for o in (1, -1, 2, -2, math.inf, -math.inf)
}


def _shapes(op: Any) -> Iterator[tuple[str, tuple[np.ndarray, ...]]]:
    """The inputs of `op`: its sample (one matrix or vector: 0-d results for the
    reductions), a stack of two, an empty stack and 0-size cores."""
    sample = tuple(np.asarray(s, dtype=np.float64) for s in op.sample_args())
    yield "sample", sample
    if op.batched:  # a right-hand side vector (M,) is stacked as matrices (2, M, 1)
        core = [s[:, None] if kind == "rhs" and s.ndim == 1 else s for s, kind in zip(sample, op.arg_kinds)]
        yield "stack", tuple(np.stack([s, s]) for s in core)
        yield "empty-stack", tuple(np.zeros((0, *s.shape)) for s in core)
    yield "zero-size", tuple(np.zeros((0,) * s.ndim) for s in sample)


def _cases() -> Iterator[Any]:
    for name, op in OPERATIONS.items():
        if op.kind == "sequence":
            continue  # solve_many: below
        for kw in [dict(op.kwargs)] + [{**op.kwargs, **v} for v in VARIANTS.get(name, [])]:
            for shape, args in _shapes(op):
                tag = ",".join(f"{k}={v}" for k, v in kw.items())
                yield pytest.param(name, kw, args, id=f"{name}-{shape}" + (f"-{tag}" if tag else ""))


def _outputs(r: Any) -> list[Any]:
    return list(r) if isinstance(r, tuple) else [r]


def _call(name: str, kw: dict[str, Any], args: tuple[Any, ...]) -> Any:
    with np.errstate(all="ignore"):
        return getattr(xl, name)(*args, **kw)


def test_every_declared_operation_is_covered() -> None:
    # the list of functions is the registry's: a new function is tested here without an edit
    covered = {c.values[0] for c in _cases()}
    assert covered == {n for n, op in OPERATIONS.items() if op.kind != "sequence"}
    assert {"det", "trace", "pinv", "tensordot", "outer", "cross", "eigh", "lstsq"} <= covered
    assert not set(VARIANTS) - covered


@pytest.mark.parametrize(("name", "kw", "args"), list(_cases()))
def test_one_rule_for_every_result(name: str, kw: dict[str, Any], args: tuple[np.ndarray, ...]) -> None:
    if (name, tuple(sorted((k, v) for k, v in kw.items() if k != "n" and k != "axes"))) in REFUSES_ZERO_SIZE \
            and all(a.size == 0 and all(d == 0 for d in a.shape) for a in args):
        # refused on plain input too: the contract, not a subclass matter
        for cls in (np.ndarray, Tagged):
            with pytest.raises(ValueError, match=name):
                _call(name, kw, tuple(a.view(cls) for a in args))
        return
    plain = _outputs(_call(name, kw, args))
    tagged = _outputs(_call(name, kw, tuple(a.view(Tagged) for a in args)))
    assert len(plain) == len(tagged)
    for i, (p, t) in enumerate(zip(plain, tagged)):
        # a subclass input: the subclass, 0-d included
        assert type(t) is Tagged, (name, kw, i, type(t), np.shape(t))
        # a plain input: an ndarray, a NumPy scalar where 0-d (as NumPy's reductions give)
        want = np.ndarray if np.ndim(p) else np.generic
        assert isinstance(p, want), (name, kw, i, type(p))
        assert (type(p) is np.ndarray) == (np.ndim(p) > 0), (name, kw, i, type(p))
        np.testing.assert_array_equal(np.asarray(t), np.asarray(p))
    if len(args) == 2:  # one subclass operand (either one): the subclass wins, as in a ufunc
        for mixed in ((args[0], args[1].view(Tagged)), (args[0].view(Tagged), args[1])):
            for i, t in enumerate(_outputs(_call(name, kw, mixed))):
                assert type(t) is Tagged, (name, kw, i, type(t))


@pytest.mark.parametrize("name", ["det", "trace", "matrix_rank", "vector_norm", "slogdet", "vecdot"])
def test_a_subclass_that_asks_for_scalars_gets_them(name: str) -> None:
    # the 0-d result goes through the subclass's __array_wrap__ with return_scalar,
    # as a ufunc's does: the subclass decides
    args = tuple(a.view(Scalarish) for a in OPERATIONS[name].sample_args())
    for r in _outputs(getattr(xl, name)(*args, **OPERATIONS[name].kwargs)):
        assert isinstance(r, np.generic), (name, type(r))
    args = tuple(np.stack([a, a]).view(Scalarish) for a in OPERATIONS[name].sample_args())
    if name != "vector_norm":  # a stack: arrays of the subclass
        for r in _outputs(getattr(xl, name)(*args, **OPERATIONS[name].kwargs)):
            assert type(r) is Scalarish, (name, type(r))


def test_numpys_choice_between_two_subclasses() -> None:
    class Low(np.ndarray):
        __array_priority__ = 1.0

    class High(np.ndarray):
        __array_priority__ = 2.0

    r = np.ones(3)
    assert type(keep_subclass(r, np.ones(1).view(Low), np.ones(1).view(High))) is High
    assert type(keep_subclass(r, np.ones(1).view(High), np.ones(1).view(Low))) is High
    assert type(keep_subclass(r, np.ones(1), np.ones(1).view(Low))) is Low
    assert type(np.add(np.ones(1).view(Low), np.ones(1).view(High))) is High  # NumPy's own rule
    torch = pytest.importorskip("torch")
    t = torch.ones(2)
    assert keep_subclass(t, np.ones(1).view(Low)) is t  # another library's result is left alone


# ---------------------------------------------------------------------- solve_many
def _systems(n: int, k: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    a = [np.eye(n) * (i + 2) for i in range(k)]
    return a, [np.ones(n) for _ in range(k)]


@pytest.mark.parametrize("n", [3, 70])  # stacked groups, and systems solved one by one (> LOOP_ABOVE)
@pytest.mark.parametrize("which", ["both", "a", "b", "alternate", "none"])
def test_solve_many_members_are_solves_results(n: int, which: str) -> None:
    """x[i] has the type of ``solve(a[i], b[i])``: a subclass of either kept, also
    where the list mixes plain and subclass systems or sizes."""
    a, b = _systems(n, 4)
    a.append(np.eye(2) * 3)  # a second group, of another size
    b.append(np.ones(2))
    for i in range(len(a)):
        sub = {"both": True, "a": True, "b": True, "alternate": i % 2 == 0, "none": False}[which]
        if sub and which != "b":
            a[i] = a[i].view(Tagged)
        if sub and which in ("both", "b", "alternate"):
            b[i] = b[i].view(Tagged)
    xs = xl.solve_many(a, b)
    for i, (x, ai, bi) in enumerate(zip(xs, a, b)):
        assert type(x) is type(xl.solve(ai, bi)), (which, i, type(x))
        assert type(x) is (Tagged if Tagged in (type(ai), type(bi)) else np.ndarray), (which, i, type(x))
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(np.asarray(ai), np.asarray(bi)))


def test_solve_many_of_one_uniform_subclass_list() -> None:
    a, b = _systems(3, 5)  # one group: the stacked fast path
    xs = xl.solve_many([x.view(Tagged) for x in a], [x.view(Tagged) for x in b])
    assert [type(x) for x in xs] == [Tagged] * 5


# ---------------------------------------------------------------------- np.matrix
def test_np_matrix_is_still_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        xl.solve(np.matrix(np.eye(2)), np.ones(2))
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        xl.det(np.matrix(np.eye(2)))
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        xl.solve_many([np.matrix(np.eye(2))], [np.ones(2)])
