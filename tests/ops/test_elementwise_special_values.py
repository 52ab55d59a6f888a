"""add/subtract with inf and NaN, and Python integers that must not wrap (issue 34, 1-2).

torch computes ``x1 + alpha * x2``, and ``1 * (inf+0j)`` is ``inf+nanj``: a complex
add or subtract with an inf or NaN in its second operand gave ``inf+nanj`` where
NumPy gives ``inf+1j``, so ``add`` did not commute. JAX in its default 32-bit mode
wrapped Python integers around (``add(2**31 - 1, 1) == -2**31``).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xlinalg as xl
from conftest import BackendCase, require_backend

INF, NAN = math.inf, math.nan
SPECIAL = (INF, -INF, NAN, complex(INF, 0), complex(-INF, 1), complex(0, INF), complex(NAN, 0),
           complex(1, NAN), complex(INF, INF), 1e40, 0.0, -2.5)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, err_msg=what)


def _numpy(name: str, x1, x2) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(getattr(np, name)(x1, x2))


@pytest.mark.parametrize("name", ["add", "subtract"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_with_a_special_python_scalar_matches_numpy(backend: BackendCase, name, dtype) -> None:
    host = np.array([1j, 2 + 3j, -1.5 - 0.5j], dtype)
    x = backend.arr(host)
    fn = getattr(xl, name)
    for s in SPECIAL:
        with np.errstate(all="ignore"):
            _same(backend.np(fn(x, s)), _numpy(name, host, s), f"{name}(x, {s!r})")
            _same(backend.np(fn(s, x)), _numpy(name, s, host), f"{name}({s!r}, x)")


@pytest.mark.parametrize("name", ["add", "subtract"])
def test_complex_with_special_arrays_matches_numpy(backend: BackendCase, name) -> None:
    # the second operand a 0-d array, a full array, real or complex, of either dtype
    fn = getattr(xl, name)
    h1 = np.array([1j, 2 + 3j], np.complex128)
    for h2 in (np.array(INF), np.array(NAN), np.array([INF, -INF]), np.array([NAN, 1.0]),
               np.array(complex(INF, 0)), np.array([complex(INF, 0), complex(0, -INF)]),
               np.array([INF, 2.0], np.float32), np.array([complex(NAN, 0), 1j], np.complex64)):
        for a, b in ((h1, h2), (h2, h1)):
            got = backend.np(fn(backend.arr(a), backend.arr(b)))
            _same(got, _numpy(name, a, b), f"{name}({a!r}, {b!r})")


@pytest.mark.parametrize("name", ["add", "subtract"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_an_infinite_complex_scalar_beside_a_real_array(backend: BackendCase, name, dtype) -> None:
    fn = getattr(xl, name)
    host = np.array([1, 0, 1], dtype)
    x = backend.arr(host)
    for s in (complex(INF, 1), complex(INF, 0), complex(NAN, 2), complex(1, -INF)):
        for got, a, b in ((fn(x, s), host, s), (fn(s, x), s, host)):
            g = backend.np(got)
            w = _numpy(name, a, b)
            # the complex width follows the contract (float64 for int/bool), values NumPy's
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"{name}({a!r}, {b!r})")
            assert g.dtype.kind == "c"


def test_1e40_beside_complex64_is_inf_plus_the_imaginary_part(backend: BackendCase) -> None:
    x = backend.arr(np.array([1j, 2 - 1j], np.complex64))
    for got in (xl.add(x, 1e40), xl.add(1e40, x)):
        g = backend.np(got)
        assert g.dtype == np.complex64
        np.testing.assert_array_equal(g, np.array([complex(INF, 1), complex(INF, -1)], np.complex64))
    g = backend.np(xl.subtract(x, 1e40))
    np.testing.assert_array_equal(g, np.array([complex(-INF, 1), complex(-INF, -1)], np.complex64))


@pytest.mark.parametrize("name", ["add", "subtract"])
def test_two_scalars_with_xp(backend: BackendCase, name) -> None:
    xp, fn = backend.namespace(), getattr(xl, name)
    for a, b in ((1j, INF), (INF, 1j), (2 + 3j, NAN), (complex(INF, 0), 1j), (1j, complex(INF, 0))):
        got = backend.np(fn(a, b, xp=xp))
        want = _numpy(name, np.complex128(a), np.complex128(b))
        np.testing.assert_array_equal(got, want, err_msg=f"{name}({a!r}, {b!r})")


def test_add_commutes_on_complex_tensors_with_special_values() -> None:
    # the torch fast path (two tensors of one complex dtype) took torch.add as it is
    torch = pytest.importorskip("torch")
    a = torch.tensor([1j, 2 + 3j])
    b = torch.tensor([complex(INF, 0), complex(NAN, 0)])
    np.testing.assert_array_equal(xl.add(a, b).numpy(), xl.add(b, a).numpy())
    np.testing.assert_array_equal(xl.add(a, b).numpy(), a.numpy() + b.numpy())
    # conjugate and negative views (lazy bits) are read as the values they show
    np.testing.assert_array_equal(xl.add(a.conj(), b).numpy(), np.conj(a.numpy()) + b.numpy())
    np.testing.assert_array_equal(xl.subtract(b, a.conj().imag).numpy(), b.numpy() - np.conj(a.numpy()).imag)


_finite = st.floats(-1e6, 1e6, allow_nan=False, width=64)
_special = st.sampled_from([INF, -INF, NAN, 0.0, -0.0, 1e308, -1e308, 5e-324])
_part = st.one_of(_finite, _special)


@given(re1=_part, im1=_part, re2=_part, im2=_part, scalar=st.booleans(), swap=st.booleans())
def test_property_complex_add_subtract_match_numpy(backend: BackendCase, re1, im1, re2, im2, scalar,
                                                   swap) -> None:
    h1 = np.array([complex(re1, im1)], np.complex128)
    s2 = complex(re2, im2)
    h2 = s2 if scalar else np.array([s2], np.complex128)
    x1 = backend.arr(h1)
    x2 = s2 if scalar else backend.arr(h2)
    for name in ("add", "subtract"):
        fn = getattr(xl, name)
        got = backend.np(fn(x2, x1) if swap else fn(x1, x2))
        want = _numpy(name, h2, h1) if swap else _numpy(name, h1, h2)
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{name} {h1} {h2} swap={swap}")


# ------------------------------------------------------------ Python integers


@pytest.mark.parametrize("name", ["add", "subtract", "multiply"])
def test_two_python_ints_are_exact_or_overflow(backend: BackendCase, name) -> None:
    xp, fn = backend.namespace(), getattr(xl, name)
    py = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b}[name]
    for a, b in ((2**31 - 1, 1), (2**16, 2**16), (-(2**31), -1), (2**40, 3), (True, 2**31 - 1),
                 (2**62, 2**62 - 1), (-(2**62), 2**62), (2**32, 2**31)):
        for x1, x2 in ((a, b), (b, a)):
            want = py(int(x1), int(x2))
            if -(2**63) <= want < 2**63:
                got = backend.np(fn(x1, x2, xp=xp))
                assert got.dtype == np.int64, (name, x1, x2, got)
                assert int(got) == want, (name, x1, x2, got)
            else:
                with pytest.raises(OverflowError, match=rf"{name}: `x1` = {x1:d} and `x2` = {x2:d} are Python "
                                                        r"integers, which compute in int64, and the result"):
                    fn(x1, x2, xp=xp)


def test_an_int_beside_a_float_array_gives_the_float_result(backend: BackendCase) -> None:
    for dtype in (np.float32, np.float64, np.complex64):
        host = np.array([1.0, -2.0], dtype)
        x = backend.arr(host)
        for n in (3_000_000_000, -3_000_000_000, 2**31, 2**53 + 1, -(2**63)):
            for name in ("add", "subtract", "multiply"):
                fn = getattr(xl, name)
                for got, want in ((fn(x, n), getattr(np, name)(host, n)), (fn(n, x), getattr(np, name)(n, host))):
                    g = backend.np(got)
                    assert g.dtype == np.dtype(dtype), (name, n, g.dtype)
                    np.testing.assert_array_equal(g, want)


_JAX_32 = r"""
import operator, jax, jax.numpy as jnp, numpy as np, xlinalg as xl
assert not jax.config.read("jax_enable_x64")
ops = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul}
for name, op in ops.items():
    fn = getattr(xl, name)
    for a, b in ((2**31 - 1, 1), (2**16, 2**16), (2**40, 1), (-(2**31), 1), (True, 2**31 - 1),
                 (-(2**31), -1), (3, -5), (2**15, 2**15), (2**63 - 1, 0)):
        for x1, x2 in ((a, b), (b, a)):
            want = op(int(x1), int(x2))
            if -(2**31) <= want < 2**31:
                r = fn(x1, x2, xp=jnp)
                assert r.dtype == jnp.int32 and int(r) == want, (name, x1, x2, r)
            else:
                try:
                    fn(x1, x2, xp=jnp)
                except OverflowError as e:
                    assert "compute in int32 (JAX's default 32-bit mode" in str(e), e
                else:
                    raise AssertionError((name, x1, x2))
    # an int beside a float array: the float result, as NumPy computes it
    for n in (3_000_000_000, -(2**40), 2**63 - 1):
        x = jnp.array([1.5, -2.0], jnp.float32)
        for r, w in ((fn(x, n), op(np.float32([1.5, -2.0]), n)), (fn(n, x), op(n, np.float32([1.5, -2.0])))):
            assert r.dtype == jnp.float32 and np.array_equal(np.asarray(r), w), (name, n, r, w)
    # beside an int32 array, a Python int out of its range raises in both orders
    for x1, x2 in ((jnp.array([1], jnp.int32), 2**40), (2**40, jnp.array([1], jnp.int32))):
        try:
            fn(x1, x2)
        except OverflowError as e:
            assert "out of the range" in str(e), e
        else:
            raise AssertionError(name)
print("ok")
"""


@pytest.mark.parametrize("x64", ["0", "1"])
def test_jax_python_ints_never_wrap(x64: str) -> None:
    require_backend("jax-cpu")
    code = _JAX_32 if x64 == "0" else _JAX_32.replace("assert not jax", "assert jax").replace(
        "-(2**31) <= want < 2**31", "-(2**63) <= want < 2**63").replace("jnp.int32 and int(r)", "jnp.int64 and int(r)"
    ).replace("compute in int32 (JAX's default 32-bit mode", "compute in int64").replace(
        "(jnp.array([1], jnp.int32), 2**40), (2**40, jnp.array([1], jnp.int32))",
        "(jnp.array([1], jnp.int32), 2**40), (2**40, jnp.array([1], jnp.int32)), (jnp.array([1]), 2**64)")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, JAX_ENABLE_X64=x64),
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-3000:] + proc.stdout
