"""JAX: its adapter and the ``"jax-cpu"`` and ``"jax-gpu"`` backends."""

from __future__ import annotations

import cmath
import contextlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _convert
from .._lib import _singular
from ._adapter import nan_members, singular_members
from ._base import MISSING, NP_NON_NUMERIC, Adapter, Backend
from ._numpy import NUMPY

__all__ = ["HOST_LOOK_MAX", "JaxAdapter", "JaxBackend", "jax_backend_name"]


class JaxAdapter(Adapter):
    library = "JAX"
    stack_call = "jax.numpy.stack"

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg  # the solve paths use jax.scipy.linalg.lu_solve

        super().__init__(jnp)
        self.jax = jax
        self._tracer = jax.core.Tracer
        # every backend's devices: jax.devices() lists the default backend's only, and
        # on a GPU machine jax-cpu arrays exist beside jax-gpu ones
        every = _every_jax_device(jax)
        self._all_cpu = all(d.platform == "cpu" for d in every)
        # one device of the default backend: the fast path need not read .devices()
        # (microseconds); a jax-cpu array beside a jax-gpu one meets JAX's own refusal
        # of committed arrays on two devices there
        self.fast_device_check = len(jax.devices()) > 1
        # caches (the unrolled kernels) key on the device unless there is only one
        self.single_device = len(every) == 1
        self.solve_dtypes = frozenset(np.dtype(c) for c in "fdFD")
        self.fast = {n: getattr(jnp, n) for n in ("add", "subtract", "multiply", "matmul")}
        self.fast["sigmoid"] = jax.nn.sigmoid
        self.sigmoid_dtypes = frozenset(np.dtype(c) for c in "fd")
        self.fast_excluded = NP_NON_NUMERIC
        # jnp.linalg.solve under our own jit: its Python checks run once per input
        # signature (at trace time), not on every call; dtypes the fast path does
        # not take compile to a program returning None (cached too)
        ok = self.solve_dtypes

        def native(a: Any, b: Any) -> Any:
            if a.dtype != b.dtype or a.dtype not in ok:
                return None
            return _jax_solve_ruled(jax, jnp, a, b, b.ndim == 1)

        native_jit = jax.jit(native)
        self._solve_cpu = _finite_or_missing(native_jit)
        if self._all_cpu and not self.fast_device_check:
            self.solve_fast = _finite_or_missing(native_jit, one_matrix=True)
        # errors="raise" off the host look: one compiled function per `vector`
        # returning the solution and one flag, "some entry is not finite"
        self._solve_flagged = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_flagged(jax, jnp, a, b, v)) for v in (False, True)
        }
        # errors="nan" (and traced): the solution alone, so the call returns one
        # array, as jnp.linalg.solve does (each extra output costs time on every call)
        self._solve_nan = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_ruled(jax, jnp, a, b, v)) for v in (False, True)
        }

    def solve_fast_for(self, cls: type) -> Callable[[Any, Any], Any] | None:
        # traced arrays (under jax.jit) have no values to look at: the checked path
        return None if issubclass(cls, self._tracer) else self.solve_fast

    def describe(self, x: Any) -> str:
        if self.traced(x):
            return f"a traced JAX array of shape {tuple(x.shape)} and dtype {x.dtype}"
        return f"a JAX array of shape {tuple(x.shape)} and dtype {x.dtype}{self._where(x)}"

    def _where(self, x: Any) -> str:
        try:
            devs = sorted(str(d) for d in x.devices())
        except Exception:
            return ""
        return "" if all(d.startswith("TFRT_CPU") or "cpu" in d.lower() for d in devs) else f" on {', '.join(devs)}"

    def device(self, x: Any) -> Any:
        if self.traced(x):
            return None
        try:
            return x.device
        except Exception:
            return None

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        if self.traced(a) or self.traced(b):
            return
        try:
            da, db = a.devices(), b.devices()
        except Exception:
            return
        if da != db and len(da) == 1 and len(db) == 1:
            super().check_same_device(a, b, na, nb)

    def traced(self, x: Any) -> bool:
        return isinstance(x, self._tracer)

    def _on_cpu(self, x: Any) -> bool:
        try:
            return all(d.platform == "cpu" for d in x.devices())
        except Exception:  # no concrete device
            return False

    def backend(self, x: Any) -> str:
        return jax_backend_name(x)

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        jnp = self.xp
        return jnp.float32, (jnp.float64 if self.jax.config.read("jax_enable_x64") else jnp.float32)

    def has_int64(self, x: Any) -> bool:
        return bool(self.jax.config.read("jax_enable_x64"))

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        # a list through NumPy, as on every backend: jnp.asarray would read
        # [2**70, 1.0] as floats where NumPy (and so xlinalg) refuses the int
        host = NUMPY.asarray(obj, None, name) if isinstance(obj, (list, tuple)) else obj
        try:
            arr = self.xp.asarray(host)
        except Exception as exc:
            raise NUMPY.host_error(obj, name) or TypeError(
                f"`{name}` could not be converted to a JAX array: {exc}"
            ) from exc
        dev = None if like is None else self.device(like)
        return arr if dev is None else self.jax.device_put(arr, dev)

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def numpy_view(self, x: Any) -> np.ndarray | None:
        # a concrete array on the CPU backend: NumPy reads its buffer in place
        if self.traced(x) or not self._on_cpu(x):
            return None
        try:
            return np.asarray(x)
        except Exception:  # a sharded or deleted array: the library's path
            return None

    def from_numpy_view(self, arr: np.ndarray, like: Any) -> Any:
        return self.jax.device_put(arr, self.device(like))

    def stack(self, arrays: list[Any], like: Any = None) -> Any:
        # On the CPU, NumPy reads every array in place (zero-copy) and stacks them in
        # one C loop; jnp.stack dispatches per element (about 3x slower for many small
        # arrays: docs/performance.md). On an accelerator (or under a trace) the
        # stacking stays on the device.
        if self._all_cpu and not any(isinstance(x, self._tracer) for x in arrays):
            if self.fast_device_check and len({self.device(x) for x in arrays}) > 1:
                raise ValueError("the arrays are on different devices")  # solve_many groups them
            return self.asarray(np.array(arrays), arrays[0], "a")
        return self.xp.stack(arrays, axis=0)

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        traced = isinstance(a, self._tracer) or isinstance(b, self._tracer)
        if traced or errors == "nan":
            # One compiled call: the solution with NaN for the singular members and
            # those with NaN or inf input (the rule, _lib/_singular.py). No wait.
            return self._solve_nan[vector](a, b)
        if self._all_cpu and a.size + b.size <= HOST_LOOK_MAX:
            # errors="raise" on the CPU, a small result: the compiled call, then a
            # host-side look at the result (zero-copy; waits for it), cheaper than a
            # second output. Only a non-finite result costs more.
            x = self._solve_cpu(a, b)
            if x is not MISSING:
                return x
        # A large result, an accelerator (or a non-finite result): the solution and
        # the flag "some entry is not finite", reduced inside the compiled call
        # while the result is written; reading the flag waits, and it alone
        # crosses to the host.
        x, nonfinite = self._solve_flagged[vector](a, b)
        if nonfinite.item():
            x = self._confirm(a, b, vector, x)
        return x

    def _confirm(self, a: Any, b: Any, vector: bool, x: Any) -> Any:
        """Some entry of `x` is not finite (errors="raise", eager): the rule's verdict on
        the host, where subnormals are kept (XLA's CPU code flushes them to zero, so
        its LU calls ``1e-310 * I`` singular). Raises for the reported members; where
        XLA NaN'ed a member the host finds regular, the host's solution is returned."""
        ah, bh = self.to_host(a), self.to_host(b)
        bmh = bh[..., None] if vector else bh
        sing, scale = NUMPY.verdict(ah)
        rep = singular_members(np, sing, scale, bmh)
        if rep.any():
            self._raise_singular(rep, tuple(a.shape[:-2]))
        xh = self.to_host(x)
        all_nan = np.isnan(xh).all(axis=-1 if vector else (-2, -1))
        if (all_nan & ~nan_members(np, sing, scale, bmh)).any():
            dev = next(iter(a.devices()))
            return self.jax.device_put(NUMPY.solve(ah, bh, vector, "nan"), dev)
        return x

    def zero_pivots(self, a: Any) -> Any:
        # LAPACK's criterion from the LU factors: a zero pivot. (jnp.linalg.slogdet
        # reports sign 0 for tiny but non-zero determinants, e.g. 1e-300 * I.) XLA's
        # CPU code flushes subnormals to zero (its LU of 1e-310 * I has a zero pivot):
        # on the CPU the factors come from NumPy's LAPACK on a zero-copy host view.
        if not self.traced(a) and (self._all_cpu or self._on_cpu(a)):
            return NUMPY.zero_pivots(np.asarray(a))
        lu = self.jax.lax.linalg.lu(a)[0]
        return self.xp.any(self.xp.diagonal(lu, axis1=-2, axis2=-1) == 0, axis=-1)

    def sigmoid(self, x: Any) -> Any:
        return self.jax.nn.sigmoid(x)


def _finite_or_missing(solve: Callable[[Any, Any], Any], one_matrix: bool = False) -> Callable[[Any, Any], Any]:
    """JAX on the CPU: `solve`, then a zero-copy host look at its result (waits for it).

    The result if all finite, else :data:`MISSING`: a zero pivot and NaN in the
    input both give non-finite results, and only the checked program tells them apart.
    :data:`MISSING` too where `solve` refuses the operands (raises, or returns None)
    and, with `one_matrix`, for a stack of matrices: xl.solve's checked path then
    names the argument. With `one_matrix` this is the adapter's ``solve_fast`` (one
    Python frame between xl.solve and the compiled call; the ``ndim`` read is
    cheaper than a cached compiled call that returns None for stacks).
    """

    def call(a: Any, b: Any) -> Any:
        if one_matrix and a.ndim != 2:
            return MISSING
        try:
            x = solve(a, b)
        except Exception:  # xl.solve's checked path re-raises, naming the argument
            return MISSING
        if x is None:
            return MISSING
        try:
            # JAX's CPU arrays export their memory (the buffer protocol; the export
            # waits for the result): a few elements are read as Python numbers
            # without making a NumPy array (a complex one as its real and imaginary
            # parts: the cast reads the parts' format). Their total is finite only
            # if every element is; a total that overflows just takes the slow path.
            # (No `with`: the views are released when the call returns, and the
            # context manager costs as much as it saves.)
            m = memoryview(x)
            if m.nbytes <= _HOST_SUM_BYTES:
                # (the ignore: typeshed's memoryview.cast takes only literal formats)
                return x if cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())) else MISSING  # type: ignore[call-overload]
        except (TypeError, ValueError, BufferError, NotImplementedError):
            pass  # no export (another layout or device), or a format the cast refuses
        return x if _host_finite(np.asarray(x)) else MISSING

    return call


#: the largest result (bytes) that _finite_or_missing sums as Python numbers
_HOST_SUM_BYTES = 512


def _host_finite(h: np.ndarray) -> bool:
    """Whether a host array is all finite, as cheaply as the size allows (a quick test).

    Small arrays: the Python sum of their elements (no ufunc machinery, cheaper
    than one ufunc call at these sizes; ``cmath`` takes real and complex totals);
    larger ones: one BLAS dot product of non-negative terms. Either way inf or
    NaN anywhere makes the total non-finite and no floating-point warning is
    raised. ``False`` can also mean a huge finite result that overflows the
    total: callers then run their exact check, so that only costs time.
    """
    if h.size <= 64:
        try:  # a vector: no ravel, no dtype or ndim read (the one-system fast path)
            return cmath.isfinite(sum(h.tolist()))
        except TypeError:  # nested lists (a matrix), or a 0-d array's scalar
            return cmath.isfinite(sum(h.ravel().tolist()))
    return math.isfinite(np.vdot(h, h).real)


#: JaxAdapter.solve on the CPU, errors="raise": up to this many elements of `a` and
#: `b` together, the result is checked by a host look, above by a flag computed
#: inside the compiled call (docs/performance.md: where each is cheaper)
HOST_LOOK_MAX = 32768


def _jax_solve_ruled(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> Any:
    """Traced body: the solution, NaN for the members the singular rule names and for
    those with NaN or inf in `a` or `b` (``_lib/_singular.py``).

    One factorization, ``lax.linalg.lu`` (what ``jnp.linalg.solve`` runs inside):
    the rule reads its pivots and ``jax.scipy.linalg.lu_solve`` solves with its
    factors (XLA does not merge a second LU beside ``jnp.linalg.solve`` for larger
    matrices: 2× at 200×200, docs/performance.md).
    """
    bm = b[..., None] if vector else b
    lu, piv, _ = jax.lax.linalg.lu(a)
    # lu_solve reads a `b` with one axis fewer than `lu` as a batch of vectors: `b`
    # gets the broadcast batch, so that it is read as matrices (the standard's way)
    batch = jnp.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    x = jax.scipy.linalg.lu_solve((lu, piv), jnp.broadcast_to(bm, (*batch, *bm.shape[-2:])))
    a0 = jax.lax.stop_gradient(a)
    lu = jax.lax.stop_gradient(lu)
    scale = _singular.column_scale(jnp, a0)
    tol = _singular.tolerance(jnp, a.dtype, a.shape[-1])
    sing = _singular.singular_from_pivots(jnp, _singular.diagonal(jnp, lu), scale, tol)
    bad = nan_members(jnp, sing, scale, jax.lax.stop_gradient(bm))
    x = jnp.where(bad[..., None, None], jnp.nan, x)
    return x[..., 0] if vector else x


def _jax_solve_flagged(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> tuple[Any, Any]:
    """Traced body: :func:`_jax_solve_ruled` and whether any of its entries is not finite.

    The barrier makes XLA reduce the written solution rather than fuse a second
    copy of the solve into the reduction.
    """
    x = _jax_solve_ruled(jax, jnp, a, b, vector)
    nonfinite = ~jnp.all(jnp.isfinite(jax.lax.optimization_barrier(x)))
    return x, nonfinite


#: dtypes JAX holds only with ``jax_enable_x64`` (it would silently narrow them)
_X64 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


class JaxBackend(Backend):
    module = "jax"
    install = 'pip install jax'  # each instance says more (__init__: CPU or CUDA build)
    distributions = (("jax", ("jax",)), ("jaxlib", ("jaxlib",)))
    library = "jax"
    adapter_class = JaxAdapter
    namespace_names = ("jax.numpy",)
    # each result of a timed block has its own readiness (asynchronous dispatch)
    fence_every_result = True
    extra_float_dtypes = ("float16", "bfloat16")
    no_strided_views = ("JAX has no layout a user can choose: x[:, ::2] is a slice that XLA "
                        "materialises as a new row-major array, so the 'strided' operand is "
                        "already a contiguous copy; only the contiguous cell is run")
    function_compiler = "jax.jit"
    conv2d_kernel = "jax.lax.conv_general_dilated"

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(fn)

    def conv2d(self) -> Callable[[Any, Any], Any]:
        import jax

        def conv(x: Any, w: Any) -> Any:
            return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID")

        return conv

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.name = f"jax-{platform}"
        self.gpu = platform == "gpu"
        self.unrolled_layout = "batch-last" if self.gpu else "batch-first"
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

    def device_name(self) -> str:
        d = self._device()
        return str(getattr(d, "device_kind", d))

    def from_numpy(self, arr: np.ndarray) -> Any:
        import jax

        # 64-bit dtypes with JAX's 64-bit mode off (uint64 included): a TypeError
        # naming the dtype and the fix, as xl.to gives (JAX would narrow them)
        _convert.check_dtype_fits(arr, "numpy", self)
        return jax.device_put(np.array(arr, copy=True), self._device())

    def transfer_to_host(self, x: Any) -> np.ndarray:
        # np.asarray(x) keeps its host copy on `x` (jax.Array._npy_value) and returns it
        # on every later call; a put to the CPU device copies anew each time (on the
        # CPU backend it is `x` itself: there is no transfer to time there)
        import jax

        return np.asarray(jax.device_put(x, jax.devices("cpu")[0]))

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

    # ---------------------------------------------------------------- conversion
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
        return (out, True) if self.owns(out) else None

    # ---------------------------------------------------------------- benchmark
    def processor_class(self) -> str:
        return "gpu" if self.gpu else "cpu"

    def fence_description(self) -> str:
        return "per block: jax.block_until_ready on every result of the block"

    def device_clock(self) -> Any:
        return None  # no event API: the host clock across block_until_ready

    def memory_reset(self) -> Any:
        return None  # peak_bytes_in_use is not resettable: the process's peak

    def memory_peaks(self, token: Any) -> dict[str, int]:
        try:
            stats = self._device().memory_stats()
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
        if self.gpu:
            # all workers are alive at once: JAX must not take 75 % of the GPU up front
            env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            return
        env.setdefault("JAX_PLATFORMS", "cpu")
        if threads == 1:
            flags = env.get("XLA_FLAGS", "")
            flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            env["XLA_FLAGS"] = flags.strip()

    # ---------------------------------------------------------------- tests
    def configure_for_tests(self) -> None:
        import jax

        # float64 means float64 (array-api-extra's tests do the same)
        jax.config.update("jax_enable_x64", True)

    def default_device(self) -> contextlib.AbstractContextManager[Any]:
        import jax

        return jax.default_device(self._device())

    def array_types(self) -> tuple[type, ...]:
        import jax

        return (jax.Array, jax.core.Tracer)

    def make_adapter(self) -> Adapter:
        return JaxAdapter()

    def type_name(self, cls: type) -> Callable[[Any], str]:
        import jax

        if issubclass(cls, jax.core.Tracer):
            return _traced_backend_name
        if _jax_cpu_only():
            return lambda x: "jax-cpu"
        return jax_backend_name

    def type_fence(self, cls: type) -> Callable[[Any], Any] | None:
        import jax

        if issubclass(cls, jax.core.Tracer):  # no concrete device, nothing to wait for
            return None
        # the array's own method (C++), called directly: synchronize costs one call more
        return getattr(cls, "block_until_ready", None) or self.synchronize

    def unrolled_compiler(self, complex_: bool) -> str | None:
        return "jax.jit"

    def unrolled_kernel(self, n: int, layout: str, dtype: Any, device: Any,
                        compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        return make_unrolled_kernel(n, layout, compiled, cpu=not self.gpu)


def jax_backend_name(x: Any) -> str:
    """``"jax-cpu"`` or ``"jax-gpu"``: where JAX array `x` lies (a tracer: where JAX
    runs the trace by default, so ``method="auto"`` picks by the same rules under
    ``jax.jit`` as outside it)."""
    try:
        platforms = {d.platform for d in x.devices()}
    except Exception:  # traced: no concrete device
        return _traced_backend_name(x)
    return "jax-cpu" if platforms == {"cpu"} else "jax-gpu"


def _traced_backend_name(x: Any) -> str:
    """The backend id of a traced array: where JAX runs the trace by default."""
    import jax

    return "jax-cpu" if jax.default_backend() == "cpu" else "jax-gpu"


def _every_jax_device(jax: Any) -> list[Any]:
    """The devices of every JAX backend of this process (the CPU's included)."""
    try:
        from jax.extend.backend import backends

        return [d for name in backends() for d in jax.devices(name)]
    except Exception:  # a JAX without it: the default backend's
        return list(jax.devices())


def _jax_cpu_only() -> bool:
    """Whether the only JAX backend of this process is the CPU (then every array is jax-cpu)."""
    try:
        from jax.extend.backend import backends

        return set(backends()) == {"cpu"}
    except Exception:  # a JAX without it: ask each array
        return False


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
