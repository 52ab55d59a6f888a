"""A backend's array namespace with its linear algebra replaced by xlinalg's.

The standard's conformance suite (data-apis/array-api-tests) tests one namespace
``xp``; ``namespace("array_api_strict")`` is that library's namespace with every
``linalg`` function xlinalg provides, and the top-level ``matmul``, ``tensordot``,
``vecdot`` and ``matrix_transpose``, taken from xlinalg instead. Everything else
(array creation, dtypes, elementwise functions the suite uses to compute its
expectations) stays the backend's own, so a test that fails here and passes on
the plain namespace is xlinalg's defect. docs/conformance.md runs it.

Usage with the suite::

    ARRAY_API_TESTS_MODULE="exec('import xlinalg_namespace as m; xp = m.namespace(\\"array_api_compat.numpy\\")')"
"""

from __future__ import annotations

import contextlib
import importlib
import types
from typing import Any

import xlinalg

__all__ = ["LINALG_NAMES", "TOP_LEVEL_NAMES", "namespace"]

#: The 2025.12 linalg extension's functions (all 25 are xlinalg's).
LINALG_NAMES: tuple[str, ...] = (
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
    "vector_norm",
)
#: The linalg functions the standard also puts in the main namespace.
TOP_LEVEL_NAMES: tuple[str, ...] = ("matmul", "matrix_transpose", "tensordot", "vecdot")


def _copy(module: Any, name: str) -> types.ModuleType:
    out = types.ModuleType(name, getattr(module, "__doc__", None))
    for key in dir(module):
        if not key.startswith("__") or key in ("__array_api_version__",):
            with contextlib.suppress(AttributeError):  # a lazy attribute that fails
                setattr(out, key, getattr(module, key))
    return out


def namespace(base: str, *, native: bool = False) -> types.ModuleType:
    """The namespace `base` (an importable name) with xlinalg's linear algebra;
    ``native=True``: the same copy with the backend's own (the comparison run)."""
    mod = importlib.import_module(base)
    ns = _copy(mod, f"xlinalg_namespace[{base}]" + ("[native]" if native else ""))
    linalg = _copy(getattr(mod, "linalg", types.ModuleType("linalg")), ns.__name__ + ".linalg")
    if not native:
        for name in LINALG_NAMES:
            setattr(linalg, name, getattr(xlinalg, name))
        for name in TOP_LEVEL_NAMES:
            setattr(ns, name, getattr(xlinalg, name))
    ns.linalg = linalg  # type: ignore[attr-defined]
    return ns
