"""The :class:`Backend` core: what every user of a backend asks.

A *backend* is one array library on one kind of device (``"torch-cuda"``). Its
:class:`Backend` object answers the questions everyone asks about it: its
identity, whether it is usable here, which arrays are its own, its adapter and
how to wait for its work. What one user alone asks lives in the backend's
facets (``_facets.py``: ``backend.bench``, ``backend.unrolled``,
``backend.convert``, ``backend.testing``); the numerical differences of its
library live in the library's :class:`Adapter` (``_adapter.py``, re-exported
here). The bases hold the standard-only default of every hook, and a default
that would be wrong for a GPU library refuses to answer for one; each library's
module (``_numpy.py``, ``_torch.py``, ...) overrides what its library needs.
Nothing here imports an array library but NumPy.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._adapter import (
    MISSING,
    NARROW_FLOATS,
    NP_NON_NUMERIC,
    Adapter,
    make_solve_fast,
    singular_members,
)
from ._facets import (
    BenchFacet,
    ConvertFacet,
    TestingFacet,
    UnrolledFacet,
    facet,
    gpu_must_say,
)

__all__ = [
    "MISSING",
    "NARROW_FLOATS",
    "NP_NON_NUMERIC",
    "Adapter",
    "Backend",
    "BackendUnavailableError",
    "TypeHooks",
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
#: what :attr:`Backend._reason` holds before the probe ran
_UNPROBED = object()


class TypeHooks(NamedTuple):
    """What ``backend_of``, ``synchronize`` and ``to`` do with one array type
    (:meth:`Backend.type_hooks`)."""

    #: the backend id of an array of this type (reads its device where that decides)
    name: Callable[[Any], str]
    #: waits for one array of this type; None: there is nothing to wait for
    fence: Callable[[Any], Any] | None
    #: the error for an array of this type that is not dense; None: all are
    dense_error: Callable[[Any, str, str], TypeError | None] | None = None


class Backend:
    """One array library on one kind of device: the core every user asks.

    The core is the backend's identity, its availability, its array types, its
    adapter and its fence. What one user alone asks lives in a facet
    (``_facets.py``), made on first use: ``bench`` (the benchmark's harness
    and the facts its cases read), ``unrolled`` (the unrolled solver),
    ``convert`` (``xlinalg.to``) and ``testing`` (the testing kit). A
    library's module overrides the hooks its library needs here and declares
    its facets' subclasses (``bench = facet(TorchBench)``).

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

    # ---------------------------------------------------------------- identity
    name: str = ""
    module: str = ""
    install: str = ""
    gpu: bool = False
    #: whether results are lazy (need an explicit compute to exist; the fence
    #: evaluates them)
    lazy: bool = False
    #: the library's key: the backends of one library share its adapter (``"torch"``)
    library: str = ""

    # ---------------------------------------------------------------- facets
    bench = facet(BenchFacet)
    unrolled = facet(UnrolledFacet)
    convert = facet(ConvertFacet)
    testing = facet(TestingFacet)

    # ---------------------------------------------------------------- availability
    #: the probe's answer once asked (:meth:`unavailable_reason`); _UNPROBED before
    _reason: object = _UNPROBED

    def unavailable_reason(self) -> str | None:
        """``None`` if the backend is usable here, else a one-line reason."""
        reason = self._reason
        if reason is _UNPROBED:
            with _PROBE_LOCK:  # probed once, whichever threads ask first
                if self._reason is _UNPROBED:
                    self._reason = self._probe()
                reason = self._reason
        return reason  # type: ignore[return-value]

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

    # ---------------------------------------------------------------- data
    def namespace(self) -> Any:
        """The array API namespace (array-api-compat wrapped where needed)."""
        self.require()
        import array_api_compat

        return array_api_compat.array_namespace(self.from_numpy(np.zeros(1)))

    def from_numpy(self, arr: np.ndarray) -> Any:
        """Create an array on this backend holding the values of `arr` (a copy)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> np.ndarray:
        """Bring `x` back to the host as a NumPy array (waits for it)."""
        return np.asarray(x)

    # ---------------------------------------------------------------- the fence
    def synchronize(self, *arrays: Any) -> None:
        """Wait until the work producing `arrays` (or all queued work) is done.

        The default suits an eager library on the host: nothing to wait for. A GPU
        backend must say how to wait (CUDA queues work asynchronously): it is an
        error to leave this hook to the default.
        """
        gpu_must_say(self, "synchronize")

    # ---------------------------------------------------------------- array types
    #: the ``__name__`` of the namespaces (given as ``xp=``) that are this library's
    namespace_names: tuple[str, ...] = ()

    def owns(self, x: Any) -> bool:
        """Whether `x` is an array of this backend (library *and* device kind)."""
        raise NotImplementedError

    def owns_namespace(self, xp: Any) -> bool:
        """Whether namespace `xp` (given as ``xp=``) is this library's."""
        return getattr(xp, "__name__", "") in self.namespace_names

    def array_types(self) -> tuple[type, ...]:
        """The library's array base classes (asked only once :attr:`module` is imported).

        The first backend of a library in the registry answers for every array
        of these types (and their subclasses, wherever they are defined), through
        :meth:`type_hooks` and :meth:`adapter_for_type`.
        """
        return ()

    def type_hooks(self, cls: type) -> TypeHooks:
        """What ``backend_of``, ``synchronize`` and ``to`` do with an array of type `cls`
        (one of :meth:`array_types`; called once per type): how to name its backend,
        how to wait for it (None: nothing to wait for; the default is
        :meth:`synchronize`, unless it is the base's no-op for an eager host library),
        and the error for one that is not dense (None: every array of this type is)."""
        name = self.name
        fence = (None if type(self).synchronize is Backend.synchronize and not self.gpu
                 else self.synchronize)
        return TypeHooks(lambda x: name, fence)

    # ---------------------------------------------------------------- the adapter
    #: the class of its library's adapter (what :meth:`make_adapter` makes): its
    #: ``library`` is how messages name the library (:attr:`library_word`)
    adapter_class: type[Adapter] | None = None

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

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


#: library -> its one adapter (:meth:`Backend.adapter`)
_ADAPTERS: dict[str, Adapter] = {}
#: taken only to create an adapter (the miss path): one adapter per library even
#: when two threads meet it first at once (two would make every later call with
#: arrays of both "mix array libraries"). Re-entrant: an adapter's constructor may
#: look up another.
_ADAPTERS_LOCK = threading.RLock()
