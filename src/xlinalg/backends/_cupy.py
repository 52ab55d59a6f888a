"""CuPy: its adapter and the ``"cupy"`` backend (CUDA)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib import _singular
from ._base import Adapter, Backend
from ._facets import BenchFacet, ConvertFacet, UnrolledFacet, facet, im2col_conv2d
from ._numpy import NUMPY

__all__ = ["CuPyAdapter", "CuPyBackend"]


class CuPyAdapter(Adapter):
    library = "CuPy"
    stack_call = "cupy.stack"
    backend_id = "cupy"
    solve_broadcasts = True  # CuPy neither broadcasts batches nor reads (B, M) as the standard

    def __init__(self) -> None:
        import array_api_compat.cupy as xc
        import cupy

        super().__init__(xc)
        self.cupy = cupy

    def describe(self, x: Any) -> str:
        return f"a CuPy array of shape {tuple(x.shape)} and dtype {x.dtype} on cuda:{x.device.id}"

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.get())

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        host = NUMPY.asarray(obj, None, name) if isinstance(obj, (list, tuple)) else obj  # as everywhere
        try:
            if like is None:
                return self.cupy.asarray(host)
            with like.device:
                return self.cupy.asarray(host)
        except Exception as exc:
            raise NUMPY.host_error(obj, name) or TypeError(
                f"`{name}` could not be converted to a CuPy array: {exc}"
            ) from exc

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        # the singular rule (_lib/_singular.py) from the LU vectorized over the batch
        # (CuPy exposes no batched LU); members that get NaN anyway are solved as I,
        # with explicitly broadcast operands (solve_broadcasts). errors="raise" reads
        # one bool (a device sync). The CPU tests run this path on NumPy
        # (tests/ops/test_result_checked_solve.py).
        with a.device:
            return super().solve(a, b, vector, errors)

    # cuSOLVER runs on the current device: the factorizations run on `a`'s, as solve does
    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        with a.device:
            return super().svd(a, full_matrices)

    def svdvals(self, a: Any) -> Any:
        with a.device:
            return super().svdvals(a)

    def qr(self, a: Any, mode: Any) -> tuple[Any, Any]:
        with a.device:
            return super().qr(a, mode)

    def fill_nan(self, mask: Any, x: Any) -> Any:
        # a NumPy scalar of x's dtype is a kernel argument: cupy.asarray(nan) would be
        # a host-to-device copy from pageable memory, which waits for the stream
        return self.cupy.where(mask, x.dtype.type(float("nan")), x)

    def sigmoid(self, x: Any) -> Any:
        try:
            from cupyx.scipy.special import expit

            if x.dtype.kind == "f":
                return expit(x)
        except ImportError:  # pragma: no cover
            pass
        return super().sigmoid(x)


class CuPyBench(BenchFacet):
    # (not exercised on machines without a CUDA device)
    distributions = (("cupy", ("cupy", "cupy-cuda12x", "cupy-cuda11x", "cupy-cuda13x")),)
    extra_float_dtypes = ("float16",)
    conv2d_kernel = "im2col: sliding_window_view + tensordot"

    def native_namespace(self) -> Any:
        import cupy

        return cupy

    def conv2d(self) -> Callable[[Any, Any], Any]:
        import cupy

        return im2col_conv2d(cupy)

    def device_name(self) -> str:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def processor_class(self) -> str:
        return "gpu"

    def fence_description(self) -> str:
        return "per block: current-stream synchronize (+ CUDA events for device time)"

    def device_clock(self) -> Any:  # pragma: no cover - needs a CUDA device
        import cupy

        class _CupyEvents:
            def start(self) -> None:
                self._a = cupy.cuda.Event()
                self._b = cupy.cuda.Event()
                self._a.record()

            def stop(self) -> float:
                self._b.record()
                self._b.synchronize()
                return float(cupy.cuda.get_elapsed_time(self._a, self._b)) / 1e3

        return _CupyEvents()

    def memory_reset(self) -> Any:  # pragma: no cover - needs CUDA
        import cupy

        cupy.cuda.Device().synchronize()
        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
        return pool, pool.used_bytes()

    def memory_peaks(self, token: Any) -> dict[str, int]:  # pragma: no cover - needs CUDA
        pool, base = token
        return {"cupy_pool_peak_bytes": int(pool.total_bytes() - base)}

    def release_memory(self) -> None:  # pragma: no cover - needs CUDA
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

    def settings(self, state: dict[str, Any]) -> None:  # pragma: no cover - needs CUDA
        import os

        state["matmul_precision"] = {"CUPY_TF32": os.environ.get("CUPY_TF32", "0")}

    def worker_env(self, env: dict[str, str], *, threads: int | None, allow_tf32: bool) -> None:
        # CuPy reads CUPY_TF32 from the environment
        env["CUPY_TF32"] = "1" if allow_tf32 else "0"


class CuPyConvert(ConvertFacet):
    writable_arrays = True

    def unsafe_layout(self, x: Any) -> bool:
        return any(s < 0 for s in x.strides)

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        import cupy

        out = cupy.from_dlpack(x)
        return (out.copy(), False) if protect else (out, True)


class CuPyUnrolled(UnrolledFacet):
    def compiler(self, complex_: bool) -> str | None:
        # the CUDA kernel is real-only: complex runs the schedule eagerly
        return None if complex_ else "cupy.ElementwiseKernel"

    def kernel(self, n: int, layout: str, dtype: Any, device: Any,
               compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        return make_unrolled_kernel(n, layout, dtype) if compiled else None


class CuPyBackend(Backend):
    name = "cupy"
    module = "cupy"
    install = ('pip install cupy-cuda12x (CUDA 12), or pip install "xlinalg[cupy]", on a '
               "machine with an NVIDIA GPU")
    gpu = True
    library = "cupy"
    adapter_class = CuPyAdapter
    namespace_names = ("array_api_compat.cupy", "cupy")
    bench = facet(CuPyBench)
    convert = facet(CuPyConvert)
    unrolled = facet(CuPyUnrolled)

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None:
            import cupy

            try:
                n = cupy.cuda.runtime.getDeviceCount()
            except Exception as exc:
                return f"no CUDA device is usable: {type(exc).__name__}: {exc}"
            if n == 0:
                return "no CUDA device is visible"
        return reason

    def from_numpy(self, arr: np.ndarray) -> Any:
        import cupy

        return cupy.asarray(arr)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x.get())

    def owns(self, x: Any) -> bool:
        return type(x).__module__.startswith("cupy")

    def synchronize(self, *arrays: Any) -> None:
        import cupy

        # The null/current stream of every device that holds an argument.
        devices = {a.device.id for a in arrays if hasattr(a, "device")} or {
            cupy.cuda.Device().id
        }
        for d in devices:
            with cupy.cuda.Device(d):
                cupy.cuda.get_current_stream().synchronize()

    def array_types(self) -> tuple[type, ...]:
        import cupy

        return (cupy.ndarray,)

    def make_adapter(self) -> Adapter:
        return CuPyAdapter()


# ---------------------------------------------------------------------- the unrolled solver
def make_unrolled_kernel(n: int, layout: str, dtype: Any) -> Callable[..., tuple[Any, Any]]:
    """The unrolled schedule as one CUDA elementwise kernel (float32/float64): one
    thread per system, the factorization in registers (``_schedule.c_source``)."""
    import cupy as cp

    from .._kernels._build import flatten
    from .._kernels._schedule import c_source, std_namespace

    kernel = cp.ElementwiseKernel(
        "raw T a, raw T b, raw T nanv, raw T tolv, int64 nb, int64 k",
        "raw T x, raw bool bad",
        c_source(n, layout),
        f"xlinalg_unrolled_solve_n{n}_{layout.replace('-', '_')}",
        preamble="",
    )
    # array-api-compat's CuPy namespace: CuPy 13 has no permute_dims or concat
    import array_api_compat.cupy as xcp

    ns = std_namespace(xcp)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        with a.device:
            a3, b3, batch, nb, k = flatten(ns, a, bm, n)
            nanv = cp.full((1,), float("nan"), dtype=dtype)
            tolv = cp.full((1,), _singular.tolerance(cp, dtype, n), dtype=dtype)  # the rule's
            if layout == "batch-first":
                a3 = cp.ascontiguousarray(a3)
                b3 = cp.ascontiguousarray(b3)
                x = cp.empty((nb, n, k), dtype=dtype)
            else:
                a3 = cp.ascontiguousarray(cp.transpose(a3, (1, 2, 0)))
                b3 = cp.ascontiguousarray(cp.transpose(b3, (1, 2, 0)))
                x = cp.empty((n, k, nb), dtype=dtype)
            bad = cp.empty((nb,), dtype=cp.bool_)
            # 1-D views: a raw CArray of more dimensions unravels every flat index
            # with integer divisions
            kernel(a3.reshape(-1), b3.reshape(-1), nanv, tolv, nb, k, x.reshape(-1), bad, size=nb)
            if layout == "batch-last":
                x = cp.transpose(x, (2, 0, 1))
            return cp.reshape(x, (*batch, n, k)), cp.reshape(bad, batch)

    return run

BACKENDS = (CuPyBackend(),)
