"""NumPy's stack solve a chunk of members at a time: the same answers and errors as one
pass over the stack, and working memory of a chunk, not of the stack."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import xlinalg as xl
from xlinalg.backends import _numpy_adapter

SHAPES = [(300, 5, 5), (7, 40, 3, 3), (1000, 2, 2)]


def _poisoned(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal((*shape[:-1], 2)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape).astype(a.real.dtype)
    flat, bflat = a.reshape(-1, *shape[-2:]), b.reshape(-1, *b.shape[-2:])
    m = len(flat)
    flat[0] = 0  # singular, first member of the first chunk
    flat[m - 1, :, 0] = 0  # singular, last member of the last chunk
    flat[m // 2, 1, 1] = np.nan  # NaN in a: NaN out, never singular
    bflat[m // 3, 0, 1] = np.inf  # inf in b: NaN out
    flat[m // 4] = np.eye(shape[-1]) * np.finfo(a.real.dtype).tiny  # subnormal-ish scale, not singular
    return a, b


def _raised(a: np.ndarray, b: np.ndarray) -> tuple[str, str]:
    """The error of ``solve(a, b)`` by type and words ("none" if it returned)."""
    try:
        xl.solve(a, b, method="native")
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "none", ""


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("chunk", [1, 100, 4096])
def test_chunks_give_the_one_pass_answer(monkeypatch: pytest.MonkeyPatch, shape, dtype, chunk) -> None:
    a, b = _poisoned(np.random.default_rng(0), shape, dtype)
    calls = [(a, b), (a, b[..., :1]), (a, b[..., 1:2])]  # the last a strided view
    monkeypatch.setattr(_numpy_adapter, "_CHUNK_BYTES", 1 << 62)
    ref = [(_raised(x, y), xl.solve(x, y, method="native", errors="nan")) for x, y in calls]
    assert ref[0][0][0] == "LinAlgError"  # the singular members are named
    assert np.isnan(ref[0][1]).any()
    assert np.isfinite(ref[0][1]).any()
    monkeypatch.setattr(_numpy_adapter, "_CHUNK_BYTES", chunk)
    for (x, y), (raised, nan) in zip(calls, ref, strict=True):
        assert _raised(x, y) == raised
        got = xl.solve(x, y, method="native", errors="nan")
        assert got.dtype == nan.dtype
        np.testing.assert_array_equal(got, nan)


def test_a_large_stack_is_solved_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Working memory beyond the solution is about one chunk's (tracemalloc sees NumPy's
    allocations): before the chunks, the rule's copies of `a` were the stack's."""
    monkeypatch.setattr(_numpy_adapter, "_CHUNK_BYTES", 1 << 20)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((160_000, 5, 5))  # 32 MB
    b = rng.standard_normal((160_000, 5, 1))
    tracemalloc.start()
    try:
        x = xl.solve(a, b, method="native")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= x.nbytes + 8 * (1 << 20), f"peak {peak / 2**20:.1f} MiB for a {a.nbytes / 2**20:.0f} MiB stack"
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-8, atol=1e-8)


def test_subclasses_and_broadcast_batches_take_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tagged(np.ndarray):
        pass

    monkeypatch.setattr(_numpy_adapter, "_CHUNK_BYTES", 1)
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((50, 4, 4)) + 4 * np.eye(4)).view(Tagged)
    assert type(xl.solve(a, rng.standard_normal((50, 4, 1)), method="native")) is Tagged
    x = xl.solve(a.view(np.ndarray), rng.standard_normal((4, 1)), method="native")  # b broadcast
    assert x.shape == (50, 4, 1)
