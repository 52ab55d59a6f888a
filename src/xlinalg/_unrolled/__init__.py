"""Many small systems at once: Gaussian elimination unrolled for a fixed ``n``.

For tiny matrices the backends' batched LAPACK/cuSOLVER paths spend most of their
time on per-matrix overhead. Here Gaussian elimination with partial pivoting is
*unrolled* for a fixed ``n`` into straight-line code whose every value is an array
over the batch, built only from the array API standard's elementwise operations
(``abs``, ``where``, ``>``, ``==``, ``|``, ``*``, ``-``, ``/``) plus indexing,
``reshape``, ``permute_dims`` and ``stack``. Each backend's compiler then fuses
the whole solve into a few kernels: ``jax.jit`` (XLA), ``torch.compile``
(Inductor, where a C compiler works), and on CuPy the same schedule rendered as
one CUDA elementwise kernel (one thread per system, the matrix in registers).

The package, along its seams:

* :mod:`._schedule`: the algorithm, written once, and its renderers (Python
  source over a namespace, C source for the CuPy kernel);
* :mod:`._build`: what every kernel is made of; what is library-specific
  (default layout, compiler, kernel builder) are hooks of each backend in
  ``xlinalg.backends`` (``Backend.unrolled_*``);
* :mod:`._inplace`: the schedule as ufunc calls into reused buffers (NumPy);
* :mod:`._cache`: kernels cached per ``(backend, n, dtype, device, layout, compiled)``;
* :mod:`._solve`: validation, dispatch and the singular check;
* :mod:`._selection`: ``method="auto"``'s measured rules, loaded from the
  package data file ``_unrolled_selection.json``.

Semantics are :func:`xlinalg.solve`'s: the standard's right-hand-side rule,
batch broadcasting, the dtype rule, and singular members (a pivot after partial
pivoting ``<= n * eps *`` the largest modulus of its column: xlinalg's one rule,
``_lib/_singular.py``, applied to the pivots in hand) reported per member: ``LinAlgError`` naming them (``errors="raise"``,
eager), or NaN for those members (``errors="nan"``, under ``jax.jit`` or
``torch.compile``, where no exception is possible). See ``docs/unrolled.md`` for
the measurements and the selection rule (:func:`prefer_unrolled`).
"""

from __future__ import annotations

from ..backends import BACKEND_NAMES, get_backend
from ..backends._torch import torch_compile_available
from ._cache import clear_cache, compiled_cache_info, is_warm
from ._schedule import LAYOUTS, MAX_N, op_count
from ._selection import (
    METHODS,
    SelectionRule,
    prefer_unrolled,
    selection,
    use_unrolled,
)
from ._solve import solve_adapter, solve_unrolled

#: backend id -> the layout the unrolled solver uses there by default (the
#: backend's ``unrolled_layout``: the one measured fastest; docs/unrolled.md)
DEFAULT_LAYOUT: dict[str, str] = {name: get_backend(name).unrolled_layout for name in BACKEND_NAMES}

__all__ = [
    "DEFAULT_LAYOUT",
    "LAYOUTS",
    "MAX_N",
    "METHODS",
    "SELECTION",
    "SelectionRule",
    "clear_cache",
    "compiled_cache_info",
    "is_warm",
    "op_count",
    "prefer_unrolled",
    "selection",
    "solve_adapter",
    "solve_unrolled",
    "torch_compile_available",
    "use_unrolled",
]


def __getattr__(name: str) -> object:
    if name == "SELECTION":  # loaded on first use: a bad $XLINALG_UNROLLED_SELECTION never fails the import
        return selection()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
