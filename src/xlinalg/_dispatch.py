"""Namespace dispatch: from the arguments' types to the adapter of their library.

The lookup is keyed on ``type(x)`` and cached, so the steady-state cost of
dispatch is one or two dictionary reads (``array_api_compat.array_namespace``
costs a sizeable part of a small solve: docs/performance.md). Nothing here imports an
array library unless an array of it is passed in.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, Final

import numpy as np

from . import backends as _backends
from .backends._base import Adapter
from .backends._host import foreign_in_sequence
from .backends._numpy import NUMPY, refused_subclass
from .backends._speed import FastMaker

__all__ = [
    "adapter1", "adapter2", "adapter_for", "adapter_for_namespace", "as_arrays", "describe", "fast_paths",
    "host_array",
]

_SCALARS = (bool, int, float, complex)

class _Unseen(enum.Enum):
    UNSEEN = 0


#: the cache's answer for a type not met yet (an enum member: typed apart from None)
_UNSEEN: Final = _Unseen.UNSEEN

# type -> adapter (None: not an array type we know)
_TYPE_CACHE: dict[type, Adapter | None] = {np.ndarray: NUMPY}

#: op -> {array type: (the library's own kernel, the dtypes it must not see, whether
#: the kernel itself refuses what the contract does: then no dtype is read)}, for
#: same-dtype operands; filled as array types are met. The fast paths of add,
#: subtract, multiply and matmul cost one dict read here, where the adapter and
#: then its kernel would cost two reads and an attribute (measurable against a
#: small torch.add: docs/performance.md).
FAST_OPS: dict[str, dict[type, tuple[Any, frozenset[Any], bool]]] = {
    op: {} for op in ("add", "subtract", "multiply", "matmul")
}

#: array type -> (the library's sigmoid kernel, the dtypes it takes as they are)
FAST_SIGMOID: dict[type, tuple[Any, frozenset[Any]]] = {}
#: array type -> its adapter's ``solve_fast`` (xl.solve with its defaults)
FAST_SOLVE: dict[type, Any] = {}

#: op -> {array type: the op's fast path for arrays of that exact type}, filled as
#: types are met from the makers the op registered (:func:`fast_paths`). A fast path
#: takes the op's arguments and returns its result only where the library's own
#: call is the whole contract for them (the common case: one supported dtype, a
#: finite result), else ``MISSING``: the op's checked path then runs and gives the
#: same answer or the error naming the argument.
FAST_LINALG: dict[str, dict[type, Any]] = {}
#: op -> its makers (``backends._speed.FastMaker``: each bound to the adapter class
#: it serves), asked in turn for the fast path of each array type as it is met
_FAST_MAKERS: dict[str, tuple[FastMaker, ...]] = {}


#: taken only on a miss of _TYPE_CACHE: the first sight of a type is resolved once,
#: and its fast-path entries are in place before the type is published, whichever
#: threads meet it first (the hit path takes no lock: one dict read)
_LOOKUP_LOCK = threading.RLock()


def _lookup(cls: type) -> Adapter | None:
    try:
        return _TYPE_CACHE[cls]
    except KeyError:
        pass
    with _LOOKUP_LOCK:
        try:
            return _TYPE_CACHE[cls]
        except KeyError:
            pass
        ad = _backends.adapter_for_type(cls)
        _fill_fast_tables(cls, ad)
        _TYPE_CACHE[cls] = ad
    return ad


def _fill_fast_tables(cls: type, ad: Adapter | None) -> None:
    """The fast-path entries of array type `cls` (under the lookup lock)."""
    # ndarray has its own fast paths; its subclasses (masked arrays, np.matrix) take
    # the checked ones
    if ad is not None and not ad.numpy_arrays:
        for op, table in FAST_OPS.items():
            fn = ad.fast.get(op)
            if fn is not None:
                refuses = op in ad.fast_refuses_mixed and not ad.fast_excluded
                table[cls] = (fn, ad.fast_excluded | ad.fast_excluded_ops.get(op, frozenset()), refuses)
        fn = ad.fast.get("sigmoid")
        if fn is not None:
            FAST_SIGMOID[cls] = (fn, ad.sigmoid_dtypes)
        fn = ad.solve_fast_for(cls)
        if fn is not None:
            FAST_SOLVE[cls] = fn
    for op, makers in _FAST_MAKERS.items():
        _fill_fast_path(FAST_LINALG[op], makers, cls, ad)


def _fill_fast_path(table: dict[type, Any], makers: tuple[FastMaker, ...], cls: type, ad: Adapter | None) -> None:
    if ad is None:
        return
    for maker in makers:
        if (fn := maker.path_for(ad, cls)) is not None:
            table[cls] = fn
            return


def fast_paths(op: str, *makers: FastMaker) -> dict[type, Any]:
    """Register the fast paths of `op` and return its table (:data:`FAST_LINALG`).

    `makers`: one a library (``np_maker``, ``torch_maker``, ``jax_maker`` of the
    backends' modules, each bound to its adapter class), asked once per array type
    as the type is first met (NumPy's at once) for the fast path for arrays of
    exactly that type; the first that gives one (not None: another library's
    adapter, a subclass, a tracer, a device the path does not serve) is it. The op
    calls ``table.get(type(x))`` first.
    """
    table: dict[type, Any] = {}
    with _LOOKUP_LOCK:
        FAST_LINALG[op] = table
        _FAST_MAKERS[op] = makers
        for cls, ad in list(_TYPE_CACHE.items()):
            _fill_fast_path(table, makers, cls, ad)
    return table


def describe(x: Any) -> str:
    """Short description of an argument for error messages: library, shape, dtype, device."""
    cls = type(x)
    if isinstance(x, (list, tuple)):
        return f"a Python {cls.__name__} of length {len(x)}"
    if isinstance(x, np.generic):
        return f"a NumPy scalar ({x.dtype})"
    if isinstance(x, _SCALARS):
        return f"a Python {cls.__name__}"
    ad = _lookup(cls)
    if ad is None:
        return f"an object of type {cls.__module__}.{cls.__qualname__}"
    return ad.describe(x)


def adapter_for_namespace(xp: Any) -> Adapter:
    """The adapter for an explicitly given namespace ``xp``."""
    return _backends.adapter_for_namespace(xp)


_XP_EXAMPLES = "numpy, array_api_compat.torch, jax.numpy, array_api_compat.cupy, array_api_compat.dask.array, array_api_strict"


def _explicit(xp: Any, args: tuple[Any, ...], names: tuple[str, ...]) -> Adapter:
    """The adapter of an explicit ``xp=``, checked against the array arguments.

    A wrong `xp` (a string, a module that is no array namespace, or another library
    than the arrays') raises a TypeError naming `xp`, what it got and what fits,
    instead of an AttributeError from deep inside.
    """
    if isinstance(xp, str) or not callable(getattr(xp, "asarray", None)):
        got = f"the str {xp!r}" if isinstance(xp, str) else describe(xp)
        hint = f" (import it and pass the module: `import {xp}`, then xp={xp})" if isinstance(xp, str) else ""
        raise TypeError(
            f"`xp` must be an array namespace module, e.g. {_XP_EXAMPLES}, got {got}{hint}; "
            "or leave `xp` out: xlinalg infers it from the arguments"
        )
    ad = adapter_for_namespace(xp)
    for x, name in zip(args, names):
        if x is None or isinstance(x, (*_SCALARS, np.generic, list, tuple)):
            continue  # host data: converted by `xp`
        if (refused := refused_subclass(x, name)) is not None:
            raise refused
        owner = _lookup(type(x))
        if owner is not None and owner is not ad:
            raise TypeError(
                f"`xp` is {getattr(xp, '__name__', repr(xp))} but `{name}` is {describe(x)}: pass "
                f"xp={owner.xp.__name__} (the arguments' namespace), convert `{name}` to the "
                "library of `xp` first (xlinalg.to), or leave `xp` out"
            )
    return ad


def _mixing_error(names: tuple[str, ...], args: tuple[Any, ...], i: int, j: int) -> TypeError:
    first, second = args[i], args[j]
    return TypeError(
        f"`{names[i]}` is {describe(first)} but `{names[j]}` is {describe(second)}: "
        "xlinalg does not mix array libraries. Convert one of them first, e.g. "
        f'`xlinalg.to({names[i]}, "{_backends.backend_name(second)}")`.'
    )


def adapter_for(
    args: tuple[Any, ...], names: tuple[str, ...], xp: Any = None
) -> Adapter:
    """The adapter that owns ``args``.

    Python scalars, NumPy scalars, lists and tuples are host data: they follow
    the array arguments. Arrays of two libraries raise a :class:`TypeError` naming
    both and how to convert.
    """
    if xp is not None:
        return _explicit(xp, args, names)
    found: Adapter | None = None
    where = -1
    host = -1
    for i, x in enumerate(args):
        cls = type(x)
        ad = _TYPE_CACHE.get(cls, _UNSEEN)
        if ad is _UNSEEN:
            if isinstance(x, (*_SCALARS, np.generic, list, tuple)) or x is None:
                host = i if host < 0 else host
                continue
            ad = _lookup(cls)
        if ad is None:
            raise refused_subclass(x, names[i]) or TypeError(
                f"`{names[i]}` must be an array (NumPy, PyTorch, CuPy, JAX, Dask or any "
                f"array API library), got {describe(x)}"
            )
        if found is None:
            found, where = ad, i
        elif ad is not found:
            raise _mixing_error(names, args, where, i)
    if found is None:
        if host < 0:
            raise TypeError(f"expected at least one array argument, got {len(args)} arguments")
        return NUMPY  # only host data (lists, scalars): NumPy owns it
    return found


def host_array(ad: Adapter, obj: Any, like: Any | None, name: str) -> Any:
    """Host data `obj` (a number, a list or tuple) as an array of `ad` next to `like`.

    A list or tuple must hold host data only (numbers, NumPy arrays and scalars):
    another library's array, a masked array or a list that holds itself raises a
    TypeError naming the element (``backends/_host.py``).
    """
    if isinstance(obj, (list, tuple)) and (err := foreign_in_sequence(obj, name, _lookup)) is not None:
        raise err
    return ad.asarray(obj, like, name)


def as_arrays(ad: Adapter, args: tuple[Any, ...], names: tuple[str, ...]) -> list[Any]:
    """Turn host data (lists, tuples, NumPy or Python scalars) into arrays of `ad`."""
    out = list(args)
    like = next((a for a in args if hasattr(a, "shape") and not isinstance(a, np.generic)), None)
    for i, x in enumerate(args):
        if isinstance(x, np.generic):
            if ad.numpy_arrays:  # NumPy's own rule: a 0-d array of the scalar's dtype (NEP 50)
                out[i] = np.asarray(x)
            elif like is not None:  # next to another library's array: a weak Python scalar
                out[i] = ad.asarray(x.item(), like, names[i])
            else:  # alone: a 0-d array of its dtype, in `ad`'s library (xp=torch: a tensor)
                out[i] = np.asarray(x) if ad.numpy_arrays else ad.asarray(np.asarray(x), None, names[i])
        elif not hasattr(x, "shape") or not hasattr(x, "dtype"):
            out[i] = host_array(ad, x, like, names[i])
    return out



def adapter2(a: Any, b: Any, na: str, nb: str, xp: Any) -> tuple[Adapter, Any, Any]:
    """Adapter for two arguments, with host data converted. The fast path is two dict reads."""
    ta = type(a)
    if xp is None and ta is type(b):
        ad = _TYPE_CACHE.get(ta)
        if ad is not None:
            return ad, a, b
    ad = adapter_for((a, b), (na, nb), xp)
    a, b = as_arrays(ad, (a, b), (na, nb))
    return ad, a, b


def adapter1(x: Any, name: str, xp: Any) -> tuple[Adapter, Any]:
    """Adapter for one argument, with host data converted (see :func:`adapter2`)."""
    if xp is None:
        ad = _TYPE_CACHE.get(type(x))
        if ad is not None:
            return ad, x
    ad = adapter_for((x,), (name,), xp)
    return ad, as_arrays(ad, (x,), (name,))[0]
