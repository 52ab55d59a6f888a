"""Shapes as tuples: what every layer computes about them, without an array."""

from __future__ import annotations

from typing import Any

__all__ = ["broadcast_shapes"]


def broadcast_shapes(s1: Any, s2: Any) -> tuple[int, ...]:
    """The broadcast of two shapes (``np.broadcast_shapes`` for two, in pure Python:
    NumPy's allocates arrays and costs an order of magnitude more). Raises ValueError."""
    s1, s2 = tuple(s1), tuple(s2)
    if s1 == s2:
        return s1
    d = len(s1) - len(s2)
    if d > 0:
        s2 = (1,) * d + s2
    elif d < 0:
        s1 = (1,) * -d + s1
    out = []
    for x, y in zip(s1, s2):
        if x == y or y == 1:
            out.append(x)
        elif x == 1 or x != x:  # (NaN: an unknown size, Dask's A[mask]; checked at compute)
            out.append(y)
        elif y != y:
            out.append(x)
        else:
            raise ValueError(f"shapes {s1} and {s2} do not broadcast")
    return tuple(out)
