"""Elementwise functions on every backend: values, broadcasting, the dtype rule,
weak scalars, bool, and no floating-point warnings where promised."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, random, require_backend
from xlinalg._lib._declare import OPERATIONS, operations

# the elementwise functions and their NumPy references, from their declarations
BINARY = {op.name: op.numpy_reference() for op in operations("elementwise") if op.arity == 2}
UNARY = {op.name: op.numpy_reference() for op in operations("elementwise") if op.arity == 1}
#: those computing integer and bool input in float64 (the dtype rule "float")
TO_FLOAT = [name for name in UNARY if OPERATIONS[name].dtypes == "float"]


def _cast(ref: np.ndarray, dtype) -> np.ndarray:
    """A complex128 reference in `dtype` (real part for real dtypes, without a warning)."""
    ref = np.asarray(ref)
    return (ref if np.dtype(dtype).kind == "c" else ref.real).astype(dtype)


BSHAPES = [((3,), (3,)), ((2, 1), (3,)), ((2, 3, 1), (1, 4)), ((), (3,)), ((0, 3), (3,))]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize(("s1", "s2"), BSHAPES, ids=[f"{a}-{b}" for a, b in BSHAPES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_binary_matches_numpy(backend: BackendCase, rng, name, s1, s2, dtype) -> None:
    x1, x2 = random(rng, s1, dtype), random(rng, s2, dtype)
    out = getattr(xl, name)(backend.arr(x1), backend.arr(x2))
    backend.assert_close(out, _cast(BINARY[name](x1.astype(np.complex128), x2), dtype), dtype=dtype)


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(5,), (2, 3), (), (0,)], ids=str)
def test_unary_matches_numpy(backend: BackendCase, rng, name, dtype, shape) -> None:
    x = OPERATIONS[name].to_domain(random(rng, shape, dtype))  # inside its declared domain
    ref = UNARY[name](x.astype(np.complex128))
    ref = ref if np.dtype(dtype).kind == "c" else ref.real
    backend.assert_close(getattr(xl, name)(backend.arr(x)), ref.astype(dtype), dtype=dtype)


# ---------------------------------------------------------------------- dtype rule
@pytest.mark.parametrize(
    ("d1", "d2", "expected"),
    [
        (np.float32, np.float64, np.float64),
        (np.int32, np.int64, np.int64),
        (np.int64, np.float32, np.float64),  # NumPy's table for mixed kinds (torch/JAX: f32)
        (np.int8, np.float32, np.float32),
        (np.uint8, np.int8, np.int16),
        (np.bool_, np.float32, np.float32),
        (np.bool_, np.int32, np.int32),
        (np.float32, np.complex64, np.complex64),
        (np.float64, np.complex64, np.complex128),
    ],
)
@pytest.mark.parametrize("name", ["add", "multiply"])
def test_array_array_promotion(backend: BackendCase, name, d1, d2, expected) -> None:
    x1 = np.array([1, 0, 1]).astype(d1)
    x2 = np.array([2, 3, 4]).astype(d2)
    out = getattr(xl, name)(backend.arr(x1), backend.arr(x2))
    backend.assert_close(out, BINARY[name](x1, x2).astype(expected), dtype=expected)


@pytest.mark.parametrize(
    ("dtype", "scalar", "expected"),
    [
        (np.float32, 2.0, np.float32),  # weak Python float
        (np.float32, 2, np.float32),
        (np.float64, 2.0, np.float64),
        (np.int32, 2, np.int32),  # weak Python int
        (np.int32, 2.5, np.float64),  # float scalar with an int array: float64 (NumPy)
        (np.int64, 2.5, np.float64),
        (np.float32, 2j, np.complex64),
        (np.bool_, 2.0, np.float64),
        (np.bool_, 2, np.int64),
    ],
)
@pytest.mark.parametrize("side", ["right", "left"])
def test_python_scalars_are_weak(backend: BackendCase, dtype, scalar, expected, side) -> None:
    x = np.array([1, 0, 1]).astype(dtype)
    args = (backend.arr(x), scalar) if side == "right" else (scalar, backend.arr(x))
    out = xl.add(*args)
    backend.assert_close(out, _cast(x.astype(np.complex128) + scalar, expected), dtype=expected)


def test_numpy_scalars_act_like_python_scalars(backend: BackendCase) -> None:
    x = backend.arr(np.ones(3, np.float32))
    out = xl.multiply(x, np.float64(2.0))
    if backend.name == "numpy":
        # next to a NumPy array, NumPy's own rule: np.float64 is a float64 array
        backend.assert_close(out, [2.0, 2.0, 2.0], dtype=np.float64)
    else:
        backend.assert_close(out, [2.0, 2.0, 2.0], dtype=np.float32)
        backend.assert_close(xl.add(np.int64(1), x), [2.0, 2.0, 2.0], dtype=np.float32)


@pytest.mark.parametrize(("d1", "d2"), [(np.int32, np.int32), (np.int64, np.float32), (np.bool_, np.bool_)])
def test_divide_integers_in_float64(backend: BackendCase, d1, d2) -> None:
    x1, x2 = np.array([1, 1, 0]).astype(d1), np.array([2, 1, 1]).astype(d2)
    out = xl.divide(backend.arr(x1), backend.arr(x2))
    backend.assert_close(out, x1 / x2.astype(np.float64), dtype=np.float64)
    backend.assert_close(xl.divide(backend.arr(x1), 2), x1 / 2.0, dtype=np.float64)
    weak = np.float64 if np.dtype(d2).kind in "ib" else d2  # a Python scalar is weak
    backend.assert_close(xl.divide(1, backend.arr(x2)), 1 / x2.astype(np.float64), dtype=weak)


@pytest.mark.parametrize("name", TO_FLOAT)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_unary_integers_in_float64(backend: BackendCase, name, dtype) -> None:
    x = np.array([0, 1, 1]).astype(dtype)
    backend.assert_close(getattr(xl, name)(backend.arr(x)), UNARY[name](x.astype(np.float64)), dtype=np.float64)


@pytest.mark.parametrize("name", [*BINARY, *UNARY])
def test_float16_is_native(backend: BackendCase, name) -> None:
    if not backend.has_dtype(np.float16):
        pytest.skip(f"{backend.name} has no float16 arrays")
    x = np.array([0.5, 1.0, 2.0], np.float16)
    args = (backend.arr(x),) if name in UNARY else (backend.arr(x), backend.arr(x))
    ref = UNARY[name](x.astype(np.float64)) if name in UNARY else BINARY[name](x.astype(np.float64), x)
    backend.assert_close(getattr(xl, name)(*args), ref, dtype=np.float16)


# ---------------------------------------------------------------------- bool
def test_bool_rules(backend: BackendCase) -> None:
    t, f = np.array([True, True, False]), np.array([True, False, False])
    backend.assert_close(xl.add(backend.arr(t), backend.arr(f)), t | f, dtype=bool)
    backend.assert_close(xl.multiply(backend.arr(t), backend.arr(f)), t & f, dtype=bool)
    backend.assert_close(xl.add(backend.arr(t), True), t | True, dtype=bool)
    with pytest.raises(TypeError, match=r"subtract: `x1` and `x2` are both bool"):
        xl.subtract(backend.arr(t), backend.arr(f))


def test_python_int_out_of_range(backend: BackendCase) -> None:
    x = backend.arr(np.array([1, 2], np.uint8))
    with pytest.raises(OverflowError, match=r"the Python int `x2` = 300 is out of the range of `x1`'s dtype uint8"):
        xl.add(x, 300)
    with pytest.raises(OverflowError, match=r"`x1` = -1 .* `x2`'s dtype uint8"):
        xl.multiply(-1, x)
    backend.assert_close(xl.add(x, 253), np.array([254, 255], np.uint8), dtype=np.uint8)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_python_int_beyond_int64_with_a_float_array(backend: BackendCase, dtype) -> None:
    # torch and JAX parse a Python int as int64 and refused 2**70; NumPy converts it
    # to the float it stands for (inf past the dtype's range): so does every backend
    x = backend.arr(np.array([1.0, -2.0], dtype))
    for v in (2**70, -(2**100), 2**200):
        with np.errstate(over="ignore"):
            ref = np.array([1.0, -2.0], dtype) + v
        out = backend.np(xl.add(x, v))
        assert out.dtype == np.dtype(dtype), (v, out.dtype)
        np.testing.assert_array_equal(out, ref, err_msg=str(v))
    backend.assert_close(xl.subtract(2**70, x), 2.0**70 - np.array([1.0, -2.0]), dtype=dtype)
    with pytest.raises(OverflowError, match=r"add: the Python int `x2` = about 10\*\*400 is beyond the range of every "
                                            r"float dtype"):
        xl.add(x, 10**400)
    with pytest.raises(OverflowError, match=r"multiply: the Python int `x1` = about -10\*\*309 "):
        xl.multiply(-(10**308) * 10, x)
    # past 4,300 digits str() of an int raises ValueError: the message must not
    with pytest.raises(OverflowError, match=r"the Python int `x2` = about 10\*\*5000 is beyond"):
        xl.add(x, 10**5000)


def test_a_huge_python_int_is_named_by_its_size(backend: BackendCase) -> None:
    x = backend.arr(np.array([1, 2], np.int8))
    with pytest.raises(OverflowError, match=r"the Python int `x2` = about -10\*\*5000 is out of the range of `x1`'s dtype int8"):
        xl.subtract(x, -(10**5000))
    with pytest.raises(OverflowError, match=r"the Python int `x2` = 340282366920938463463374607431768211455 is out"):
        xl.add(x, 2**128 - 1)  # up to 128 bits: every digit


# ---------------------------------------------------------------------- shapes
@pytest.mark.parametrize("name", list(BINARY))
def test_shapes_must_broadcast(backend: BackendCase, name) -> None:
    with pytest.raises(ValueError, match=rf"{name}: the shapes of `x1` \(3,\) and `x2` \(2,\) do not broadcast"):
        getattr(xl, name)(backend.arr(np.ones(3)), backend.arr(np.ones(2)))


# ---------------------------------------------------------------------- IEEE, no warnings
def _no_warnings(bk: BackendCase, fn, *args) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return bk.np(fn(*args))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_divide_by_zero_is_ieee_and_silent(backend: BackendCase, dtype) -> None:
    x1, x2 = np.array([1.0, -1.0, 0.0], dtype), np.zeros(3, dtype)
    got = _no_warnings(backend, xl.divide, backend.arr(x1), backend.arr(x2))
    np.testing.assert_array_equal(got, [np.inf, -np.inf, np.nan])
    got = _no_warnings(backend, xl.divide, backend.arr(np.array([1, 0])), backend.arr(np.array([0, 0])))
    np.testing.assert_array_equal(got, [np.inf, np.nan])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_overflow_is_silent(backend: BackendCase, dtype) -> None:
    got = _no_warnings(backend, xl.exp, backend.arr(np.array([1e4, -1e4, np.inf, -np.inf, np.nan], dtype)))
    np.testing.assert_array_equal(got, np.array([np.inf, 0.0, np.inf, 0.0, np.nan], dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_sigmoid_extremes(backend: BackendCase, dtype) -> None:
    if not backend.has_dtype(dtype):
        pytest.skip(f"{backend.name} has no {np.dtype(dtype).name} arrays")
    x = np.array([-1e4, -800.0, -100.0, -30.0, 0.0, 30.0, 100.0, 800.0, 1e4, np.inf, -np.inf], dtype)
    got = _no_warnings(backend, xl.sigmoid, backend.arr(x))
    assert got.dtype == np.dtype(dtype)
    finite = np.isfinite(x)
    assert ((got[finite] >= 0) & (got[finite] <= 1)).all()
    assert (np.diff(got[:9].astype(np.float64)) >= 0).all()
    with np.errstate(over="ignore"):
        ref = 1 / (1 + np.exp(-x.astype(np.float64)))
    tiny = float(np.finfo(dtype).tiny)  # below it: subnormal or flushed to 0
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=4 * np.finfo(dtype).eps ** 0.5, atol=tiny)
    assert got[-2] == 1
    assert got[-1] == 0
    assert np.isnan(_no_warnings(backend, xl.sigmoid, backend.arr(np.array([np.nan], dtype)))).all()


def test_complex_sigmoid(backend: BackendCase) -> None:
    x = np.array([0.5 - 2j, -3 + 0.3j, 2j])
    backend.assert_close(xl.sigmoid(backend.arr(x)), 1 / (1 + np.exp(-x)), dtype=np.complex128)
    # far out on the real axis exp(-x) overflows: no warning (the docstring's promise)
    big = np.array([-1000 + 0j, 1000 + 0j])
    got = _no_warnings(backend, xl.sigmoid, backend.arr(big))
    assert got[1] == 1
    assert got[0] == 0 or np.isnan(got[0])  # 1/(1+inf): 0, or NaN where inf*0j makes NaN


# ---------------------------------------------------------------------- host data
def test_lists_follow_the_array(backend: BackendCase) -> None:
    x = backend.arr(np.ones(2, np.float32))
    # a list is converted as NumPy would (float64), then promoted
    backend.assert_close(xl.add(x, [1.0, 2.0]), [2.0, 3.0], dtype=np.float64)
    backend.assert_close(xl.subtract([1.0, 2.0], x), [0.0, 1.0], dtype=np.float64)


def test_only_host_data() -> None:
    assert isinstance(xl.add([1.0], [2.0]), np.ndarray)
    assert xl.add(2.0, 3.0) == 5.0
    assert np.isclose(xl.exp(1.0), np.e)
    np.testing.assert_allclose(xl.sigmoid([0.0]), [0.5])


@pytest.mark.parametrize("bad", [None, "abc", object()], ids=["None", "str", "object"])
def test_non_numeric_is_refused(backend: BackendCase, bad) -> None:
    with pytest.raises(TypeError, match=r"`x1`"):
        xl.add(bad, backend.arr(np.ones(2)))


def test_inputs_not_modified(backend: BackendCase, rng) -> None:
    x1, x2 = random(rng, (2, 3)), random(rng, (3,))
    a1, a2 = backend.arr(x1), backend.arr(x2)
    for name in BINARY:
        backend.np(getattr(xl, name)(a1, a2))
    for name in UNARY:
        backend.np(getattr(xl, name)(a1))
    np.testing.assert_array_equal(backend.np(a1), x1)
    np.testing.assert_array_equal(backend.np(a2), x2)


def test_jax_32_bit_mode_requests_no_64_bit_integers() -> None:
    # JAX's default mode has no int64: asking for it warns and truncates to int32.
    # NumPy's table gives int64 (bool with a Python int, uint32 with int32); in that
    # mode it is int32, as JAX's own promotion gives, with no warning
    require_backend("jax-cpu")
    code = (
        "import warnings\n"
        "import jax, jax.numpy as jnp, xlinalg as xl\n"
        "assert not jax.config.read('jax_enable_x64')\n"
        "warnings.simplefilter('error')\n"
        "r = xl.add(jnp.array([True, False]), 1)\n"
        "assert r.dtype == jnp.int32 and r.tolist() == [2, 1], r\n"
        "r = xl.add(jnp.array([1], jnp.uint32), jnp.array([-1], jnp.int32))\n"
        "assert r.dtype == jnp.int32 and r.tolist() == [0], r\n"
        "r = xl.matmul(jnp.ones((2, 2), jnp.uint32), jnp.ones((2, 2), jnp.int32))\n"
        "assert r.dtype == jnp.int32 and r.tolist() == [[2, 2], [2, 2]], r\n"
        "r = xl.multiply(jnp.array([3], jnp.int32), jnp.array([2.5], jnp.float32))\n"
        "assert r.dtype == jnp.float32 and r.tolist() == [7.5], r\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, JAX_ENABLE_X64="0"),
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:] + proc.stdout


def test_numpy_scalars_alone_keep_their_dtypes_under_xp(backend: BackendCase) -> None:
    # with no array beside them, NumPy scalars were made weak Python scalars, and then
    # NumPy's default dtype: add(np.uint8(255), np.uint8(1), xp=torch) gave int64 256
    xp = backend.namespace()
    for x1, x2, dtype, want in ((np.uint8(255), np.uint8(1), np.uint8, 0),
                                (np.float32(1.5), np.float32(2.0), np.float32, 3.5),
                                (np.float32(1.5), np.float64(2.0), np.float64, 3.5),  # NumPy's rule
                                (np.float32(1.5), 2.0, np.float32, 3.5)):  # a Python float: weak
        with np.errstate(over="ignore"):
            r = xl.add(x1, x2, xp=xp)
        backend.check_owned(r)
        got = backend.np(r)
        assert got.dtype == dtype, (x1, x2, got.dtype)
        assert got == want

@pytest.mark.parametrize("name", ["add", "subtract", "multiply"])
def test_two_python_scalars_do_not_depend_on_the_order(backend: BackendCase, name: str) -> None:
    # the first scalar became the array: add(2**70, 1.5) raised a TypeError while
    # add(1.5, 2**70) gave a float, and add(2**63, 1) a uint64 while add(1, 2**63) raised
    xp, fn = backend.namespace(), getattr(xl, name)
    for a, b in ((2**70, 1.5), (2**70, 1j), (2.5, 3), (True, 2.5), (2, 3)):
        if isinstance(a, complex) or isinstance(b, complex):
            want_kind = "c"
        elif isinstance(a, float) or isinstance(b, float):
            want_kind = "f"
        else:
            want_kind = "i"
        py = {"add": a + b, "subtract": a - b, "multiply": a * b}[name]
        for x1, x2, sign in ((a, b, 1), (b, a, -1 if name == "subtract" else 1)):
            got = backend.np(fn(x1, x2, xp=xp))
            assert got.dtype.kind == want_kind, (x1, x2, got.dtype)
            np.testing.assert_allclose(got, sign * py, rtol=1e-6, err_msg=f"{name}({x1!r}, {x2!r})")
    for big in (2**63, -(2**63) - 1, 2**64):
        for x1, x2, nb in ((big, 1, "x1"), (1, big, "x2"), (True, big, "x2")):
            with pytest.raises(OverflowError, match=rf"{name}: `x1` and `x2` are both Python integers, "
                                                    rf"which compute in int64, and `{nb}` = {big} is beyond"):
                fn(x1, x2, xp=xp)
    assert backend.np(fn(2**63 - 1, 0, xp=xp)) == (2**63 - 1 if name != "multiply" else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64])
def test_a_bool_scalar_with_a_numeric_array_is_a_number(backend: BackendCase, dtype) -> None:
    # torch refused subtract(True, x) ("Subtraction ... with a bool tensor"): the
    # scalar became a bool tensor; NumPy reads True as 1, keeping the array's dtype
    x = backend.arr(np.array([2, 5], dtype))
    for name in ("add", "subtract", "multiply"):
        for x1, x2 in ((True, x), (x, True), (False, x), (x, False)):
            h1, h2 = (backend.np(v) if not isinstance(v, bool) else v for v in (x1, x2))
            want = getattr(np, name)(h1, h2)
            got = backend.np(getattr(xl, name)(x1, x2))
            assert got.dtype == np.dtype(dtype), (name, x1, x2, got.dtype)
            np.testing.assert_array_equal(got, want, err_msg=f"{name}({x1!r}, {x2!r})")


def test_divide_overflow_is_silent(backend: BackendCase) -> None:
    # the module promises IEEE results without floating-point warnings: x / 0 was
    # silent, an overflowing quotient warned on NumPy, Dask and array-api-strict
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = backend.np(xl.divide(backend.arr(np.array([1e308, 1e-300])), backend.arr(np.array([1e-10, 1e100]))))
    assert np.isposinf(r[0])
    assert r[1] == 0.0


def test_torch_half_precision_with_a_complex_scalar_is_complex64() -> None:
    # torch gives complex32 for float16 + 1j, a dtype xlinalg's other functions refused;
    # NumPy and JAX give complex64
    require_backend("torch-cpu")
    import torch

    for dt in (torch.float16, torch.bfloat16):
        r = xl.add(torch.ones(2, dtype=dt), 1j)
        assert r.dtype == torch.complex64
        np.testing.assert_array_equal(r.numpy(), [1 + 1j, 1 + 1j])
    # complex32 itself is numeric: the same answer on the first call and the next ones
    c = torch.ones(2).to(torch.complex32)
    outcomes = []
    for _ in range(2):
        try:
            outcomes.append(str(xl.multiply(c, c).dtype))
        except TypeError as exc:
            outcomes.append(f"refused: {exc}")
    assert outcomes[0] == outcomes[1]
    assert "must be numeric" not in outcomes[0]
