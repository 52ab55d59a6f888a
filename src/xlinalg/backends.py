"""The backend registry: one place that knows every array library xlinalg runs on.

A *backend* is a library plus a device kind: ``"numpy"``, ``"torch-cpu"``,
``"torch-cuda"``, ``"cupy"``, ``"jax-cpu"``, ``"jax-gpu"``, ``"dask"`` and
``"array-api-strict"``. The registry is shared by the library (``backend_of``,
``to``, ``synchronize``), the test-suite and the benchmark. It imports no array
library until a backend is asked for, and it never imports pytest.

Each :class:`Backend` can tell whether it is usable here and, if not, why; create
arrays on itself from NumPy; convert its arrays back to NumPy; and *fence*: wait
until all work queued on its device has finished (JAX dispatches asynchronously
even on the CPU, CUDA always does).
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _convert
from ._lib._typing import Array

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendUnavailableError",
    "available_backends",
    "backend_of",
    "get_backend",
    "strict_to_numpy",
    "synchronize",
    "to",
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

    def owns(self, x: Any) -> bool:
        """Whether `x` is an array of this backend (library *and* device kind)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- fences
    def synchronize(self, *arrays: Any) -> None:
        """Wait until the work producing `arrays` (or all queued work) is done."""

    def materialize(self, x: Any) -> Any:
        """Wait for `x` and return it in a form that holds its values.

        For eager backends this is ``synchronize(x)`` then `x` itself; for Dask it
        is ``x.compute()`` (a NumPy array).
        """
        self.synchronize(x)
        return x

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


# ---------------------------------------------------------------------- numpy
class _NumPy(Backend):
    name = "numpy"
    module = "numpy"
    install = "pip install numpy"

    def version(self) -> str:
        return np.__version__

    def from_numpy(self, arr: np.ndarray) -> Any:
        return np.array(arr, copy=True)

    def owns(self, x: Any) -> bool:
        return isinstance(x, np.ndarray)


# ---------------------------------------------------------------------- strict
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


class _Strict(Backend):
    name = "array-api-strict"
    module = "array_api_strict"
    install = "pip install array-api-strict"

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


# ---------------------------------------------------------------------- torch
class _Torch(Backend):
    module = "torch"
    install = "pip install torch  (CPU build: pip install torch==2.13.0)"

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.name = f"torch-{device_type}"
        self.gpu = device_type == "cuda"

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None and self.gpu:
            import torch

            if not torch.cuda.is_available():
                built = getattr(torch.version, "cuda", None)
                if built is None:
                    return "this torch build has no CUDA support (a CPU build)"
                return "no CUDA device is visible (torch.cuda.is_available() is False)"
        return reason

    def device_name(self) -> str:
        if self.gpu:
            import torch

            return str(torch.cuda.get_device_name(0))
        return super().device_name()

    def from_numpy(self, arr: np.ndarray) -> Any:
        import torch

        # native byte order, C order, a copy (np.array keeps 0-d arrays 0-d)
        host = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C", copy=True)
        if host.dtype.name == "bfloat16":  # ml_dtypes' bfloat16: torch reads its bits
            return torch.from_numpy(host.view(np.uint16)).view(torch.bfloat16).to(self.device_type)
        return torch.from_numpy(host).to(self.device_type)

    def to_numpy(self, x: Any) -> np.ndarray:
        import torch

        x = x.detach().cpu().resolve_conj().resolve_neg()
        if x.dtype == torch.bfloat16:  # NumPy's bfloat16 is ml_dtypes' (JAX's dependency)
            import ml_dtypes

            return x.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        return np.asarray(x.numpy())

    def owns(self, x: Any) -> bool:
        import torch

        return isinstance(x, torch.Tensor) and x.device.type == self.device_type

    def synchronize(self, *arrays: Any) -> None:
        if self.gpu:
            import torch

            devices = {a.device for a in arrays if hasattr(a, "device")}
            if not devices:
                torch.cuda.synchronize()
            for d in devices:
                torch.cuda.synchronize(d)


# ---------------------------------------------------------------------- cupy
class _CuPy(Backend):
    name = "cupy"
    module = "cupy"
    install = "pip install cupy-cuda12x"
    gpu = True

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

    def device_name(self) -> str:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

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


# ---------------------------------------------------------------------- jax
class _Jax(Backend):
    module = "jax"
    install = 'pip install "jax[cpu]"  (GPU: pip install "jax[cuda12]")'

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.name = f"jax-{platform}"
        self.gpu = platform == "gpu"

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
        _convert.check_dtype_fits(arr, "numpy", self.name)
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


# ---------------------------------------------------------------------- dask
class _Dask(Backend):
    name = "dask"
    module = "dask"
    install = 'pip install "dask[array]"'
    lazy = True

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None and not _module_available("dask.array"):
            return "dask is installed without dask.array (pip install 'dask[array]')"
        if reason is None:
            try:
                importlib.import_module("dask.array")
            except Exception as exc:
                return f"importing dask.array failed: {type(exc).__name__}: {exc}"
        return reason

    def from_numpy(self, arr: np.ndarray) -> Any:
        import dask.array as da

        arr = np.array(arr, copy=True)
        # Matrices stay whole in each block; stacks are split along the first axis.
        if arr.ndim >= 3 and arr.shape[0] > 1:
            chunks: Any = (max(1, -(-arr.shape[0] // 4)),) + arr.shape[1:]
        else:
            chunks = arr.shape if arr.size else -1
        return da.from_array(arr, chunks=chunks)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x.compute())

    def owns(self, x: Any) -> bool:
        return type(x).__module__.startswith("dask")

    def synchronize(self, *arrays: Any) -> None:
        # Dask arrays are lazy: "waiting" means evaluating the graph.
        import dask

        if arrays:
            dask.compute(*arrays)

    def materialize(self, x: Any) -> Any:
        return x.compute() if hasattr(x, "compute") else x


#: The registry: backend id -> :class:`Backend`, in display order. Adding a
#: backend here is what lists it everywhere (BACKEND_NAMES, ``xlinalg info``, the
#: benchmark, the tests' parametrization).
_REGISTRY: dict[str, Backend] = {
    b.name: b
    for b in (
        _NumPy(),
        _Torch("cpu"),
        _Torch("cuda"),
        _CuPy(),
        _Jax("cpu"),
        _Jax("gpu"),
        _Dask(),
        _Strict(),
    )
}

#: Every backend id xlinalg knows, in display order (the registry's keys).
BACKEND_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def get_backend(name: str) -> Backend:
    """The :class:`Backend` called `name` (it may be unavailable: ask it).

    Raises
    ------
    ValueError
        If `name` is not a backend id; the message lists the valid ones.
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown backend {name!r}; valid backends: {', '.join(BACKEND_NAMES)}"
        ) from None


def available_backends() -> list[str]:
    """The ids of the backends usable on this machine, in display order.

    Returns
    -------
    list of str
        A subset of :data:`BACKEND_NAMES`; ask ``get_backend(name).unavailable_reason()``
        why one is missing.

    Examples
    --------
    >>> import xlinalg as xl
    >>> "numpy" in xl.available_backends()
    True
    """
    return [n for n in BACKEND_NAMES if _REGISTRY[n].is_available()]


class _Kind(NamedTuple):
    """What :func:`backend_of` and :func:`synchronize` need to know about an array type."""

    #: the backend id of an array of this type (reads its device where that decides)
    name: Callable[[Any], str]
    #: waits for one array of this type; None: there is nothing to wait for
    fence: Callable[[Any], Any] | None


#: array type -> its :class:`_Kind`, filled the first time a type is met, so that
#: backend_of, synchronize and to cost one dict read to find what to do (keyed
#: like the operations' own lookup, ``_lib/_dispatch.py``)
_KINDS: dict[type, _Kind] = {}
#: array type -> its fence alone (what synchronize reads: one subscript, no attribute)
_FENCES: dict[type, Callable[[Any], Any] | None] = {}
_KINDS_LOCK = threading.Lock()


def _kind(cls: type) -> _Kind:
    """The cached :class:`_Kind` of `cls`; the first use fills it under a lock."""
    kind = _KINDS.get(cls)
    if kind is None:
        with _KINDS_LOCK:  # two threads meeting a new type at once build it once
            kind = _KINDS.get(cls)
            if kind is None:
                kind = _KINDS[cls] = _make_kind(cls)
                _FENCES[cls] = kind.fence
    return kind


def _const(name: str) -> Callable[[Any], str]:
    return lambda x: name


def _unknown(x: Any) -> str:
    raise TypeError(
        f"expected an array of one of {', '.join(BACKEND_NAMES)}, "
        f"got {type(x).__module__}.{type(x).__qualname__}"
    )


def _torch_name(x: Any) -> str:
    return f"torch-{x.device.type}"  # "torch-cpu", "torch-cuda", or another device type


def _torch_fence(x: Any) -> None:
    if x.is_cuda:
        import torch

        torch.cuda.synchronize(x.device)


def _jax_name(x: Any) -> str:
    try:
        platforms = {d.platform for d in x.devices()}
    except Exception:  # traced: no concrete device
        return "jax-cpu"
    return "jax-cpu" if platforms == {"cpu"} else "jax-gpu"


def _jax_cpu_only() -> bool:
    """Whether the only JAX backend of this process is the CPU (then every array is jax-cpu)."""
    try:
        from jax.extend.backend import backends

        return set(backends()) == {"cpu"}
    except Exception:  # a JAX without it: ask each array
        return False


def _make_kind(cls: type) -> _Kind:
    if issubclass(cls, (np.ndarray, np.generic)):  # NumPy returns scalars for 0-d results
        return _Kind(_const("numpy"), None)
    mod = cls.__module__
    if mod.startswith("torch"):
        return _Kind(_torch_name, _torch_fence)
    if mod.startswith("cupy"):
        return _Kind(_const("cupy"), _REGISTRY["cupy"].synchronize)
    if mod.startswith(("jax", "jaxlib")):
        import jax

        if issubclass(cls, jax.core.Tracer):  # no concrete device, nothing to wait for
            return _Kind(_const("jax-cpu"), None)
        name = _const("jax-cpu") if _jax_cpu_only() else _jax_name
        # the array's own method (C++), called directly: synchronize costs one call more
        fence = getattr(cls, "block_until_ready", None) or _REGISTRY["jax-cpu"].synchronize
        return _Kind(name, fence)
    if mod.startswith("dask"):
        return _Kind(_const("dask"), _REGISTRY["dask"].synchronize)
    if mod.startswith("array_api_strict"):
        return _Kind(_const("array-api-strict"), None)
    return _Kind(_unknown, None)


def backend_of(x: Array) -> str:
    """The backend id of array `x`, e.g. ``"torch-cpu"`` or ``"jax-gpu"``.

    Parameters
    ----------
    x : array
        An array of any registered library (a NumPy scalar counts as NumPy).

    Returns
    -------
    str
        One of :data:`BACKEND_NAMES` (a torch tensor on another device type, e.g.
        ``"meta"``, gives ``"torch-<type>"``).

    Raises
    ------
    TypeError
        If `x` is not an array of a known backend.

    Examples
    --------
    >>> import numpy as np, xlinalg as xl
    >>> xl.backend_of(np.ones(2))
    'numpy'
    >>> xl.backend_of(xl.to(np.ones(2), "array-api-strict"))
    'array-api-strict'
    """
    return (_KINDS.get(type(x)) or _kind(type(x))).name(x)


def synchronize(*arrays: Array, backend: str | None = None) -> None:
    """Wait until the work that produces `arrays` has finished on its device.

    A no-op on NumPy and array-api-strict (they compute eagerly). On CUDA
    (torch, CuPy) it synchronizes the devices holding the arrays; on JAX it
    blocks until the arrays are ready (JAX dispatches asynchronously on the CPU
    too); on Dask it evaluates the graphs (the values are not kept: call
    ``.compute()`` or ``.persist()`` to keep them).

    Parameters
    ----------
    *arrays
        Arrays whose producing work must finish. Each is fenced on its own backend.
    backend : str, optional
        With no arrays, wait for all queued work on this backend.

    Returns
    -------
    None

    Examples
    --------
    >>> import xlinalg as xl
    >>> x = xl.matmul(xp.eye(2), xp.ones(2))
    >>> xl.synchronize(x)  # a no-op for NumPy; a fence for CUDA, JAX and Dask
    """
    if len(arrays) == 1:  # the fence inside timed loops: one dict read, one call
        x = arrays[0]
        try:
            fence = _FENCES[type(x)]
        except KeyError:
            fence = _kind(type(x)).fence
        if fence is not None:
            fence(x)
        return
    if not arrays:
        if backend is not None:
            get_backend(backend).synchronize()
        return
    groups: dict[str, list[Any]] = {}
    for a in arrays:
        groups.setdefault(backend_of(a), []).append(a)
    for name, group in groups.items():
        reg = _REGISTRY.get(name)
        if reg is not None:
            reg.synchronize(*group)
        else:  # a device type without a registry entry (torch "mps", "meta"): each alone
            for a in group:
                synchronize(a)


def to(x: Array, backend: str, /, *, copy: bool | None = None) -> Array:
    """Convert array `x` to `backend` (e.g. ``"torch-cuda"``), keeping its values and dtype.

    DLPack is tried first (zero-copy where source and target share the memory);
    otherwise the data goes through a NumPy copy on the host.

    Parameters
    ----------
    x : array
        An array of any registered backend, or a NumPy array.
    backend : str
        The target backend id (see :data:`BACKEND_NAMES`).
    copy : bool, optional
        ``True`` forces a copy; ``False`` raises if a copy would be needed;
        ``None`` (default) copies only when it must.

    Returns
    -------
    array
        An array of `backend` with `x`'s values and dtype. Where zero-copy is
        possible the result shares memory with `x`: writing to one writes to the
        other. Read-only memory (a read-only NumPy array or ``np.memmap``, a JAX
        array) is copied, never shared, with a target whose arrays are writable
        (PyTorch, CuPy); see docs/semantics.md, "Devices and conversion".

    Raises
    ------
    TypeError
        If `backend` cannot hold `x`'s dtype as it is (JAX in 32-bit mode and
        int64/float64/complex128, array-api-strict and float16, extended
        precision outside NumPy and Dask): the message names the dtype and the fix.
    ValueError
        If `backend` is unknown, or ``copy=False`` and a copy is needed.
    BackendUnavailableError
        If `backend` cannot run here.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xp.arange(3.0), "numpy")
    array([0., 1., 2.])
    """
    target = get_backend(backend)
    target.require()
    if not isinstance(x, np.ndarray) and not hasattr(x, "shape"):
        x = np.asarray(x)
    source = backend_of(x)
    if source == backend and not copy:
        return x
    _convert.check_dtype_fits(x, source, backend)
    src = _REGISTRY[source]
    y = _convert.plain(x, source)
    if not copy and y is x and not src.lazy and not target.lazy:
        routed = _convert.zero_copy(x, source, target)
        if routed is not None and (routed[1] or copy is None):
            return routed[0]
    if copy is False:
        raise ValueError(
            f"converting a {source} array to {backend} needs a copy (different devices, no "
            "DLPack route, read-only memory, or a torch conj/neg view); pass copy=None to allow it"
        )
    return target.from_numpy(_convert.native_order(src.to_numpy(y), backend))

