"""The fairness settings of each backend (threads, float32 matmul precision, JAX's
64-bit mode), applied and read back in the process that times it: every result
records what is in effect. The machine itself is described by :mod:`xlinalg._machine`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

from .._machine import blas_info
from ..backends import get_backend

__all__ = ["backend_state", "configure_backend"]


def configure_backend(
    backend: str,
    *,
    threads: int | None = None,
    allow_tf32: bool = False,
) -> Callable[[], None]:
    """Apply the fairness settings in this process, before any array is made.

    - The backend's own settings (``Backend.bench.configure``, in its module of
      ``xlinalg.backends``). JAX: 64-bit mode on (float64 cases compare like for
      like), default matmul precision "highest" (full float32) unless
      `allow_tf32`. torch: float32 matmul precision "highest" (no TF32) unless
      `allow_tf32`, in which case "high", and on CUDA both TF32 switches (matmul's
      and cuDNN's, which convolutions read) set to `allow_tf32`;
      ``torch.set_num_threads(threads)``.
      Dask: a dask.distributed cluster when one is named or active, else the
      threaded scheduler with `threads` workers when given (``backends/_dask_cluster.py``).
      CuPy reads ``CUPY_TF32`` from the environment (the runner sets it for its
      worker processes: ``Backend.bench.worker_env``).
    - BLAS/OpenMP pools (NumPy, SciPy, torch's): ``threadpool_limits(threads)``.

    Returns
    -------
    callable
        Restores the previous settings (for runs inside a caller's process).
    """
    undo: list[Callable[[], None]] = [
        get_backend(backend).bench.configure(threads=threads, allow_tf32=allow_tf32)
    ]
    if threads is not None:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover
            pass
        else:
            undo.append(threadpool_limits(limits=threads).restore_original_limits)

    def restore() -> None:
        for f in reversed(undo):
            f()
        undo.clear()

    return restore


def backend_state(backend: str, *, threads_requested: int | None = None) -> dict[str, Any]:
    """Version, device and the fairness settings in effect for `backend` in this process."""
    b = get_backend(backend)
    state: dict[str, Any] = {
        "backend": backend,
        "version": b.bench.version(),
        "device": b.bench.device_name(),
        "threads": {"requested": threads_requested, "blas": blas_info()},
        "matmul_precision": None,
    }
    with contextlib.suppress(AttributeError, OSError):
        state["threads"]["affinity"] = len(os.sched_getaffinity(0))
    b.bench.settings(state)
    return state
