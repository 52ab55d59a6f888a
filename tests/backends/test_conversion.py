"""xlinalg.to keeps every value and the dtype, or raises naming the dtype and the fix.

The sweep converts every source × target pair of the installed CPU backends, for
every dtype (bool, int8..uint64, float16, bfloat16, float32, float64, complex64,
complex128), in every layout (contiguous, transposed, negative strides, 0-d, empty,
big-endian NumPy), with ``copy=None`` and ``copy=True``, and compares the result
bit for bit with the source. It runs in subprocesses (JAX in 64-bit mode and in
its default 32-bit mode): before the fix a negative-stride NumPy array converted
to torch aborted the whole process.

Run directly (``python tests/backends/test_conversion.py``) it prints the sweep's problems
as JSON, one per line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).resolve()
TARGETS = ("numpy", "torch-cpu", "jax-cpu", "dask", "array-api-strict")
DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
)
LAYOUTS = ("contiguous", "transposed", "negative-strides", "0-d", "empty", "big-endian")
X64 = ("int64", "uint64", "float64", "complex128")


# ---------------------------------------------------------------------- the sweep
def _host(dt: str, layout: str) -> np.ndarray | None:
    """A NumPy array of `dt` whose values a narrowing conversion would change."""
    if dt == "bfloat16":
        import ml_dtypes

        npdt: Any = ml_dtypes.bfloat16
    else:
        npdt = np.dtype(dt)
    base = np.arange(24).reshape(4, 6)
    if dt == "bool":
        v = base % 3 == 0
    elif dt.startswith(("int", "uint")):
        v = base.astype(dt)
        if dt in ("int64", "uint64"):
            v = v + (2**40 + 1)  # int32 would keep 1
        elif dt in ("int32", "uint32"):
            v = v + 2**30
    elif dt.startswith("complex"):
        v = (base * (1 + 1e-10) + 1j * (0.5 - base)).astype(dt)
    else:
        v = (base * 1.5).astype(npdt)
        if dt == "float64":
            v[0, 0] = 1 + 1e-10  # float32 would give 1.0
            v[0, 1] = -0.0
            v[0, 2] = np.nan
        if dt == "float32":
            v[0, 0] = 2.0**-130  # subnormal
    if layout == "contiguous":
        return v
    if layout == "transposed":
        return v.T
    if layout == "negative-strides":
        return v[::-1, ::-2]
    if layout == "0-d":
        return np.asarray(v[1, 2]).reshape(())
    if layout == "empty":
        return v[:0]
    if layout == "big-endian" and v.dtype.itemsize > 1 and dt != "bfloat16":
        return v.astype(v.dtype.newbyteorder(">"))
    return None


def _make(src: str, h: np.ndarray, x64: bool) -> Any:
    """`h` as an array of `src` made with the library's own constructors (not xl.to)."""
    if src == "numpy":
        return h
    native = np.array(h, dtype=h.dtype.newbyteorder("="))
    if src == "torch-cpu":
        import torch

        if h.dtype.name == "bfloat16":
            return torch.from_numpy(np.array(native, order="C").view(np.uint16)).view(torch.bfloat16)
        return torch.from_numpy(native)  # (a transposed h stays a non-contiguous view)
    if src == "jax-cpu":
        if h.dtype.name in X64 and not x64:
            return None  # JAX cannot hold it: nothing to convert from
        import jax.numpy as jnp

        return jnp.asarray(native)
    if src == "dask":
        import dask.array as da

        return da.from_array(h.copy(), chunks=2 if h.ndim else ())
    if src == "array-api-strict":
        if h.dtype.name in ("float16", "bfloat16"):
            return None  # strict has no such dtype
        import array_api_strict as xps

        if any(s < 0 for s in h.strides):  # a strict view with negative strides too
            return xps.asarray(np.ascontiguousarray(native[::-1, ::-1]))[::-1, ::-1]
        return xps.asarray(native)
    raise AssertionError(src)


def _back(x: Any) -> np.ndarray:
    """`x` as NumPy, through each library's own API (not xl.to)."""
    import torch

    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    if isinstance(x, torch.Tensor):
        x = x.resolve_conj().resolve_neg()
        if x.dtype == torch.bfloat16:
            import ml_dtypes

            return x.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()
    if type(x).__module__.startswith("dask"):
        return np.asarray(x.compute())
    if type(x).__module__.startswith("array_api_strict"):
        return np.from_dlpack(x).copy()
    return np.asarray(x)  # JAX


def _differs(h: np.ndarray, r: np.ndarray) -> str | None:
    if r.shape != h.shape:
        return f"shape {r.shape} != {h.shape}"
    if r.dtype.name != h.dtype.name:
        return f"dtype {r.dtype.name} != {h.dtype.name}"
    want = np.asarray(h, dtype=h.dtype.newbyteorder("="))
    got = np.asarray(r, dtype=r.dtype.newbyteorder("="))
    # bit for bit (NaN, -0.0 and subnormals included)
    if want.tobytes() != np.ascontiguousarray(got.reshape(want.shape)).tobytes() and want.size:
        return "values differ"
    return None


def sweep() -> list[str]:
    """Every problem found: a changed value, dtype or shape, or a raise that is not
    a TypeError naming the dtype."""
    import xlinalg as xl

    x64 = True
    try:
        import jax

        x64 = bool(jax.config.jax_enable_x64)
    except ImportError:
        pass
    here = [t for t in TARGETS if t in xl.available_backends()]
    problems = []
    for dt in DTYPES:
        for layout in LAYOUTS:
            h = _host(dt, layout)
            if h is None:
                continue
            for src in here:
                x = _make(src, h, x64)
                if x is None:
                    continue
                for tgt in here:
                    for copy in (None, True):
                        where = f"{src} -> {tgt}, {dt}, {layout}, copy={copy}"
                        try:
                            why = _differs(h, _back(xl.to(x, tgt, copy=copy)))
                        except TypeError as exc:
                            why = None if (dt in str(exc) and "xlinalg.to" in str(exc)) else f"unclear TypeError: {exc}"
                        except Exception as exc:
                            why = f"{type(exc).__name__}: {str(exc)[:200]}"
                        if why:
                            problems.append(f"{where}: {why}")
    return problems


def _run_sweep(x64: bool) -> list[str]:
    env = dict(os.environ, JAX_ENABLE_X64="1" if x64 else "0")
    proc = subprocess.run(
        [sys.executable, str(HERE)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"the sweep process died (rc {proc.returncode}): {proc.stderr[-2000:]}"
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("x64", [True, False], ids=["jax-x64", "jax-32-bit"])
def test_every_conversion_keeps_values_and_dtype_or_raises(x64: bool) -> None:
    problems = _run_sweep(x64)
    assert not problems, f"{len(problems)} conversions changed values or raised unclearly:\n" + "\n".join(problems[:40])


# ---------------------------------------------------------------------- single cases
def _subprocess(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, JAX_ENABLE_X64="0"),
        capture_output=True, text=True, timeout=300,
    )


def test_jax_32_bit_mode_refuses_64_bit_dtypes_naming_the_fix() -> None:
    proc = _subprocess(
        "import numpy as np, xlinalg as xl\n"
        "for x in (np.array([2**40 + 1]), np.array([1 + 1e-10]), np.array([1j]), np.array([2**40], np.uint64)):\n"
        "    for copy in (None, True):\n"
        "        try:\n"
        "            xl.to(x, 'jax-cpu', copy=copy)\n"
        "        except TypeError as exc:\n"
        "            assert str(x.dtype) in str(exc) and 'jax_enable_x64' in str(exc), exc\n"
        "        else:\n"
        "            raise SystemExit(f'{x.dtype} converted silently (copy={copy})')\n"
        "print('ok')\n"
    )
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:] + proc.stdout


@pytest.mark.parametrize("target", ["numpy", "jax-cpu", "dask", "array-api-strict"])
def test_torch_conj_and_neg_views_keep_their_values(target: str) -> None:
    import xlinalg as xl
    from conftest import require_backend

    require_backend(target)
    torch = pytest.importorskip("torch")
    c = torch.tensor([1 + 2j, -3 - 4j])
    for view, want in ((c.conj().imag, [-2.0, 4.0]), (c.conj(), [1 - 2j, -3 + 4j]), (-c.conj(), [-1 + 2j, 3 - 4j])):
        got = _back(xl.to(view, target))
        np.testing.assert_array_equal(got, np.array(want, dtype=got.dtype))


def test_read_only_numpy_to_torch_is_a_copy() -> None:
    pytest.importorskip("torch")
    import xlinalg as xl

    a = np.arange(3.0)
    a.flags.writeable = False
    t = xl.to(a, "torch-cpu")
    t[0] = 5.0
    assert a[0] == 0.0, "a write to the result changed the read-only array"
    w = np.arange(3.0)  # writable: still zero-copy (documented)
    xl.to(w, "torch-cpu")[0] = 5.0
    assert w[0] == 5.0
    with pytest.raises(ValueError, match="read-only"):
        xl.to(a, "torch-cpu", copy=False)


@pytest.mark.parametrize("copy", ["yes", 1, 0, "False", [True]])
def test_copy_must_be_a_bool_or_none(copy) -> None:
    # a truthy string or an int would silently pick a side; NumPy's bool is a bool
    import xlinalg as xl

    with pytest.raises(TypeError, match=r"xlinalg\.to: `copy` must be True, False or None, got "):
        xl.to(np.arange(3.0), "numpy", copy=copy)
    y = xl.to(np.arange(3.0), "numpy", copy=np.True_)
    assert y.flags.owndata


def test_numpy_false_refuses_a_copy_as_false_does() -> None:
    # `copy is False` is not true of np.False_: it copied where False raises
    import xlinalg as xl
    from conftest import require_backend

    require_backend("dask")
    for copy in (False, np.False_):
        with pytest.raises(ValueError, match=r"needs a copy .* pass copy=None"):
            xl.to(np.ones(3), "dask", copy=copy)
    x = np.arange(3.0)
    assert xl.to(x, "numpy", copy=np.False_) is x


def test_sources_xlinalg_cannot_read_are_named() -> None:
    import xlinalg as xl
    from conftest import require_backend

    require_backend("dask")
    import dask.array as da

    masked = da.ma.masked_array(da.from_array(np.arange(4.0)), mask=[True, False, False, True])
    with pytest.raises(TypeError, match=r"xlinalg\.to: `x` is a Dask array of shape \(4,\) whose chunks "
                                        r"are numpy\.ma(\.core)?\.MaskedArray"):
        xl.to(masked, "numpy")  # (np.asarray of the computed chunks kept the masked values)
    require_backend("torch-cpu")
    import torch

    with pytest.raises(TypeError, match=r"`x` is a torch-meta array of shape \(2,\).*a meta tensor has no data"):
        xl.to(torch.empty(2, device="meta"), "numpy")


def test_read_only_memmap_to_torch_does_not_crash() -> None:
    pytest.importorskip("torch")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.bin"
        np.arange(5.0).tofile(path)
        proc = _subprocess(
            "import numpy as np, xlinalg as xl\n"
            f"m = np.memmap({str(path)!r}, dtype=np.float64, mode='r')\n"
            "t = xl.to(m, 'torch-cpu')\n"
            "t[0] = 9.0\n"
            "assert m[0] == 0.0 and float(t[0]) == 9.0\n"
            "print('ok')\n"
        )
    assert proc.stdout.strip() == "ok", f"rc {proc.returncode}: {proc.stderr[-2000:]}"


def test_jax_array_to_torch_is_not_a_writable_alias() -> None:
    import xlinalg as xl
    from conftest import require_backend

    require_backend("jax-cpu")
    pytest.importorskip("torch")
    import jax.numpy as jnp

    j = jnp.arange(3.0)
    t = xl.to(j, "torch-cpu")
    t[0] = 7.0
    assert float(j[0]) == 0.0, "writing to the torch result changed an (immutable) JAX array"


def test_extended_precision_is_refused_outside_numpy_and_dask() -> None:
    import xlinalg as xl

    if np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("this platform's long double is float64: no extended precision to test")
    x = np.arange(3, dtype=np.longdouble)
    for target in ("torch-cpu", "jax-cpu", "array-api-strict"):
        if target in xl.available_backends():
            with pytest.raises(TypeError, match=r"extended precision \(float(96|128)\)"):
                xl.to(x, target)


if __name__ == "__main__":
    for problem in sweep():
        print(json.dumps(problem))


def test_converting_array_api_strict_arrays_warns_nothing() -> None:
    # strict dtypes hash like NumPy's: a dtype cache keyed on the dtype alone compared
    # them, and array-api-strict warns on that comparison
    pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    code = (
        "import warnings, numpy as np, xlinalg as xl\n"
        "warnings.simplefilter('error')\n"
        "y = xl.to(np.ones(2), 'array-api-strict')\n"
        "print(xl.to(y, 'numpy').tolist())\n"
    )
    r = _subprocess(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1.0, 1.0]"
