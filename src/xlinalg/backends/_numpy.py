"""NumPy: the ``"numpy"`` backend (its adapter is in :mod:`._numpy_adapter`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from .._lib import _singular
from ._base import Adapter, Backend
from ._facets import BenchFacet, ConvertFacet, UnrolledFacet, facet, im2col_conv2d
from ._numpy_adapter import NUMPY, NumPyAdapter, int_text, low_float, refused_subclass

__all__ = ["NUMPY", "NumPyAdapter", "NumPyBackend", "int_text", "low_float", "refused_subclass"]


class NumPyBench(BenchFacet):
    distributions = (("numpy", ("numpy",)), ("scipy", ("scipy",)))  # SciPy: its BLAS, expit
    numpy_buffers = True
    extra_float_dtypes = ("float16",)
    numpy_arrays = True
    numpy_wraps = True
    conv2d_kernel = "im2col: sliding_window_view + tensordot"
    lacks = MappingProxyType({"device_transfer": "NumPy arrays live on the host: there is no transfer"})

    def version(self) -> str:
        return np.__version__

    def native_namespace(self) -> Any:
        return np

    def contiguous(self, x: Any) -> Any:
        return np.ascontiguousarray(x)

    def layout(self, x: Any) -> dict[str, Any]:
        return {"shape": [int(s) for s in x.shape], "c_contiguous": bool(x.flags.c_contiguous)}

    def conv2d(self) -> Callable[[Any, Any], Any]:
        return im2col_conv2d(np)


class NumPyConvert(ConvertFacet):
    numpy_host = True

    def host_view(self, x: Any) -> np.ndarray | None:
        return x

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        return np.from_dlpack(x), True

    def seal(self, x: Any) -> Any:
        if x.flags.writeable:
            x = x.view()
            x.flags.writeable = False
        return x


class NumPyUnrolled(UnrolledFacet):
    layout = "batch-last"

    def compiler(self, complex_: bool) -> str | None:
        # numba, where installed (an optional extra): found without importing it
        from .._kernels._numba import numba_problem

        return "numba" if numba_problem() is None else None

    def kernel(self, n: int, layout: str, dtype: Any, device: Any,
               compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        if compiled:  # one compiled loop over the batch, any layout read in place
            from .._kernels._numba import make_kernel

            return make_kernel(n, dtype)
        return make_unrolled_kernel(n, layout, dtype)


class NumPyBackend(Backend):
    name = "numpy"
    module = "numpy"
    install = "pip install numpy"
    library = "numpy"
    adapter_class = NumPyAdapter
    namespace_names = ("array_api_compat.numpy", "numpy")
    bench = facet(NumPyBench)
    convert = facet(NumPyConvert)
    unrolled = facet(NumPyUnrolled)

    def array_types(self) -> tuple[type, ...]:
        return (np.ndarray, np.generic)  # NumPy returns scalars for 0-d results

    def make_adapter(self) -> Adapter:
        return NUMPY

    def adapter_for_type(self, cls: type) -> Adapter | None:
        # scalars are host data to the operations; np.matrix and masked arrays are
        # refused (refused_subclass says why)
        if not issubclass(cls, np.ndarray) or issubclass(cls, np.matrix):
            return None
        ma = sys.modules.get("numpy.ma")
        return None if ma is not None and issubclass(cls, ma.MaskedArray) else NUMPY

    def from_numpy(self, arr: np.ndarray) -> Any:
        return np.array(arr, copy=True)

    def owns(self, x: Any) -> bool:
        return isinstance(x, np.ndarray)


# ---------------------------------------------------------------------- the unrolled solver
#: batch-last: systems per chunk of the in-place program (``xlinalg._kernels._inplace``:
#: its buffers stay in the cache; docs/unrolled.md), for one right-hand side
UNROLLED_CHUNK = 4096


def unrolled_namespace() -> Any:
    """NumPy's own functions for the generated code (no array-api-compat wrappers:
    200 calls per solve)."""
    import types

    return types.SimpleNamespace(
        abs=np.abs, where=np.where, stack=np.stack, reshape=np.reshape,
        permute_dims=np.transpose, broadcast_to=np.broadcast_to, concat=np.concatenate,
    )


def make_unrolled_kernel(n: int, layout: str, dtype: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """NumPy's unrolled solve, eagerly: batch-last runs the in-place program by chunks,
    batch-first the Python rendering."""
    from .._kernels._build import eager_run
    from .._kernels._schedule import python_function

    ns = unrolled_namespace()
    one, nan = np.asarray(1, dtype=dtype), np.asarray(np.nan, dtype=dtype)
    tol = np.abs(one) * _singular.tolerance(np, np.dtype(dtype), n)  # real, as the rule's
    if layout == "batch-last":
        run = _chunked(ns, n, dtype, one, nan, tol)
    else:
        run = eager_run(ns, python_function(n, layout, ns), n, layout, lambda a: (one, nan, tol), False)

    def quiet(a: Any, bm: Any) -> tuple[Any, Any]:
        with np.errstate(all="ignore"):  # inf/NaN inputs: IEEE results, no warnings
            return run(a, bm)

    return quiet


#: work buffers of the chunked unrolled solve kept per thread between calls, at most
_HELD_BYTES = 32 * 2**20


def _chunked(ns: Any, n: int, dtype: Any, one: Any, nan: Any, tol: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """The in-place program over chunks of :data:`UNROLLED_CHUNK` systems.

    Its work buffers are kept per thread between calls (one set, the latest chunk
    shape): allocating them afresh each call costs page
    faults wherever freed memory goes back to the system at once (Dask's workers
    set ``MALLOC_TRIM_THRESHOLD_=65536``; docs/performance.md).
    """
    import threading

    from .._kernels._build import flatten
    from .._kernels._inplace import inplace_function

    fn, kinds = inplace_function(n, np)
    types_ = {"T": np.dtype(dtype), "R": np.empty(0, dtype).real.dtype, "B": np.dtype(bool)}
    local = threading.local()

    def buffers(k: int, c: int) -> tuple[Any, Any, Any, Any, list[Any]]:
        held = getattr(local, "held", None)
        if held is None or held[0] != (k, c):
            at, bt = np.empty((n * n, c), dtype), np.empty((n, k, c), dtype)
            xt, bc = np.empty((n, k, c), dtype), np.empty(c, bool)
            buf = [np.empty((c,) if s == "e" else (k, c), types_[t]) for t, s in kinds]
            held = ((k, c), (at, bt, xt, bc, buf))
            size = at.nbytes + bt.nbytes + xt.nbytes + bc.nbytes + sum(v.nbytes for v in buf)
            # kept for the next call only while small: many right-hand sides would
            # otherwise hold hundreds of MB after the call returned
            local.held = held if size <= _HELD_BYTES else None
        return held[1]

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        a3, b3, batch, nb, k = flatten(ns, a, bm, n)
        # systems per chunk: fewer for many right-hand sides, so that the (K, chunk)
        # buffers stay about as large as for one (at least 256 systems a chunk)
        full = max(1, min(UNROLLED_CHUNK, 256), UNROLLED_CHUNK // k)
        if nb < full and (n * n + 2 * n * k) * full * np.dtype(dtype).itemsize > _HELD_BYTES:
            full = max(1, nb)  # a few systems with 10,000 columns: slots for those only
        x = np.empty((nb, n, k), dtype)
        bad = np.empty(nb, bool)
        held = buffers(k, full)
        m = 0
        for s0 in range(0, nb, full):
            if min(full, nb - s0) != m:  # the first chunk, or a shorter last one: views
                m = min(full, nb - s0)
                at, bt, xt, bc = held[0][:, :m], held[1][..., :m], held[2][..., :m], held[3][:m]
                buf = [v[..., :m] for v in held[4]]
            np.copyto(at, np.reshape(a3[s0:s0 + m], (m, n * n)).T)
            np.copyto(bt, np.transpose(b3[s0:s0 + m], (1, 2, 0)))
            fn(at, bt, xt, bc, one, nan, tol, buf)
            np.copyto(x[s0:s0 + m], np.transpose(xt, (2, 0, 1)))
            bad[s0:s0 + m] = bc
        return np.reshape(x, (*batch, n, k)), np.reshape(bad, batch)

    return run


BACKENDS = (NumPyBackend(),)
