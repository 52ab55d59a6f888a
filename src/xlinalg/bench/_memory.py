"""Peak memory of one call, measured in a separate, untimed call.

Each backend reports what it can, and every figure is named after what it
measured (a report must not compare an allocator's peak with an RSS delta):

``rss_peak_delta_bytes``
    Process resident set: peak during the call minus before it. On Linux the
    kernel's high-water mark (``VmHWM``) is reset through ``/proc/self/clear_refs``
    before the call, so the peak is exact; elsewhere a sampling thread (1 ms)
    approximates it. Counts every host allocation (BLAS buffers, torch's CPU
    allocator, XLA's), and page-cache effects.
``tracemalloc_peak_bytes``
    Peak of Python-tracked allocations (NumPy registers its buffers with
    tracemalloc). NumPy, array-api-strict and Dask (NumPy underneath) only.
    tracemalloc slows allocation down, which is why memory is never measured
    during timing.
``cuda_max_allocated_bytes``
    ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, minus
    what was allocated before (torch-cuda).
``cupy_pool_peak_bytes``
    CuPy's default memory pool: ``total_bytes()`` after freeing all cached
    blocks before the call (the pool keeps freed blocks, so it ends at its peak).
``jax_peak_bytes_in_use``
    ``device.memory_stats()["peak_bytes_in_use"]`` where the device reports it
    (GPUs; the JAX CPU client does not). Not resettable: it is the process's peak.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..backends import Backend

__all__ = ["measure_memory", "release_memory"]


def _read_status(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS counter (Linux >= 4.0). True if it worked."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _rss() -> int | None:
    v = _read_status("VmRSS")
    if v is not None:
        return v
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # pragma: no cover
        return None


class _RssSampler:
    """Polls RSS every millisecond (fallback where VmHWM cannot be reset)."""

    def __init__(self) -> None:
        self.peak = _rss() or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            r = _rss()
            if r is not None and r > self.peak:
                self.peak = r
            time.sleep(0.001)

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        r = _rss()
        if r is not None and r > self.peak:
            self.peak = r


def measure_memory(backend: Backend, call: Callable[[], Any]) -> dict[str, Any]:
    """Run `call()` once (it must include the fence) and return what was measured.

    The result is ``{"measured": [names], <name>: bytes, ...}``; ``call``'s
    return value is discarded. The device's figures come from the backend
    (``Backend.bench.memory_reset`` / ``memory_peaks``).
    """
    out: dict[str, Any] = {}
    host_traced = backend.bench.numpy_buffers

    # device allocators: reset before the call
    token = backend.bench.memory_reset()

    # host: RSS high-water mark (and tracemalloc for NumPy-backed backends)
    rss0 = _rss()
    exact_hwm = _reset_hwm() and _read_status("VmHWM") is not None
    if host_traced:
        tracemalloc.start()
        tracemalloc.reset_peak()
    try:
        if exact_hwm:
            call()
            peak = _read_status("VmHWM")
        else:
            with _RssSampler() as sampler:
                call()
            peak = sampler.peak
        if host_traced:
            _, tm_peak = tracemalloc.get_traced_memory()
            out["tracemalloc_peak_bytes"] = int(tm_peak)
    finally:
        if host_traced:
            tracemalloc.stop()
    if rss0 is not None and peak is not None:
        out["rss_peak_delta_bytes"] = max(0, int(peak) - int(rss0))
        out["rss_method"] = "VmHWM (exact)" if exact_hwm else "sampled every 1 ms"
    out.update(backend.bench.memory_peaks(token))
    out["measured"] = sorted(k for k in out if k.endswith("_bytes"))
    return out


def release_memory(backend: Backend | None) -> None:
    """Give memory back after a cell (and after a failure): gc, allocator caches
    (`backend` None: a cell that failed before its backend was found)."""
    gc.collect()
    if backend is not None:
        # (a failure here must not hide the cell's own outcome)
        with contextlib.suppress(Exception):
            backend.bench.release_memory()
