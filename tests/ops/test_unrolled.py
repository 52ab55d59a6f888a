"""The unrolled small-n solver (``xlinalg._unrolled``, issue 7), on every backend.

* Hypothesis: backward stability (a componentwise residual bound that only
  partial pivoting can meet on matrices with tiny or zero leading pivots) and
  agreement with ``numpy.linalg.solve`` within the dtype's tolerance, vector and
  matrix right-hand sides, broadcast batches, n = 1..6 (JAX compiles each shape).
* Every n from 1 to MAX_N, singular members (raise naming them, NaN with
  errors="nan", NaN under jax.jit), the chunked JAX path, layouts, validation.
* The CUDA kernel's C source is compiled for the CPU with g++ and checked (the
  CuPy path itself needs a GPU: skipped here with the registry's reason).
* One small ``torch.compile`` test (compiling takes 5-30 s; skipped with the
  reason where no compiler works). Other torch tests run the schedule eagerly.
* The selection table agrees with the committed measurements.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xlinalg as xl
from conftest import BackendCase, require_backend, tolerance
from xlinalg import _unrolled as U
from xlinalg._kernels import _inplace, _schedule
from xlinalg._unrolled import _selection
from xlinalg.backends import _jax as jax_backend
from xlinalg.backends import _numpy as numpy_backend
from xlinalg.backends import _torch as torch_backend
from xlinalg.study._tune import NEVER

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "unrolled-cpu.json"
#: the numba kernel's crossovers (``benchmarks/unrolled.py --tune``)
TUNE_RESULTS = ROOT / "benchmarks" / "results" / "unrolled-tune.json.xz"


def _compile_arg(backend: BackendCase) -> bool | None:
    # torch.compile costs 5-30 s per program: the torch-cpu tests run the schedule
    # eagerly, except test_torch_compiled below
    return False if backend.name.startswith("torch") else None


def _solve(backend: BackendCase, a: np.ndarray, b: np.ndarray, **kw: object) -> np.ndarray:
    kw.setdefault("compile", _compile_arg(backend))
    x = U.solve_unrolled(backend.arr(a), backend.arr(b), **kw)  # type: ignore[arg-type]
    backend.check_owned(x)
    return backend.np(x)


def _residual_ok(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> None:
    """Componentwise backward error of GEPP: |b - a x| <= c n eps (|a||x| + |b|)."""
    bm = b[..., None] if b.ndim == 1 else b
    xm = x[..., None] if b.ndim == 1 else x
    a64, x64, b64 = a.astype(np.float64), xm.astype(np.float64), bm.astype(np.float64)
    res = np.abs(a64 @ x64 - b64)
    eps = float(np.finfo(a.dtype).eps)
    bound = 100 * a.shape[-1] * eps * (np.abs(a64) @ np.abs(x64) + np.abs(b64))
    assert (res <= bound + 1e-300).all(), float((res - bound).max())


# ---------------------------------------------------------------------- strategies
@st.composite
def systems(draw, max_n: int = 6):
    """(a, b): row-permuted diagonally dominant matrices (cond ~ 3), some with a tiny
    or zero leading entry, so that elimination without pivoting would fail."""
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n = draw(st.integers(1, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (*batch, n, n)) + 2 * n * np.eye(n)
    perm = rng.permutation(n)
    a = a[..., perm, :]
    if n > 1 and perm[0] != 0:  # the leading entry is off the dominant diagonal
        a[..., 0, 0] = draw(st.sampled_from([0.0, 1e-30, -1e-12, 1e-7]))
    kind = draw(st.sampled_from(["vector", "matrix", "batched"]))
    if kind == "vector":
        bshape: tuple[int, ...] = (n,)
    elif kind == "matrix":
        bshape = (n, draw(st.integers(1, 3)))
    else:
        bshape = (*batch, n, draw(st.integers(1, 3)))
    b = rng.uniform(-10, 10, bshape)
    return a.astype(dtype), b.astype(dtype)


@settings(max_examples=15)
@given(ab=systems())
def test_matches_lapack(backend: BackendCase, ab) -> None:
    a, b = ab
    x = _solve(backend, a, b)
    assert x.dtype == a.dtype
    ref = np.linalg.solve(a.astype(np.float64), b[..., None] if b.ndim == 1 else b)
    backend.assert_close(x, ref[..., 0] if b.ndim == 1 else ref, owned=False)
    _residual_ok(a, b, x)


def test_pivoting_matters(backend: BackendCase) -> None:
    """[[eps, 1], [1, 1]]: without pivoting x = [0, 1]; with it x ~ [1, 1]."""
    a = np.array([[[1e-20, 1.0], [1.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]]])
    b = np.array([1.0, 2.0])
    x = _solve(backend, a, b)
    backend.assert_close(x, np.linalg.solve(a, b[None, :, None])[..., 0], owned=False)
    _residual_ok(a, b, x)


@pytest.mark.parametrize("n", range(1, U.MAX_N + 1))
def test_every_n(backend: BackendCase, rng: np.random.Generator, n: int) -> None:
    if backend.name.startswith("jax") and n not in (1, 2, 5, U.MAX_N):
        pytest.skip("JAX compiles each n (1-3 s at n = 8): n = 1, 2, 5 and MAX_N are enough")
    a = rng.standard_normal((3, 4, n, n))
    a[1, 2] = a[1, 2][rng.permutation(n)] * np.logspace(0, -9, n)[:, None]  # graded rows
    b = rng.standard_normal((4, n, 2))
    x = _solve(backend, a, b)
    assert x.shape == (3, 4, n, 2)
    _residual_ok(a, b, x)
    well = np.ones((3, 4), bool)
    well[1, 2] = False
    backend.assert_close(x[well], np.linalg.solve(a, b)[well], owned=False)


@pytest.mark.parametrize(
    ("sa", "sb", "out"),
    [
        ((4, 4), (4,), (4,)),
        ((4, 4), (4, 3), (4, 3)),
        ((5, 4, 4), (4,), (5, 4)),
        ((5, 4, 4), (4, 5), (5, 4, 5)),  # a 2-D b is one matrix for every member
        ((2, 1, 4, 4), (3, 4, 2), (2, 3, 4, 2)),
        ((4, 4), (6, 4, 1), (6, 4, 1)),
    ],
)
def test_shapes(backend: BackendCase, rng: np.random.Generator, sa, sb, out) -> None:
    a = rng.standard_normal(sa) + 4 * np.eye(sa[-1])
    b = rng.standard_normal(sb)
    x = _solve(backend, a, b)
    assert x.shape == out
    backend.assert_close(x, np.asarray(xl.solve(a, b)), owned=False)


def test_singular_members(backend: BackendCase, rng: np.random.Generator) -> None:
    n = 3
    a = rng.standard_normal((2, 3, n, n)) + 3 * np.eye(n)
    a[0, 1] = 0.0
    a[1, 2] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]]  # exact zero pivot
    a[1, 0, 0, 0] = np.nan  # non-finite input: NaN, not an error
    b = rng.standard_normal((n, 2))
    a_ = backend.arr(a)
    if backend.name == "dask":  # one chunk: each chunk names its own members (test_solve)
        a_ = a_.rechunk(-1)
    with pytest.raises(xl.LinAlgError) as info:
        backend.np(U.solve_unrolled(a_, backend.arr(b), compile=_compile_arg(backend)))
    with pytest.raises(xl.LinAlgError) as native:
        xl.solve(a, b)
    assert info.value.indices == native.value.indices == ((0, 1), (1, 2))
    assert info.value.members == native.value.members
    assert isinstance(info.value, RuntimeError)
    x = _solve(backend, a, b, errors="nan")
    nan = np.isnan(x).all(axis=(-2, -1))
    assert nan.tolist() == [[False, True, False], [True, False, True]]
    ok = ~nan
    backend.assert_close(x[ok], np.linalg.solve(a[ok], b), owned=False)


def test_vector_rhs_singular_members(backend: BackendCase, rng: np.random.Generator) -> None:
    # a vector b takes its own path (on JAX: expanded and squeezed inside the program)
    n = 3
    a = rng.standard_normal((4, n, n)) + 3 * np.eye(n)
    a[2] = 0.0
    b = rng.standard_normal(n)
    with pytest.raises(xl.LinAlgError) as info:
        backend.np(U.solve_unrolled(backend.arr(a), backend.arr(b), compile=_compile_arg(backend)))
    assert info.value.indices == ((2,),)
    x = _solve(backend, a, b, errors="nan")
    assert x.shape == (4, n)
    assert np.isnan(x).all(axis=-1).tolist() == [False, False, True, False]
    ok = [0, 1, 3]
    backend.assert_close(x[ok], np.linalg.solve(a[ok], b[:, None])[..., 0], owned=False)


@pytest.mark.parametrize("vector", [True, False], ids=["vector-b", "matrix-b"])
def test_raise_reads_one_flag_not_the_result(backend: BackendCase, rng: np.random.Generator,
                                             monkeypatch: pytest.MonkeyPatch, vector: bool) -> None:
    """errors="raise" (issue 21): the verdict is reduced where the solver ran; a
    call without a singular member copies nothing to the host (the adapter's
    to_host is never called), and one with a singular member still names it."""
    if backend.name == "dask":
        pytest.skip("dask: the verdict is part of the graph, computed with the result")
    n = 3
    a = rng.standard_normal((5, n, n)) + 3 * np.eye(n)
    b = rng.standard_normal(n) if vector else rng.standard_normal((5, n, 2))
    aa, bb = backend.arr(a), backend.arr(b)
    ad = xl._dispatch.adapter_for((aa, bb), ("a", "b"))
    copied: list[object] = []
    real = ad.to_host
    monkeypatch.setattr(ad, "to_host", lambda x: copied.append(x) or real(x))
    x = U.solve_unrolled(aa, bb, compile=_compile_arg(backend))
    assert copied == []
    backend.assert_close(x, np.linalg.solve(a, b[:, None])[..., 0] if vector else np.linalg.solve(a, b),
                         owned=False)
    a[3] = 0.0
    with pytest.raises(xl.LinAlgError) as info:
        U.solve_unrolled(backend.arr(a), bb, compile=_compile_arg(backend))
    assert info.value.members == (3,)


def test_resolution_cache_keys_on_dtype(backend: BackendCase, rng: np.random.Generator) -> None:
    # solve_adapter caches what its arguments resolve to: a float32 call after a
    # float64 one of the same n must get its own kernel (and a float32 result)
    a = rng.standard_normal((6, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal(3)
    for dt in (np.float64, np.float32, np.float64):
        x = _solve(backend, a.astype(dt), b.astype(dt))
        assert x.dtype == dt
        backend.assert_close(x, np.linalg.solve(a, b[:, None])[..., 0], dtype=dt, owned=False)


def test_resolution_cache_keys_on_device() -> None:
    # array-api-strict has three devices: the generic kernel builds its constants on
    # the input's device, so a cache that ignored devices would mix them here
    require_backend("array-api-strict")
    import array_api_strict as xps

    a = np.eye(3) * 2.0
    for dev in (xps.Device("CPU_DEVICE"), xps.Device("device1"), xps.Device("CPU_DEVICE")):
        x = xl.solve(xps.asarray(a, device=dev), xps.asarray(np.ones(3), device=dev), method="unrolled")
        assert x.device == dev
        np.testing.assert_allclose(np.asarray(xps.asarray(x, device=xps.Device("CPU_DEVICE"))), 0.5)


def test_singular_broadcast_names_a_members(backend: BackendCase) -> None:
    a = np.stack([np.eye(2), np.zeros((2, 2))])[:, None]  # (2, 1, 2, 2)
    b = np.ones((3, 2, 1))
    with pytest.raises(xl.LinAlgError) as info:
        backend.np(U.solve_unrolled(backend.arr(a), backend.arr(b), compile=_compile_arg(backend)))
    assert info.value.indices == ((1, 0),)


def test_dtypes_and_empty(backend: BackendCase) -> None:
    a = np.array([[2, 0], [0, 4]])
    x = _solve(backend, a, np.array([2, 2]))
    backend.assert_close(x, [1.0, 0.5], owned=False)
    assert x.dtype == np.float64
    e = _solve(backend, np.zeros((0, 3, 3)), np.zeros((0, 3, 2)))
    assert e.shape == (0, 3, 2)


def test_layouts_agree(backend: BackendCase, rng: np.random.Generator) -> None:
    a = rng.standard_normal((7, 4, 4))
    b = rng.standard_normal((7, 4, 3))
    xs = [_solve(backend, a, b, layout=lay) for lay in U.LAYOUTS]
    np.testing.assert_allclose(xs[0], xs[1], rtol=1e-12, atol=1e-12)
    backend.assert_close(xs[0], np.linalg.solve(a, b), owned=False)


def test_validation() -> None:
    a = np.eye(U.MAX_N + 1)
    with pytest.raises(ValueError, match="limit"):
        U.solve_unrolled(a, np.ones(U.MAX_N + 1))
    with pytest.raises(ValueError, match="layout"):
        U.solve_unrolled(np.eye(2), np.ones(2), layout="rows")
    xs = pytest.importorskip("array_api_strict")
    with pytest.raises(ValueError, match="no compiler"):  # (NumPy's is numba, where installed)
        U.solve_unrolled(xs.eye(2), xs.ones(2), compile=True)
    with pytest.raises(ValueError, match="errors"):
        U.solve_unrolled(np.eye(2), np.ones(2), errors="ignore")
    with pytest.raises(ValueError, match="rows"):
        U.solve_unrolled(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="square"):
        U.solve_unrolled(np.ones((2, 3)), np.ones(2))
    with pytest.raises(TypeError, match="float16"):
        U.solve_unrolled(np.eye(2, dtype=np.float16), np.ones(2, dtype=np.float16))


def test_complex() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 3, 3)) + 1j * rng.standard_normal((5, 3, 3))
    b = rng.standard_normal((3,)) + 0j
    np.testing.assert_allclose(U.solve_unrolled(a, b), np.linalg.solve(a, b[None, :, None])[..., 0], rtol=1e-10)


# ---------------------------------------------------------------------- NumPy's in-place program
@pytest.mark.parametrize("n", range(1, U.MAX_N + 1))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_numpy_inplace_program_is_the_schedule(monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator,
                                                n: int, dtype: type) -> None:
    """NumPy's batch-last kernel (the schedule as ufunc calls into reused buffers, by
    chunks) gives the Python rendering's results: bit for bit on real dtypes
    (same operations, same order), within rounding on complex (NumPy's complex
    loops differ between strided and contiguous arrays), with chunk boundaries
    and a short last chunk, singular members, NaN and inf inputs."""
    monkeypatch.setattr(numpy_backend, "UNROLLED_CHUNK", 7)
    U.clear_cache()
    nb, k = 53, 2
    a = rng.standard_normal((nb, n, n)) + (1j * rng.standard_normal((nb, n, n)) if dtype is np.complex128 else 0)
    a = a.astype(dtype)
    a[:, 0, 0] *= 1e-9  # pivoting needed
    a[3] = 0.0
    a[10, :, 0] = 0.0
    a[20, 0, 0] = np.nan
    a[52, n - 1, :] = np.inf
    b = rng.standard_normal((nb, n, k)).astype(dtype)
    try:
        fast = U.solve_unrolled(a, b, errors="nan", layout="batch-last")
        plain = U.solve_unrolled(a, b, errors="nan", layout="batch-first")  # the Python rendering
    finally:
        U.clear_cache()
    assert fast.shape == plain.shape == (nb, n, k)
    assert fast.dtype == plain.dtype == dtype
    assert np.isnan(fast[[3, 10]]).all()
    if dtype is np.complex128:
        np.testing.assert_allclose(fast, plain, rtol=1e-12, atol=1e-300)
    else:
        assert np.array_equal(fast, plain, equal_nan=True)
    _, buffers = _inplace.inplace_function(n, np)
    # buffers are reused: about one per matrix entry, not one per statement (n³)
    assert len(buffers) <= n * n + 4 * n


def test_numpy_inplace_buffers_kept_per_thread(monkeypatch: pytest.MonkeyPatch,
                                                rng: np.random.Generator) -> None:
    """The work buffers NumPy's kernel keeps between calls: calls of other batch
    sizes and right-hand-side counts in between, and threads running the same
    kernel at once, each get LAPACK's answer; a thread's second call of one shape
    allocates no new buffer."""
    import threading
    import tracemalloc

    monkeypatch.setattr(numpy_backend, "UNROLLED_CHUNK", 16)
    kernel = numpy_backend.make_unrolled_kernel(4, "batch-last", np.float64)

    def case(nb: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.standard_normal((nb, 4, 4)) + 4 * np.eye(4), rng.standard_normal((nb, 4, k))

    for nb, k in [(40, 1), (3, 1), (40, 3), (17, 1), (1, 2), (40, 1)]:
        a, b = case(nb, k)
        x, bad = kernel(a, b)
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10)
        assert not bad.any()
    monkeypatch.setattr(numpy_backend, "UNROLLED_CHUNK", 64)  # larger chunks: new buffers
    a, b = case(100, 1)
    np.testing.assert_allclose(kernel(a, b)[0], np.linalg.solve(a, b), rtol=1e-10)
    monkeypatch.setattr(numpy_backend, "UNROLLED_CHUNK", 16)
    inputs = [case(200 + 7 * t, 1 + t % 2) for t in range(4)]
    got: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(inputs))

    def work(t: int) -> None:
        start.wait()
        for _ in range(20):
            got[t] = kernel(*inputs[t])[0]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(inputs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t, (a, b) in enumerate(inputs):
        np.testing.assert_allclose(got[t], np.linalg.solve(a, b), rtol=1e-10)
    monkeypatch.setattr(numpy_backend, "UNROLLED_CHUNK", 256)
    kernel = numpy_backend.make_unrolled_kernel(4, "batch-last", np.float64)
    a, b = case(512, 1)
    kernel(a, b)
    tracemalloc.start()
    try:
        kernel(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the result (16 KiB), its mask and the chunk's views (Python objects): under
    # 29 KiB; buffers allocated afresh would add ~80 KiB (106 KiB measured)
    assert peak < 512 * 4 * 8 + 512 + 12 * 1024, peak


# ---------------------------------------------------------------------- JAX specifics
def _jax() -> tuple[object, object]:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    return jax, jnp


def test_jax_under_jit_gives_nan() -> None:
    jax, jnp = _jax()
    a = np.stack([np.eye(3), np.zeros((3, 3)), 2 * np.eye(3)])
    f = jax.jit(lambda a, b: U.solve_unrolled(a, b))  # errors="raise": no exception possible
    x = np.asarray(f(jnp.asarray(a), jnp.asarray(np.ones(3))))
    assert np.isnan(x[1]).all()
    np.testing.assert_allclose(x[[0, 2]], [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5]])


@pytest.mark.parametrize("nb", [50, 53])  # an even split, and a remainder
def test_jax_chunks(monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator, nb: int) -> None:
    _, jnp = _jax()
    monkeypatch.setattr(jax_backend, "UNROLLED_CPU_CHUNK", 7)
    U.clear_cache()
    try:
        a = rng.standard_normal((nb, 3, 3))
        a[nb - 1] = 0.0  # singular, in the last chunk (or the remainder)
        b = rng.standard_normal((nb, 3, 2))
        for layout in U.LAYOUTS:
            x = np.asarray(U.solve_unrolled(jnp.asarray(a), jnp.asarray(b), errors="nan", layout=layout))
            np.testing.assert_allclose(x[:-1], np.linalg.solve(a[:-1], b[:-1]), rtol=1e-9, atol=1e-9)
            assert np.isnan(x[-1]).all()
        with pytest.raises(xl.LinAlgError) as info:
            U.solve_unrolled(jnp.asarray(a), jnp.asarray(b))
        assert info.value.members == (nb - 1,)
    finally:
        U.clear_cache()


def test_jax_nan_solution_is_not_singular() -> None:
    """A NaN row from a non-singular member (inf/NaN input) is not reported."""
    _, jnp = _jax()
    a = np.stack([np.eye(2), np.eye(2)])
    b = np.array([[[np.nan], [np.nan]], [[1.0], [1.0]]])
    x = np.asarray(U.solve_unrolled(jnp.asarray(a), jnp.asarray(b)))
    assert np.isnan(x[0]).all()
    assert (x[1] == 1).all()


# ---------------------------------------------------------------------- torch.compile
def test_torch_compiled() -> None:
    require_backend("torch-cpu")
    import torch

    if not U.torch_compile_available("cpu"):
        pytest.skip(f"torch-cpu: {torch_backend.torch_compile_reason('cpu')}")
    a = np.stack([np.array([[0.0, 2.0], [1.0, 1.0]]), np.zeros((2, 2)), 4 * np.eye(2)])
    b = np.array([2.0, 2.0])
    x = U.solve_unrolled(torch.from_numpy(a), torch.from_numpy(b), errors="nan", compile=True)
    np.testing.assert_allclose(x.numpy()[[0, 2]], [[1.0, 1.0], [0.5, 0.5]])
    assert torch.isnan(x[1]).all()
    with pytest.raises(xl.LinAlgError) as info:
        U.solve_unrolled(torch.from_numpy(a), torch.from_numpy(b), compile=True)
    assert info.value.members == (1,)
    # another batch size reuses the compiled program (dynamic shapes)
    a2 = np.tile(4 * np.eye(2), (9, 1, 1))
    x2 = U.solve_unrolled(torch.from_numpy(a2), torch.from_numpy(b), compile=True)
    np.testing.assert_allclose(x2.numpy(), 0.5)
    assert U.is_warm("torch-cpu", 2, "float64")
    info_rows = [r for r in U.compiled_cache_info() if r["backend"] == "torch-cpu" and r["compiled"]]
    assert info_rows
    assert info_rows[0]["calls"] >= 3


# ---------------------------------------------------------------------- the CUDA kernel's C
_HARNESS = """
#include <cmath>
using std::fabs;
#define KERNEL(NAME, TYPE, BODY) \\
extern "C" void NAME(const TYPE* a, const TYPE* b, const TYPE* nanv, const TYPE* tolv, long long nb, long long k, \\
                     TYPE* x, bool* bad) { typedef TYPE T; for (long long i = 0; i < nb; ++i) { BODY } }
"""


@pytest.fixture(scope="module")
def c_kernels(tmp_path_factory: pytest.TempPathFactory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++) to check the CUDA kernel's source on the CPU")
    cases = [(n, lay, t) for n in (1, 2, 3, 5, U.MAX_N) for lay in U.LAYOUTS for t in ("double", "float")]
    src = [_HARNESS]
    for n, lay, t in cases:
        body = _schedule.c_source(n, lay).replace("\n", " \\\n")
        src.append(f"KERNEL(k_{n}_{lay.replace('-', '_')}_{t}, {t}, {body})\n")
    d = tmp_path_factory.mktemp("ckern")
    (d / "k.cpp").write_text("\n".join(src))
    subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-o", str(d / "k.so"), str(d / "k.cpp")], check=True)
    return ctypes.CDLL(str(d / "k.so"))


@pytest.mark.parametrize("n", [1, 2, 3, 5, U.MAX_N])
@pytest.mark.parametrize("layout", U.LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_kernel_source_on_cpu(c_kernels, rng: np.random.Generator, n, layout, dtype) -> None:
    nb, k = 40, 3
    a = rng.standard_normal((nb, n, n))
    a[:, 0, 0] *= 1e-9  # pivoting needed
    a[7] = 0.0
    if n > 1:
        a[9, :, 1] = 0.0  # a zero column stays zero under row operations: exact zero pivot
        # dependent columns: a pivot of rounding size, singular by the rule (not exactly 0)
        a[11, :, 1] = a[11, :, 0] / 3.0
    b = rng.standard_normal((nb, n, k))
    a, b = a.astype(dtype), b.astype(dtype)
    if layout == "batch-first":
        ac, bc, x = a.copy(), b.copy(), np.empty((nb, n, k), dtype)
    else:
        ac = np.ascontiguousarray(a.transpose(1, 2, 0))
        bc = np.ascontiguousarray(b.transpose(1, 2, 0))
        x = np.empty((n, k, nb), dtype)
    bad = np.zeros(nb, np.bool_)
    nanv = np.array([np.nan], dtype)
    tolv = np.array([n * np.finfo(dtype).eps], dtype)  # the rule's tolerance (_lib/_singular.py)
    fn = getattr(c_kernels, f"k_{n}_{layout.replace('-', '_')}_{'double' if dtype == np.float64 else 'float'}")
    p = ctypes.c_void_p
    fn(p(ac.ctypes.data), p(bc.ctypes.data), p(nanv.ctypes.data), p(tolv.ctypes.data), ctypes.c_longlong(nb),
       ctypes.c_longlong(k), p(x.ctypes.data), p(bad.ctypes.data))
    if layout == "batch-last":
        x = x.transpose(2, 0, 1)
    sing = {7} | ({9, 11} if n > 1 else set())
    assert set(np.flatnonzero(bad)) == sing
    ok = np.array([i not in sing for i in range(nb)])
    assert np.isnan(x[~ok]).all()
    _residual_ok(a[ok], b[ok], x[ok])


# ---------------------------------------------------------------------- selection, cache, imports
def test_results_files_are_read_and_written_compressed_or_plain(tmp_path) -> None:
    """benchmarks/unrolled.py keeps the tuning results xz-compressed (the name says
    so) and reads either kind by its content."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import unrolled as bench  # benchmarks/unrolled.py
    finally:
        sys.path.pop(0)
    obj = {"crossover": [{"n": 3, "ratio": 1.25}], "parts": []}
    for name in ("r.json.xz", "r.json"):
        path = str(tmp_path / name)
        bench.dump_json(path, obj)
        assert bench.load_json(path) == obj
    assert (tmp_path / "r.json.xz").read_bytes().startswith(b"\xfd7zXZ\x00")
    assert json.loads((tmp_path / "r.json").read_text()) == obj
    assert sorted(f.name for f in tmp_path.iterdir()) == ["r.json", "r.json.xz"]  # no temporaries
    assert TUNE_RESULTS.read_bytes().startswith(b"\xfd7zXZ\x00")


def test_selection_is_backed_by_measurements() -> None:
    """Every automatic choice is a measured win in the committed results, and the
    table is what the benchmark's derivation gives (the rule is data): the numba
    rules from ``unrolled-tune.json.xz`` (measured against ``xl.solve(method="native")``),
    the backends' own from ``unrolled-cpu.json``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import unrolled as bench  # benchmarks/unrolled.py
    finally:
        sys.path.pop(0)
    files = [TUNE_RESULTS, RESULTS]
    # the shipped file is the generator's output, byte for byte (regenerate it with
    # `python benchmarks/unrolled.py --derive <files> --out src/xlinalg/_unrolled_selection.json`)
    shipped = (ROOT / "src" / "xlinalg" / "_unrolled_selection.json").read_text(encoding="utf-8")
    with _chdir(ROOT):
        assert shipped == bench.derive_files([str(f.relative_to(ROOT)) for f in files])
    rules = json.loads(shipped)["rules"]
    assert rules, "the selection table is empty"
    assert set(U.SELECTION) == {(r["backend"], r["dtype"]) for r in rules
                                        if r.get("compiler") != "numba" or importlib.util.find_spec("numba")}
    data = {f: bench.load_json(str(f)) for f in files}
    for rule in rules:  # (the rows of the rule's compiler: numba, or the backend's own)
        numba = rule.get("compiler") == "numba"
        src = [r for d in data.values() for r in d["crossover"] if (r.get("compiler") == "numba") == numba]
        for n in range(1, rule["n_max"] + 1):
            if rule["batch_min"][n - 1] == NEVER:
                continue
            above = [
                r for r in src
                if (r["backend"], r["dtype"], r["n"]) == (rule["backend"], rule["dtype"], n)
                and r["batch"] >= rule["batch_min"][n - 1] and "ratio" in r
            ]
            assert above, (rule["backend"], rule["dtype"], n)
            assert all(r["ratio"] > 1.0 for r in above), (rule["backend"], rule["dtype"], n)
    if ("dask", "float64") not in U.SELECTION:
        assert not U.prefer_unrolled("dask", 2, 10**6, "float64")
    assert not U.prefer_unrolled("jax-cpu", U.MAX_N + 1, 10**6, "float64")
    for (backend, dtype), rule in U.SELECTION.items():
        first = next(i for i, v in enumerate(rule.batch_min) if v != NEVER)
        assert not U.prefer_unrolled(backend, first + 1, rule.batch_min[first] - 1, dtype)
        if not rule.warm_only and rule.compiler is None and rule.extra_first_call_s[first] == 0:
            assert U.prefer_unrolled(backend, first + 1, rule.batch_min[first], dtype)


@contextlib.contextmanager
def _chdir(path: pathlib.Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def test_selection_file_is_checked(tmp_path: pathlib.Path) -> None:
    """A rule whose per-n lists disagree with n_max is refused, naming the file."""
    good = json.loads((ROOT / "src" / "xlinalg" / "_unrolled_selection.json").read_text())
    path = tmp_path / "sel.json"
    path.write_text(json.dumps(good))
    assert _selection._load_selection(str(path)) == U.SELECTION
    good["rules"][0]["batch_min"] = good["rules"][0]["batch_min"][:-1]
    path.write_text(json.dumps(good))
    with pytest.raises(ValueError, match=r"sel\.json.*malformed"):
        _selection._load_selection(str(path))
    good["rules"][0]["batch_min"].append(1000)
    good["rules"][0]["backend"] = "mlx"
    path.write_text(json.dumps(good))
    with pytest.raises(ValueError, match=r"sel\.json.*'mlx', not a backend"):
        _selection._load_selection(str(path))


def test_cache_and_ops() -> None:
    U.clear_cache()
    U.solve_unrolled(np.eye(3), np.ones(3))
    (row,) = U.compiled_cache_info()
    numba = importlib.util.find_spec("numba") is not None  # NumPy's compiler, where installed
    assert (row["backend"], row["n"], row["dtype"], row["compiled"]) == ("numpy", 3, "float64", numba)
    U.solve_unrolled(2 * np.eye(3), np.ones(3))
    assert U.compiled_cache_info()[0]["calls"] == 2
    U.clear_cache()
    assert U.compiled_cache_info() == []
    counts = [U.op_count(n)["statements"] for n in range(1, U.MAX_N + 1)]
    assert counts == sorted(counts)
    assert U.op_count(5)["div"] == 5


def test_import_is_light() -> None:
    code = textwrap.dedent(
        """
        import sys, xlinalg._unrolled
        bad = [m for m in ("torch", "jax", "cupy", "dask", "numba") if m in sys.modules]
        assert not bad, bad
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_names() -> None:
    for name in U.__all__:
        assert hasattr(U, name), name
    assert tolerance(np.float64)[0] < 1e-6


def test_numpy_many_right_hand_sides_hold_no_large_buffers(rng: np.random.Generator) -> None:
    """Buffers for 256 systems of 10,000 columns were made for one system, and kept
    after the call (about 330 MB where LAPACK needs 1.3 MB)."""
    import tracemalloc

    a = rng.standard_normal((8, 8)) + 8 * np.eye(8)
    b = rng.standard_normal((8, 10_000))
    U.clear_cache()
    tracemalloc.start()
    try:
        x = xl.solve(a, b, method="unrolled")
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9)
    assert peak < 16 * b.nbytes, peak  # the result, its copies and one system's buffers
    assert current < 8 * b.nbytes, current  # the result and one system's buffers: nothing large kept


def test_big_endian_input_gives_a_native_result_and_leaves_the_cache_right(rng: np.random.Generator) -> None:
    """A kernel bakes its dtype into the arrays it makes: big-endian input gave a
    big-endian result and every later call of that size one too."""
    U.clear_cache()
    a = rng.standard_normal((4, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((4, 3, 1))
    ref = np.linalg.solve(a, b)
    for method in ("unrolled", "native"):
        x = xl.solve(a.astype(">f8"), b.astype(">f8"), method=method)
        assert x.dtype == np.float64
        assert x.dtype.isnative
        np.testing.assert_allclose(x, ref, rtol=1e-10)
    x = xl.solve(a, b, method="unrolled")
    assert x.dtype.str == np.dtype(np.float64).str
    np.testing.assert_allclose(x, ref, rtol=1e-10)
    big = np.full((1000, 1, 1), 2.0)
    xl.solve(big.astype(">f8"), np.ones((1000, 1, 1), ">f8"))  # "auto" takes the unrolled kernel here
    assert xl.solve(big, np.ones((1000, 1, 1))).dtype.isnative


def test_clear_cache_drops_the_generated_modules(rng: np.random.Generator) -> None:
    a = np.tile(np.eye(3) * 2, (4, 1, 1))
    for _ in range(5):
        U.solve_unrolled(a, np.ones(3), layout="batch-first")
        U.clear_cache()
    assert not [m for m in sys.modules if m.startswith("xlinalg._unrolled_generated_")]
