"""What ``xlinalg bench --tune`` needs to know per library (``xlinalg.bench._tune``).

Kept in the backends package, where library names may be decided on
(tests/architecture/test_library_names.py): which backends the tune measures, each library's
own batched solve (the column the unrolled kernel is measured against), and
which backends' non-numba rules may only use an already compiled kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BLOCKWISE_BACKENDS", "TUNE_BACKENDS", "native_batched_solve", "warm_only_by_default"]

#: the CPU backends whose eager unrolled path is the numba kernel
TUNE_BACKENDS = ("numpy", "torch-cpu", "jax-cpu")
#: and those whose unrolled path runs per block (Dask: NumPy's eager in-place
#: kernel in each block's task, not numba: docs/unrolled.md), measured when named
BLOCKWISE_BACKENDS = ("dask",)


def native_batched_solve(backend: str) -> Callable[[Any, Any], Any]:
    """The library's own batched solve for `backend` (a backend id)."""
    if backend == "numpy":
        return np.linalg.solve
    if backend.startswith("torch"):
        import torch

        return torch.linalg.solve
    if backend.startswith("jax"):
        import jax.numpy as jnp

        return jnp.linalg.solve
    if backend == "dask":  # NumPy's batched solve on each block (Dask has none of its own)
        import dask.array as da

        return lambda a, b: da.map_blocks(np.linalg.solve, a, b, dtype=a.dtype)
    raise ValueError(f"xlinalg bench --tune: no native solve for backend {backend!r}")


def warm_only_by_default(backend: str, compiler: str | None) -> bool:
    """Whether a derived rule may only use an already compiled kernel: torch's own
    compiled kernels (``torch.compile``, tens of seconds cold), not numba's."""
    return backend.startswith("torch") and compiler != "numba"
