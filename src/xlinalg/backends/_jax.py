"""JAX: the ``"jax-cpu"`` and ``"jax-gpu"`` backends (the adapter is in :mod:`._jax_adapter`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib import _singular
from . import _convert
from ._base import Adapter, Backend, TypeHooks
from ._facets import BenchFacet, ConvertFacet, TestingFacet, UnrolledFacet, facet
from ._jax_adapter import (
    HOST_LOOK_MAX,
    JaxAdapter,
    jax_backend_name,
    jax_cpu_only,
    traced_backend_name,
)

__all__ = ["HOST_LOOK_MAX", "JaxAdapter", "JaxBackend", "jax_backend_name"]


#: dtypes JAX holds only with ``jax_enable_x64`` (it would silently narrow them)
_X64 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


class JaxBench(BenchFacet):
    backend: JaxBackend
    distributions = (("jax", ("jax",)), ("jaxlib", ("jaxlib",)))
    # each result of a timed block has its own readiness (asynchronous dispatch)
    fence_every_result = True
    extra_float_dtypes = ("float16", "bfloat16")
    no_strided_views = ("JAX has no layout a user can choose: x[:, ::2] is a slice that XLA "
                        "materialises as a new row-major array, so the 'strided' operand is "
                        "already a contiguous copy; only the contiguous cell is run")
    function_compiler = "jax.jit"
    conv2d_kernel = "jax.lax.conv_general_dilated"

    def __init__(self, backend: JaxBackend) -> None:
        super().__init__(backend)
        self.numpy_wraps = not backend.gpu  # (np.asarray of a CPU array: its buffer)
        self.notes = {"out": "no out= in JAX: the allocating add" if backend.gpu else
                      "no out= in JAX: the allocating add (XLA reuses freed buffers)"}

    def device_name(self) -> str:
        d = self.backend._device()
        return str(getattr(d, "device_kind", d))

    def transfer_to_host(self, x: Any) -> np.ndarray:
        # np.asarray(x) keeps its host copy on `x` (jax.Array._npy_value) and returns it
        # on every later call; a put to the CPU device copies anew each time (on the
        # CPU backend it is `x` itself: there is no transfer to time there)
        import jax

        return np.asarray(jax.device_put(x, jax.devices("cpu")[0]))

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(fn)

    def conv2d(self) -> Callable[[Any, Any], Any]:
        import jax

        def conv(x: Any, w: Any) -> Any:
            return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID")

        return conv

    def processor_class(self) -> str:
        return "gpu" if self.backend.gpu else "cpu"

    def fence_description(self) -> str:
        return "per block: jax.block_until_ready on every result of the block"

    def device_clock(self) -> Any:
        return None  # no event API: the host clock across block_until_ready

    def memory_reset(self) -> Any:
        return None  # peak_bytes_in_use is not resettable: the process's peak

    def memory_peaks(self, token: Any) -> dict[str, int]:
        try:
            stats = self.backend._device().memory_stats()
        except Exception:
            stats = None
        if stats and "peak_bytes_in_use" in stats:  # pragma: no cover - GPU only
            return {"jax_peak_bytes_in_use": int(stats["peak_bytes_in_use"])}
        return {}  # the JAX CPU client reports none

    def configure(self, *, threads: int | None, allow_tf32: bool) -> Callable[[], None]:
        # 64-bit mode on (float64 cases compare like for like), default matmul
        # precision "highest" (full float32) unless allow_tf32
        import jax

        old_x64 = bool(jax.config.read("jax_enable_x64"))
        old_prec = jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
        jax.config.update("jax_enable_x64", True)
        jax.config.update(
            "jax_default_matmul_precision", "tensorfloat32" if allow_tf32 else "highest"
        )

        def undo() -> None:
            jax.config.update("jax_default_matmul_precision", old_prec)
            jax.config.update("jax_enable_x64", old_x64)

        return undo

    def settings(self, state: dict[str, Any]) -> None:
        import importlib.metadata

        import jax

        try:
            state["jaxlib"] = importlib.metadata.version("jaxlib")
        except importlib.metadata.PackageNotFoundError:
            state["jaxlib"] = None
        state["x64"] = bool(jax.config.read("jax_enable_x64"))
        state["matmul_precision"] = {
            "default": str(jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
                           or "default")
        }
        state["threads"]["jax"] = (
            "XLA CPU thread pool (not settable at run time; limited by CPU affinity "
            "and XLA_FLAGS when --threads is given)"
        )
        state["async_dispatch"] = True

    def worker_env(self, env: dict[str, str], *, threads: int | None, allow_tf32: bool) -> None:
        if self.backend.gpu:
            # all workers are alive at once: JAX must not take 75 % of the GPU up front
            env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            return
        env.setdefault("JAX_PLATFORMS", "cpu")
        if threads == 1:
            flags = env.get("XLA_FLAGS", "")
            flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = flags.strip()


class JaxConvert(ConvertFacet):
    backend: JaxBackend

    def dtype_refusal(self, name: str) -> str | None:
        if name not in _X64:  # asking about other dtypes must not import JAX
            return None
        import jax

        if not jax.config.read("jax_enable_x64"):
            return (
                f"JAX is in its default 32-bit mode and would make it {_X64[name]}, changing "
                'values. Call jax.config.update("jax_enable_x64", True) at start-up (or set '
                f"JAX_ENABLE_X64=1), or cast to {_X64[name]} first if its values allow"
            )
        return None

    def holds(self, name: str) -> bool:
        import jax.numpy as jnp

        # ml_dtypes' float8/float4/int4 (JAX's own low-precision dtypes)
        return name.startswith(("float8_", "float4_", "float6_", "int4", "uint4", "int2", "uint2")) and hasattr(jnp, name)

    def holds_also(self) -> str:
        return " (and ml_dtypes' float8_*, float4_e2m1fn, int4, uint4 and int2 where JAX has them)"

    def read_only(self, x: Any) -> bool:
        return True  # JAX arrays are immutable; XLA may share and reuse their buffers

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        import jax

        out = jax.dlpack.from_dlpack(x)
        return (out, True) if self.backend.owns(out) else None


class JaxUnrolled(UnrolledFacet):
    backend: JaxBackend

    def __init__(self, backend: JaxBackend) -> None:
        super().__init__(backend)
        self.layout = "batch-last" if backend.gpu else "batch-first"

    def compiler(self, complex_: bool) -> str | None:
        return "jax.jit"

    def kernel(self, n: int, layout: str, dtype: Any, device: Any,
               compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        return make_unrolled_kernel(n, layout, compiled, cpu=not self.backend.gpu)


class JaxTesting(TestingFacet):
    backend: JaxBackend

    def configure(self) -> None:
        import jax

        # float64 means float64 (array-api-extra's tests do the same)
        jax.config.update("jax_enable_x64", True)

    def default_device(self) -> contextlib.AbstractContextManager[Any]:
        import jax

        return jax.default_device(self.backend._device())


class JaxBackend(Backend):
    module = "jax"
    install = 'pip install jax'  # each instance says more (__init__: CPU or CUDA build)
    library = "jax"
    adapter_class = JaxAdapter
    namespace_names = ("jax.numpy",)
    bench = facet(JaxBench)
    convert = facet(JaxConvert)
    unrolled = facet(JaxUnrolled)
    testing = facet(JaxTesting)

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.name = f"jax-{platform}"
        self.gpu = platform == "gpu"
        self.install = ('pip install "jax[cuda12]", on a machine with an NVIDIA GPU'
                        if self.gpu else 'pip install "jax[cpu]", or pip install "xlinalg[jax]"')

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None:
            import jax

            try:
                devs = jax.devices(self.platform)
            except RuntimeError as exc:
                return f"JAX has no {self.platform} device ({str(exc).splitlines()[0]})"
            if not devs:
                return f"JAX has no {self.platform} device"
        return reason

    def _device(self) -> Any:
        import jax

        return jax.devices(self.platform)[0]

    def from_numpy(self, arr: np.ndarray) -> Any:
        import jax

        # 64-bit dtypes with JAX's 64-bit mode off (uint64 included): a TypeError
        # naming the dtype and the fix, as xl.to gives (JAX would narrow them)
        _convert.check_dtype_fits(arr, "numpy", self)
        return jax.device_put(np.array(arr, copy=True), self._device())

    def owns(self, x: Any) -> bool:
        import jax

        if not isinstance(x, jax.Array):
            return False
        try:
            return all(d.platform == self._device().platform for d in x.devices())
        except Exception:  # a tracer: no concrete device
            return True

    def synchronize(self, *arrays: Any) -> None:
        import jax

        if arrays:
            jax.block_until_ready(arrays)
        else:  # no handle: wait for every live array (effects barrier)
            jax.effects_barrier()
            for a in jax.live_arrays(self.platform):
                a.block_until_ready()

    def namespace(self) -> Any:
        self.require()
        import jax.numpy as jnp

        return jnp

    def array_types(self) -> tuple[type, ...]:
        import jax

        return (jax.Array, jax.core.Tracer)

    def make_adapter(self) -> Adapter:
        return JaxAdapter()

    def type_hooks(self, cls: type) -> TypeHooks:
        import jax

        if issubclass(cls, jax.core.Tracer):  # no concrete device, nothing to wait for
            return TypeHooks(traced_backend_name, None)
        # the array's own method (C++), called directly: synchronize costs one call more
        fence = getattr(cls, "block_until_ready", None) or self.synchronize
        if jax_cpu_only():
            return TypeHooks(lambda x: "jax-cpu", fence)
        return TypeHooks(jax_backend_name, fence)


# ---------------------------------------------------------------------- the unrolled solver
#: JAX on the CPU: options for XLA. Its new fusion emitters duplicate the cheap
#: producers of the unrolled program into many kernels; the classic emitters
#: fuse it into a few loops (measured: docs/unrolled.md)
UNROLLED_CPU_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
#: JAX on the CPU: systems per chunk (a ``lax.map`` over chunks keeps every
#: intermediate in the cache; docs/unrolled.md)
UNROLLED_CPU_CHUNK = 10000


def make_unrolled_kernel(n: int, layout: str, compiled: bool, cpu: bool) -> Callable[..., tuple[Any, Any]]:
    """JAX: one jitted program; returns ``(x, flag)``: singular members are NaN in `x`,
    and `flag` (0-d) says whether any entry of `x` is not finite.

    On the CPU the batch is cut into chunks of about :data:`UNROLLED_CPU_CHUNK`
    systems solved by a ``lax.map`` (the intermediates stay in the cache), and
    XLA's classic fusion emitters are asked for (:data:`UNROLLED_CPU_OPTIONS`).
    The singular mask is not an output: a second output would be a second fusion
    recomputing the program; NaN rows mark the candidates instead, confirmed on
    the host only when there are any (``xlinalg._unrolled._solve._check_singular``).
    Whether there are any is the flag, reduced inside the program from the
    written `x` (an optimization barrier keeps XLA from fusing the solve into the
    reduction a second time): ``errors="raise"`` reads one bool, not the solution.
    """
    import jax
    import jax.numpy as jnp

    from .._kernels._build import chunks, flatten
    from .._kernels._schedule import assemble_select, python_function, std_namespace

    ns = std_namespace(jnp)
    ns.arange = jnp.arange
    core = python_function(n, layout, ns)
    chunk = UNROLLED_CPU_CHUNK if cpu else 0

    def solve3(a3: Any, b3: Any) -> Any:
        one = jnp.asarray(1, dtype=a3.dtype)
        nan = jnp.asarray(float("nan"), dtype=a3.dtype)
        tol = jnp.abs(one) * _singular.tolerance(jnp, a3.dtype, n)  # real
        rows, _ = core(a3, b3, one, nan, tol)
        return assemble_select(ns, rows, layout)

    def solve_flat(a3: Any, b3: Any, nb: int, k: int) -> Any:
        if not chunk or nb <= chunk:
            return solve3(a3, b3)
        m, c = chunks(nb, chunk)
        head = m * c
        ac = jnp.reshape(a3[:head], (m, c, n, n))
        bc = jnp.reshape(b3[:head], (m, c, n, k))
        x = jax.lax.map(lambda ab: solve3(ab[0], ab[1]), (ac, bc))
        x = jnp.reshape(x, (head, n, k))
        if head < nb:
            x = jnp.concat([x, solve3(a3[head:], b3[head:])], axis=0)
        return x

    def whole(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if vector:  # inside the program: eager JAX indexing costs a dispatch a call
            bm = bm[..., None]
        a3, b3, batch, nb, k = flatten(ns, a, bm, n)
        x = jnp.reshape(solve_flat(a3, b3, nb, k), (*batch, n, k))
        flag = ~jnp.all(jnp.isfinite(jax.lax.optimization_barrier(x)))  # (dropped when unused)
        return (x[..., 0] if vector else x), flag

    whole.takes_vector = True  # type: ignore[attr-defined]
    whole.flag_only = True  # type: ignore[attr-defined]
    if not compiled:
        return whole
    top = jax.jit(whole, static_argnums=2, compiler_options=dict(UNROLLED_CPU_OPTIONS) if cpu else None)
    plain_jit = jax.jit(whole, static_argnums=2)
    tracer = jax.core.Tracer
    state = {"options_ok": cpu}

    def run(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if isinstance(a, tracer) or isinstance(bm, tracer):
            return whole(a, bm, vector)  # inside the caller's trace: inlined into its program
        if state["options_ok"]:
            try:
                return top(a, bm, vector)
            except Exception as exc:  # an XLA without these options
                if "xla_cpu" not in str(exc):
                    raise
                state["options_ok"] = False
        return plain_jit(a, bm, vector)

    run.jitted = top  # type: ignore[attr-defined]  # (for inspection: .lower(...).compile())
    run.takes_vector = True  # type: ignore[attr-defined]
    run.flag_only = True  # type: ignore[attr-defined]
    run.per_shape = True  # type: ignore[attr-defined]  # jax.jit compiles per input shape
    return run


BACKENDS = (JaxBackend("cpu"), JaxBackend("gpu"))
