"""The bad-input matrix: every public function × every backend × each bad input.

Each cell states the documented outcome: the same exception class *and* a message
naming the argument, or the same documented result, on every backend. Cells where
an input does not apply to a function (a singular matrix for ``add``) say so.
``docs/bad-input-matrix.md`` is rendered from :data:`SPEC` by
``python tools/gen_bad_input_table.py`` and a test checks it is up to date.
Every cell also checks that the inputs were not modified in place.

The second half is differential testing with Hypothesis: random shapes, batch
shapes and dtypes, xlinalg on each backend against NumPy in float64.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xlinalg as xl
from conftest import SELECTED, BackendCase, require_backend
from xlinalg._capabilities import ELEMENTWISE, LINALG

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bad-input-matrix.md"

FUNCTIONS = (*LINALG, *ELEMENTWISE)  # the array functions (xlinalg._capabilities)
BINARY = ("add", "subtract", "multiply", "divide")
UNARY = ("exp", "sigmoid")
DECOMP = ("svd", "svdvals", "qr")
NP_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}

INPUTS = {
    "non-square": "non-square matrix (3×4)",
    "rank<2": "fewer than 2 dimensions (1-D)",
    "mismatched": "mismatched shapes",
    "batch": "incompatible batch shapes",
    "singular": "exactly singular matrix",
    "singular-member": "a singular member inside a batch",
    "near-singular": "numerically singular (cond ≈ 3e16)",
    "nan": "NaN entries",
    "inf": "inf entries",
    "0x0": "0×0 matrix / empty",
    "zero-batch": "zero-size batch (0, …)",
    "int": "integer dtype",
    "bool": "bool dtype",
    "float16": "float16",
    "complex": "complex128",
    "list": "Python lists",
    "list-foreign": "a list of another library's arrays",
    "0-d": "0-d arrays",
    "mixed": "two array libraries",
    "read-only": "read-only NumPy arrays",
    "masked": "NumPy masked array",
    "np.matrix": "`numpy.matrix`",
}

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
_TH = np.pi / 6
_Q = np.array([[np.cos(_TH), -np.sin(_TH)], [np.sin(_TH), np.cos(_TH)]])
NEAR_SINGULAR = _Q @ np.diag([1.0, 1e-17]) @ _Q.T  # cond ~ 3e16: no zero pivot


# ---------------------------------------------------------------------- arguments
@dataclass(frozen=True)
class L:
    """A Python list (host data)."""

    value: Any


@dataclass(frozen=True)
class Other:
    """An array of another library than the backend under test."""

    value: Any


@dataclass(frozen=True)
class ReadOnly:
    """A NumPy array with ``writeable=False``."""

    value: Any


@dataclass(frozen=True)
class Sub:
    """A NumPy array subclass holding `value`: ``"masked"`` (a masked array, its first
    entry masked) or ``"matrix"`` (a ``numpy.matrix``)."""

    kind: str
    value: Any


@dataclass(frozen=True)
class Foreign:
    """A Python list of the rows of `value`, each an array of a library other than
    NumPy and the backend under test (NumPy arrays in a list are host data)."""

    value: Any


def other_library(name: str) -> str:
    return "array-api-strict" if name == "numpy" else "numpy"


def foreign_library(name: str) -> str:
    """A library other than NumPy and `name` whose arrays can be made here."""
    if name != "array-api-strict":
        return "array-api-strict"
    here = xl.available_backends()
    for other in ("torch-cpu", "jax-cpu", "dask"):
        if other in here:
            return other
    pytest.skip("no third CPU library installed (torch, jax or dask) to make a foreign list for array-api-strict")


def make_args(bk: BackendCase, args: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for a in args:
        if isinstance(a, L):
            out.append(np.asarray(a.value).tolist())
        elif isinstance(a, Other):
            out.append(require_backend(other_library(bk.name)).from_numpy(np.asarray(a.value)))
        elif isinstance(a, Foreign):
            lib = require_backend(foreign_library(bk.name))
            out.append([lib.from_numpy(row) for row in np.asarray(a.value)])
        elif isinstance(a, ReadOnly):
            arr = np.array(a.value)
            arr.flags.writeable = False
            out.append(arr)
        elif isinstance(a, Sub) and a.kind == "masked":
            mask = np.zeros(np.shape(a.value), dtype=bool)
            mask.flat[0] = True
            out.append(np.ma.array(a.value, mask=mask))
        elif isinstance(a, Sub):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix itself warns
                out.append(np.asmatrix(a.value))
        else:
            out.append(bk.arr(a))
    return tuple(out)


def host_value(a: Any) -> np.ndarray:
    return np.asarray(a.value if isinstance(a, (L, Foreign, Other, ReadOnly, Sub)) else a)


# ---------------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Raises:
    exc: type
    match: str  # a regex; it names the argument at fault
    text: str = ""  # a short, rendered form of the message
    members: tuple[int, ...] | None = None  # LinAlgError.members, where checked

    def doc(self) -> str:
        return f"`{self.exc.__name__}`: {self.text or self.match}"


@dataclass(frozen=True)
class Returns:
    text: str
    check: Callable[[BackendCase, Any, tuple[np.ndarray, ...]], None] = field(compare=False)

    def doc(self) -> str:
        return f"result: {self.text}"


@dataclass(frozen=True)
class NA:
    why: str

    def doc(self) -> str:
        return f"n/a: {self.why}"


@dataclass(frozen=True)
class Cell:
    args: tuple[Any, ...]
    outcome: Raises | Returns | NA
    kwargs: dict[str, Any] = field(default_factory=dict, compare=False)
    only: tuple[str, ...] | None = None  # backends the input exists on (else n/a)
    only_why: str = ""
    note: str = ""  # per-backend remarks for the table


def _outs(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


# --- reference checks: xlinalg on the backend vs NumPy in float64 (or the exact dtype)
def _ref64(fn: str, args: tuple[np.ndarray, ...]) -> Any:
    wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
    with np.errstate(all="ignore"):
        if fn == "solve":
            return np.linalg.solve(*wide) if wide[1].ndim > 1 else np.linalg.solve(wide[0], wide[1][..., None])[..., 0]
        if fn == "matmul":
            return np.matmul(*wide)
        if fn == "svdvals":
            return np.linalg.svd(wide[0], compute_uv=False)
        if fn == "exp":
            return np.exp(wide[0])
        if fn == "sigmoid":
            return 1.0 / (1.0 + np.exp(-wide[0]))
        return NP_BINARY[fn](*wide)


def matches_numpy(dtype: Any, *, equal_nan: bool = False) -> Callable[..., None]:
    """The result equals NumPy's (float64) answer, in `dtype`."""

    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        bk.assert_close(out, _ref64(fn, args), dtype=dtype, equal_nan=equal_nan)

    return check


def decomposes(dtype: Any) -> Callable[..., None]:
    """svd / svdvals / qr: NumPy's shapes, the dtype, S as NumPy's, reconstruction."""

    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        x = args[0].astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
        real = np.empty(0, dtype).real.dtype
        if fn == "svdvals":
            bk.assert_close(out, np.linalg.svd(x, compute_uv=False), dtype=real)
            return
        parts = [bk.np(o) for o in _outs(out)]
        for o in _outs(out):
            bk.check_owned(o)
        if fn == "svd":
            ref = np.linalg.svd(x)
            assert [p.shape for p in parts] == [r.shape for r in ref]
            u, s, vh = parts
            assert u.dtype == vh.dtype == np.dtype(dtype)
            assert s.dtype == real
            np.testing.assert_allclose(s, ref.S, atol=1e-5 * max(1.0, np.abs(ref.S).max(initial=0)))
            k = s.shape[-1]
            np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], x, atol=1e-5 * max(1, np.abs(x).max(initial=0)))
        else:
            q, r = parts
            ref = np.linalg.qr(x)
            assert (q.shape, r.shape) == (ref.Q.shape, ref.R.shape)
            assert q.dtype == r.dtype == np.dtype(dtype)
            np.testing.assert_allclose(q @ r, x, atol=1e-5 * max(1, np.abs(x).max(initial=0)))

    return check


def shapes_as_numpy(dtype: Any = np.float64) -> Callable[..., None]:
    """Empty results: NumPy's output shapes (and the dtype), on the backend."""

    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        wide = [a.astype(np.float64) for a in args]
        if fn in ("svd", "qr"):
            ref = _outs(np.linalg.svd(wide[0]) if fn == "svd" else np.linalg.qr(wide[0]))
        else:
            ref = (_ref64(fn, tuple(wide)),)
        got = _outs(out)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            bk.check_owned(g)
            h = bk.np(g)
            assert h.shape == np.shape(r), (h.shape, np.shape(r))
            assert h.dtype == np.dtype(dtype)

    return check


def all_nan(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
    bk.check_owned(out)
    assert np.isnan(bk.np(out)).all()


def some_nonfinite(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
    got = np.concatenate([bk.np(o).ravel() for o in _outs(out)])
    assert not np.isfinite(got).all()


def finite_and_huge(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
    x = bk.np(out)
    assert np.isfinite(x).all()
    assert np.abs(x).max() > 1e12


def on_backend(inner: Callable[..., None]) -> Callable[..., None]:
    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        for o in _outs(out):
            bk.check_owned(o)
        inner(bk, out, args, fn)

    return check


def is_numpy(inner: Callable[..., None]) -> Callable[..., None]:
    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        for o in _outs(out):
            assert isinstance(o, (np.ndarray, np.generic)), type(o)
        inner(bk, out, args, fn)

    return check


# ---------------------------------------------------------------------- the spec
MIXED_RE = r"`{0}` is (a|an) .* but `{1}` is (a|an) .*xlinalg\.to\("
NOT_A_LINALG_INPUT = "elementwise: no matrix structure"
ONE_ARG = "one argument"
NO_INVERSE = "matmul inverts nothing"
STRICT_F16 = "array-api-strict has no float16"
HOST_ALONE = "a list alone is host data, owned by NumPy (run on numpy)"
NUMPY_ONLY = "NumPy arrays only"


def spec(fn: str, inp: str) -> Cell:
    """The documented outcome of `fn` on bad input `inp` (the same on every backend)."""
    two = fn in ("solve", "matmul") or fn in BINARY
    na1, na2 = ("a", "b") if fn in ("solve", "matmul") else ("x1", "x2")
    eye2 = np.eye(2) * 2
    if inp == "mixed":
        if not two:
            return Cell((), NA(ONE_ARG))
        a = eye2 if fn in ("solve", "matmul") else np.ones(2)
        return Cell((a, Other(np.ones(2))), Raises(TypeError, MIXED_RE.format(na1, na2),
                                                   f"`{na1}` is a <library> array … but `{na2}` is a <other library> array … `xlinalg.to(...)`"))
    if inp == "read-only":
        a = eye2 if fn in ("solve", "matmul") + DECOMP else np.ones((2, 2))
        args = (ReadOnly(a), ReadOnly(np.ones(2) if fn in ("solve", "matmul") else a)) if two else (ReadOnly(a),)
        chk = decomposes(np.float64) if fn in ("svd", "qr") else matches_numpy(np.float64)
        if fn == "svdvals":
            chk = decomposes(np.float64)
        return Cell(args, Returns("the same result as for writeable arrays", chk), only=("numpy",), only_why=NUMPY_ONLY)
    if inp in ("masked", "np.matrix"):
        # refused by every function and by xlinalg.to (no other library has a mask;
        # np.matrix is no array API array): the message names the argument and the fix
        a = eye2 if fn in ("solve", "matmul") + DECOMP else np.ones((2, 2))
        if inp == "masked":  # the second argument, where there is one: no fast path skips it
            name = na2 if two else "x"
            args = (a, Sub("masked", np.ones(2) if fn in ("solve", "matmul") else a)) if two else (Sub("masked", a),)
            return Cell(args, Raises(TypeError, rf"`{name}` is a NumPy masked array .* with 1 masked entry: .*`{name}\.filled\(value\)`",
                                     f"`{name}` is a NumPy masked array … with 1 masked entry: xlinalg has no masks … pass `{name}.filled(value)` … or `numpy.ma.getdata({name})`"),
                        only=("numpy",), only_why=NUMPY_ONLY)
        name = na1 if two else "x"
        args = (Sub("matrix", a), np.ones(2) if fn in ("solve", "matmul") else a) if two else (Sub("matrix", a),)
        return Cell(args, Raises(TypeError, rf"`{name}` is a numpy\.matrix .*not an array API array.*`numpy\.asarray\({name}\)`",
                                 f"`{name}` is a numpy.matrix …, which is not an array API array …: pass `numpy.asarray({name})`"),
                    only=("numpy",), only_why=NUMPY_ONLY)
    if inp == "list-foreign":
        # another library's arrays inside a list are not host data: NumPy would convert
        # them one by one, off their library and device (a GPU array fails in it)
        name = na1 if two else "x"
        a = eye2 if fn in ("solve", "matmul") + DECOMP else np.ones((2, 2))
        args = (Foreign(a), np.ones(2) if fn in ("solve", "matmul") else a) if two else (Foreign(a),)
        return Cell(args, Raises(TypeError, rf"`{name}` is a Python list holding .* at `{name}\[0\]`: xlinalg converts "
                                 rf"lists and tuples of numbers and NumPy arrays only.*`[\w.]+\.stack\({name}\)`",
                                 f"`{name}` is a Python list holding a <library> array … at `{name}[0]`: xlinalg converts lists "
                                 f"and tuples of numbers and NumPy arrays only … e.g. `torch.stack({name})`"))
    if inp == "list":
        if two:
            a = eye2 if fn in ("solve", "matmul") else np.array([1.0, 2.0])
            return Cell((L(a), np.array([1.0, 2.0])), Returns("a result of the other argument's backend (the list follows it)", on_backend(matches_numpy(np.float64))))
        a = np.array([[3.0, 0.0], [0.0, 4.0]])
        chk = decomposes(np.float64) if fn in DECOMP else matches_numpy(np.float64)
        return Cell((L(a),), Returns("a NumPy result (host data only)", is_numpy(chk)), only=("numpy",), only_why=HOST_ALONE)
    if inp == "float16":
        f16 = np.array([[1.0, 0.5], [0.25, 2.0]], np.float16)
        if fn == "solve":
            out: Raises | Returns = Raises(TypeError, r"solve: `a` has dtype float16", "solve: `a` has dtype float16, which no backend's linear algebra supports uniformly; cast it first …")
            args: tuple[Any, ...] = (f16, np.ones(2, np.float16))
        elif fn in DECOMP:
            out = Raises(TypeError, rf"{fn}: `x` has dtype float16", f"{fn}: `x` has dtype float16 …; cast it first")
            args = (f16,)
        else:
            out = Returns("float16, computed natively", matches_numpy(np.float16))
            args = (f16, f16) if two else (f16,)
        return Cell(args, out, only=tuple(n for n in xl.BACKEND_NAMES if n != "array-api-strict"), only_why=STRICT_F16)

    if fn == "solve":
        return _solve(inp)
    if fn == "matmul":
        return _matmul(inp)
    if fn in DECOMP:
        return _decomp(fn, inp)
    if fn in BINARY:
        return _binary(fn, inp)
    return _unary(fn, inp)


def _solve(inp: str) -> Cell:
    b2 = np.ones(2)
    table: dict[str, Cell] = {
        "non-square": Cell((np.ones((3, 4)), np.ones(3)), Raises(ValueError, r"solve: `a` must be a square matrix or a stack of square matrices, got shape \(3, 4\)", "solve: `a` must be a square matrix or a stack of square matrices, got shape (3, 4) …")),
        "rank<2": Cell((np.ones(3), np.ones(3)), Raises(ValueError, r"solve: `a` must be a square matrix .*\(at least 2 dimensions\)", "solve: `a` must be a square matrix or a stack of square matrices (at least 2 dimensions), got …")),
        "mismatched": Cell((np.eye(3), b2), Raises(ValueError, r"solve: `b` must have 3 rows to match `a`", "solve: `b` must have 3 rows to match `a` of shape (3, 3), got shape (2,)")),
        "batch": Cell((np.ones((2, 3, 3)), np.ones((3, 3, 1))), Raises(ValueError, r"solve: the batch shapes of `a` \(2,\) and `b` \(3,\) do not broadcast", "solve: the batch shapes of `a` (2,) and `b` (3,) do not broadcast")),
        "singular": Cell((SINGULAR, b2), Raises(xl.LinAlgError, r"`a` is singular", "`a` is singular: solve needs an invertible matrix", members=(0,)), note="Dask: when computed. `errors=\"nan\"`: NaN. Under `jax.jit`: NaN."),
        "singular-member": Cell((np.stack([np.eye(2), SINGULAR, eye2 := 2 * np.eye(2)]), b2), Raises(xl.LinAlgError, r"`a` has 1 singular matrix in its batch of shape \(3,\), at batch index 1", "`a` has 1 singular matrix in its batch of shape (3,), at batch index 1; pass errors=\"nan\" …; `.members == (1,)`", members=(1,)), note="Dask: when computed. `errors=\"nan\"`: NaN for member 1 only. Under `jax.jit`: NaN for member 1."),
        "near-singular": Cell((NEAR_SINGULAR, b2), Returns("finite garbage (here ~1e16): LAPACK meets no zero pivot, no backend raises", finite_and_huge)),
        "nan": Cell((np.array([[1.0, np.nan], [0.0, 1.0]]), b2), Returns("all NaN, no error (NaN input is not a singular matrix)", all_nan)),
        "inf": Cell((np.array([[1.0, np.inf], [0.0, 1.0]]), b2), Returns("non-finite values (NaN), no error", some_nonfinite)),
        "0x0": Cell((np.zeros((0, 0)), np.zeros(0)), Returns("shape (0,), float64 (nothing to solve, no check)", shapes_as_numpy())),
        "zero-batch": Cell((np.zeros((0, 3, 3)), np.zeros((0, 3, 2))), Returns("shape (0, 3, 2), float64", shapes_as_numpy())),
        "int": Cell((np.array([[2, 0], [0, 4]]), np.array([2, 2])), Returns("float64 (integers compute in float64)", matches_numpy(np.float64))),
        "bool": Cell((np.eye(2, dtype=bool), np.ones(2, dtype=bool)), Returns("float64", matches_numpy(np.float64))),
        "complex": Cell((np.array([[2 + 1j, 0], [1j, 1]]), np.array([1, 1j])), Returns("complex128, as NumPy (supported everywhere)", matches_numpy(np.complex128))),
        "0-d": Cell((np.float64(2.0), b2), Raises(ValueError, r"solve: `a` must be a square matrix .*at least 2 dimensions", "solve: `a` must be a square matrix … (at least 2 dimensions), got … shape ()")),
    }
    del eye2
    return table[inp]


def _matmul(inp: str) -> Cell:
    table: dict[str, Cell] = {
        "non-square": Cell((), NA("any M×K @ K×N is valid")),
        "rank<2": Cell((np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0])), Returns("1-D operands are vectors (numpy.matmul's rule): a 0-d result", matches_numpy(np.float64))),
        "mismatched": Cell((np.ones((3, 3)), np.ones((2, 1))), Raises(ValueError, r"matmul: `a` has 3 columns but `b` has 2 rows", "matmul: `a` has 3 columns but `b` has 2 rows (shapes (3, 3) and (2, 1))")),
        "batch": Cell((np.ones((2, 3, 3)), np.ones((3, 3, 1))), Raises(ValueError, r"matmul: the batch shapes of `a` \(2,\) and `b` \(3,\) do not broadcast", "matmul: the batch shapes of `a` (2,) and `b` (3,) do not broadcast")),
        "singular": Cell((), NA(NO_INVERSE)),
        "singular-member": Cell((), NA(NO_INVERSE)),
        "near-singular": Cell((), NA(NO_INVERSE)),
        "nan": Cell((np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2)), Returns("NaN where NumPy has NaN", matches_numpy(np.float64, equal_nan=True))),
        "inf": Cell((np.array([[1.0, np.inf], [0.0, 1.0]]), np.ones(2)), Returns("inf where NumPy has inf", matches_numpy(np.float64, equal_nan=True))),
        "0x0": Cell((np.zeros((0, 0)), np.zeros((0, 0))), Returns("shape (0, 0)", shapes_as_numpy())),
        "zero-batch": Cell((np.zeros((0, 3, 3)), np.zeros((0, 3, 2))), Returns("shape (0, 3, 2)", shapes_as_numpy())),
        "int": Cell((np.array([[1, 2], [3, 4]]), np.array([1, 1])), Returns("int64, exact", matches_numpy(np.int64))),
        "bool": Cell((np.eye(2, dtype=bool), np.ones(2, dtype=bool)), Raises(TypeError, r"matmul: operands must be numeric, got `a` .*bool", "matmul: operands must be numeric, got `a` … bool and `b` … bool")),
        "complex": Cell((np.array([[1 + 1j, 2], [0, 1j]]), np.array([1, 1j])), Returns("complex128", matches_numpy(np.complex128))),
        "0-d": Cell((np.float64(2.0), np.ones(2)), Raises(ValueError, r"matmul: operands must have at least one dimension, got `a`", "matmul: operands must have at least one dimension, got `a` … shape () …")),
    }
    return table[inp]


def _decomp(fn: str, inp: str) -> Cell:
    nonfinite: Raises | Returns
    if fn == "qr":
        nonfinite = Returns("non-finite Q and R, no error (which entries: LAPACK-dependent)", some_nonfinite)
    else:
        nonfinite = Raises(xl.LinAlgError, rf"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf", f"{fn}: the SVD of `x` did not converge: `x` contains NaN or inf")
    table: dict[str, Cell] = {
        "non-square": Cell((np.arange(12.0).reshape(3, 4),), Returns("valid (any M×N): as NumPy", decomposes(np.float64))),
        "rank<2": Cell((np.ones(3),), Raises(ValueError, rf"{fn}: `x` must be a matrix or a stack of matrices \(at least 2 dimensions\)", f"{fn}: `x` must be a matrix or a stack of matrices (at least 2 dimensions), got …")),
        "mismatched": Cell((), NA(ONE_ARG)),
        "batch": Cell((), NA(ONE_ARG)),
        "singular": Cell((SINGULAR,), Returns("valid: a zero singular value / zero R diagonal, no error", decomposes(np.float64))),
        "singular-member": Cell((np.stack([np.eye(2), SINGULAR]),), Returns("valid, as NumPy, no error", decomposes(np.float64))),
        "near-singular": Cell((NEAR_SINGULAR,), Returns("valid, as NumPy (smallest singular value ~1e-17)", decomposes(np.float64))),
        "nan": Cell((np.array([[1.0, np.nan], [0.0, 1.0]]),), nonfinite),
        "inf": Cell((np.array([[1.0, np.inf], [0.0, 1.0]]),), nonfinite),
        "0x0": Cell((np.zeros((0, 0)),), Returns("NumPy's shapes ((0, 0), (0,), (0, 0)), float64", shapes_as_numpy())),
        "zero-batch": Cell((np.zeros((0, 3, 2)),), Returns("NumPy's shapes with batch 0, float64", shapes_as_numpy())),
        "int": Cell((np.array([[3, 0], [1, 4]]),), Returns("float64", decomposes(np.float64))),
        "bool": Cell((np.array([[True, False], [True, True]]),), Returns("float64", decomposes(np.float64))),
        "complex": Cell((np.array([[1 + 1j, 2], [0, 1j], [1, 1]]),), Returns("complex128 (S: float64)", decomposes(np.complex128))),
        "0-d": Cell((np.float64(2.0),), Raises(ValueError, rf"{fn}: `x` must be a matrix or a stack of matrices", f"{fn}: `x` must be a matrix or a stack of matrices (at least 2 dimensions), got … shape ()")),
    }
    cell = table[inp]
    if inp in ("nan", "inf") and fn != "qr":
        cell = Cell(cell.args, cell.outcome, note="Dask: when computed. Under `jax.jit`: NaN.")
    return cell


def _binary(fn: str, inp: str) -> Cell:
    bshape = rf"{fn}: the shapes of `x1` {{0}} and `x2` {{1}} do not broadcast"
    a = np.array([1.0, -2.0, 3.0])
    bool_out: Raises | Returns
    if fn == "add":
        bool_out = Returns("bool: logical or (as NumPy, PyTorch, JAX)", matches_bool(np.logical_or))
    elif fn == "multiply":
        bool_out = Returns("bool: logical and", matches_bool(np.logical_and))
    elif fn == "subtract":
        bool_out = Raises(TypeError, r"subtract: `x1` and `x2` are both bool", "subtract: `x1` and `x2` are both bool, for which subtract is not defined; use logical_xor …")
    else:
        bool_out = Returns("float64 (1/0 = inf, 0/0 = NaN, no warning)", matches_numpy(np.float64, equal_nan=True))
    table: dict[str, Cell] = {
        "non-square": Cell((), NA(NOT_A_LINALG_INPUT)),
        "rank<2": Cell((), NA("elementwise: any rank")),
        "mismatched": Cell((np.ones(3), np.ones(2)), Raises(ValueError, bshape.format(r"\(3,\)", r"\(2,\)"), f"{fn}: the shapes of `x1` (3,) and `x2` (2,) do not broadcast")),
        "batch": Cell((np.ones((2, 3, 3)), np.ones((4, 3, 3))), Raises(ValueError, bshape.format(r"\(2, 3, 3\)", r"\(4, 3, 3\)"), f"{fn}: the shapes of `x1` (2, 3, 3) and `x2` (4, 3, 3) do not broadcast")),
        "singular": Cell((), NA(NOT_A_LINALG_INPUT)),
        "singular-member": Cell((), NA(NOT_A_LINALG_INPUT)),
        "near-singular": Cell((), NA(NOT_A_LINALG_INPUT)),
        "nan": Cell((np.array([1.0, np.nan, 3.0]), a), Returns("NaN where an operand is NaN", matches_numpy(np.float64, equal_nan=True))),
        "inf": Cell((np.array([np.inf, -np.inf, 1.0]), a), Returns("IEEE results (±inf), as NumPy" + (", without warnings" if fn == "divide" else ""), matches_numpy(np.float64, equal_nan=True))),
        "0x0": Cell((np.zeros((0, 0)), np.zeros((0, 0))), Returns("shape (0, 0)", shapes_as_numpy())),
        "zero-batch": Cell((np.zeros((0, 3, 3)), np.ones(3)), Returns("shape (0, 3, 3)", shapes_as_numpy())),
        "int": Cell((np.array([4, 5, 6]), np.array([1, 2, 3])), Returns("float64" if fn == "divide" else "int64", matches_numpy(np.float64 if fn == "divide" else np.int64))),
        "bool": Cell((np.array([True, True, False]), np.array([True, False, False])), bool_out),
        "complex": Cell((np.array([1 + 1j, 2j]), np.array([1j, 1 - 1j])), Returns("complex128", matches_numpy(np.complex128))),
        "0-d": Cell((np.float64(2.0), a), Returns("broadcast, as NumPy", matches_numpy(np.float64))),
    }
    return table[inp]


def matches_bool(op: Callable[..., np.ndarray]) -> Callable[..., None]:
    def check(bk: BackendCase, out: Any, args: tuple[np.ndarray, ...], fn: str = "") -> None:
        bk.check_owned(out)
        got = bk.np(out)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, op(*args))

    return check


def _unary(fn: str, inp: str) -> Cell:
    table: dict[str, Cell] = {
        "non-square": Cell((), NA(NOT_A_LINALG_INPUT)),
        "rank<2": Cell((), NA("elementwise: any rank")),
        "mismatched": Cell((), NA(ONE_ARG)),
        "batch": Cell((), NA(ONE_ARG)),
        "singular": Cell((), NA(NOT_A_LINALG_INPUT)),
        "singular-member": Cell((), NA(NOT_A_LINALG_INPUT)),
        "near-singular": Cell((), NA(NOT_A_LINALG_INPUT)),
        "nan": Cell((np.array([1.0, np.nan]),), Returns("NaN where x is NaN, no warning", matches_numpy(np.float64, equal_nan=True))),
        "inf": Cell((np.array([np.inf, -np.inf, 1e4]),), Returns(("[inf, 0, inf]" if fn == "exp" else "[1, 0, 1]") + ", no warning", matches_numpy(np.float64))),
        "0x0": Cell((np.zeros((0, 0)),), Returns("shape (0, 0)", shapes_as_numpy())),
        "zero-batch": Cell((np.zeros((0, 3, 3)),), Returns("shape (0, 3, 3)", shapes_as_numpy())),
        "int": Cell((np.array([0, 1, 2]),), Returns("float64", matches_numpy(np.float64))),
        "bool": Cell((np.array([True, False]),), Returns("float64", matches_numpy(np.float64))),
        "complex": Cell((np.array([0.5 - 2j, 2j]),), Returns("complex128 (sigmoid: 1/(1+exp(-x)), as torch)" if fn == "sigmoid" else "complex128", matches_numpy(np.complex128))),
        "0-d": Cell((np.float64(0.5),), Returns("a 0-d result", matches_numpy(np.float64))),
    }
    return table[inp]


SPEC: dict[tuple[str, str], Cell] = {(fn, inp): spec(fn, inp) for fn in FUNCTIONS for inp in INPUTS}


def cells_for(backends: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """The applicable (function, input, backend) cells: the ones a test runs."""
    out = []
    for (fn, inp), cell in SPEC.items():
        if isinstance(cell.outcome, NA):
            continue
        out.extend((fn, inp, b) for b in backends if cell.only is None or b in cell.only)
    return out


RUN_CELLS = cells_for(SELECTED)


def _call_and_compute(bk: BackendCase, f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for o in _outs(f(*args, **kwargs)):
        bk.np(o)  # Dask: errors that depend on values surface when computed


def _snapshot(bk: BackendCase, args: tuple[Any, ...]) -> list[np.ndarray | None]:
    snaps: list[np.ndarray | None] = []
    for a in args:
        if isinstance(a, list) and a and not isinstance(a[0], (list, float, int)):  # the "list-foreign" cell
            snaps.append(np.stack([require_backend(xl.backend_of(e)).to_numpy(e) for e in a]))
        elif isinstance(a, list):
            snaps.append(np.array(a))
        elif hasattr(a, "shape"):
            try:
                snaps.append(np.array(bk.np(a), copy=True))
            except Exception:  # another library's array (the "mixed" cell)
                snaps.append(np.array(require_backend(xl.backend_of(a)).to_numpy(a), copy=True))
        else:
            snaps.append(None)
    return snaps


@pytest.mark.parametrize(("fn", "inp", "backend_name"), RUN_CELLS, ids=[f"{f}-{i}-{b}" for f, i, b in RUN_CELLS])
def test_bad_input_matrix(fn: str, inp: str, backend_name: str) -> None:
    bk = BackendCase(backend_name, require_backend(backend_name))
    cell = SPEC[fn, inp]
    args = make_args(bk, cell.args)
    before = _snapshot(bk, args)
    host = tuple(host_value(a) for a in cell.args)
    f = getattr(xl, fn)
    outcome = cell.outcome
    if isinstance(outcome, Raises):
        with pytest.raises(Exception) as info:  # the exact class is checked below
            _call_and_compute(bk, f, args, cell.kwargs)
        err = info.value
        assert type(err) is outcome.exc, f"{type(err).__name__} is not {outcome.exc.__name__}: {err}"
        assert re.search(outcome.match, str(err)), f"{str(err)!r} does not match {outcome.match!r}"
        if outcome.members is not None:
            assert err.members == outcome.members
    else:
        assert isinstance(outcome, Returns)
        with warnings.catch_warnings():
            if fn in ("divide", "exp", "sigmoid"):
                warnings.simplefilter("error")  # promised silent
            out = f(*args, **cell.kwargs)
            outcome.check(bk, out, host, fn)
    after = _snapshot(bk, args)
    for b0, b1 in zip(before, after):
        if b0 is not None:
            np.testing.assert_array_equal(b1, b0, err_msg="an input was modified in place")


def test_readonly_singular_batch_with_nan_errors() -> None:
    a = np.stack([np.eye(2), SINGULAR])
    a.flags.writeable = False
    x = xl.solve(a, np.ones(2), errors="nan")
    assert np.isnan(x[1]).all()
    assert np.allclose(x[0], 1.0)


# ---------------------------------------------------------------------- the rendered table
def render_markdown() -> str:
    """docs/bad-input-matrix.md, from SPEC."""
    from conftest import CPU_BACKENDS

    backends = tuple(xl.BACKEND_NAMES)
    n_applicable = len(cells_for(backends))
    n_cpu = len(cells_for(tuple(CPU_BACKENDS)))
    total = len(FUNCTIONS) * len(INPUTS) * len(backends)
    lines = [
        "# Bad-input matrix",
        "",
        "<!-- Generated by `python tools/gen_bad_input_table.py` from `tests/test_bad_input.py`;",
        "     do not edit by hand. `tests/test_bad_input.py` checks it is up to date. -->",
        "",
        "What each public function does with each kind of bad input. **The outcome is the",
        "same on every backend** (numpy, torch-cpu, torch-cuda, cupy, jax-cpu, jax-gpu, dask,",
        "array-api-strict): the same exception class with a message naming the argument, or",
        "the same result. Every applicable cell is a test (`tests/test_bad_input.py`) run on",
        "each installed backend, which also checks that no input was modified in place.",
        "",
        "Remarks that hold everywhere:",
        "",
        "* **Dask** validates shapes and dtypes when the graph is built; errors that depend on",
        "  values (a singular matrix, an SVD of NaN) are raised when the result is computed.",
        "* Under **`jax.jit`** no exception is possible: a singular member gives NaN (solve), an",
        "  SVD of NaN/inf gives NaN.",
        "* `xlinalg.LinAlgError` subclasses `numpy.linalg.LinAlgError` (a `ValueError`) and",
        "  `RuntimeError`.",
        "* Messages are quoted in short form (… elides the description of the array).",
        "",
        f"Cells: {len(FUNCTIONS)} functions × {len(INPUTS)} inputs × {len(backends)} backends = {total}; "
        f"{n_applicable} applicable (tests), of which {n_cpu} on the CPU backends; the rest are n/a.",
        "",
    ]
    for fn in FUNCTIONS:
        lines += [f"## `{fn}`", "", "| input | outcome (every backend) | backends / notes |", "|---|---|---|"]
        for inp, label in INPUTS.items():
            cell = SPEC[fn, inp]
            notes = []
            if cell.only is not None and not isinstance(cell.outcome, NA):
                skipped = [b for b in backends if b not in cell.only and not (cell.only_why == STRICT_F16 and b != "array-api-strict")]
                if cell.only_why == STRICT_F16:
                    notes.append(f"n/a on array-api-strict ({STRICT_F16})")
                elif skipped:
                    notes.append(f"{', '.join(cell.only)} only ({cell.only_why})")
            if cell.note:
                notes.append(cell.note)
            text = cell.outcome.doc().replace("|", "\\|")
            where = "—" if isinstance(cell.outcome, NA) else ("; ".join(notes) or "all")
            lines.append(f"| {label} | {text} | {where} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def test_doc_is_up_to_date() -> None:
    expected = render_markdown()
    assert DOC.exists(), "run: python tools/gen_bad_input_table.py"
    assert DOC.read_text(encoding="utf-8") == expected, "docs/bad-input-matrix.md is stale: run python tools/gen_bad_input_table.py"


def test_matrix_is_complete() -> None:
    assert set(FUNCTIONS) == {n for n in xl.__all__ if n in FUNCTIONS}
    assert len(SPEC) == len(FUNCTIONS) * len(INPUTS)
    for (fn, inp), cell in SPEC.items():
        if isinstance(cell.outcome, Raises):
            assert "`" in cell.outcome.match, f"{fn}/{inp}: the message must name the argument"
        if not isinstance(cell.outcome, NA):
            assert cell.args, f"{fn}/{inp}"


# ---------------------------------------------------------------------- differential
DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.bool_, np.complex128])


def _elements(dtype: Any) -> st.SearchStrategy[Any]:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        return st.integers(-5, 5)
    if dt.kind == "c":
        return st.complex_numbers(max_magnitude=5, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.floats(-5, 5, allow_nan=False, allow_subnormal=False, width=dt.itemsize * 8)


def _rtol(*dtypes: Any) -> float:
    return 1e-3 if any(np.dtype(d) in (np.float32, np.complex64) for d in dtypes) else 1e-9


def _expected_linalg_dtype(*dtypes: Any) -> np.dtype:
    fl = [np.dtype(np.float64) if np.dtype(d).kind in "biu" else np.dtype(d) for d in dtypes]
    return np.result_type(*fl)


@st.composite
def solve_inputs(draw):
    n = draw(st.integers(1, 4))
    ba = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    da, db = draw(DTYPES), draw(DTYPES)
    a = draw(hnp.arrays(da, (*ba, n, n), elements=_elements(da)))
    # invertible: a strongly dominant diagonal (bool: the identity)
    a = np.eye(n, dtype=bool) if da == np.bool_ else a + np.asarray(20 * n, dtype=a.dtype) * np.eye(n, dtype=a.dtype)
    a = np.broadcast_to(a, (*ba, n, n)).copy()
    kind = draw(st.sampled_from(["vector", "matrix"]))
    if kind == "vector":
        bshape: tuple[int, ...] = (n,)
    else:
        bb = draw(hnp.broadcastable_shapes(ba, min_dims=0, max_dims=2, min_side=0, max_side=3))
        bshape = (*bb, n, draw(st.integers(1, 3)))
    b = draw(hnp.arrays(db, bshape, elements=_elements(db)))
    return a, b


@given(ab=solve_inputs())
def test_differential_solve(backend: BackendCase, ab) -> None:
    a, b = ab
    x = xl.solve(backend.arr(a), backend.arr(b))
    dt = _expected_linalg_dtype(a.dtype, b.dtype)
    ref = np.linalg.solve(a.astype(np.complex128 if dt.kind == "c" else np.float64), b[..., None] if b.ndim == 1 else b)
    ref = ref[..., 0] if b.ndim == 1 else ref
    backend.assert_close(x, ref, dtype=dt, rtol=_rtol(dt), atol=_rtol(dt))


@st.composite
def matmul_inputs(draw):
    k = draw(st.integers(0, 4))
    d1, d2 = draw(DTYPES.filter(lambda d: d != np.bool_)), draw(DTYPES.filter(lambda d: d != np.bool_))
    b1 = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    b2 = draw(hnp.broadcastable_shapes(b1, min_dims=0, max_dims=2, min_side=0, max_side=3))
    s1 = draw(st.sampled_from([(k,), (*b1, draw(st.integers(0, 3)), k)]))
    s2 = draw(st.sampled_from([(k,), (*b2, k, draw(st.integers(0, 3)))]))
    return draw(hnp.arrays(d1, s1, elements=_elements(d1))), draw(hnp.arrays(d2, s2, elements=_elements(d2)))


@given(ab=matmul_inputs())
def test_differential_matmul(backend: BackendCase, ab) -> None:
    a, b = ab
    out = xl.matmul(backend.arr(a), backend.arr(b))
    dt = np.result_type(a.dtype, b.dtype)  # NumPy's table, on every backend
    backend.assert_close(out, np.matmul(a.astype(np.complex128), b).astype(dt) if dt.kind == "c" else np.matmul(a.astype(np.float64), b.astype(np.float64)), dtype=dt, rtol=_rtol(dt), atol=_rtol(dt))


@given(
    x=DTYPES.flatmap(lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4), elements=_elements(d))),
    which=st.sampled_from(["svdvals", "svd-full", "svd-reduced", "qr-reduced", "qr-complete"]),
)
def test_differential_decompositions(backend: BackendCase, x, which) -> None:
    dt = _expected_linalg_dtype(x.dtype)
    wide = x.astype(np.complex128 if dt.kind == "c" else np.float64)
    tol = _rtol(dt) * max(1.0, float(np.abs(wide).max(initial=0))) * 10
    real = np.empty(0, dt).real.dtype
    if which == "svdvals":
        backend.assert_close(xl.svdvals(backend.arr(x)), np.linalg.svd(wide, compute_uv=False), dtype=real, rtol=tol, atol=tol)
        return
    if which.startswith("svd"):
        full = which == "svd-full"
        u, s, vh = (backend.np(t) for t in xl.svd(backend.arr(x), full_matrices=full))
        ref = np.linalg.svd(wide, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (ref.U.shape, ref.S.shape, ref.Vh.shape)
        assert u.dtype == dt
        assert s.dtype == real
        k = s.shape[-1]
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], wide, atol=tol)
        return
    mode = which.split("-")[1]
    q, r = (backend.np(t) for t in xl.qr(backend.arr(x), mode=mode))
    ref = np.linalg.qr(wide, mode=mode)
    assert (q.shape, r.shape) == (ref.Q.shape, ref.R.shape)
    assert q.dtype == r.dtype == dt
    np.testing.assert_allclose(q @ r, wide, atol=tol)


@st.composite
def binary_inputs(draw):
    s1 = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    s2 = draw(hnp.broadcastable_shapes(s1, min_dims=0, max_dims=3, min_side=0, max_side=3))
    num = DTYPES.filter(lambda d: d != np.bool_)
    d1, d2 = draw(num), draw(num)
    x1 = draw(hnp.arrays(d1, s1, elements=_elements(d1)))
    x2 = draw(hnp.arrays(d2, s2, elements=_elements(d2)))
    scalar = draw(st.sampled_from([None, "left", "right"]))
    value = draw(st.sampled_from([2, 2.5, -1.5]))
    return x1, x2, scalar, value


@given(inp=binary_inputs(), name=st.sampled_from(list(NP_BINARY)))
def test_differential_elementwise(backend: BackendCase, inp, name) -> None:
    x1, x2, scalar, value = inp
    f, ref_op = getattr(xl, name), NP_BINARY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # division by zero of random ints: IEEE, checked elsewhere
        if scalar is None:
            out = f(backend.arr(x1), backend.arr(x2))
            dt = np.result_type(x1.dtype, x2.dtype)
            if name == "divide" and dt.kind in "iu":
                dt = np.dtype(np.float64)
            with np.errstate(all="ignore"):
                ref = ref_op(x1.astype(np.complex128), x2) if dt.kind == "c" else ref_op(x1.astype(np.float64), x2.astype(np.float64))
        else:
            args = (value, backend.arr(x1)) if scalar == "left" else (backend.arr(x1), value)
            out = f(*args)
            # weak scalars: the array's dtype, unless a float meets an integer array
            dt = x1.dtype
            if dt.kind in "iu" and (isinstance(value, float) or name == "divide"):
                dt = np.dtype(np.float64)
            wide = x1.astype(np.complex128 if dt.kind == "c" else np.float64)
            with np.errstate(all="ignore"):
                ref = ref_op(value, wide) if scalar == "left" else ref_op(wide, value)
        got = backend.np(out)
    backend.check_owned(out)
    assert got.dtype == dt, (got.dtype, dt)
    if dt.kind in "iu":
        # integer arithmetic wraps identically on every backend for these small values
        np.testing.assert_array_equal(got, ref.astype(dt))
    else:
        np.testing.assert_allclose(got, ref.astype(np.complex128 if dt.kind == "c" else np.float64), rtol=_rtol(dt), atol=_rtol(dt), equal_nan=True)


# ---------------------------------------------------------------------- explicit xp=
def _xp_functions() -> list[tuple[str, Callable[..., Any], Callable[[Any], tuple[Any, ...]]]]:
    """Every public function taking ``xp=``, with arguments built from one matrix."""
    import inspect

    two = lambda m: (m, m)  # noqa: E731
    one = lambda m: (m,)  # noqa: E731
    args = {"solve": two, "matmul": two, "add": two, "subtract": two, "multiply": two, "divide": two,
            "solve_many": lambda m: ([m], [m]), "lstsq": two, "outer": lambda m: (m[0, ...], m[0, ...]),
            "tensordot": two, "vecdot": two, "cross": lambda m: (xl.to(np.ones(3), xl.backend_of(m)),) * 2,
            "matrix_power": lambda m: (m, 2)}
    out = []
    for name in xl.__all__:
        f = getattr(xl, name)
        try:
            params = inspect.signature(f).parameters
        except (TypeError, ValueError):
            continue
        if "xp" in params:
            out.append((name, f, args.get(name, one)))
    assert len(out) >= 11, [n for n, _, _ in out]
    return out


@pytest.mark.parametrize("xp", ["numpy", 42, np.linalg], ids=["str", "int", "not-a-namespace"])
def test_xp_that_is_not_a_namespace(xp: Any) -> None:
    for name, f, make in _xp_functions():
        with pytest.raises(TypeError, match=r"`xp` must be an array namespace module, e.g. numpy, .* got ") as info:
            f(*make(np.eye(2)), xp=xp)
        if isinstance(xp, str):
            assert "the str 'numpy'" in str(info.value), name


def test_xp_of_another_library_than_the_arrays(backend: BackendCase) -> None:
    if backend.name == "numpy":
        import array_api_strict as other  # any namespace that is not the arrays'
    else:
        other = np
    m = backend.arr(np.eye(2))
    for name, f, make in _xp_functions():
        with pytest.raises(TypeError, match=rf"`xp` is {other.__name__} but `(a|x|x1|a\[0\])` is .*: pass xp=") as info:
            f(*make(m), xp=other)
        assert "leave `xp` out" in str(info.value), name
        f(*make(m), xp=backend.namespace())  # the arguments' own namespace fits


# ---------------------------------------------------------------------- extended precision
@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="long double is float64 on this platform")
@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble], ids=["float128", "complex256"])
@pytest.mark.parametrize("library", ["numpy", "dask"])
def test_extended_precision(dtype: Any, library: str) -> None:
    be = require_backend(library)
    name = np.dtype(dtype).name
    a = np.eye(3, dtype=dtype) * 2
    arr = be.from_numpy
    for fn, args in ((xl.solve, (a, a)), (xl.svd, (a,)), (xl.svdvals, (a,)), (xl.qr, (a,))):
        with pytest.raises(TypeError, match=rf"has extended precision \({name}\), which is not supported on this path"):
            fn(*[arr(x) for x in args])
    # NumPy computes these in extended precision: so does xlinalg
    for fn, args in ((xl.matmul, (a, a)), (xl.add, (a, a)), (xl.exp, (a,)), (xl.sigmoid, (a,)), (xl.divide, (a, a))):
        got = be.to_numpy(fn(*[arr(x) for x in args]))
        assert got.dtype == np.dtype(dtype), fn.__name__
    # a batch mismatch is a ValueError, as for every dtype
    with pytest.raises(ValueError, match="batch shapes"):
        be.to_numpy(xl.matmul(arr(np.ones((2, 3, 3), dtype)), arr(np.ones((4, 3, 3), dtype))))
