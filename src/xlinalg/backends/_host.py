"""Host data: what a Python list or tuple may hold to be converted as NumPy would.

Lists and tuples of numbers, NumPy arrays and NumPy scalars are host data; they
join the library and device of the other argument (``docs/semantics.md``). The
rule lives here, beside NumPy's adapter, because NumPy's conversion defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._adapter import Adapter
from ._numpy import NUMPY, refused_subclass

__all__ = ["foreign_in_sequence"]

_PY_NUMBERS = frozenset((bool, int, float, complex))
#: NumPy's limit on dimensions: a list nested deeper is no array, and NumPy says so
_MAX_NESTING = 64


def foreign_in_sequence(
    obj: list[Any] | tuple[Any, ...], name: str, owner_of: Callable[[type], Adapter | None]
) -> TypeError | None:
    """The error for a list or tuple `name` that is no host data, else None.

    Host data is Python numbers and NumPy arrays and scalars, in nested lists and
    tuples. Converted through NumPy, a PyTorch tensor or a JAX array inside a list
    would silently leave its library, one element at a time (a GPU array fails
    inside NumPy, a masked array loses its mask), and the result would belong to
    whichever library the other argument has: the user makes one array of the
    library that owns the elements. A list that holds itself, or lists nested
    deeper than NumPy's 64 dimensions, are no array either; NumPy itself would
    search a self-holding list of width w for w**64 steps.

    The scan is a depth-first walk in order (the first offending element is
    named), iterative (no recursion limit), visits a shared sublist once, and costs
    one ``set(map(type, ...))`` per list of plain numbers. `owner_of` maps an array
    type to its library's adapter, or None (the dispatch's cached lookup).
    """
    def plain(seq: Any) -> bool:
        return set(map(type, seq)) <= _PY_NUMBERS

    if plain(obj):
        return None
    kind = type(obj).__name__
    owners: dict[type, Adapter | None] = {}
    frames: list[tuple[Any, str, Any]] = [(obj, name, enumerate(obj))]
    on_path = {id(obj)}
    done: set[int] = set()
    while frames:
        seq, where, items = frames[-1]
        for i, e in items:
            cls = type(e)
            if cls in _PY_NUMBERS or cls is np.ndarray or isinstance(e, np.generic):
                continue
            at = f"{where}[{i}]"
            if isinstance(e, (list, tuple)):
                key = id(e)
                if key in on_path:
                    return TypeError(
                        f"`{name}` is a Python {kind} that holds itself at `{at}`: a recursive "
                        "list is no array; pass the numbers"
                    )
                if key in done or plain(e):
                    continue
                if len(frames) >= _MAX_NESTING:
                    return TypeError(
                        f"`{name}` is a Python {kind} nested deeper than {_MAX_NESTING} levels (at "
                        f"`{at}`): no array has more than {_MAX_NESTING} dimensions"
                    )
                on_path.add(key)
                frames.append((e, at, enumerate(e)))
                break  # scan the nested list now, then go on with this one
            if isinstance(e, np.ndarray) and (refused := refused_subclass(e, at)) is not None:
                return refused
            # an ndarray subclass is NumPy's unless a library claims it (its arrays
            # subclass NumPy's): the owner decides
            if cls not in owners:
                owners[cls] = owner_of(cls)
            owner = owners[cls]
            if owner is NUMPY or (owner is None and not hasattr(e, "__array_namespace__")):
                continue  # not an array of a library (the conversion decides)
            what = owner.describe(e) if owner is not None else f"an array of type {cls.__module__}.{cls.__qualname__}"
            lib = owner.library if owner is not None else "its library"
            stack = owner.stack_call if owner is not None else "xp.stack"
            return TypeError(
                f"`{name}` is a Python {kind} holding {what} at `{at}`: xlinalg converts "
                "lists and tuples of numbers and NumPy arrays only, not another library's arrays "
                "(through NumPy they would leave their library and device one by one). Make one "
                f"{lib} array first, e.g. `{stack}({name})`, or convert the elements with `xlinalg.to`"
            )
        else:
            frames.pop()
            on_path.discard(id(seq))
            done.add(id(seq))
    return None
