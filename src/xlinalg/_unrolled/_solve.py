"""Solving with an unrolled kernel: validation, dispatch, the singular check."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._lib import _dispatch, _validate
from .._lib._errors import LinAlgError
from ..backends import get_backend
from ..backends._adapter import Adapter, _singular_message, _to_batch, singular_members
from ..backends._numpy import NUMPY
from ._build import _Kernel
from ._cache import _LOCK, _RESOLVED, _kernel, _resolve_compile
from ._numba import numba_problem
from ._schedule import LAYOUTS, MAX_N


def _raise_singular(mask: np.ndarray, batch_shape: tuple[int, ...]) -> None:
    """LinAlgError naming the singular members (`mask` over `a`'s batch), as xl.solve does."""
    m = np.asarray(mask, dtype=bool).reshape(batch_shape)
    if batch_shape:
        indices = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))]
        members = [int(i) for i in np.flatnonzero(m)]
    else:
        indices, members = [()], [0]
    raise LinAlgError(_singular_message(indices, batch_shape), indices=indices, members=members)


def _check_singular(ad: Adapter, a: Any, b: Any, x: Any, bad: Any, flag_only: bool, vector: bool = False) -> None:
    """errors="raise", eager: one bool crosses to the host; raise for singular members.

    `bad` is the solver's zero-pivot mask over the broadcast batch, where the
    solver ran (a GPU, say): it is reduced there and one bool is read (a device
    sync); only when it is set is xl.solve's rule (:func:`singular_members`: never
    members with NaN or inf in `a` or `b`) applied there too, and only the
    reported members' mask is copied. With `flag_only` (JAX), `bad` is the
    program's own flag "some entry of `x` is NaN": only when it is set are the
    members whose solution is all NaN candidates, confirmed by the NumPy schedule
    on the host (subnormals kept), then the same rule.
    """
    a_batch = tuple(a.shape[:-2])
    if not flag_only:
        xp = ad.xp
        if not bool(xp.any(bad)):  # the common case: no zero pivot
            return
        sing = singular_members(xp, bad, a, b[..., None] if vector else b)
        if bool(xp.any(sing)):
            _raise_singular(_to_batch(np.asarray(ad.to_host(sing)), a_batch).reshape(a_batch), a_batch)
        return
    if not bool(bad):  # the common case: no NaN anywhere in x
        return
    h = np.asarray(ad.to_host(x))
    cand = np.asarray(np.isnan(h).all(axis=-1 if vector else (-2, -1)))  # (0-d: an array too)
    if not cand.any():
        return
    n = int(a.shape[-1])
    a_host = np.asarray(ad.to_host(a))
    cand = _confirm_zero_pivots(cand, np.broadcast_to(a_host, (*cand.shape, n, n)))
    b_host = np.asarray(ad.to_host(b))
    sing = singular_members(np, cand, a_host, b_host[..., None] if vector else b_host)
    mask = _to_batch(sing, a_batch).reshape(a_batch)
    if mask.any():
        _raise_singular(mask, a_batch)


def _traced(ad: Adapter, kern: _Kernel, x: Any) -> bool:
    """Whether `x` is inside the caller's trace or compile (no exception possible there)."""
    return ad.traced(x) or (kern.traced is not None and kern.traced(x))


def _confirm_zero_pivots(cand: np.ndarray, a: np.ndarray) -> np.ndarray:
    """`cand` (a mask over `a`'s batch) kept where the NumPy schedule meets a zero pivot."""
    cand = cand.copy()
    if cand.any():
        sel = a[cand]
        n = sel.shape[-1]
        _, zero = _kernel(NUMPY, NUMPY.backend(sel), n, sel, "batch-last", False)(
            sel, np.zeros((sel.shape[0], n, 1), sel.dtype), ((), ())
        )
        cand[cand] = np.asarray(zero)
    return cand


def _numpy_views(ad: Adapter, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """NumPy views of `a` and `b` where NumPy's compiled (numba) kernel can solve them
    in place of the library's own unrolled kernel: both concrete, in host memory,
    outside autograd and traces (``Adapter.numpy_view``), and numba installed."""
    if numba_problem() is not None:
        return None
    va = ad.numpy_view(a)
    if va is None or va.dtype.kind not in "fc":
        return None
    vb = ad.numpy_view(b)
    return None if vb is None else (va, vb)


def _block(ab: np.ndarray, bb: np.ndarray, vector: bool, errors: str, layout: str) -> np.ndarray:
    """One block of a lazy array (Dask): NumPy's kernel, checked as on NumPy (see
    DaskAdapter.map_solve). Not the numba kernel: inside a dask.distributed worker
    its parallel launch hung the cluster tests; NumPy's own unrolled kernel runs."""
    return solve_adapter(NUMPY, ab, bb, vector, errors, layout=layout, compile=False)


def solve_adapter(
    ad: Adapter,
    a: Any,
    b: Any,
    vector: bool,
    errors: str,
    *,
    layout: str | None = None,
    compile: bool | None = None,
) -> Any:
    """The unrolled solve behind :func:`solve_unrolled`, for already validated input.

    The contract of ``Adapter.solve``: `a` ``(..., n, n)`` and `b` ``(n,)``
    (``vector``) or ``(..., n, K)`` of one floating dtype on one device, no empty
    dimension; `errors` is "raise" or "nan". xl.solve calls this in place of
    ``ad.solve(a, b, vector, errors)`` for ``method="unrolled"``.
    """
    if ad is not NUMPY and compile is None and (views := _numpy_views(ad, a, b)) is not None:
        # torch-cpu, jax-cpu (eager): NumPy's compiled kernel on views of their memory
        x = solve_adapter(NUMPY, views[0], views[1], vector, errors, layout=layout)
        return ad.from_numpy_view(x, a)
    n = a.shape[-1]
    # What the arguments resolve to (backend, layout, compiler, kernel) is cached
    # per (library, dtype, device, n, layout, compile): resolving it reads dtype
    # names and devices, on JAX more than the compiled solve of one system costs.
    rkey = (ad, a.dtype, None if ad.single_device else ad.device(a), n, layout, compile)
    kern = _RESOLVED.get(rkey)
    if kern is None:
        layout, kern = _resolve(ad, a, int(n), layout, compile)
        if kern is None:  # lazy blocks (Dask): NumPy's kernel on each, nothing to cache
            kernel = functools.partial(_block, layout=layout)
            return ad.map_solve(a, b, vector, errors, kernel)  # type: ignore[attr-defined]
        with _LOCK:
            if len(_RESOLVED) > 256:  # bounded (dtype x device x n x options)
                _RESOLVED.clear()
            _RESOLVED[rkey] = kern
    if vector and kern.takes_vector:
        # JAX: the vector's expand and squeeze happen inside the compiled program
        x, bad = kern(a, b, (a.shape, (*b.shape, 1)), vector=True)
        if errors == "raise" and not _traced(ad, kern, x):
            _check_singular(ad, a, b, x, bad, kern.flag_only, vector=True)
        return x
    bm = b[..., None] if vector else b
    x, bad = kern(a, bm, (tuple(a.shape), tuple(bm.shape)))
    if errors == "raise" and not _traced(ad, kern, x):
        _check_singular(ad, a, bm, x, bad, kern.flag_only)
    return x[..., 0] if vector else x


def _resolve(ad: Adapter, a: Any, n: int, layout: str | None, compile: bool | None) -> tuple[str, _Kernel | None]:
    """The layout and kernel for these arguments (kernel None: blockwise, Dask); argument errors raised here."""
    if n > MAX_N:
        raise ValueError(
            f"solve_unrolled: n = {n} is above the unrolled solver's limit of {MAX_N} "
            "(its code grows like n³ and LAPACK wins long before); use method='native'"
        )
    backend = ad.backend(a)
    hooks = get_backend(backend)
    if layout is None:
        layout = hooks.unrolled_layout
    elif layout not in LAYOUTS:
        raise ValueError(f"solve_unrolled: `layout` must be None or one of {LAYOUTS}, got {layout!r}")
    if hooks.unrolled_blockwise:  # lazy arrays of blocks: NumPy's kernel per block
        _resolve_compile(backend, compile, False)  # (compile=True: no compiler, an error)
        return layout, None
    complex_ = ad.kind(a.dtype) == "c"
    compiled = _resolve_compile(backend, compile, complex_)
    return layout, _kernel(ad, backend, n, a, layout, compiled)


def solve_unrolled(
    a: Any,
    b: Any,
    /,
    *,
    errors: str = "raise",
    layout: str | None = None,
    compile: bool | None = None,
    xp: Any = None,
) -> Any:
    """Solve many small systems ``a @ x = b`` with Gaussian elimination unrolled for ``n``.

    Same semantics as :func:`xlinalg.solve` (right-hand-side rule, batch
    broadcasting, dtype rule, singular members), computed by straight-line
    elementwise code over the batch (partial pivoting, written once against the
    array API standard) that each backend compiles: ``jax.jit`` on JAX,
    ``torch.compile`` on PyTorch where a compiler works, one CUDA elementwise
    kernel on CuPy; NumPy, Dask and array-api-strict run it eagerly (slower than
    their LAPACK). See ``docs/unrolled.md`` for when it wins.

    Parameters
    ----------
    a : array, shape ``(..., n, n)``
        Matrix or stack of matrices, ``1 <= n <= 8`` (:data:`MAX_N`).
    b : array, shape ``(n,)`` or ``(..., n, K)``
        Right-hand side, as in :func:`xlinalg.solve`.
    errors : {"raise", "nan"}, optional
        ``"raise"``: :class:`xlinalg.LinAlgError` naming the exactly singular
        members (a zero pivot after partial pivoting); this reads a mask from the
        device (a sync). ``"nan"``: NaN for those members, no sync. Under
        ``jax.jit`` or ``torch.compile`` NaN whatever `errors`; on Dask the error
        is raised by ``compute()``.
    layout : {None, "batch-first", "batch-last"}, optional
        Storage inside the solver: batch-first reads each entry as a strided
        view of `a`; batch-last first copies `a` to ``(n*n, batch)`` so that every
        entry is contiguous. ``None``: the layout measured fastest on the backend.
    compile : bool, optional
        ``None`` (default): compile where the backend has a compiler that works
        here (torch.compile's first call takes seconds: docs/unrolled.md; later
        processes reuse its on-disk cache). ``True``: require it (error if unavailable). ``False``:
        run the schedule eagerly.
    xp : namespace, optional
        The array namespace; inferred from `a` and `b` by default.

    Returns
    -------
    array, shape ``(..., n)`` or ``(..., n, K)``
        The solution in the inputs' library and device.

    Raises
    ------
    LinAlgError
        If a member is exactly singular and ``errors="raise"`` (eager).
    ValueError
        For shapes :func:`xlinalg.solve` refuses, ``n > 8``, an unknown
        `layout`, or ``compile=True`` on a backend without a compiler.
    TypeError
        For dtypes :func:`xlinalg.solve` refuses.

    Examples
    --------
    >>> import numpy as np
    >>> from xlinalg._unrolled import solve_unrolled
    >>> a = np.array([[[0.0, 2.0], [1.0, 1.0]], [[4.0, 0.0], [0.0, 2.0]]])
    >>> solve_unrolled(a, np.array([2.0, 2.0]))
    array([[1. , 1. ],
           [0.5, 1. ]])
    """
    ad, a, b = _dispatch.adapter2(a, b, "a", "b", xp)
    sa, sb = a.shape, b.shape
    vector = len(sb) == 1
    _validate.solve_shapes(ad, a, b, vector)
    _validate.check_errors(errors)
    if a.dtype != b.dtype or a.dtype not in ad.solve_dtypes:
        a, b = _validate.promote_linalg(ad, a, b, "solve")
    ad.check_same_device(a, b, "a", "b")
    if 0 in tuple(sa) or 0 in tuple(sb):
        return _validate.empty_solve(ad, a, b, vector)
    return solve_adapter(ad, a, b, vector, errors, layout=layout, compile=compile)
