"""The bad-input matrix: every declared function × every backend × each bad input.

Each cell states the documented outcome: the same exception class *and* a message
naming the argument, or the same documented result, on every backend. Cells where
an input does not apply to a function (a singular matrix for ``add``) say so.
The cells are derived from the operations' declarations (:mod:`xlinalg._badinput`:
the declared deviations, xlinalg's rules, else the NumPy reference), and the site
renders ``docs/bad-input-matrix.md`` from the same :data:`SPEC` when it is built.
Every cell also checks that the inputs were not modified in place.

The second half is differential testing with Hypothesis: random shapes, batch
shapes and dtypes, xlinalg on each backend against NumPy in float64.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xlinalg as xl
from conftest import SELECTED, BackendCase, require_backend
from xlinalg import _badinput
from xlinalg._badinput import (
    SPEC,
    Foreign,
    L,
    Other,
    ReadOnly,
    Sub,
    cells_for,
    host_value,
    matrix_operations,
)
from xlinalg._lib._declare import NA, OPERATIONS, Raises, Returns
from xlinalg._pages import render

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "bad-input-matrix.md"

FUNCTIONS = tuple(op.name for op in matrix_operations())  # the declared array functions
NP_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}
SINGULAR = _badinput.SINGULAR


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


RUN_CELLS = cells_for(SELECTED)


def _outs(out: Any) -> tuple[Any, ...]:
    return tuple(out) if isinstance(out, tuple) else (out,)


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
        op = OPERATIONS[fn]
        with warnings.catch_warnings():
            if op.silent:
                warnings.simplefilter("error")  # promised silent
            outs = _outs(f(*args, **cell.kwargs))
        for o in outs:  # the backend's arrays (a list alone: NumPy's)
            if cell.host:
                assert isinstance(o, (np.ndarray, np.generic)), type(o)
            else:
                bk.check_owned(o)
        got = tuple(bk.np(o) for o in outs)
        if outcome.check is None:  # the reference, in the dtype of the rule
            try:
                op.expected(host, cell.kwargs)
            except Exception as exc:
                pytest.fail(f"{fn} on {inp!r}: NumPy's reference raises {type(exc).__name__}: {exc}; "
                            f"declare the outcome (bad_input={{{inp!r}: ...}} in @declare of {fn})")
            op.check(got, host, cell.kwargs)
        else:
            outcome.check(got, host)
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
def test_the_page_is_built_from_the_spec() -> None:
    # the site fills the marker from the declarations when it is built: no table by hand
    page = DOC.read_text(encoding="utf-8")
    assert "```{xlinalg-generated} bad-input-matrix\n```" in page
    assert "| input |" not in page
    text = render("bad-input-matrix")
    for fn in FUNCTIONS:
        assert f"## `{fn}`" in text
    assert "undeclared" not in text



def test_matrix_is_complete() -> None:
    assert set(FUNCTIONS) == {n for n in xl.__all__ if n in FUNCTIONS}
    assert len(SPEC) == len(FUNCTIONS) * len(_badinput.INPUTS)
    for (fn, inp), cell in SPEC.items():
        if isinstance(cell.outcome, Raises):
            assert "`" in cell.outcome.match, f"{fn}/{inp}: the message must name the argument"
        if not isinstance(cell.outcome, NA):
            assert cell.args, f"{fn}/{inp}"
    # a cell left to the reference must be one NumPy answers (else it is declared)
    missing = _badinput.undeclared()
    assert not missing, "declare these outcomes (bad_input= of @declare): " + "; ".join(missing)


def test_an_outcome_numpy_cannot_give_must_be_declared() -> None:
    # NumPy's inv refuses a 3×4 matrix (and a singular one): a function of `matrix`
    # arguments leaves those cells to its reference until it declares them
    from xlinalg._lib._declare import OPERATIONS as DECLARED
    from xlinalg._lib._declare import declare

    @declare("linalg", args={"x": "matrix"}, reference="numpy.linalg:inv", dtypes="linalg", how="-",
             name="_probe_inv")
    def probe(x):  # pragma: no cover - never called
        return x

    try:
        op = DECLARED["_probe_inv"]
        missing = _badinput.undeclared((op,))
        assert any(m.startswith("_probe_inv/non-square: NumPy's reference raises LinAlgError") for m in missing), missing
        assert any(m.startswith("_probe_inv/singular:") for m in missing), missing
        declared = dataclasses.replace(op, bad_input={"non-square": Raises(ValueError, "`x`"),
                                                      "singular": Raises(ValueError, "`x`")})
        assert not [m for m in _badinput.undeclared((declared,)) if "/non-square" in m or "/singular:" in m]
    finally:
        del DECLARED["_probe_inv"]


def test_deviations_name_known_inputs() -> None:
    for op in matrix_operations():
        unknown = set(op.bad_input) - set(_badinput.INPUTS)
        assert not unknown, f"{op.name}: bad_input names {sorted(unknown)}, not inputs of the matrix"


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
def _xp_functions() -> list[tuple[Any, Callable[[Callable[[Any], Any]], tuple[tuple[Any, ...], dict[str, Any]]]]]:
    """Every public function taking ``xp=`` (each is declared: checked here), with its
    declared sample arguments and keywords; ``make(convert)`` puts them on a backend."""
    import inspect

    from xlinalg._lib._declare import operations

    ops = operations()
    takes_xp = set()
    for name in xl.__all__:
        try:
            if "xp" in inspect.signature(getattr(xl, name)).parameters:
                takes_xp.add(name)
        except (TypeError, ValueError):
            continue
    assert takes_xp == {op.name for op in ops}, "every public function taking `xp` is declared (@declare)"

    def maker(op: Any) -> Callable[[Callable[[Any], Any]], tuple[tuple[Any, ...], dict[str, Any]]]:
        def make(convert: Callable[[Any], Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            args = tuple([convert(e) for e in a] if isinstance(a, (list, tuple)) else convert(a)
                         for a in op.sample_args())
            return args, dict(op.kwargs)

        return make

    return [(op, maker(op)) for op in ops]


@pytest.mark.parametrize("xp", ["numpy", 42, np.linalg], ids=["str", "int", "not-a-namespace"])
def test_xp_that_is_not_a_namespace(xp: Any) -> None:
    for op, make in _xp_functions():
        args, kwargs = make(np.asarray)
        with pytest.raises(TypeError, match=r"`xp` must be an array namespace module, e.g. numpy, .* got ") as info:
            op.func(*args, **kwargs, xp=xp)
        if isinstance(xp, str):
            assert "the str 'numpy'" in str(info.value), op.name


def test_xp_of_another_library_than_the_arrays(backend: BackendCase) -> None:
    if backend.name == "numpy":
        import array_api_strict as other  # any namespace that is not the arrays'
    else:
        other = np
    for op, make in _xp_functions():
        args, kwargs = make(backend.arr)
        first = re.escape(op.arg_names[0])
        with pytest.raises(TypeError, match=rf"`xp` is {other.__name__} but `{first}(\[0\])?` is .*: pass xp=") as info:
            op.func(*args, **kwargs, xp=other)
        assert "leave `xp` out" in str(info.value), op.name
        op.func(*args, **kwargs, xp=backend.namespace())  # the arguments' own namespace fits


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
