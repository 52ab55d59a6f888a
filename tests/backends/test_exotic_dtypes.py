"""Every dtype a library can hold, through every function: a result or a named error.

PyTorch has no arithmetic on float8 and no add or matmul on uint16-uint64; JAX and
NumPy (through ml_dtypes) hold float8/float4 and int2/int4 arrays that LAPACK never
sees. None of these may escape as the library's own NotImplementedError or
"UNIMPLEMENTED" runtime error: each is a TypeError naming the argument, its dtype
and what to do, or a result.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import require_backend
from xlinalg._capabilities import ELEMENTWISE, LINALG
from xlinalg._lib._declare import OPERATIONS

FUNCTIONS = (*LINALG, *ELEMENTWISE)
NARROW = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
          "float4_e2m1fn", "float6_e2m3fn", "int2", "uint2", "int4", "uint4", "bfloat16",
          "uint16", "uint32", "uint64")


#: the standard's numeric dtypes: every function gives a result (none is refused)
STANDARD = ("float32", "float64", "complex64", "complex128", "int32", "int64")


def _call(fn: str, x: Any) -> Any:
    """`fn` on `x` (a square matrix) or its first column, each argument by its declared
    kind (a right-hand side or a vector is a column), with the declared keywords."""
    op = OPERATIONS[fn]
    args = [x[:, 0] if kind in ("rhs", "vector") else x for _, kind in op.args]
    if op.args[0][1] in ("rhs", "vector"):
        args[0] = x[0, :]
    return getattr(xl, fn)(*args, **op.kwargs)


def _torch_arrays() -> list[tuple[str, Any]]:
    torch = pytest.importorskip("torch")
    out = []
    for name in sorted(n for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)):
        dt = getattr(torch, name)
        try:
            x = (torch.eye(3) * 2 + 1).to(dt)
        except (RuntimeError, TypeError):  # quantized and bit-packed dtypes: not made this way
            continue
        out.append((name, x))
    return out


def _jax_arrays() -> list[tuple[str, Any]]:
    require_backend("jax-cpu")
    import jax.numpy as jnp

    out = []
    for n in (*NARROW, *STANDARD):
        if hasattr(jnp, n):
            try:
                out.append((n, (jnp.eye(3) * 2 + 1).astype(getattr(jnp, n))))
            except Exception:  # a dtype this jaxlib cannot make (float6 on CPU)
                continue
    return out


def _numpy_arrays() -> list[tuple[str, Any]]:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 3.0 overflows the narrowest: a value is all it needs
        out = [(n, (np.eye(3) * 2 + 1).astype(getattr(ml_dtypes, n))) for n in NARROW if hasattr(ml_dtypes, n)]
        return out + [(n, (np.eye(3) * 2 + 1).astype(n)) for n in STANDARD]


LIBRARIES: dict[str, Callable[[], list[tuple[str, Any]]]] = {
    "torch": _torch_arrays, "jax": _jax_arrays, "numpy-ml_dtypes": _numpy_arrays,
}


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_every_dtype_gives_a_result_or_a_named_error(library: str) -> None:
    arrays = LIBRARIES[library]()
    assert len(arrays) >= 5, [n for n, _ in arrays]
    raw = []
    for name, x in arrays:
        for fn in FUNCTIONS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the libraries' own "experimental dtype" notes
                try:
                    _call(fn, x)
                except (TypeError, ValueError) as e:
                    if name in STANDARD or not re.search(r"`(x|x1|x2|a|b)`", str(e)):
                        raw.append(f"{fn}({name}): {type(e).__name__}: {e}")
                except Exception as e:
                    raw.append(f"{fn}({name}): {type(e).__name__}: {str(e)[:150]}")
    assert not raw, "\n".join(raw)


def test_torch_kernel_gaps_are_named() -> None:
    torch = pytest.importorskip("torch")
    u16 = torch.ones(2, dtype=torch.uint16)
    with pytest.raises(TypeError, match=r"add: PyTorch has no add for dtype uint16 \(.*UInt16.*\), got `x1` "
                                        r"a PyTorch tensor of shape \(2,\) .*`xp\.astype\(x1, xp\.float32\)`"):
        xl.add(u16, u16)
    with pytest.raises(TypeError, match=r"got `x1` a PyTorch tensor .*uint16"):
        xl.add(u16, 1)  # a Python scalar beside it is not described as an array
    f8 = torch.ones(2).to(torch.float8_e5m2)
    with pytest.raises(TypeError, match=r"subtract: PyTorch has no subtract for dtype float8_e5m2 .*got `x2`"):
        xl.subtract(2.0, f8)
    for fn in ("exp", "sigmoid"):
        with pytest.raises(TypeError, match=rf"{fn}: PyTorch has no {fn} for dtype float8_e5m2"):
            getattr(xl, fn)(f8)
    u32 = torch.ones((2, 2), dtype=torch.uint32)
    with pytest.raises(TypeError, match=r"matmul: PyTorch has no matmul for dtype uint32 .*`a` .*`b` "):
        xl.matmul(u32, u32)
    # the products' native calls too: a sum over complex32, a cross of uint16 vectors
    c32 = torch.eye(3).to(torch.complex32)
    with pytest.raises(TypeError, match=r"trace: PyTorch has no trace for dtype complex32 .*got `x` .*xp\.astype\(x,"):
        xl.trace(c32)
    v16 = torch.ones(3, dtype=torch.uint16)
    for fn in ("cross", "vecdot", "tensordot"):
        with pytest.raises(TypeError, match=rf"{fn}: PyTorch has no {fn} for dtype uint16 .*`x1` .*`x2` "):
            getattr(xl, fn)(v16, v16, **OPERATIONS[fn].kwargs)


def test_narrow_integer_reductions_are_named() -> None:
    # JAX's int4 trace reaches NumPy's "Invalid integer data type 'V'"; in NumPy itself
    # ml_dtypes' int4 is not numeric to xlinalg
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match=r"trace: `x` must be numeric, got a NumPy array .*dtype int4"):
        xl.trace(np.eye(3).astype(ml_dtypes.int4))
    require_backend("jax-cpu")
    import jax.numpy as jnp

    with pytest.raises(TypeError, match=r"trace: JAX has no trace for dtype int4 \(.*Invalid integer data type.*got `x`"):
        xl.trace(jnp.eye(3).astype(jnp.int4))


def test_narrow_floats_are_low_precision_for_linear_algebra() -> None:
    # float8 in JAX or NumPy (ml_dtypes) is refused as float16 is, before LAPACK sees it
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.eye(2).astype(ml_dtypes.float8_e4m3fn)
    for fn in ("solve", "svd", "qr"):
        with pytest.raises(TypeError, match=rf"{fn}: `(a|x)` has dtype float8_e4m3fn, which no backend's linear"):
            _call(fn, x)


def test_numpy_low_precision_floats_compute_natively() -> None:
    # ml_dtypes' bfloat16 in NumPy: elementwise in its own dtype, values as float32's rounded
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x32 = np.array([-30.0, -2.0, 0.0, 0.5, 3.0, 30.0], dtype=np.float32)
    x = x32.astype(ml_dtypes.bfloat16)
    for fn, ref in (("sigmoid", 1 / (1 + np.exp(-x32.astype(np.float64)))), ("exp", np.exp(x32.astype(np.float64))),
                    ("add", 2.0 * x32), ("multiply", x32 * x32)):
        out = getattr(xl, fn)(x) if fn in ("sigmoid", "exp") else getattr(xl, fn)(x, x)
        assert out.dtype == x.dtype, (fn, out.dtype)
        np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2**-7, err_msg=fn)
