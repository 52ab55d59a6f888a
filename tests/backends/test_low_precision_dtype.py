"""One dtype rule for low-precision floats on every backend (issue 34, point 4):
bfloat16 matmul gave float32 on NumPy and bfloat16 on torch and JAX, and Dask's
``.dtype`` said bfloat16 while ``.compute()`` returned float32."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase
from xlinalg.testing import default_tolerance

ml_dtypes = pytest.importorskip("ml_dtypes")
LOW = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def _low(backend: BackendCase, name: str, host: np.ndarray):
    if backend.name == "array-api-strict":
        pytest.skip("array-api-strict has neither float16 nor bfloat16 (xl.to refuses them, named)")
    return backend.arr(host.astype(LOW[name]))


@pytest.mark.parametrize("name", sorted(LOW))
def test_matmul_keeps_the_low_precision_dtype(backend: BackendCase, name: str, rng) -> None:
    ha = rng.standard_normal((4, 5)).astype(np.float32)
    hb = rng.standard_normal((5, 3)).astype(np.float32)
    a, b = _low(backend, name, ha), _low(backend, name, hb)
    r = xl.matmul(a, b)
    assert str(r.dtype).rpartition(".")[2] == name, r.dtype
    got = backend.np(r)
    assert got.dtype == np.dtype(LOW[name]), got.dtype  # computed, the dtype it declared
    # summed in float32 (or better) and rounded once to the dtype
    want = (ha.astype(LOW[name]).astype(np.float32) @ hb.astype(LOW[name]).astype(np.float32))
    rtol = default_tolerance(LOW[name])[0]
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=rtol, atol=rtol * np.abs(want).max())
    # stacks and vectors too
    v = xl.matmul(a, b[:, 0])
    assert backend.np(v).dtype == np.dtype(LOW[name])


@pytest.mark.parametrize("name", sorted(LOW))
def test_lazy_dtype_is_the_computed_dtype(name: str, rng) -> None:
    from conftest import require_backend

    require_backend("dask")
    import dask.array as da

    h = rng.standard_normal((4, 4)).astype(LOW[name])
    x = da.from_array(h, chunks=(2, 4))
    calls = {
        "matmul": lambda: xl.matmul(x, x), "add": lambda: xl.add(x, x), "subtract": lambda: xl.subtract(x, 1.0),
        "multiply": lambda: xl.multiply(x, 2), "divide": lambda: xl.divide(x, x), "exp": lambda: xl.exp(x),
        "sigmoid": lambda: xl.sigmoid(x), "matmul-vec": lambda: xl.matmul(x, x[:, 0]),
        "matmul-mixed": lambda: xl.matmul(x, x.astype(np.float32)),
    }
    for what, call in calls.items():
        r = call()
        assert r.dtype == r.compute().dtype, (what, r.dtype, r.compute().dtype)


@pytest.mark.parametrize("name", sorted(LOW))
@pytest.mark.parametrize("fn", ["solve", "svd", "svdvals", "qr"])
def test_linalg_refuses_low_precision_everywhere(backend: BackendCase, name: str, fn: str) -> None:
    a = _low(backend, name, np.eye(3, dtype=np.float32) * 2)
    args = (a, _low(backend, name, np.ones(3, np.float32))) if fn == "solve" else (a,)
    with pytest.raises(TypeError, match=rf"{fn}: `a` has dtype {name}|{fn}: `x` has dtype {name}"):
        getattr(xl, fn)(*args)


def test_float8_matmul_keeps_its_dtype_on_numpy_and_dask() -> None:
    from conftest import require_backend

    h = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32).astype(ml_dtypes.float8_e4m3fn)
    r = xl.matmul(h, h)
    assert r.dtype == h.dtype
    np.testing.assert_array_equal(r.astype(np.float32), (h.astype(np.float32) @ h.astype(np.float32)).astype(
        h.dtype).astype(np.float32))
    require_backend("dask")
    d = xl.to(h, "dask")
    r = xl.matmul(d, d)
    assert r.dtype == r.compute().dtype == h.dtype
