"""A quick finiteness test of a NumPy array (the fast paths', and NumPy's SVD guard)."""

from __future__ import annotations

import cmath
import math

import numpy as np

__all__ = ["np_finite"]


def np_finite(h: np.ndarray) -> bool:
    """Whether NumPy array `h` is all finite, as cheaply as its size allows.

    A quick test: ``False`` may also be a huge finite array whose total overflows
    (the caller then takes its checked path, which only costs time). No
    floating-point warning either way."""
    if h.size <= 64:
        return cmath.isfinite(sum(h.ravel().tolist()))
    return math.isfinite(np.vdot(h, h).real)
