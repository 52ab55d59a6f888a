"""An adapter's speed settings, declared once per library as data.

Each library's :class:`~xlinalg.backends._adapter.Adapter` names its fast paths
in one :class:`FastPaths` value (its class attribute ``speed``): which native
functions the operations may call directly for operands of one dtype, which
dtypes those calls and the native solve take as they are, which dtypes they must
not see. The base adapter's constructor reads it, once, into what the hot paths
read (``fast``, ``solve_dtypes``, ...) and ``xlinalg._dispatch`` fills its
per-type tables from those. A native function in an optional package that is slow
to import (SciPy's ``expit``) is imported on the first call that needs it and
then kept with the others, in ``fast``: one place.

The fast paths of the linear-algebra operations are made per array type by
:class:`FastMaker` values, each bound to the adapter class it serves (the library
modules define their makers: ``np_maker``, ``torch_maker``, ``jax_maker``), so that
an operation lists its makers without naming a library.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["NP_NON_NUMERIC", "FastMaker", "FastPaths", "native_function"]

#: NumPy dtypes that are not numbers (the fast kernels must not see them)
NP_NON_NUMERIC = frozenset(np.dtype(c) for c in "?OUSVMm")

_NO_OPS: Mapping[str, str] = MappingProxyType({})


def native_function(path: str) -> Callable[..., Any]:
    """The function at `path` (``"numpy.add"``, ``"jax.nn.sigmoid"``): its module
    imported (a no-op where it is), then the attribute."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class FastPaths:
    """The fast paths of one library's adapter (its class attribute ``speed``)."""

    #: op -> the native function (a ``"module.name"`` path) called directly for
    #: operands of one dtype: ``add``, ``subtract``, ``multiply``, ``matmul``,
    #: ``sigmoid`` (imported when the adapter is made: its library is by then)
    ops: Mapping[str, str] = field(default_factory=lambda: _NO_OPS)
    #: op -> a native function in an optional package slow to import (SciPy's
    #: ``expit``): imported on the op's first call, kept in ``fast`` if found
    optional_ops: Mapping[str, str] = field(default_factory=lambda: _NO_OPS)
    #: where the dtype names below resolve: ``"numpy"`` (``np.dtype(name)``: the
    #: dtypes of NumPy's and JAX's arrays), a module (``"torch"``: its attributes),
    #: or ``""``: the adapter's namespace's attributes, those it has
    dtypes_from: str = ""
    #: the dtypes the native linalg routines take as they are
    solve_dtypes: tuple[str, ...] = ("float32", "float64", "complex64", "complex128")
    #: the dtypes the native sigmoid (``ops["sigmoid"]``) takes as they are
    sigmoid_dtypes: tuple[str, ...] = ("float32", "float64")
    #: whether the fast path of solve must check devices (False where the native
    #: call itself refuses mixed devices and the adapter translates its error)
    device_check: bool = True
    #: whether the fast kernels must not see NumPy's non-numeric dtypes (the native
    #: call would accept bool, strings, objects, datetimes)
    numeric_only: bool = False
    #: op -> more dtypes (names) that op's fast kernel must not see (torch's complex add)
    excluded_ops: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    #: ops whose native kernel refuses operands of two dtypes and every dtype the
    #: contract refuses (torch.matmul): the fast path then reads no dtype at all
    refuses_mixed: frozenset[str] = frozenset()

    def dtype_set(self, names: tuple[str, ...], xp: Any) -> frozenset[Any]:
        """The dtypes called `names`, resolved as :attr:`dtypes_from` says."""
        if self.dtypes_from == "numpy":
            return frozenset(np.dtype(n) for n in names)
        source = importlib.import_module(self.dtypes_from) if self.dtypes_from else xp
        return frozenset(getattr(source, n) for n in names if hasattr(source, n))


@dataclass(frozen=True)
class FastMaker:
    """One library's maker of an operation's fast path (``xlinalg._dispatch.fast_paths``).

    `adapter`: the adapter class whose arrays it serves (its library's module defines
    the maker, next to the adapter); `make(adapter, array type)`: the fast path for
    arrays of exactly that type, or None (a subclass, a tracer, a device the path
    does not serve). Called once per array type, as the type is first met.
    """

    adapter: type
    make: Callable[[Any, type], Any]

    def path_for(self, ad: Any, cls: type) -> Any:
        """The fast path for arrays of type `cls` owned by adapter `ad`, or None
        (another library's adapter, or a type the maker does not serve)."""
        return self.make(ad, cls) if isinstance(ad, self.adapter) else None
