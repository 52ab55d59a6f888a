"""PyTorch's sparse and nested tensors: a result where torch computes one, else a
TypeError naming the argument and the conversion (never torch's own
NotImplementedError or "NestedTensorImpl doesn't support sizes")."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from xlinalg._capabilities import ELEMENTWISE, LINALG
from xlinalg._lib._declare import OPERATIONS

# (a module-level skip: conftest's require_backend skips inside a test only)
torch = pytest.importorskip("torch", reason="torch is not installed: no sparse or nested tensors to test")

FUNCTIONS = (*LINALG, *ELEMENTWISE)
TWO = tuple(fn for fn in FUNCTIONS if OPERATIONS[fn].arity == 2)  # from the declarations
A = torch.eye(3, dtype=torch.float64) * 2 + 1


def _nested() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are a prototype"
        return torch.nested.nested_tensor([A, A])


LAYOUTS = {
    "sparse_coo": (lambda: A.to_sparse(), r"`{}` is a sparse_coo PyTorch tensor of shape \(3, 3\) .*`{}\.to_dense\(\)`"),
    "sparse_csr": (lambda: A.to_sparse_csr(), r"`{}` is a sparse_csr PyTorch tensor .*`{}\.to_dense\(\)`"),
    "nested": (_nested, r"`{}` is a nested PyTorch tensor of dtype float64 .*`{}\.to_padded_tensor\(0\.0\)`"),
}


def _args(fn: str, x: Any, where: str) -> tuple[Any, ...]:
    if fn not in TWO:
        return (x,)
    # a right-hand side is a vector; else float32: the checked path, not torch's own call
    dense = A[0] if OPERATIONS[fn].arg_kinds[1] == "rhs" else A.float()
    return (x, dense) if where == "first" else (A, x)


CASES = [(fn, where) for fn in FUNCTIONS for where in (("first", "second") if fn in TWO else ("first",))]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize(("fn", "where"), CASES)
def test_result_or_named_error(layout: str, fn: str, where: str) -> None:
    make, pattern = LAYOUTS[layout]
    x = make()
    names = OPERATIONS[fn].arg_names
    arg = names[0] if where == "first" else names[1]
    err: TypeError | None = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(xl, fn)(*_args(fn, x, where), **OPERATIONS[fn].kwargs)
    except TypeError as e:
        err = e
    if err is not None:
        assert re.search(pattern.format(arg, arg), str(err)), str(err)
        assert str(err).startswith(f"{fn}: "), str(err)
        return
    # torch computed it (e.g. sparse @ dense): the values are those of the dense input
    ref = getattr(xl, fn)(*_args(fn, A if layout != "nested" else torch.stack([A, A]), where), **OPERATIONS[fn].kwargs)
    got = out.to_dense() if out.layout is not torch.strided else out
    if got.is_nested:
        got = torch.stack(got.unbind())
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64), rtol=1e-6)


def test_torch_computes_sparse_matmul_and_it_is_kept() -> None:
    # where torch has the kernel, xlinalg passes the sparse tensor through: not refused
    out = xl.matmul(A.to_sparse(), A[0])
    np.testing.assert_allclose(out.numpy(), (A @ A[0]).numpy())


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_linear_algebra_and_to_refuse_them(layout: str) -> None:
    make, pattern = LAYOUTS[layout]
    x = make()
    for fn in ("svd", "svdvals", "qr", "exp", "sigmoid"):
        with pytest.raises(TypeError, match=f"{fn}: " + pattern.format("x", "x")):
            getattr(xl, fn)(x)
    with pytest.raises(TypeError, match="solve: " + pattern.format("a", "a")):
        xl.solve(x, A[0])
    with pytest.raises(TypeError, match="xlinalg.to: " + pattern.format("x", "x")):
        xl.to(x, "numpy")
