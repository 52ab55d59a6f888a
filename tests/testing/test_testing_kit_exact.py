"""The testing kit fails what differs and leaves no global changed (issue 34, point 5)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import BackendCase, require_backend
from xlinalg.testing import assert_close, assert_trace_safe, default_tolerance


@pytest.mark.parametrize(("dtype", "a", "b"), [
    (np.int64, 2**62 + 1, 2**62),
    (np.int64, -(2**63), -(2**63) + 1),
    (np.int64, 2**63 - 1, 2**63 - 2),
    (np.uint64, 2**64 - 1, 2**64 - 2),
    (np.uint64, 2**63 + 1, 2**63),
])
def test_64_bit_integers_compare_exactly(backend: BackendCase, dtype, a, b) -> None:
    x, y = backend.arr(np.array([0, a], dtype)), backend.arr(np.array([0, b], dtype))
    with pytest.raises(AssertionError, match=r"integers compare exactly.*\n.*index \(1,\): actual "
                                             rf"{a}, expected {b}, \|difference\| 1"):
        assert_close(x, y)
    assert_close(x, backend.arr(np.array([0, a], dtype)))


def test_bfloat16_values_one_ulp_apart_are_close(backend: BackendCase) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    if backend.name == "array-api-strict":
        pytest.skip("array-api-strict has no bfloat16")
    one = np.array([1.0, 256.0], np.float32)
    ulp = np.array([1.0078125, 258.0], np.float32)  # the next bfloat16 above each
    x = backend.arr(one.astype(ml_dtypes.bfloat16))
    y = backend.arr(ulp.astype(ml_dtypes.bfloat16))
    assert default_tolerance(ml_dtypes.bfloat16) == (2**-6, 2**-6)
    assert_close(x, y)
    with pytest.raises(AssertionError, match="values differ"):
        assert_close(x[:1], backend.arr(np.array([1.0625], np.float32).astype(ml_dtypes.bfloat16)))


@pytest.mark.parametrize(("kw", "error"), [
    ({"rtol": -1}, ValueError), ({"atol": -1e-9}, ValueError), ({"rtol": float("nan")}, ValueError),
    ({"atol": float("nan")}, ValueError), ({"rtol": "0.1"}, TypeError), ({"atol": [1]}, TypeError),
])
def test_a_negative_or_nan_tolerance_is_refused(kw, error) -> None:
    name = next(iter(kw))
    with pytest.raises(error, match=rf"assert_close: `{name}` must be a number >= 0, got"):
        assert_close(np.ones(2), np.ones(2), **kw)
    # refused whatever the values: a wrong tolerance must not pass silently either way
    with pytest.raises(error):
        assert_close(np.ones(2), np.zeros(2), **kw)


def test_complex_nans_are_equal_only_with_the_same_parts(backend: BackendCase) -> None:
    nan = float("nan")
    arr = lambda *v: backend.arr(np.array(v, np.complex128))  # noqa: E731
    assert_close(arr(complex(nan, 1), complex(2, nan)), arr(complex(nan, 1), complex(2, nan)))
    for other in (complex(nan, 5), complex(1, nan), complex(nan, nan), complex(1, 1)):
        with pytest.raises(AssertionError, match="values differ at 1 of 1"):
            assert_close(arr(complex(nan, 1)), arr(other))


def test_torch_complex32_compares() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex32)
    assert_close(x, x.clone())
    with pytest.raises(AssertionError, match=r"values differ at 1 of 2.*rtol=0\.125"):
        assert_close(x, torch.tensor([1 + 2j, 5 - 1j], dtype=torch.complex32))


_X64_CODE = r"""
import numpy as np, jax
from xlinalg.testing import assert_trace_safe
import xlinalg as xl
before = jax.config.read("jax_enable_x64")
out = assert_trace_safe(lambda x: xl.add(x, 1.0), np.ones(2))
assert out.dtype == np.float64, out.dtype  # float64 means float64 inside the call
assert jax.config.read("jax_enable_x64") == before, "x64 mode changed"
try:
    assert_trace_safe(lambda x: {1: x, "a": x}, np.ones(2))
except AssertionError as e:
    assert "keys of types int, str, which cannot be sorted" in str(e), e
else:
    raise SystemExit("mixed keys passed")
assert jax.config.read("jax_enable_x64") == before, "x64 mode changed after a failure"
import jax.numpy as jnp
assert jnp.ones(1).dtype == (np.float64 if before else np.float32)
print("ok")
"""


@pytest.mark.parametrize("x64", ["0", "1"])
def test_assert_trace_safe_leaves_jax_x64_mode_as_it_was(x64: str) -> None:
    require_backend("jax-cpu")
    proc = subprocess.run([sys.executable, "-c", _X64_CODE], env=dict(os.environ, JAX_ENABLE_X64=x64),
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-3000:] + proc.stdout


def test_assert_trace_safe_dict_keys_of_one_type_pass() -> None:
    require_backend("jax-cpu")
    out = assert_trace_safe(lambda x: {"b": x, "a": x * 2}, np.ones(2))
    assert sorted(out) == ["a", "b"]
