"""The :class:`Backend` base: every hook the registry, the benchmark and the tests ask.

A *backend* is one array library on one kind of device (``"torch-cuda"``). Its
:class:`Backend` object answers the questions asked about it (is it usable here,
which arrays are its own, how to create, convert and wait for them, ...); the
numerical differences of its library live in the library's :class:`Adapter`
(``_adapter.py``, re-exported here). The base holds the standard-only default of
every hook, and a default that would be wrong for a GPU library refuses to
answer for one; each library's module (``_numpy.py``, ``_torch.py``, ...)
overrides what its library needs. Nothing here imports an array library but NumPy.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._adapter import (
    MISSING,
    NARROW_FLOATS,
    NP_NON_NUMERIC,
    Adapter,
    make_solve_fast,
    singular_members,
)

__all__ = [
    "MISSING",
    "NARROW_FLOATS",
    "NP_NON_NUMERIC",
    "Adapter",
    "Backend",
    "BackendUnavailableError",
    "make_solve_fast",
    "singular_members",
]


class BackendUnavailableError(ImportError):
    """A backend was asked for that cannot run here (not installed, no device)."""


def _module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_PROBE_LOCK = threading.RLock()


class Backend:
    """One array library on one kind of device.

    Attributes
    ----------
    name : str
        The registry id, e.g. ``"torch-cuda"``.
    module : str
        The top-level module that must be importable.
    install : str
        What to run to install it.
    gpu : bool
        Whether it needs a GPU.
    """

    name: str = ""
    module: str = ""
    install: str = ""
    gpu: bool = False
    #: whether results are lazy (need an explicit compute to exist)
    lazy: bool = False
    #: whether its work runs on a Dask scheduler (what ``--scheduler`` and
    #: ``--dask-workers`` set up: the command line refuses them for a run without one)
    uses_dask_scheduler: bool = False
    #: the on/off environment variables its processes read (docs/environment.md):
    #: ``xlinalg bench`` checks that each parses before any cell runs
    env_flags: tuple[str, ...] = ()
    #: the packages a run's header records (``env.packages``): pairs of a key and
    #: the distribution names to try in turn (a library published under several
    #: names, one per CUDA version); the backends of one library declare the same
    distributions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the column of the source article's tables (and the side of its claims) this
    #: backend stands for: ``"NumPy"`` or ``"PyTorch CPU"``; empty for the others.
    #: The report's article comparison asks the registry, never a backend id.
    article_role: str = ""
    #: why ``xlinalg bench`` leaves this backend out unless ``--backends`` names it
    #: (it is not one of the libraries the question and the article choose between);
    #: empty: timed in every run where it is available
    bench_opt_in: str = ""
    #: the class of its library's adapter (what :meth:`make_adapter` makes): its
    #: ``library`` is how messages name the library (:attr:`library_word`)
    adapter_class: type[Adapter] | None = None

    _cached_reason: str | None = None
    _checked: bool = False

    # ---------------------------------------------------------------- availability
    def unavailable_reason(self) -> str | None:
        """``None`` if the backend is usable here, else a one-line reason."""
        if not self._checked:
            with _PROBE_LOCK:  # probed once, whichever threads ask first
                if not self._checked:
                    self._cached_reason = self._probe()
                    self._checked = True
        return self._cached_reason

    def is_available(self) -> bool:
        """Whether the backend can run here."""
        return self.unavailable_reason() is None

    def require(self) -> None:
        """Raise :class:`BackendUnavailableError` with the reason and a fix."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(
                f"backend {self.name!r} is not available: {reason}. Install: {self.install}"
            )

    def _probe(self) -> str | None:
        if not _module_available(self.module):
            return f"{self.module} is not installed"
        try:
            importlib.import_module(self.module)
        except Exception as exc:  # a broken install is "unavailable", with why
            return f"importing {self.module} failed: {type(exc).__name__}: {exc}"
        return None

    # ---------------------------------------------------------------- information
    def version(self) -> str:
        """The library's version string."""
        mod = importlib.import_module(self.module)
        return str(getattr(mod, "__version__", "unknown"))

    def device_name(self) -> str:
        """A human-readable name of the device arrays land on."""
        import platform

        return platform.processor() or platform.machine() or "cpu"

    def namespace(self) -> Any:
        """The array API namespace (array-api-compat wrapped where needed)."""
        self.require()
        import array_api_compat

        return array_api_compat.array_namespace(self.from_numpy(np.zeros(1)))

    # ---------------------------------------------------------------- data
    def from_numpy(self, arr: np.ndarray) -> Any:
        """Create an array on this backend holding the values of `arr` (a copy)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> np.ndarray:
        """Bring `x` back to the host as a NumPy array (waits for it)."""
        return np.asarray(x)

    def source_error(self, x: Any) -> TypeError | None:
        """Why ``xlinalg.to`` cannot read `x`, an array of this backend, or None (Dask:
        chunks that are masked or not NumPy's)."""
        return None

    def transfer_to_host(self, x: Any) -> np.ndarray:
        """A new device-to-host copy of `x` on every call: what the transfer case (A11)
        times. :meth:`to_numpy` may hand back a copy made before (JAX keeps one)."""
        return self.to_numpy(x)

    def owns(self, x: Any) -> bool:
        """Whether `x` is an array of this backend (library *and* device kind)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- fences
    def synchronize(self, *arrays: Any) -> None:
        """Wait until the work producing `arrays` (or all queued work) is done.

        The default suits an eager library on the host: nothing to wait for. A GPU
        backend must say how to wait (CUDA queues work asynchronously): it is an
        error to leave this hook to the default.
        """
        self._gpu_must_say("synchronize")

    def materialize(self, x: Any) -> Any:
        """Wait for `x` and return it in a form that holds its values.

        For eager backends this is ``synchronize(x)`` then `x` itself; for Dask it
        is ``x.compute()`` (a NumPy array).
        """
        self.synchronize(x)
        return x

    # ---------------------------------------------------------------- conversion (xl.to)
    #: whether its arrays are NumPy arrays on the host (NumPy, Dask's chunks): it takes
    #: every NumPy dtype as it is (any byte order, ml_dtypes' bfloat16, long double)
    numpy_host: bool = False
    #: whether its arrays are writable (a DLPack view must then never alias memory
    #: its owner treats as read-only)
    writable_arrays: bool = False

    def dtype_refusal(self, name: str) -> str | None:
        """Why this backend cannot hold dtype `name` as it is (the fix included), or None.

        Only what is particular to the library; ``_convert.check_dtype_fits`` adds
        the rules every backend shares (extended precision, bfloat16 on the host).
        """
        return None

    def plain(self, x: Any) -> Any:
        """`x` without lazy bits other libraries cannot see (a copy only where set)."""
        return x

    def host_view(self, x: Any) -> np.ndarray | None:
        """The NumPy view of `x` where its memory is the host's and NumPy's, else None."""
        return None

    def read_only(self, x: Any) -> bool:
        """Whether `x`'s memory is read-only to its owner (no writable alias may be made)."""
        h = self.host_view(x)
        return h is not None and not h.flags.writeable

    def unsafe_layout(self, x: Any) -> bool:
        """Negative strides or a non-native byte order: no DLPack route takes them."""
        h = self.host_view(x)
        return h is not None and (any(s < 0 for s in h.strides) or not h.dtype.isnative)

    def holds(self, name: str) -> bool:
        """Whether arrays of this backend hold dtype `name` beyond the numbers every
        backend holds (``_convert.NUMBERS``): float8 on torch and JAX."""
        return False

    def holds_also(self) -> str:
        """The dtypes :meth:`holds`, for messages (``" (and float8_e4m3fn, ...)"``)."""
        return ""

    def seal(self, x: Any) -> Any:
        """`x` (this backend's array, fresh from DLPack) made read-only where the
        library has read-only arrays: it shares memory that must not be written
        through it (a JAX buffer, an expanded torch tensor). The default: as it is."""
        return x

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        """`x` as this backend's array through DLPack: ``(array, shared)``, or None where
        no route applies. With `protect`, a device copy (``shared`` False) instead of a
        writable alias of read-only memory. The default: no route (a host copy)."""
        return None

    # ---------------------------------------------------------------- benchmark
    #: whether ``synchronize`` must see every result of a timed block (JAX: each
    #: result has its own readiness), not only the last
    fence_every_result: bool = False
    #: whether tracemalloc sees its arrays' memory (NumPy's allocator underneath)
    numpy_buffers: bool = False

    def _gpu_must_say(self, hook: str) -> None:
        if self.gpu:
            raise NotImplementedError(
                f"backend {self.name!r} runs on a GPU and defines no {hook}(): the default "
                "is the host's, wrong for it; override it in the library's module"
            )

    def cast(self, x: Any, dtype: Any) -> Any:
        """`x` cast to `dtype` (a :meth:`native_dtype`) on the backend."""
        return x.astype(dtype)

    def host_result(self, x: Any) -> np.ndarray:
        """A result on the host for the benchmark's correctness check (widened where
        the library's own host form would not compare)."""
        return np.asarray(self.to_numpy(x))

    def materialize_all(self, outs: Any) -> tuple[Any, ...]:
        """:meth:`materialize` of each of `outs` (a lazy library: in one evaluation)."""
        return tuple(self.materialize(o) for o in outs)

    def fence_description(self) -> str:
        """What the benchmark's fence does for this backend, for the records."""
        self._gpu_must_say("fence_description")
        return "none needed (synchronous backend)"

    def device_clock(self) -> Any:
        """A clock of device time (``start()``, then ``stop()`` -> seconds) or None: the
        benchmark then times on the host, across the fence."""
        self._gpu_must_say("device_clock")
        return None

    def memory_reset(self) -> Any:
        """Before a measured call: reset the device allocator's peak; returns what
        :meth:`memory_peaks` needs. The host's own figures need nothing here."""
        self._gpu_must_say("memory_reset")
        return None

    def memory_peaks(self, token: Any) -> dict[str, int]:
        """After the measured call: the device allocator's figures, each named after
        what it measured (``{"cuda_max_allocated_bytes": n}``; bench/_memory.py)."""
        self._gpu_must_say("memory_peaks")
        return {}

    def release_memory(self) -> None:
        """Give cached device memory back (after a cell, and after a failure)."""

    def configure(self, *, threads: int | None, allow_tf32: bool) -> Callable[[], None]:
        """Apply the benchmark's fairness settings in this process, before any array
        is made (the BLAS pools are set for every backend alike); returns the undo."""
        return lambda: None

    def settings(self, state: dict[str, Any]) -> None:
        """Add the settings in effect (threads, matmul precision, ...) to `state`, the
        backend's fairness record (``bench/_env.backend_state``)."""

    def thread_info(self) -> dict[str, Any]:
        """The library's own thread settings in this process (``xlinalg info``)."""
        return {}

    def worker_env(self, env: dict[str, str], *, threads: int | None, allow_tf32: bool) -> None:
        """Set what a benchmark worker process of this backend needs in its environment
        (`env`, a copy of the runner's) before it starts."""

    # ---------------------------------------------------------------- tests
    def configure_for_tests(self) -> None:
        """Per-library configuration before a test's first array (the testing kit)."""

    def default_device(self) -> contextlib.AbstractContextManager[Any]:
        """A context in which the namespace's array creation lands on this backend's device."""
        return contextlib.nullcontext()

    # ---------------------------------------------------------------- array types
    #: the library's key: the backends of one library share its adapter (``"torch"``)
    library: str = ""
    #: the ``__name__`` of the namespaces (given as ``xp=``) that are this library's
    namespace_names: tuple[str, ...] = ()

    def array_types(self) -> tuple[type, ...]:
        """The library's array base classes (asked only once :attr:`module` is imported).

        The first backend of a library in the registry answers for every array
        of these types (and their subclasses, wherever they are defined), through
        :meth:`type_name`, :meth:`type_fence` and :meth:`adapter_for_type`.
        """
        return ()

    def type_name(self, cls: type) -> Callable[[Any], str]:
        """How ``backend_of`` names an array of type `cls` (called once per type)."""
        name = self.name
        return lambda x: name

    def type_fence(self, cls: type) -> Callable[[Any], Any] | None:
        """How ``synchronize`` waits for one array of type `cls`; None: nothing to wait
        for (called once per type). The default: :meth:`synchronize`, unless it is
        the base's no-op for an eager host library."""
        if type(self).synchronize is Backend.synchronize and not self.gpu:
            return None
        return self.synchronize

    def type_dense_error(self, cls: type) -> Callable[[Any, str, str], TypeError | None] | None:
        """``f(x, name, fn)``: the error for an array of type `cls` that is not dense
        (PyTorch's sparse and nested tensors), else None; None: every array of this
        type is dense (called once per type; see :meth:`Adapter.dense_error`)."""
        return None

    @property
    def library_word(self) -> str:
        """How messages name this backend's library ("PyTorch" for torch-cpu and
        torch-cuda): its adapter class's ``library``; the backend id where the
        backend declares no adapter class (each library then counts as its own)."""
        return self.adapter_class.library if self.adapter_class is not None else self.name

    def make_adapter(self) -> Adapter:
        """A new adapter of this library (:meth:`adapter` keeps the one made)."""
        raise NotImplementedError(f"backend {self.name!r} defines no make_adapter()")

    def adapter(self) -> Adapter:
        """The one adapter of this backend's library, made on first use."""
        key = self.library or self.name
        ad = _ADAPTERS.get(key)
        if ad is None:
            with _ADAPTERS_LOCK:
                ad = _ADAPTERS.get(key)
                if ad is None:
                    ad = _ADAPTERS[key] = self.make_adapter()
        return ad

    def adapter_for_type(self, cls: type) -> Adapter | None:
        """The adapter for arrays of type `cls` (one of :meth:`array_types`), or None
        where the operations do not take them as this library's arrays."""
        return self.adapter()

    def owns_namespace(self, xp: Any) -> bool:
        """Whether namespace `xp` (given as ``xp=``) is this library's."""
        return getattr(xp, "__name__", "") in self.namespace_names

    # ---------------------------------------------------------------- benchmark cases
    #: floating dtypes the library has beyond the standard's float32 and float64
    extra_float_dtypes: tuple[str, ...] = ()
    #: whether its arrays are NumPy arrays (code compiled for NumPy, as by numba, takes them)
    numpy_arrays: bool = False
    #: why ``x[:, ::2]`` is not a strided view of `x` in this library, so that there is
    #: no non-contiguous operand to time ("": it is a strided view)
    no_strided_views: str = ""
    #: the function compiler :meth:`compile_function` uses ("": none)
    function_compiler: str = ""
    #: whether compiling takes seconds per shape and dtype (a benchmark then times
    #: eager code where compiling is optional)
    slow_compiler: bool = False
    #: the 2-D convolution :meth:`conv2d` returns ("": none)
    conv2d_kernel: str = ""

    def processor_class(self) -> str:
        """``"gpu"`` or ``"cpu"``: the processor whose calibrated peak its cells are
        measured against. A GPU backend must say (a GPU's throughput divided by the
        CPU's peak, or an accelerator's by a GPU's, would be a wrong finding)."""
        self._gpu_must_say("processor_class")
        return "cpu"

    def native_namespace(self) -> Any:
        """The library's own namespace (``numpy``, ``torch``, ``jax.numpy``...), which
        the benchmark's cases call so that they time the library, not a wrapper.
        Default: the array API namespace."""
        return self.namespace()

    def missing_dtype(self, name: str) -> str | None:
        """Why the library has no floating dtype `name`, or None when it has one.
        Static: imports nothing."""
        if name in ("float32", "float64") or name in self.extra_float_dtypes:
            return None
        return f"{self.name} has no {name} dtype"

    def native_dtype(self, name: str) -> Any:
        """The dtype called `name` of :meth:`native_namespace`; TypeError if it has none."""
        missing = self.missing_dtype(name)
        if missing is not None:
            raise TypeError(missing)
        return getattr(self.native_namespace(), name)

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` compiled by :attr:`function_compiler` (the first call compiles)."""
        raise NotImplementedError(f"backend {self.name!r} has no function compiler")

    def conv2d(self) -> Callable[[Any, Any], Any]:
        """The library's 2-D convolution ``(x (B, C, H, W), w (O, C, KH, KW)) -> (B, O,
        H-KH+1, W-KW+1)``: valid cross-correlation, stride 1 (:attr:`conv2d_kernel`)."""
        raise NotImplementedError(f"backend {self.name!r} has no 2-D convolution")

    # ---------------------------------------------------------------- the unrolled solver
    #: the storage order ``xlinalg._unrolled`` uses by default here: the one
    #: measured fastest (docs/unrolled.md; GPU entries not yet measured)
    unrolled_layout: str = "batch-first"
    #: whether the unrolled solve runs per block of a lazy array (Dask): NumPy's
    #: kernel mapped over the blocks by the adapter's ``map_solve``
    unrolled_blockwise: bool = False

    def unrolled_compiler(self, complex_: bool) -> str | None:
        """The compiler of this backend's unrolled kernel (its name, for messages), or
        None: the schedule runs eagerly. `complex_`: for a complex dtype."""
        return None

    def unrolled_compile_problem(self) -> str | None:
        """Why :meth:`unrolled_compiler` cannot be used in this process (checked once),
        or None where it works."""
        return None

    def unrolled_kernel(self, n: int, layout: str, dtype: Any, device: Any,
                        compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        """This backend's unrolled solve for one (n, layout, dtype, device, compiled):
        ``run(a, bm) -> (x, singular)`` (``xlinalg._kernels._build.Kernel``), or
        None: the schedule over the standard's functions, eagerly."""
        return None

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


def im2col_conv2d(xp: Any) -> Callable[[Any, Any], Any]:
    """A 2-D convolution for NumPy-like `xp`: a sliding-window view (no copy)
    contracted with the filters by tensordot, which copies the windows into one matrix
    (im2col) and calls BLAS."""
    swv = xp.lib.stride_tricks.sliding_window_view

    def conv(x: Any, w: Any) -> Any:
        win = swv(x, w.shape[2:], axis=(2, 3))  # (b, c, oh, ow, kh, kw)
        out = xp.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # (b, oh, ow, out)
        return xp.moveaxis(out, 3, 1)

    return conv


#: library -> its one adapter (:meth:`Backend.adapter`)
_ADAPTERS: dict[str, Adapter] = {}
#: taken only to create an adapter (the miss path): one adapter per library even
#: when two threads meet it first at once (two would make every later call with
#: arrays of both "mix array libraries"). Re-entrant: an adapter's constructor may
#: look up another.
_ADAPTERS_LOCK = threading.RLock()
