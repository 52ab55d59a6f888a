"""Type aliases of xlinalg's signatures (for the type checker and the reader).

``Array``
    An array of any supported library (NumPy, PyTorch, JAX, CuPy, Dask,
    array-api-strict...). No runtime type is shared by them, so to a type
    checker it is ``Any``, as in SciPy's ``_lib/_array_api.py``; the name says
    what a parameter takes.
``Namespace``
    An array namespace: the module of the standard's functions (``numpy``,
    ``array_api_compat.torch``, ``jax.numpy``, ``array_api_strict``...).
``QRMode``
    The modes of :func:`xlinalg.qr`, as the adapters receive them (validated).

Nothing here imports an array library.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal, TypeAlias

__all__ = ["Array", "Namespace", "QRMode"]

Array: TypeAlias = Any
Namespace: TypeAlias = ModuleType
QRMode: TypeAlias = Literal["reduced", "complete"]
