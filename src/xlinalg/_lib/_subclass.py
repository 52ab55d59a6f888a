"""One rule for NumPy results: they are wrapped as NumPy's ufuncs wrap theirs."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["keep_subclass"]


def keep_subclass(result: Any, *inputs: Any) -> Any:
    """`result` wrapped by the NumPy input that NumPy's ufuncs would choose (an
    ndarray subclass over a plain ndarray; of two subclasses, the higher
    ``__array_priority__``, the first on ties), as they wrap theirs:
    ``x.__array_wrap__(result, None, return_scalar)`` with `return_scalar` true for
    a 0-d result.

    * An ndarray subclass input: every result keeps the subclass, a 0-d one
      included (a 0-d array of the subclass, as ``x.sum()``, ``np.vecdot(x, x)``
      and ``np.matmul(v, v)`` give, unless the subclass's ``__array_wrap__``
      makes a scalar of it), empty input or not.
    * A plain ndarray input: a 0-d result is a NumPy scalar (``np.float64``), as
      NumPy's reductions and ``numpy.linalg.det`` give; any other is unchanged.

    A tuple (a NamedTuple such as ``SVDResult``) is wrapped field by field; any
    other result (another library's array, a Dask array) is returned as it is.
    Every public function applies it to what it returns on NumPy's paths, so
    that empty input (built by ``zeros``) and non-empty input (whatever the
    kernel returned) give the same type (docs/semantics.md).
    """
    t = type(result)
    if t is np.ndarray and result.ndim and type(inputs[0]) is np.ndarray and len(inputs) == 1:
        return result  # the common case, first: one plain input, an array result
    if t is not np.ndarray:
        if isinstance(result, np.generic):
            result = np.asarray(result)
        elif isinstance(result, tuple):
            fields = [keep_subclass(r, *inputs) for r in result]
            return t(*fields) if hasattr(t, "_fields") else t(fields)
        else:  # another library's array, or already a subclass's
            return result
    plain = False
    wrap: np.ndarray | None = None
    for x in inputs:
        if isinstance(x, np.ndarray):
            if type(x) is np.ndarray:
                plain = True
            elif wrap is None or x.__array_priority__ > wrap.__array_priority__:
                wrap = x
    if wrap is not None:
        return wrap.__array_wrap__(result, None, result.ndim == 0)
    if plain and result.ndim == 0:
        return result[()]
    return result
