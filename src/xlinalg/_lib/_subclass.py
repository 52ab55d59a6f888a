"""One rule for NumPy array subclasses: a result keeps the subclass of its input."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["keep_subclass"]


def keep_subclass(result: Any, *inputs: Any) -> Any:
    """`result` (a plain ndarray) wrapped as the first ndarray subclass among
    `inputs`, through its ``__array_wrap__`` as ``numpy.linalg`` and the ufuncs do;
    `result` itself otherwise. Every function applies it to every array it returns,
    empty or not (solve, svd, qr of 0-size input returned a plain ndarray while
    matmul and add kept the subclass)."""
    if type(result) is not np.ndarray:
        return result
    for x in inputs:
        t = type(x)
        if t is not np.ndarray and isinstance(x, np.ndarray):
            return x.__array_wrap__(result)
    return result
