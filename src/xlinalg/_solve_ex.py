"""``solve_ex``: the solution and the per-member singular mask together, without a sync.

Not yet exported as ``xlinalg.solve_ex``: a public operation is declared in
``xlinalg._capabilities`` (its per-backend table), which is being restructured
(issue 38); until then it is ``xlinalg._solve_ex.solve_ex``.
"""

from __future__ import annotations

from typing import NamedTuple

from ._lib import _singular
from ._lib._dispatch import adapter2 as _adapter2
from ._lib._typing import Array, Namespace
from ._linalg import solve


class SolveExResult(NamedTuple):
    """Result of :func:`solve_ex`."""

    #: the solutions, NaN for singular members and members with NaN or inf input
    x: Array
    #: bool, the broadcast batch shape: the members xlinalg's rule calls singular
    singular: Array


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
    a, b, method, xp
        As in :func:`xlinalg.solve`.

    Returns
    -------
    SolveExResult
        ``(x, singular)``: `x` as ``solve(a, b, errors="nan")``, `singular` bool of
        the broadcast batch shape of `a` and `b` (0-d for one system).

    Examples
    --------
    >>> import xlinalg as xl
    >>> from xlinalg._solve_ex import solve_ex
    >>> x, singular = solve_ex(xp.asarray([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]]),
    ...                           xp.asarray([1.0, 1.0]))
    >>> xl.to(singular, "numpy")
    array([False,  True])
    """
    x = solve(a, b, errors="nan", method=method, xp=xp)
    ad, a, b = _adapter2(a, b, "a", "b", xp)
    ns = ad.xp
    a = ad.astype(a, x.dtype)
    b = ad.astype(b, x.dtype)
    bm = b[..., None] if len(b.shape) == 1 else b
    n = int(a.shape[-1])
    scale = _singular.column_scale(ns, a)
    sing = _singular.singular_from_pivots(ns, _singular.lu_pivots(ns, a), scale, _singular.tolerance(ns, x.dtype, n))
    finite = _singular.finite_members(ns, scale, bm)
    mask = ns.logical_and(sing, finite)
    batch = tuple(x.shape[:-1] if len(b.shape) == 1 else x.shape[:-2])
    if tuple(mask.shape) != batch:
        mask = ns.broadcast_to(mask, batch)
    return SolveExResult(x, mask)
