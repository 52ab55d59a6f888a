"""What the fast paths of the linalg-extension functions share.

Each function of the operations' modules (``_det``, ``_eig``, ``_factor``,
``_lstsq``, ``_norms``, ``_orthogonal``, ``_products``, ``_views``) may register
fast paths (``_dispatch.fast_paths``): for arrays of one exact type
(``numpy.ndarray``, ``torch.Tensor``, JAX's concrete array), a function of the
op's arguments that calls the library's own kernel and returns its result only
where that call is the whole contract, else :data:`MISSING`. The op's checked path
then runs and gives the same answer, or the error that names the argument. A fast
path never decides anything the checked path would decide differently: it refuses
(MISSING) whatever is not the common case (another dtype, an empty or non-finite
result, a trace), and its result is the checked path's result for the same input,
computed by the same kernel.

The makers (``np_maker``, ``torch_maker``, ``jax_maker``) are the backends': each
is bound to its library's adapter class (``backends._speed.FastMaker``), so that an
operation lists its makers, ``fast_paths(op, np_maker(...), torch_maker(...),
jax_maker(...))``, without naming a library. This module re-exports them with the
parts the fast paths share: the quiet floating-point state of NumPy's gufuncs, and
quick finiteness tests of small results (a Python sum of a few numbers instead of
``isfinite`` + ``all`` + a read: docs/performance.md).
"""

from __future__ import annotations

import cmath
from collections.abc import Callable
from typing import Any

import numpy as np

from ._lib._finite import np_finite
from .backends._base import MISSING, Adapter
from .backends._makers import jax_maker, np_maker, torch_maker
from .backends._speed import FastMaker
from .backends._torch_adapter import HOST_SOLVE_MAX_N

__all__ = [
    "FastMaker",
    "JAX_FLOAT",
    "MISSING",
    "NP_FLOAT",
    "jax_finite",
    "jax_looked",
    "jax_maker",
    "np_finite",
    "np_loud",
    "np_maker",
    "np_quiet",
    "solve_maker",
    "torch_finite",
    "torch_float",
    "torch_looked",
    "torch_maker",
    "torch_plain",
    "torch_via_numpy",
]

#: NumPy's and JAX's floating dtypes the linear-algebra kernels take as they are
NP_FLOAT = frozenset(np.dtype(c) for c in "fdFD")
JAX_FLOAT = NP_FLOAT


def solve_maker(build: Callable[[Adapter, Callable[[Any, Any], Any]], Callable[..., Any]]) -> FastMaker:
    """The maker of a fast path on an adapter's own one-matrix solve, whatever its
    library: ``build(adapter, solve_fast)`` for the array types whose adapter has one
    (``Adapter.solve_fast_for``; ``solve_fast`` is that adapter's checked solve
    without xl.solve's shape reads, :data:`MISSING` for anything it refuses)."""

    def make(ad: Adapter, cls: type) -> Any:
        solve = ad.solve_fast_for(cls)
        return None if solve is None else build(ad, solve)

    return FastMaker(Adapter, make)


# ---------------------------------------------------------------------- NumPy
# NumPy's gufuncs signal a non-finite result through the floating-point state;
# `np.errstate(all="ignore")` around one call costs ~2 µs, as much as a 3×3 det.
# Its context variable set to a ready "ignore everything" state costs ~0.15 µs.
try:
    from numpy._core._multiarray_umath import _make_extobj
    from numpy._core._ufunc_config import _extobj_contextvar  # type: ignore[attr-defined]

    _IGNORE = _make_extobj(all="ignore")

    def np_quiet() -> Any:
        """Ignore floating-point errors until :func:`np_loud` (a token to pass it)."""
        return _extobj_contextvar.set(_IGNORE)

    def np_loud(token: Any) -> None:
        _extobj_contextvar.reset(token)

except (ImportError, AttributeError, TypeError):  # pragma: no cover - another NumPy layout

    def np_quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def np_loud(token: Any) -> None:
        token.__exit__(None, None, None)


# ---------------------------------------------------------------------- PyTorch
def torch_finite(torch: Any, t: Any) -> bool:
    """Whether tensor `t` is all finite (quick, as :func:`np_finite`): a vector or
    matrix of a few numbers is read as Python numbers (one copy from a device);
    anything else by one ``isfinite`` + ``all`` and a read."""
    n = t.ndim
    if n <= 2 and t.numel() <= 64:
        v = t.tolist()
        return cmath.isfinite(sum(map(sum, v)) if n == 2 else sum(v) if n else v)
    return bool(torch.isfinite(t).all())


def torch_plain(torch: Any) -> Callable[[Any], bool]:
    """``plain(x)``: whether a fast path may branch on the values of tensor `x`: not
    inside ``torch.compile`` (Dynamo would break the graph), torch.func's
    transforms or on a meta tensor, where the checked path takes NaN instead of
    exceptions (``Adapter.traced``)."""
    compiling = torch.compiler.is_compiling
    transforms = torch._C._are_functorch_transforms_active

    def plain(x: Any) -> bool:
        return not (compiling() or transforms() or x.is_meta)

    return plain


def torch_float(torch: Any) -> frozenset[Any]:
    """The floating dtypes the linear-algebra kernels take as they are."""
    return frozenset((torch.float32, torch.float64, torch.complex64, torch.complex128))


def torch_looked(kernel: Callable[[Any], Callable[..., Any]], *, look: int,
                 wrap: type[tuple[Any, ...]]) -> Callable[[Any], Any]:
    """The builder (for :func:`torch_maker`) of a decomposition's fast path, whose
    result the contract looks at: ``kernel(torch)`` is the library's call
    ``call(x, *args)``; output `look` of its result must be finite, else the
    checked path runs (it raises "did not converge"); `wrap`: the NamedTuple of
    the outputs."""

    new = tuple.__new__

    def build(torch: Any) -> Any:
        call = kernel(torch)
        ok = torch_float(torch)
        compiling = torch.compiler.is_compiling  # (torch_plain's tests, inline: one call less)
        transforms = torch._C._are_functorch_transforms_active

        def fast(x: Any, *args: Any) -> Any:
            if x.dtype not in ok or compiling() or transforms():
                return MISSING
            try:
                out = call(x, *args)
                v = out[look]
                # one matrix: its few values read as Python numbers (torch_finite's
                # test, inline); a meta tensor has no values: its look raises
                if not (cmath.isfinite(sum(v.tolist())) if v.ndim == 1 else torch_finite(torch, v)):
                    return MISSING
            except Exception:  # a shape or layout it refuses: named by the checked path
                return MISSING
            # (the NamedTuple made from torch's own: tuple.__new__ skips its __new__)
            return new(wrap, out)

        return fast

    return build


def torch_via_numpy(np_fast: Callable[..., Any]) -> Callable[[Any], Any]:
    """The builder (for :func:`torch_maker`) of a fast path that computes as the
    checked path does for one small CPU matrix (``Adapter.small_numpy_view``):
    `np_fast`, the op's NumPy fast path, on a zero-copy view of the tensor, its
    arrays (or NumPy scalars) handed back as tensors sharing their memory.
    ``x.numpy()`` itself refuses what that view does not take (autograd, the lazy
    conjugate and negative bits, sparse, nested, mkldnn and meta tensors, another
    device, bfloat16), so none of those is read first."""

    new = tuple.__new__
    ndarray = np.ndarray

    def build(torch: Any) -> Any:
        compiling = torch.compiler.is_compiling
        transforms = torch._C._are_functorch_transforms_active
        from_numpy = torch.from_numpy

        def fast(x: Any, *args: Any) -> Any:
            if compiling() or transforms():
                return MISSING
            try:
                xn = x.numpy()
            except Exception:  # refused: the checked path takes it
                return MISSING
            if xn.ndim != 2 or max(xn.shape) > HOST_SOLVE_MAX_N:  # (torch's own kernel there)
                return MISSING
            r = np_fast(xn, *args)
            if r is MISSING:
                return r
            if isinstance(r, tuple):
                return new(type(r), [from_numpy(v if type(v) is ndarray else np.asarray(v)) for v in r])
            return from_numpy(r if type(r) is ndarray else np.asarray(r))

        return fast

    return build


# ---------------------------------------------------------------------- JAX
def jax_looked(body: Callable[..., Any], *, look: int | None = None, wrap: Callable[..., Any] | None = None,
               look_input: bool = False) -> Callable[[Any, Any], Any]:
    """The builder (for :func:`jax_maker` with ``host_look=True``) of a decomposition's
    fast path: ``body(jnp, x, *static)`` under one ``jax.jit`` (a floating `x` only:
    its dtype and shape checks run once, at trace time; `static`: hashable options
    such as ``full_matrices``); then the host look of :func:`torch_looked`.
    `look_input`: the program itself tests `x` (one host look, not two)."""

    def build(jax: Any, jnp: Any) -> Any:
        def traced(x: Any, *static: Any) -> Any:
            if x.dtype not in JAX_FLOAT:
                return None
            if not look_input:
                return body(jnp, x, *static)
            # the look at `x` in the program: a matrix holding NaN or inf reaches
            # LAPACK as zeros (it may loop on NaN) and its looked-at output is NaN
            ok = jnp.all(jnp.isfinite(x))
            out = body(jnp, jnp.where(ok, x, 0), *static)
            if look is None:
                return jnp.where(ok, out, jnp.nan)
            return (*out[:look], jnp.where(ok, out[look], jnp.nan), *out[look + 1:])

        calls: dict[int, Any] = {}

        def fast(x: Any, *static: Any) -> Any:
            call = calls.get(len(static))
            if call is None:
                call = calls[len(static)] = jax.jit(traced, static_argnums=tuple(range(1, 1 + len(static))))
            try:
                out = call(x, *static)
            except Exception:  # a shape it refuses: named by the checked path
                return MISSING
            if out is None or not jax_finite(out if look is None else out[look]):
                return MISSING
            return out if wrap is None else wrap(*out)

        return fast

    return build


def jax_finite(x: Any) -> bool:
    """Whether a concrete JAX array on the CPU is all finite (quick, as
    :func:`np_finite`): its memory read in place through the buffer protocol
    (which waits for the result)."""
    try:
        m = memoryview(x)
        if m.nbytes <= 512:
            return cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist()))  # type: ignore[call-overload]
    except (TypeError, ValueError, BufferError, NotImplementedError):
        pass  # no export (another layout), or a format the cast refuses
    return np_finite(np.asarray(x))
