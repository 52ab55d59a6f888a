"""The facets of a :class:`~xlinalg.backends._base.Backend`: its hooks grouped by who asks.

The core of a backend (``_base.py``) answers what every user asks: its identity,
whether it is usable, which arrays are its own, its adapter, its fence. What one
user alone asks lives in a *facet*, a small object the backend makes on first
use and keeps (``backend.bench``, ``backend.unrolled``, ``backend.convert``,
``backend.testing``):

* :class:`BenchFacet`: the benchmark's harness (the fence of a timed block, the
  clocks, memory, fairness settings, the records' environment) and the facts
  its cases read (native namespace and dtypes, compilers, convolution, what the
  library lacks and why);
* :class:`UnrolledFacet`: the unrolled small-matrix solver (``xlinalg._unrolled``);
* :class:`ConvertFacet`: conversion between libraries (``xlinalg.to``, ``_convert.py``);
* :class:`TestingFacet`: the testing kit (``xlinalg.testing``).

Each base holds the standard-only default of every hook (a default that would be
wrong for a GPU library refuses to answer for one); a library's module declares
a subclass with what its library needs and names it on its backend class
(``bench = facet(TorchBench)``). A facet reads its backend as ``self.backend``.
Nothing here imports an array library but NumPy.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

if TYPE_CHECKING:
    from ._base import Backend

__all__ = [
    "BenchFacet",
    "ConvertFacet",
    "Facet",
    "TestingFacet",
    "UnrolledFacet",
    "facet",
    "gpu_must_say",
    "im2col_conv2d",
]


def gpu_must_say(backend: Backend, hook: str) -> None:
    """Refuse the host's default of `hook` for a GPU backend (it must override it)."""
    if backend.gpu:
        raise NotImplementedError(
            f"backend {backend.name!r} runs on a GPU and defines no {hook}(): the default "
            "is the host's, wrong for it; override it in the library's module"
        )


class Facet:
    """A group of hooks one user of the backends asks, made once per backend."""

    def __init__(self, backend: Backend) -> None:
        #: the backend this facet answers for
        self.backend = backend

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.backend.name}>"


F_co = TypeVar("F_co", bound=Facet, covariant=True)


class facet(Generic[F_co]):  # noqa: N801 - used like a decorator-style declaration
    """Declares a facet on a backend class: ``bench = facet(TorchBench)``.

    Read on a backend, it is that backend's facet, made on first use and kept on
    the instance (two threads meeting it at once keep one); read on the class, it
    is the facet's class.
    """

    def __init__(self, cls: type[F_co]) -> None:
        self.cls = cls
        self.attr = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> type[F_co]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> F_co: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.cls
        # a non-data descriptor: once kept in the instance's dict, that is read first
        return obj.__dict__.setdefault(self.attr, self.cls(obj))


# ---------------------------------------------------------------------- conversion
class ConvertFacet(Facet):
    """What ``xlinalg.to`` asks a backend (``_convert.py``): its arrays' memory, the
    dtypes it holds, and its DLPack routes."""

    #: whether its arrays are NumPy arrays on the host (NumPy, Dask's chunks): it takes
    #: every NumPy dtype as it is (any byte order, ml_dtypes' bfloat16, long double)
    numpy_host: bool = False
    #: whether its arrays are writable (a DLPack view must then never alias memory
    #: its owner treats as read-only)
    writable_arrays: bool = False

    def source_error(self, x: Any) -> TypeError | None:
        """Why ``xlinalg.to`` cannot read `x`, an array of this backend, or None (Dask:
        chunks that are masked or not NumPy's)."""
        return None

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


# ---------------------------------------------------------------------- the unrolled solver
class UnrolledFacet(Facet):
    """What the unrolled small-matrix solver (``xlinalg._unrolled``) asks a backend."""

    #: the storage order ``xlinalg._unrolled`` uses by default here: the one
    #: measured fastest (docs/unrolled.md; GPU entries not yet measured)
    layout: str = "batch-first"
    #: whether the unrolled solve runs per block of a lazy array (Dask): NumPy's
    #: kernel mapped over the blocks by the adapter's ``map_solve``
    blockwise: bool = False

    def compiler(self, complex_: bool) -> str | None:
        """The compiler of this backend's unrolled kernel (its name, for messages), or
        None: the schedule runs eagerly. `complex_`: for a complex dtype."""
        return None

    def compile_problem(self) -> str | None:
        """Why :meth:`compiler` cannot be used in this process (checked once), or None
        where it works."""
        return None

    def kernel(self, n: int, layout: str, dtype: Any, device: Any,
               compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        """This backend's unrolled solve for one (n, layout, dtype, device, compiled):
        ``run(a, bm) -> (x, singular)`` (``xlinalg._kernels._build.Kernel``), or
        None: the schedule over the standard's functions, eagerly."""
        return None


# ---------------------------------------------------------------------- the testing kit
class TestingFacet(Facet):
    """What the testing kit (``xlinalg.testing``) asks a backend."""

    __test__ = False  # (a class named Test*: not a pytest test class)

    def configure(self) -> None:
        """Per-library configuration before a test's first array."""

    def default_device(self) -> contextlib.AbstractContextManager[Any]:
        """A context in which the namespace's array creation lands on this backend's device."""
        return contextlib.nullcontext()


# ---------------------------------------------------------------------- the benchmark
class BenchFacet(Facet):
    """What the benchmark asks a backend: its harness (fences of timed blocks, clocks,
    memory, fairness settings, the records' environment) and the facts its cases
    read. Every fact is about the library, never about a case: a case asks for what
    it needs (``lacks["einsum"]``) and decides for itself."""

    # ------------------------------------------------------------ the run
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
    #: why ``xlinalg bench`` leaves this backend out unless ``--backends`` names it
    #: (it is not one of the libraries the question and the article choose between);
    #: empty: timed in every run where it is available
    opt_in: str = ""

    def version(self) -> str:
        """The library's version string."""
        mod = importlib.import_module(self.backend.module)
        return str(getattr(mod, "__version__", "unknown"))

    def device_name(self) -> str:
        """A human-readable name of the device arrays land on."""
        import platform

        return platform.processor() or platform.machine() or "cpu"

    def processor_class(self) -> str:
        """``"gpu"`` or ``"cpu"``: the processor whose calibrated peak its cells are
        measured against. A GPU backend must say (a GPU's throughput divided by the
        CPU's peak, or an accelerator's by a GPU's, would be a wrong finding)."""
        gpu_must_say(self.backend, "processor_class")
        return "cpu"

    def configure(self, *, threads: int | None, allow_tf32: bool) -> Callable[[], None]:
        """Apply the benchmark's fairness settings in this process, before any array
        is made (the BLAS pools are set for every backend alike); returns the undo."""
        return lambda: None

    def settings(self, state: dict[str, Any]) -> None:
        """Add the settings in effect (threads, matmul precision, ...) to `state`, the
        backend's fairness record (``bench/_fairness.backend_state``)."""

    def thread_info(self) -> dict[str, Any]:
        """The library's own thread settings in this process (``xlinalg info``)."""
        return {}

    def worker_env(self, env: dict[str, str], *, threads: int | None, allow_tf32: bool) -> None:
        """Set what a benchmark worker process of this backend needs in its environment
        (`env`, a copy of the runner's) before it starts."""

    # ------------------------------------------------------------ a timed block
    #: whether ``synchronize`` must see every result of a timed block (JAX: each
    #: result has its own readiness), not only the last
    fence_every_result: bool = False

    def materialize(self, x: Any) -> Any:
        """Wait for `x` and return it in a form that holds its values.

        For eager backends this is ``synchronize(x)`` then `x` itself; for Dask it
        is ``x.compute()`` (a NumPy array).
        """
        self.backend.synchronize(x)
        return x

    def materialize_all(self, outs: Any) -> tuple[Any, ...]:
        """:meth:`materialize` of each of `outs` (a lazy library: in one evaluation)."""
        return tuple(self.materialize(o) for o in outs)

    def fence_description(self) -> str:
        """What the benchmark's fence does for this backend, for the records."""
        gpu_must_say(self.backend, "fence_description")
        return "none needed (synchronous backend)"

    def device_clock(self) -> Any:
        """A clock of device time (``start()``, then ``stop()`` -> seconds) or None: the
        benchmark then times on the host, across the fence."""
        gpu_must_say(self.backend, "device_clock")
        return None

    def cast(self, x: Any, dtype: Any) -> Any:
        """`x` cast to `dtype` (a :meth:`native_dtype`) on the backend."""
        return x.astype(dtype)

    def copy(self, x: Any) -> Any:
        """A new array of `x`'s values in memory of its own (a member of a stack made
        an array of its own): ``x.copy()``."""
        return x.copy()

    def contiguous(self, x: Any) -> Any:
        """A strided view `x` as a new dense (C-order) array: the native namespace's
        ``asarray(x, copy=True)``."""
        return self.native_namespace().asarray(x, copy=True)

    def softmax(self) -> Callable[[Any], Any]:
        """The softmax over the last axis that a case calls: the library's own kernel
        where it has one, else the stable formula on :meth:`native_namespace`."""
        xp = self.native_namespace()

        def softmax(s: Any) -> Any:
            e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
            return e / xp.sum(e, axis=-1, keepdims=True)

        return softmax

    def host_result(self, x: Any) -> np.ndarray:
        """A result on the host for the benchmark's correctness check (widened where
        the library's own host form would not compare)."""
        return np.asarray(self.backend.to_numpy(x))

    def layout(self, x: Any) -> dict[str, Any]:
        """How a timed input lies in memory, recorded with its cell: its shape and
        whether it is row-major contiguous (JAX's and array-api-strict's always are)."""
        return {"shape": [int(s) for s in x.shape], "c_contiguous": True}

    # ------------------------------------------------------------ memory
    #: whether tracemalloc sees its arrays' memory (NumPy's allocator underneath)
    numpy_buffers: bool = False

    def memory_reset(self) -> Any:
        """Before a measured call: reset the device allocator's peak; returns what
        :meth:`memory_peaks` needs. The host's own figures need nothing here."""
        gpu_must_say(self.backend, "memory_reset")
        return None

    def memory_peaks(self, token: Any) -> dict[str, int]:
        """After the measured call: the device allocator's figures, each named after
        what it measured (``{"cuda_max_allocated_bytes": n}``; bench/_memory.py)."""
        gpu_must_say(self.backend, "memory_peaks")
        return {}

    def release_memory(self) -> None:
        """Give cached device memory back (after a cell, and after a failure)."""

    # ------------------------------------------------------------ what cases read
    #: floating dtypes the library has beyond the standard's float32 and float64
    extra_float_dtypes: tuple[str, ...] = ()
    #: whether its arrays are NumPy arrays (code compiled for NumPy, as by numba, takes them)
    numpy_arrays: bool = False
    #: whether NumPy wraps its arrays without a copy (``np.asarray`` of a CPU tensor,
    #: of a JAX CPU array): bringing them to the host moves no bytes
    numpy_wraps: bool = False
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
    #: what the library lacks that a benchmark may ask for, and why: a feature
    #: (``"einsum"``, ``"conv2d"``, ``"device_transfer"``, ``"square_svd"``, ...) ->
    #: the reason a cell that needs it is skipped
    lacks: Mapping[str, str] = MappingProxyType({})
    #: what to know when reading its cells of a kind of measurement (``"out"``: an
    #: in-place ``out=`` call), shown beside them in the report
    notes: Mapping[str, str] = MappingProxyType({})

    def native_namespace(self) -> Any:
        """The library's own namespace (``numpy``, ``torch``, ``jax.numpy``...), which
        the benchmark's cases call so that they time the library, not a wrapper.
        Default: the array API namespace."""
        return self.backend.namespace()

    def missing_dtype(self, name: str) -> str | None:
        """Why the library has no floating dtype `name`, or None when it has one.
        Static: imports nothing."""
        if name in ("float32", "float64") or name in self.extra_float_dtypes:
            return None
        return f"{self.backend.name} has no {name} dtype"

    def native_dtype(self, name: str) -> Any:
        """The dtype called `name` of :meth:`native_namespace`; TypeError if it has none."""
        missing = self.missing_dtype(name)
        if missing is not None:
            raise TypeError(missing)
        return getattr(self.native_namespace(), name)

    def transfer_to_host(self, x: Any) -> np.ndarray:
        """A new device-to-host copy of `x` on every call (what a transfer is timed
        as): the backend's ``to_numpy`` may hand back a copy made before (JAX keeps one)."""
        return self.backend.to_numpy(x)

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` compiled by :attr:`function_compiler` (the first call compiles)."""
        raise NotImplementedError(f"backend {self.backend.name!r} has no function compiler")

    def conv2d(self) -> Callable[[Any, Any], Any]:
        """The library's 2-D convolution ``(x (B, C, H, W), w (O, C, KH, KW)) -> (B, O,
        H-KH+1, W-KW+1)``: valid cross-correlation, stride 1 (:attr:`conv2d_kernel`)."""
        raise NotImplementedError(f"backend {self.backend.name!r} has no 2-D convolution")


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
