"""xl.to of data no backend's numbers hold names the dtype and the fix (issue 34, point 14)."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import require_backend

NON_NUMBERS = {
    "object": (np.array([1, "a"], dtype=object), r"dtype object .*`x` is an object array: convert its elements"),
    "datetime": (np.array(["2020-01-01"], "datetime64[D]"), r"dtype datetime64\[D\] .*`x` holds datetimes"),
    "timedelta": (np.array([1], "timedelta64[s]"), r"dtype timedelta64\[s\] .*`x` holds durations"),
    "structured": (np.zeros(2, [("a", "f8"), ("b", "i4")]),
                   r"dtype \[\('a', '<f8'\), \('b', '<i4'\)\] .*structured array: convert one field at a time, "
                   r"e\.g\. x\['a'\]"),
    "str": (np.array(["ab"]), r"dtype <U2 .*`x` holds strings"),
    "bytes": (np.array([b"ab"]), r"dtype \|S2 .*`x` holds bytes"),
}


@pytest.mark.parametrize("target", ["torch-cpu", "jax-cpu", "array-api-strict"])
@pytest.mark.parametrize("kind", sorted(NON_NUMBERS))
def test_non_numbers_are_refused_naming_the_dtype(kind: str, target: str) -> None:
    require_backend(target)
    x, pattern = NON_NUMBERS[kind]
    for source in (x, *([xl.to(x, "dask")] if kind != "object" else [])):
        src = "dask" if not isinstance(source, np.ndarray) else "numpy"
        with pytest.raises(TypeError, match=rf"^xlinalg\.to: cannot convert an array of {pattern}"):
            xl.to(source, target)
        with pytest.raises(TypeError, match=rf"from {src} to {target}: {target} holds only the dtypes bool, "):
            xl.to(source, target)


@pytest.mark.parametrize("kind", sorted(NON_NUMBERS))
def test_numpy_and_dask_keep_what_numpy_holds(kind: str) -> None:
    require_backend("dask")
    x, _ = NON_NUMBERS[kind]
    assert xl.to(x, "numpy").dtype == x.dtype
    assert xl.to(x, "dask").dtype == x.dtype


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_float8_converts_bit_for_bit_or_is_named(name: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.5, -2.0, 0.25], np.float32).astype(getattr(ml_dtypes, name))
    for target in ("torch-cpu", "jax-cpu", "dask", "numpy"):
        require_backend(target)
        y = xl.to(x, target)
        assert str(y.dtype).rpartition(".")[2] == name
        back = xl.to(y, "numpy")
        assert back.dtype == x.dtype
        np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))
    require_backend("array-api-strict")
    with pytest.raises(TypeError, match=rf"dtype {name} from numpy to array-api-strict: array-api-strict holds "
                                        r"only the dtypes bool, int8-int64, uint8-uint64, float32, .*cast `x` "
                                        r"to one of those first \(float32 holds every float8"):
        xl.to(x, "array-api-strict")


def test_a_float8_ml_dtype_torch_lacks_is_named() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    require_backend("torch-cpu")
    x = np.zeros(2, ml_dtypes.float8_e3m4)
    with pytest.raises(TypeError, match=r"dtype float8_e3m4 from numpy to torch-cpu: torch-cpu holds only .*"
                                        r"\(and float8_e4m3fn, .*\); cast `x` to one of those first"):
        xl.to(x, "torch-cpu")
