"""The semantics every declared operation shares, derived from its declaration.

For each operation on arrays (``@declare`` in ``src/xlinalg``) and each backend:
its results are the NumPy reference's for its sample inputs (drawn inside its
domain), in float64, float32 and complex128 (the dtype rule), for one input and
for a stack of them (linear algebra), on the inputs' backend. A new operation is
tested here without an edit; tests of its own behaviour go in a file of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase
from xlinalg._lib._declare import OPERATIONS, Operation, operations

OPS = [op.name for op in operations() if op.kind in ("linalg", "elementwise")]


def _outs(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


def _run(bk: BackendCase, op: Operation, host: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    outs = _outs(getattr(xl, op.name)(*(bk.arr(a) for a in host), **op.kwargs))
    for o in outs:
        bk.check_owned(o)
    return tuple(bk.np(o) for o in outs)


def _sample(op: Operation, seed: int = 0) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a) for a in op.sample_args(np.random.default_rng(seed)))


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_matches_the_numpy_reference(backend: BackendCase, name: str, dtype: Any) -> None:
    op = OPERATIONS[name]
    host = tuple(a.astype(dtype) for a in _sample(op))
    op.check(_run(backend, op, host), host)


@pytest.mark.parametrize("name", [n for n in OPS if OPERATIONS[n].kind == "linalg" and OPERATIONS[n].batched])
def test_a_stack_gives_the_stack_of_results(backend: BackendCase, name: str) -> None:
    op = OPERATIONS[name]
    one, two = _sample(op, 1), _sample(op, 2)
    # a vector right-hand side is shared by the stack (the standard's rule), not stacked
    shared = [kind == "rhs" and a.ndim == 1 for (_, kind), a in zip(op.args, one)]
    two = tuple(a if s else b for a, b, s in zip(one, two, shared))
    host = tuple(a if s else np.stack([a, b]) for a, b, s in zip(one, two, shared))
    got = _run(backend, op, host)
    op.check(got, host)
    for i, member in enumerate((one, two)):  # each member is its own result
        op.check(tuple(g[i] for g in got), member)


def test_every_array_operation_is_here() -> None:
    public = {n for n in xl.__all__ if n in OPERATIONS}
    assert set(OPS) | {op.name for op in operations("sequence")} == public
    for name in OPS:
        assert OPERATIONS[name].func is getattr(xl, name)
