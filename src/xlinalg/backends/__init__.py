"""The backend registry: one place that knows every array library xlinalg runs on.

A *backend* is a library plus a device kind: ``"numpy"``, ``"torch-cpu"``,
``"torch-cuda"``, ``"cupy"``, ``"jax-cpu"``, ``"jax-gpu"``, ``"dask"`` and
``"array-api-strict"``. The registry is shared by the library (``backend_of``,
``to``, ``synchronize``, the operations' adapters), the test-suite and the
benchmark. It imports no array library until a backend is asked for, and it
never imports pytest.

Each library has one module here (``_numpy.py``, ``_torch.py``, ``_jax.py``,
``_cupy.py``, ``_dask.py``, ``_strict.py``) holding its ``Adapter`` (the
numerical overrides) and its :class:`Backend` objects (the hooks: which arrays
are its own, how to create, convert and wait for them, ...); NumPy, PyTorch and JAX
keep their adapter in a module of its own (``_numpy_adapter.py``, ...); ``_base.py`` (the
backend's core), ``_facets.py`` (its hooks grouped by who asks: ``backend.bench``,
``backend.unrolled``, ``backend.convert``, ``backend.testing``), ``_adapter.py`` and
``_speed.py`` (an adapter's fast paths, declared as data) hold the bases with the
standard-only default of every hook. Everything else asks a backend object, found by
id (:func:`get_backend`) or by array type (the cached lookup below); adding a library
is one module and one line of the registry.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib._public import publish as _publish
from .._lib._typing import Array
from . import _convert, _cupy, _dask, _jax, _numpy, _strict, _torch
from ._base import Adapter, Backend, BackendUnavailableError, TypeHooks
from ._host import foreign_in_sequence
from ._numpy import NUMPY, refused_subclass
from ._strict import strict_to_numpy

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendUnavailableError",
    "available_backends",
    "backend_of",
    "default_backend",
    "get_backend",
    "strict_to_numpy",
    "synchronize",
    "to",
]

#: The registry, in display order: one line per library, each module listing its
#: backends (one per device kind). Adding a library here is what lists it
#: everywhere (BACKEND_NAMES, ``xlinalg info``, the benchmark, the tests'
#: parametrization); the first backend of a library answers for its array types.
_BACKENDS: tuple[Backend, ...] = (
    *_numpy.BACKENDS,
    *_torch.BACKENDS,
    *_cupy.BACKENDS,
    *_jax.BACKENDS,
    *_dask.BACKENDS,
    *_strict.BACKENDS,
)

#: backend id -> :class:`Backend`
_REGISTRY: dict[str, Backend] = {b.name: b for b in _BACKENDS}

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


def _torch_default() -> str:
    try:
        import torch
    except ImportError:
        return "torch-cpu"  # (its require() says what is missing)
    return f"torch-{torch.get_default_device().type}"


def _jax_default() -> str:
    try:
        import jax
    except ImportError:
        return "jax-cpu"
    kind = jax.default_backend()
    return "jax-cpu" if kind == "cpu" else f"jax-{'gpu' if kind in ('gpu', 'cuda', 'rocm') else kind}"


#: the library names :func:`to` takes beside backend ids: each is that library on
#: its default device (``torch.get_default_device()``, ``jax.default_backend()``)
LIBRARY_TARGETS: dict[str, Callable[[], str]] = {
    "numpy": lambda: "numpy",
    "torch": _torch_default,
    "jax": _jax_default,
    "cupy": lambda: "cupy",
    "dask": lambda: "dask",
    "array-api-strict": lambda: "array-api-strict",
    "array_api_strict": lambda: "array-api-strict",
    "strict": lambda: "array-api-strict",
}


def _target(name: Any) -> Backend:
    """The backend :func:`to` converts to: a backend id, or a library name (its default device)."""
    if isinstance(name, str) and name not in _REGISTRY and name.lower() in LIBRARY_TARGETS:
        resolved = LIBRARY_TARGETS[name.lower()]()
        if resolved not in _REGISTRY:
            raise ValueError(
                f"xlinalg.to: {name!r} means {name}'s default device, which is {resolved.partition('-')[2]!r} "
                f"here, a device xlinalg does not convert to; pass a backend id: {', '.join(BACKEND_NAMES)}"
            )
        name = resolved
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"xlinalg.to: unknown backend {name!r}; valid backends: {', '.join(BACKEND_NAMES)}; "
            f"or a library name ({', '.join(LIBRARY_TARGETS)}), which means that library on its "
            "default device"
        ) from None


def default_backend(library: str) -> Backend:
    """The backend of `library` on its default device: what ``to(x, library)`` converts
    to (``"jax"``: JAX's default device, its GPU where it has one; ``"torch"``:
    ``torch.get_default_device()``).

    Raises
    ------
    ValueError
        If `library` is not one of the library names ``xlinalg.to`` takes, or its
        default device here has no backend.
    """
    make = LIBRARY_TARGETS.get(library.lower()) if isinstance(library, str) else None
    if make is None:
        raise ValueError(f"default_backend: unknown library {library!r}; libraries: "
                         f"{', '.join(LIBRARY_TARGETS)}")
    name = make()
    if name not in _REGISTRY:
        raise ValueError(f"default_backend: {library}'s default device is "
                         f"{name.partition('-')[2]!r} here, a device with no backend; "
                         f"backends: {', '.join(BACKEND_NAMES)}")
    return _REGISTRY[name]


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


def _owner(cls: type) -> Backend | None:
    """The backend whose library's array base classes `cls` derives from, or None.

    Decided by base classes, so that subclasses map to their library
    (``torch.nn.Parameter`` and a user's Tensor subclass defined anywhere, JAX
    tracers, NumPy subclasses and scalars). Only libraries already imported are
    asked: an array of a library cannot exist before it is imported. Where two
    libraries' classes match (a library whose arrays subclass NumPy's), the base
    nearest to `cls` in its MRO wins, wherever the registry lists the library; a
    virtual base (an ABC) counts as the farthest, and a tie goes to the first.
    """
    mro = cls.__mro__
    found: Backend | None = None
    depth = len(mro) + 1
    for b in _BACKENDS:
        if b.module not in sys.modules:
            continue
        try:
            types = b.array_types()
        except Exception:  # a broken install: not this library's array
            continue
        for t in types:
            if issubclass(cls, t):
                d = mro.index(t) if t in mro else len(mro)
                if d < depth:
                    found, depth = b, d
    return found


def adapter_for_type(cls: type) -> Adapter | None:
    """The adapter of the operations for arrays of type `cls`, or None if `cls` is
    not an array type they take (the cache in ``_dispatch.py`` keeps the answer)."""
    if cls is np.ndarray:
        return NUMPY
    b = _owner(cls)
    return None if b is None else b.adapter_for_type(cls)


def adapter_for_namespace(xp: Any) -> Adapter:
    """The adapter for a namespace given explicitly as ``xp=`` (the standard-only
    :class:`Adapter` for a namespace no backend claims)."""
    for b in _BACKENDS:
        if b.owns_namespace(xp):
            return b.adapter()
    return Adapter(xp)


def backend_name(x: Any) -> str:
    """Backend id of `x` for messages (never raises)."""
    try:
        return backend_of(x)
    except Exception:
        return "numpy"


#: array type -> its :class:`TypeHooks`, filled the first time a type is met, so that
#: backend_of, synchronize and to cost one dict read to find what to do (the
#: operations' own cache, ``_dispatch.py``, is filled from the same
#: :func:`_owner`)
_KINDS: dict[type, TypeHooks] = {}
#: array type -> its fence alone (what synchronize reads: one subscript, no attribute)
_FENCES: dict[type, Callable[[Any], Any] | None] = {}
_KINDS_LOCK = threading.Lock()


def _kind(cls: type) -> TypeHooks:
    """The cached :class:`TypeHooks` of `cls`; the first use fills it under a lock."""
    kind = _KINDS.get(cls)
    if kind is None:
        with _KINDS_LOCK:  # two threads meeting a new type at once build it once
            kind = _KINDS.get(cls)
            if kind is None:
                kind = _KINDS[cls] = _make_kind(cls)
                _FENCES[cls] = kind.fence
    return kind


def _unknown(x: Any) -> str:
    raise TypeError(
        f"expected an array of one of {', '.join(BACKEND_NAMES)}, "
        f"got {type(x).__module__}.{type(x).__qualname__}"
    )


def _fence_each(x: Any) -> None:
    """The fence of a tuple, list or dict (``xl.svd``'s result, a pytree of results):
    every array in it, on its own backend."""
    synchronize(*_leaves(x))


def _not_an_array(x: Any) -> None:
    raise TypeError(
        f"synchronize: expected arrays (or tuples, lists or dicts of them), got "
        f"{type(x).__module__}.{type(x).__qualname__}; nothing would be waited for"
    )


#: what synchronize takes as ready: Python numbers and None (as JAX's
#: block_until_ready takes None: an empty tree)
_READY = (bool, int, float, complex, type(None))


def _make_kind(cls: type) -> TypeHooks:
    b = _owner(cls)
    if b is None:
        if issubclass(cls, (tuple, list, dict)):
            return TypeHooks(_unknown, _fence_each)
        return TypeHooks(_unknown, None if issubclass(cls, _READY) else _not_an_array)
    return b.type_hooks(cls)


def _leaves(tree: Any) -> list[Any]:
    """The non-container items of nested tuples, lists and dicts, in order; each
    container once (one that holds itself ends)."""
    out: list[Any] = []
    todo = [tree]
    seen: set[int] = set()
    while todo:
        x = todo.pop()
        if isinstance(x, (tuple, list, dict)) and _owner(type(x)) is None:
            if id(x) not in seen:
                seen.add(id(x))
                todo.extend(reversed(list(x.values() if isinstance(x, dict) else x)))
        else:
            out.append(x)
    return out


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
        Arrays whose producing work must finish, or tuples, lists and dicts of
        them (``xl.svd``'s result). Each array is fenced on its own backend;
        Python numbers and None are ready. Anything else raises TypeError: a
        fence that waits for nothing would make a GPU timing wrong in silence.
    backend : str, optional
        With no arrays, wait for all queued work on this backend.

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
    for a in _leaves(arrays):
        kind = _KINDS.get(type(a)) or _kind(type(a))
        if kind.name is _unknown:  # not an array: ready (a number) or refused
            if kind.fence is not None:
                kind.fence(a)
            continue
        groups.setdefault(kind.name(a), []).append(a)
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
        An array of any registered backend, or host data: a Python number or a
        (nested) list of numbers and NumPy arrays. A list holding another
        library's arrays raises a TypeError: stack them with that library first.
    backend : str
        The target backend id (see :data:`BACKEND_NAMES`), or a library name:
        ``"numpy"``, ``"torch"``, ``"jax"``, ``"cupy"``, ``"dask"``,
        ``"array-api-strict"`` (or ``"strict"``), meaning that library on its
        default device (``torch.get_default_device()``, ``jax.default_backend()``).
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
        If `x` is a NumPy masked array (the target has no mask: choose
        ``x.filled(value)`` or ``numpy.ma.getdata(x)``) or a ``numpy.matrix``, a
        sparse or nested torch tensor, or `copy` is not True, False or None.
    ValueError
        If `backend` is unknown (the message lists the ids and library names), or
        ``copy=False`` and a copy is needed.
    BackendUnavailableError
        If `backend` cannot run here.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xp.arange(3.0), "numpy")
    array([0., 1., 2.])
    """
    target = _target(backend)
    backend = target.name
    if copy is not None and copy is not True and copy is not False and not isinstance(copy, np.bool_):
        raise TypeError(f"xlinalg.to: `copy` must be True, False or None, got {copy!r}")
    if copy is not None:
        copy = bool(copy)  # (np.False_ is not False: it must refuse a copy all the same)
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray and (refused := refused_subclass(x, "x")):
        raise refused
    if isinstance(x, (list, tuple, bool, int, float, complex)):  # host data, checked before the target
        if isinstance(x, (list, tuple)) and (err := foreign_in_sequence(x, "x", adapter_for_type)) is not None:
            raise err
        x = NUMPY.asarray(x, None, "x")
    target.require()
    if not isinstance(x, np.ndarray):
        dense_error = (_KINDS.get(type(x)) or _kind(type(x))).dense_error
        if dense_error is not None and (err := dense_error(x, "x", "xlinalg.to")) is not None:
            raise err  # (before reading the shape: a nested tensor's cannot be read)
        if not hasattr(x, "shape"):  # host data: numbers, NumPy's, nested lists of them
            x = NUMPY.asarray(x, None, "x")
    source = backend_of(x)
    if source == backend and not copy:
        return x
    src = _REGISTRY.get(source)
    if src is None:  # a torch tensor on "meta", "mps", "xpu": no registry entry
        raise TypeError(
            f"xlinalg.to: `x` is a {source} array of shape {tuple(x.shape)}, a device xlinalg "
            "does not convert from" + (" (a meta tensor has no data)" if source == "torch-meta"
                                       else "; move it to the CPU first, e.g. `x.cpu()`")
        )
    if (err := src.convert.source_error(x)) is not None:
        raise err
    _convert.check_dtype_fits(x, source, target)
    y = src.convert.plain(x)
    if not copy and y is x and not src.lazy and not target.lazy:
        routed = _convert.zero_copy(x, src, target)
        if routed is not None and (routed[1] or copy is None):
            return routed[0]
    if copy is False:
        raise ValueError(
            f"converting a {source} array to {backend} needs a copy (different devices, no "
            "DLPack route, read-only memory, or a torch conj/neg view); pass copy=None to allow it"
        )
    return target.from_numpy(_convert.native_order(src.to_numpy(y), target))

_publish(__name__, globals())  # xlinalg.backends.BackendUnavailableError
