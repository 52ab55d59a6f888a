"""``solve_many``: a list of independent systems, solved as a few batched calls."""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dispatch, _validate
from ._lib._declare import declare
from ._lib._errors import LinAlgError
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._solve import _solve_checked, solve
from .backends._base import Adapter

__all__ = ["solve_many"]


def _unstack(ad: Adapter, x: Any) -> list[Any]:
    return list(x) if ad.numpy_arrays else ad.unstack(x)


def _stack(ad: Adapter, arrays: Sequence[Any], like: Any = None) -> Any:
    """One array from arrays of one library (ValueError if shapes differ); `like`: a
    stack whose chunking to follow (:meth:`Adapter.stack`).

    The caller guarantees one dtype (``solve_many`` counts them; groups are keyed on
    it): the NumPy byte join below relies on it. That stack is a read-only view of
    the joined bytes, which is all a solve needs.
    """
    if ad.numpy_arrays:
        x0 = arrays[0]
        if type(x0) is np.ndarray and x0.size and x0.dtype.kind in "biufc":
            s0 = x0.shape
            if list(map(_SHAPE, arrays)).count(s0) == len(arrays):
                # Same shape and dtype: the raw bytes
                # of C-contiguous arrays, joined in C, are the stack: several times
                # cheaper than np.asarray's discovery (docs/performance.md).
                try:
                    buf = b"".join(arrays)
                except TypeError:  # an array that is not C-contiguous
                    pass
                else:
                    return np.frombuffer(buf, dtype=x0.dtype).reshape((len(arrays), *s0))
        out = np.asarray(arrays)  # faster than np.stack for many small arrays
        if out.dtype == object:  # pragma: no cover - NumPy < 2 with ragged input
            raise ValueError("ragged")
        return out
    return ad.stack(list(arrays), like=like)


def _key(ad: Adapter, x: Any) -> tuple[Any, ...]:
    return (tuple(x.shape), x.dtype, ad.device(x))


def _solve_many_reference(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.linalg.solve(ai, bi[..., None])[..., 0] if bi.ndim == 1 else np.linalg.solve(ai, bi)
            for ai, bi in zip(a, b)]


_GROUPED = "systems grouped by shapes and dtypes; "


@declare(
    "sequence", args={"a": "sequence", "b": "sequence"}, reference=_solve_many_reference, dtypes="linalg",
    how=_GROUPED + "each group stacked with the standard's `stack` and solved by one batched `solve`",
    backends={
        "torch": _GROUPED + "`torch.stack`, one batched `solve` a group",
        "numpy": _GROUPED + "a group of C-contiguous arrays is stacked by joining their bytes; one batched "
                            "`solve` a group",
        "jax-cpu": _GROUPED + "stacked through NumPy (zero-copy reads), one batched `solve` a group",
        "dask": (_GROUPED + "stacked lazily, one batched `solve` a group",
                 "a singular system is reported when a result is computed"),
    },
    sample=([np.eye(2) * 2, np.eye(3)], [np.ones(2), np.ones(3)]),
)
def solve_many(
    a: Sequence[Array], b: Sequence[Array], /, *, errors: str = "raise", xp: Namespace | None = None
) -> list[Array]:
    """Solve a list of independent systems ``a[i] @ x[i] = b[i]`` as a few batched calls.

    The systems may differ in size and dtype. They are grouped by the shapes and
    dtypes of ``a[i]`` and ``b[i]``; each group is stacked and solved with one
    batched :func:`solve` call (same semantics: right-hand-side rule, dtype rule,
    singular detection), and the solutions come back in the order of the input.
    This is the fast answer to "I have many small systems": for 1000 systems of
    5×5 it is several times faster than a Python loop of ``numpy.linalg.solve``
    and more than ten times faster than a loop of ``torch.linalg.solve``.

    Parameters
    ----------
    a : sequence of arrays
        Square matrices ``(M_i, M_i)`` (or stacks), all from one library and device.
    b : sequence of arrays
        Right-hand sides, ``(M_i,)`` or ``(M_i, K_i)``, as in :func:`solve`.
    errors : {"raise", "nan"}, optional
        As in :func:`solve`. With ``"raise"``, the :class:`LinAlgError` names the
        positions *in the list* of the singular systems (``exc.members``).
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    list of arrays
        ``x[i]`` for each system, in input order. For a group of equal shapes
        they are views into one batched result.

    Raises
    ------
    ValueError
        If `a` and `b` differ in length, or a system breaks :func:`solve`'s shape
        or device rules; the message names it by list position (``a[i]``,
        ``b[i]``) as the caller passed it. TypeError for its dtype (float16) or
        layout (a sparse tensor) in the same way.
    LinAlgError
        If a system is singular and ``errors="raise"``, naming the list positions
        of every singular system (``exc.members``). On Dask it is raised when a
        chunk holding a singular system is computed, naming the positions in that chunk.
    TypeError
        If the lists hold arrays of more than one library (naming the first
        element that differs from ``a[0]``).

    Examples
    --------
    >>> import xlinalg as xl
    >>> xs = xl.solve_many([xp.eye(2), 2 * xp.eye(3)], [xp.ones(2), xp.ones(3)])
    >>> [xl.to(x, "numpy").tolist() for x in xs]
    [[1.0, 1.0], [0.5, 0.5, 0.5]]
    """
    if isinstance(a, (str, bytes)) or not isinstance(a, Sequence) or not isinstance(b, Sequence):
        raise TypeError(
            "solve_many: `a` and `b` must be sequences (lists or tuples) of arrays, "
            f"got {type(a).__name__} and {type(b).__name__}; for one stacked array use xlinalg.solve"
        )
    n = len(a)
    if len(b) != n:
        raise ValueError(f"solve_many: `a` has {n} systems but `b` has {len(b)}")
    if n == 0:
        return []
    ad = _dispatch.adapter_for((a[0], b[0]), ("a[0]", "b[0]"), xp)
    # The library (type) and dtype of every element, at C speed (map, attrgetter,
    # list.count, which compares by identity first): a Python loop over 2000
    # elements would cost a fifth of a 1000-system solve, a set a tenth.
    t0 = type(a[0])
    uniform = False
    if list(map(type, a)).count(t0) == n and list(map(type, b)).count(t0) == n:
        with contextlib.suppress(AttributeError):  # host data (lists): grouped below
            uniform = (list(map(_DTYPE, a)).count(a[0].dtype) == n
                       and list(map(_DTYPE, b)).count(b[0].dtype) == n)
    else:
        _check_one_library(a, b, xp)
    if uniform and (ad.lazy or not _large(a[0])):  # the common case: one library and dtype
        try:
            A = _stack(ad, a)
            B = _stack(ad, b, like=A)
        except (ValueError, RuntimeError, TypeError):
            pass  # shapes differ (or devices): group below
        else:
            _check_system(ad, a, b, range(n))
            xs = _unstack(ad, _solve_group(ad, A, B, range(n), errors, xp))
            return _subclassed(a, b, xs) if ad.numpy_arrays and t0 is not np.ndarray else xs
    xs = _solve_grouped(ad, a, b, errors, xp)
    if ad.numpy_arrays and (list(map(type, a)).count(np.ndarray) != n or list(map(type, b)).count(np.ndarray) != n):
        return _subclassed(a, b, xs)
    return xs


def _subclassed(a: Sequence[Any], b: Sequence[Any], xs: list[Any]) -> list[Any]:
    """Each NumPy solution as ``solve(a[i], b[i])`` gives it: a NumPy subclass of
    ``a[i]`` or ``b[i]`` kept (stacking a group into one array drops it)."""
    return [keep_subclass(x, ai, bi) for x, ai, bi in zip(xs, a, b)]


_DTYPE = operator.attrgetter("dtype")
_SHAPE = operator.attrgetter("shape")

#: Systems larger than this are solved one by one (eager libraries): stacking copies
#: every system (time and memory) while batching no longer saves anything. Measured
#: by the Q4 cases of benchmarks/results/cpu-full.jsonl.xz (1000 systems): with stacking,
#: solve_many was 1.1x the loop at n = 50 on numpy and torch-cpu, 0.5-0.7x at n = 100.
LOOP_ABOVE = 64


def _large(x: Any) -> bool:
    return len(x.shape) >= 2 and x.shape[-1] > LOOP_ABOVE


def _check_one_library(a: Sequence[Any], b: Sequence[Any], xp: Any) -> None:
    """Arrays of another library than ``a[0]``'s: the error solve gives for such a pair."""
    t0 = type(a[0])
    for seq, name in ((a, "a"), (b, "b")):
        for i, x in enumerate(seq):
            if type(x) is not t0 and hasattr(x, "shape"):
                _dispatch.adapter_for((a[0], x), ("a[0]", f"{name}[{i}]"), xp)


def _check_system(ad: Adapter, a: Sequence[Any], b: Sequence[Any], positions: Sequence[int]) -> None:
    """solve's rules (shapes, dtypes, devices) on the first system of a group, named by
    its list position. Every system of the group has its shapes, dtypes and device; an
    error from the stacked group would name shapes the caller never passed (and a
    0-d ``b[i]`` would stack into a matrix that solves)."""
    i = positions[0]
    ai, bi = a[i], b[i]
    if ad.unknown_sizes:  # stacking needs every size (Dask's x[mask] has NaN ones)
        _validate.unknown_sizes(ad, "solve_many", (f"a[{i}]", ai, range(-len(ai.shape), 0)),
                                (f"b[{i}]", bi, range(-len(bi.shape), 0)))
    try:
        if (err := ad.dense_error(ai, "a", "solve") or ad.dense_error(bi, "b", "solve")) is not None:
            raise err
        _validate.solve_shapes(ad, ai, bi, len(bi.shape) == 1)
        _validate.linalg_dtype(ad, ai, "a", "solve")
        _validate.linalg_dtype(ad, bi, "b", "solve")
        ad.check_same_device(ai, bi, "a", "b")
    except (TypeError, ValueError) as exc:
        msg = (str(exc).removeprefix("solve: ").replace("`a`", f"`a[{i}]`").replace("`b`", f"`b[{i}]`")
               .replace("astype(a,", f"astype(a[{i}],").replace("astype(b,", f"astype(b[{i}],"))
        more = len(positions) - 1
        also = f" (and {more} more system{'s' if more > 1 else ''} of its shapes and dtypes)" if more else ""
        cls = TypeError if isinstance(exc, TypeError) else ValueError
        raise cls(f"solve_many: the system at list position {i}{also}: {msg}") from None


def _singular(members: list[int]) -> LinAlgError:
    members = sorted(members)
    s = "s" if len(members) != 1 else ""
    return LinAlgError(
        f"solve_many: {len(members)} singular system{s} at list position{s} "
        f"{', '.join(map(str, members[:10]))}{' ...' if len(members) > 10 else ''}; "
        'pass errors="nan" to get NaN solutions for them',
        indices=[(m,) for m in members],
        members=members,
    )


def _pad_after_first(ad: Adapter, x: Any, ndim: int) -> Any:
    if x.ndim >= ndim:
        return x
    shape = tuple(x.shape)
    return ad.xp.reshape(x, (shape[0], *(1,) * (ndim - x.ndim), *shape[1:]))


def _solve_group(ad: Adapter, A: Any, B: Any, positions: Sequence[int], errors: str, xp: Any) -> Any:
    """One batched solve; the batch index i of a failure is list position positions[i]."""
    vector = B.ndim == 2  # each b[i] was a vector (M,)
    Bm = B[..., None] if vector else B
    # a[i] or b[i] may be stacks: their batch axes broadcast *within* system i,
    # so the one with fewer gets unit axes after the list axis (not before it).
    A, Bm = _pad_after_first(ad, A, Bm.ndim), _pad_after_first(ad, Bm, A.ndim)
    if ad.map_solve is not None and errors == "raise":
        # lazy blocks (Dask): each raises when computed, naming the list positions it holds
        x = _solve_checked(ad, A, Bm, False, errors,
                           make_error=functools.partial(_singular_at, positions))
    else:
        try:
            x = solve(A, Bm, errors=errors, xp=xp)
        except LinAlgError as exc:
            raise _singular_at(positions, exc.indices) from None
    return x[..., 0] if vector else x


def _singular_at(positions: Sequence[int], indices: Sequence[tuple[int, ...]]) -> LinAlgError:
    """The error naming the list positions of a group's singular batch `indices`."""
    return _singular(sorted({positions[ix[0]] for ix in indices if ix}))


def _solve_grouped(ad: Adapter, a: Sequence[Any], b: Sequence[Any], errors: str, xp: Any) -> list[Any]:
    groups: dict[tuple[Any, ...], list[int]] = {}
    a = list(a)
    b = list(b)
    for i in range(len(a)):
        ai, bi = a[i], b[i]
        if not hasattr(ai, "shape"):  # host data joins b[i]'s device, as in xl.solve
            a[i] = ai = _dispatch.host_array(ad, ai, bi if hasattr(bi, "shape") else None, f"a[{i}]")
        if not hasattr(bi, "shape"):
            b[i] = bi = _dispatch.host_array(ad, bi, ai, f"b[{i}]")
        groups.setdefault((*_key(ad, ai), *_key(ad, bi)), []).append(i)
    out: list[Any] = [None] * len(a)
    failed: list[int] = []
    solved: list[tuple[list[int], Any]] = []
    for positions in groups.values():
        _check_system(ad, a, b, positions)
        if not ad.lazy and _large(a[positions[0]]):  # one by one: no copy into a stack
            for i in positions:
                try:
                    out[i] = solve(a[i], b[i], errors=errors, xp=xp)
                except LinAlgError:
                    failed.append(i)
            continue
        A = _stack(ad, [a[i] for i in positions])
        B = _stack(ad, [b[i] for i in positions], like=A)
        try:
            x = _solve_group(ad, A, B, positions, errors, xp)
        except LinAlgError as exc:
            failed.extend(exc.members)  # report every group's singular systems at once
            continue
        solved.append((positions, x))
    if failed:
        raise _singular(failed)
    for positions, x in solved:
        for i, xi in zip(positions, _unstack(ad, x)):
            out[i] = xi
    return out
