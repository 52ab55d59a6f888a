"""``solve_ex``: the solution and the per-member singular mask together, without a sync."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._dispatch import adapter2 as _adapter2
from ._dispatch import fast_paths
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    NP_FLOAT,
    jax_maker,
    np_maker,
    torch_float,
    torch_maker,
)
from ._lib import _singular
from ._lib._declare import BadInput, Raises, declare
from ._lib._subclass import keep_subclass
from ._lib._typing import Array, Namespace
from ._lstsq_fast import torch_dense, torch_numpy_view
from ._solve import _JAX_SOLVE_NOTE, solve
from ._unrolled import kernel_mask
from .backends._jax_adapter import jax_solve_masked
from .backends._numpy_adapter import NUMPY, lapack_for
from .backends._torch_adapter import HOST_SOLVE_MAX_N

__all__ = ["SolveExResult", "solve_ex"]


class SolveExResult(NamedTuple):
    """Result of :func:`solve_ex`."""

    #: the solutions, NaN for singular members and members with NaN or inf input
    x: Array
    #: bool, the broadcast batch shape: the members xlinalg's rule calls singular
    singular: Array


def _solve_ex_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's solve and the rule's mask: members singular by xlinalg's rule solved
    with I in their place, then NaN for them and for members with NaN or inf input."""
    vector = b.ndim == 1
    bm = b[..., None] if vector else b
    n = a.shape[-1]
    if n == 0:  # nothing to factor: no member is singular
        x = np.linalg.solve(a, bm)
        return (x[..., 0] if vector else x), np.zeros(x.shape[:-2], bool)
    scale = _singular.column_scale(np, a)
    with np.errstate(all="ignore"):
        sing_a = np.asarray(_singular.singular_mask(np, a)) if a.size else np.zeros(a.shape[:-2], bool)
        safe = np.where(sing_a[..., None, None], np.eye(n, dtype=a.dtype), a)
        x = np.linalg.solve(safe, bm)
    batch = x.shape[:-2]
    fin = np.broadcast_to(_singular.finite_members(np, scale, bm), batch)
    sing = np.broadcast_to(sing_a, batch) & fin
    x = np.where((sing | ~fin)[..., None, None], np.nan, x)
    return (x[..., 0] if vector else x), sing


# ---------------------------------------------------------------------- fast paths
# One system (`a` (n, n), `b` (n,) or (n, K) of its floating dtype), where the
# checked path's `solve` runs the adapter's one-matrix solve: the same call, and the
# rule's verdict from the pivots of that very factorization (NumPy: one LAPACK gesv;
# torch-cpu: the same on NumPy views, as its adapter's solve does; JAX: its ruled
# solve with the mask as a second output, one compiled call, no host read). A stack,
# another dtype or layout, autograd, a trace: the checked path.
def _np_one(a: Any, b: Any) -> Any:
    """``(x, singular)`` by NumPy's gesv and the rule, or MISSING."""
    dt = a.dtype
    if (dt is not b.dtype and dt != b.dtype) or dt not in NP_FLOAT or a.ndim != 2 or not 0 < b.ndim <= 2:
        return MISSING
    n = a.shape[0]
    if a.shape[1] != n or b.shape[0] != n or not n or not b.shape[-1] or (lap := lapack_for(dt)) is None:
        return MISSING
    return NUMPY.solve_one_masked(a, b, lap)


def _np_solve_ex_fast(a: Any, b: Any) -> Any:
    out = _np_one(a, b)
    return out if out is MISSING else SolveExResult(out[0], np.bool_(out[1]))


def _torch_solve_ex_fast(torch: Any) -> Any:
    ok = torch_float(torch)
    dense = torch_dense(torch)
    view = torch_numpy_view(torch)
    from_numpy = torch.from_numpy

    def fast(a: Any, b: Any) -> Any:
        # (dense first: a nested tensor's shape raises)
        if not dense(a) or not dense(b) or a.dtype not in ok or a.ndim != 2 or a.shape[-1] > HOST_SOLVE_MAX_N:
            return MISSING
        if (an := view(a)) is None or (bn := view(b)) is None or (out := _np_one(an, bn)) is MISSING:
            return MISSING
        return SolveExResult(from_numpy(out[0]), torch.tensor(out[1]))

    return fast


def _jax_solve_ex_fast(jax: Any, jnp: Any) -> Any:
    def body(a: Any, b: Any) -> Any:
        if a.dtype != b.dtype or a.dtype not in JAX_FLOAT:
            return None
        return jax_solve_masked(jax, jnp, a, b, b.ndim == 1)

    call = jax.jit(body)

    def fast(a: Any, b: Any) -> Any:
        if a.ndim != 2 or not 0 < b.ndim <= 2:
            return MISSING
        n = a.shape[0]
        if a.shape[1] != n or b.shape[0] != n or not n or not b.shape[-1]:
            return MISSING
        try:
            out = call(a, b)
        except Exception:  # a shape or device it refuses: named by the checked path
            return MISSING
        return MISSING if out is None else SolveExResult(*out)

    return fast


_SOLVE_EX_FAST = fast_paths(
    "solve_ex",
    np_maker(_np_solve_ex_fast),
    torch_maker(_torch_solve_ex_fast),
    jax_maker(_jax_solve_ex_fast, one_device=True),
)


@declare(
    "linalg", args={"a": "square", "b": "rhs"}, reference=_solve_ex_reference, dtypes="linalg",
    how="`solve(a, b, errors=\"nan\", method=method)` and the singular rule's LU pivots vectorized over "
        "the batch (the standard's functions), NaN where the mask is set; both lazy where the library is",
    bad_input={
        "mismatched": BadInput(
            Raises(ValueError, r"solve_ex: `b` must have 3 rows to match `a`",
                   "solve_ex: `b` must have 3 rows to match `a` of shape (3, 3), got shape (2,)"),
            args=(np.eye(3), np.ones(2))),
    },
    backends={
        "jax-cpu": ("as the default, in one traceable computation", _JAX_SOLVE_NOTE.replace(
            "NaN for singular members, never an exception", "the same two outputs (it never raises)")),
        "jax-gpu": ("as the default, in one traceable computation", "no host read"),
        "dask": ("as the default, on each block", "lazy: nothing is computed until the caller computes"),
    },
)
def solve_ex(a: Array, b: Array, /, *, method: str = "auto", xp: Namespace | None = None) -> SolveExResult:
    """Solve ``a @ x = b`` and say which members are singular, without waiting for the result.

    ``solve(a, b, errors="nan")`` plus the boolean mask of the singular members by
    xlinalg's one rule (docs/semantics.md: a pivot of LU with partial pivoting
    ``|u_kk| <= n·eps·max_i |a_ik|``; members with NaN or inf in `a` or `b` are never
    singular, their solution is NaN). Both are arrays of the inputs' library and
    device, computed lazily where the library is lazy: nothing is read back to the
    host, so code on a GPU, under ``jax.jit`` or building a Dask graph can branch on
    ``singular`` (``where``) without a synchronization. Like
    :func:`torch.linalg.solve_ex`, it never raises for singular input.

    Parameters
    ----------
    a : array, shape ``(..., M, M)``
        Square matrix or stack of square matrices, as in :func:`xlinalg.solve`.
    b : array, shape ``(M,)`` or ``(..., M, K)``
        Right-hand side, as in :func:`xlinalg.solve` (a vector only when 1-D).
    method : {"auto", "native", "unrolled"}, optional
        Which solver computes `x`, as in :func:`xlinalg.solve`; the mask is the
        rule's whatever the method.
    xp : namespace, optional
        The array namespace; inferred from `a` and `b` by default.

    Returns
    -------
    SolveExResult
        ``(x, singular)``: `x` as ``solve(a, b, errors="nan")``, `singular` bool of
        the broadcast batch shape of `a` and `b` (0-d for one system).

    Raises
    ------
    ValueError
        For shapes :func:`xlinalg.solve` refuses, or an unknown `method`.
    TypeError
        For dtypes :func:`xlinalg.solve` refuses, or arrays of two libraries.

    Examples
    --------
    >>> import numpy as np
    >>> import xlinalg as xl
    >>> x, singular = xl.solve_ex(np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]),
    ...                           np.array([1.0, 1.0]))
    >>> singular
    array([False,  True])
    >>> x
    array([[ 1.,  1.],
           [nan, nan]])
    """
    if (xp is None and method == "auto" and (t := type(a)) is type(b) and (f := _SOLVE_EX_FAST.get(t)) is not None
            and (r := f(a, b)) is not MISSING):
        return r
    a0, b0 = a, b  # the caller's arrays: an ndarray subclass is kept (keep_subclass)
    try:
        with kernel_mask() as got:
            x = solve(a, b, errors="nan", method=method, xp=xp)
    except (ValueError, TypeError) as e:  # solve's argument errors, under this function's name
        msg = str(e)
        if type(e) in (ValueError, TypeError) and msg.startswith("solve: "):
            raise type(e)("solve_ex: " + msg[len("solve: "):]) from None
        raise
    mask = got.mask_of(x)
    if mask is not None:
        # an unrolled kernel that decides the rule on the host solved it (NumPy's, and
        # torch-cpu and jax-cpu through it): its mask is the rule's, and its `x` has NaN
        # for those members and for non-finite input already; no second pass
        return keep_subclass(SolveExResult(x, mask), a0, b0)
    ad, a, b = _adapter2(a, b, "a", "b", xp)
    ns = ad.xp
    a = ad.astype(a, x.dtype)
    b = ad.astype(b, x.dtype)
    bm = b[..., None] if len(b.shape) == 1 else b
    n = int(a.shape[-1])
    batch = tuple(x.shape[:-1] if len(b.shape) == 1 else x.shape[:-2])
    if n == 0:  # nothing to factor: no member is singular
        return keep_subclass(SolveExResult(x, ns.zeros(batch, dtype=ns.bool, device=ad.device(x))), a0, b0)
    scale = _singular.column_scale(ns, a)
    sing = _singular.singular_from_pivots(ns, _singular.lu_pivots(ns, a), scale, _singular.tolerance(ns, x.dtype, n))
    finite = _singular.finite_members(ns, scale, bm)
    if tuple(sing.shape) != batch:
        sing = ns.broadcast_to(sing, batch)
    if tuple(finite.shape) != batch:
        finite = ns.broadcast_to(finite, batch)
    mask = ns.logical_and(sing, finite)
    # NaN wherever the mask is set or the input is not finite: the same x whichever
    # path `solve` took (one rule; no path's own singular test can disagree with it)
    dead = ns.logical_or(mask, ns.logical_not(finite))
    dead = dead[..., None] if len(b.shape) == 1 else dead[..., None, None]
    x = ad.fill_nan(dead, x)  # (no host-to-device copy of the NaN: no sync on a GPU)
    return keep_subclass(SolveExResult(x, mask), a0, b0)
