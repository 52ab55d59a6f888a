"""array-api-strict: the standard and nothing else, as the ``"array-api-strict"`` backend."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from ._base import Adapter, Backend
from ._facets import BenchFacet, ConvertFacet, facet
from ._numpy import NUMPY

__all__ = ["StrictAdapter", "StrictBackend", "strict_to_numpy"]


class StrictAdapter(Adapter):
    library = "array-api-strict"
    stack_call = "array_api_strict.stack"
    backend_id = "array-api-strict"

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        try:
            return super().asarray(obj, like, name)
        except TypeError as exc:  # named as on every backend where a Python object is inside
            raise NUMPY.host_error(obj, name) or exc from exc.__cause__

    def to_host(self, x: Any) -> np.ndarray:
        return strict_to_numpy(x)


class _LegacyDLPack:
    """`x` seen through the 2022.12 DLPack protocol (no ``max_version`` keyword)."""

    def __init__(self, x: Any) -> None:
        self.x = x

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        return self.x.__dlpack__(stream=stream)

    def __dlpack_device__(self) -> Any:
        return self.x.__dlpack_device__()


def strict_to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of an array-api-strict array, under any ``api_version`` flag.

    NumPy asks ``__dlpack__`` for ``max_version``, which array-api-strict refuses
    when its flags select an API version before 2023.12.
    """
    try:
        return np.from_dlpack(x).copy()
    except ValueError:
        return np.from_dlpack(_LegacyDLPack(x)).copy()


class StrictBench(BenchFacet):
    distributions = (("array-api-strict", ("array-api-strict",)),)
    opt_in = ("the standard's reference implementation for testing portable code, "
              "NumPy underneath: not a library to choose for speed")
    numpy_buffers = True  # a NumPy array inside each array
    lacks = MappingProxyType({
        "einsum": "the array API standard has no einsum",
        "conv2d": "the array API standard has no convolution and no sliding-window view",
    })
    notes = MappingProxyType({"strided_view": "array-api-strict wraps a NumPy array: x[:, ::2] is a real "
                             "strided NumPy view, so the layout difference is NumPy's",
             "out": "no out= in the standard: the allocating add"})

    # its arrays have the standard's methods only: no astype, no copy
    def cast(self, x: Any, dtype: Any) -> Any:
        return self.native_namespace().astype(x, dtype)

    def copy(self, x: Any) -> Any:
        return self.native_namespace().asarray(x, copy=True)


class StrictConvert(ConvertFacet):
    def dtype_refusal(self, name: str) -> str | None:
        if name in ("bfloat16", "float16"):
            return (f"array-api-strict has no {name}. Cast to float32 first (exact: it "
                    f"holds every {name})")
        return None

    def host_view(self, x: Any) -> np.ndarray | None:
        try:
            return np.from_dlpack(x)
        except Exception:
            return None

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        import array_api_strict

        return array_api_strict.from_dlpack(x), True

    def seal(self, x: Any) -> Any:
        import array_api_strict

        h = np.from_dlpack(x)
        if not h.flags.writeable:
            return x
        h.flags.writeable = False  # (a view of its own: x's buffer stays as it was)
        return array_api_strict.asarray(h, copy=False)


class StrictBackend(Backend):
    name = "array-api-strict"
    module = "array_api_strict"
    install = 'pip install array-api-strict, or pip install "xlinalg[strict]"'
    library = "array_api_strict"
    adapter_class = StrictAdapter
    bench = facet(StrictBench)
    convert = facet(StrictConvert)

    def from_numpy(self, arr: np.ndarray) -> Any:
        import array_api_strict as xps

        return xps.asarray(np.array(arr, copy=True))

    def to_numpy(self, x: Any) -> np.ndarray:
        return strict_to_numpy(x)

    def owns(self, x: Any) -> bool:
        return type(x).__module__.startswith("array_api_strict")

    def namespace(self) -> Any:
        self.require()
        import array_api_strict

        return array_api_strict

    def array_types(self) -> tuple[type, ...]:
        import array_api_strict

        return (type(array_api_strict.asarray(0)),)

    def make_adapter(self) -> Adapter:
        import array_api_strict

        return StrictAdapter(array_api_strict)

    def owns_namespace(self, xp: Any) -> bool:
        return getattr(xp, "__name__", "").startswith("array_api_strict")


BACKENDS = (StrictBackend(),)
