"""Solving with an unrolled kernel: validation, dispatch, the singular check."""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from .. import _dispatch, _validate
from .._kernels._build import Kernel
from .._kernels._numba import numba_problem, warm_disk_cache
from .._kernels._schedule import LAYOUTS, MAX_N
from .._lib import _singular
from .._lib._errors import LinAlgError
from ..backends import get_backend
from ..backends._adapter import Adapter, singular_members, singular_message, to_batch
from ..backends._numpy import NUMPY
from ._cache import _LOCK, _RESOLVED, _kernel, _resolve_compile


def _raise_singular(mask: np.ndarray, batch_shape: tuple[int, ...]) -> None:
    """LinAlgError naming the singular members (`mask` over `a`'s batch), as xl.solve does."""
    m = np.asarray(mask, dtype=bool).reshape(batch_shape)
    if batch_shape:
        indices = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(m))]
        members = [int(i) for i in np.flatnonzero(m)]
    else:
        indices, members = [()], [0]
    raise LinAlgError(singular_message(indices, batch_shape), indices=indices, members=members)


def _finish(ad: Adapter, a: Any, b: Any, x: Any, bad: Any, flag_only: bool, errors: str,
            traced: bool, vector: bool = False, clean: bool | None = None) -> tuple[Any, Any]:
    """The singular rule's rules 2 and 3 on a kernel's result (docs/semantics.md).

    The kernel has already set NaN for the members whose pivots the rule calls
    singular (``_schedule._factor``: ``|u_kk| <= n * eps * c_k``), which it reports
    as `bad`, a mask over the broadcast batch where the solver ran; with
    `flag_only` (JAX), `bad` is the program's own flag "some entry of `x` is not
    finite". Then:

    * ``errors="raise"``, eager: one bool crosses to the host (a device sync); only
      when it is set are the reported members (singular, with finite `a` and `b`)
      named. JAX's are confirmed by the NumPy schedule on the host (XLA flushes
      subnormals to zero, which makes ``1e-310 * I`` look singular).
    * every member with NaN or inf in `a` or `b` gets an all-NaN solution (rule 2;
      without a sync for ``errors="nan"`` and traced calls).

    `clean` (kernels that report it: numba's) is the kernel's own "no member is
    singular, has non-finite input or a non-finite solution": then nothing is read.

    Returns ``(x, mask)``: `mask` the reported members (singular by the rule, finite
    input) over the broadcast batch where it is known on the host (NumPy's kernels),
    else None.
    """
    xp = ad.xp
    bm = b[..., None] if vector else b
    xm = x[..., None] if vector else x
    a_batch = tuple(a.shape[:-2])
    eager = not traced
    if eager and (errors == "raise" or ad.numpy_arrays):
        if flag_only:
            if not bool(bad):  # the common case: every entry finite
                return x, None
            a_host = np.asarray(ad.to_host(a))
            batch = np.broadcast_shapes(a_host.shape[:-2], tuple(bm.shape[:-2]))
            n = int(a.shape[-1])
            bad = _confirm_zero_pivots(np.ones(batch, bool), np.broadcast_to(a_host, (*batch, n, n)))
        elif clean if clean is not None else not bool(xp.any(bad) | ~xp.all(xp.isfinite(xm))):  # the common case
            return x, bad if ad.numpy_arrays else None  # (no member singular: `bad` is all False)
        sing, rep = _host_verdict(ad, a, bm, xm, bad)
        if errors == "raise" and rep.any():
            _raise_singular(to_batch(rep, a_batch).reshape(a_batch), a_batch)
        if ad.numpy_arrays:  # NaN for the singular members found on the host too
            x = ad.fill_nan(sing[..., None] if vector else sing[..., None, None], x)
        mask = rep if ad.numpy_arrays else None
    else:
        mask = None
    nonfinite = xp.logical_not(_singular.finite_members(xp, _singular.column_scale(xp, a), bm))
    return ad.fill_nan(nonfinite[..., None] if vector else nonfinite[..., None, None], x), mask


def _host_verdict(ad: Adapter, a: Any, bm: Any, xm: Any, bad: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(singular, reported)`` over the broadcast batch, on the host (a failure path).

    `bad` is the kernel's verdict. A member with finite input whose solution is not
    finite although the kernel passed its pivots had its elimination overflow: the
    reciprocal of a subnormal pivot (``1e-300 *`` a rank-deficient matrix meets
    pivots of about ``1e-316``) is inf. Such members get the rule's reference verdict
    (``_singular.singular_mask``: LU dividing by the pivot, as LAPACK's ``getf2``
    does below its safe minimum), so that the verdict is the same at every scale.
    """
    a_h, b_h, x_h = (np.asarray(ad.to_host(v)) for v in (a, bm, xm))
    sing = np.array(np.asarray(ad.to_host(bad)) if not isinstance(bad, np.ndarray) else bad, dtype=bool)
    scale = _singular.column_scale(np, a_h)
    fin = _singular.finite_members(np, scale, b_h)
    sing = np.broadcast_to(sing, fin.shape).copy()
    over = ~sing & ~np.isfinite(x_h).all(axis=(-2, -1)) & fin
    if over.any():
        n = a_h.shape[-1]
        with np.errstate(all="ignore"):
            sing[over] = np.asarray(_singular.singular_mask(np, np.broadcast_to(a_h, (*fin.shape, n, n))[over]))
    return sing, singular_members(np, sing, scale, b_h)


def _traced(ad: Adapter, kern: Kernel, x: Any) -> bool:
    """Whether `x` is inside the caller's trace or compile (no exception possible there)."""
    return ad.traced(x) or (kern.traced is not None and kern.traced(x))


def _confirm_zero_pivots(cand: np.ndarray, a: np.ndarray) -> np.ndarray:
    """`cand` (a mask over `a`'s batch) kept where the NumPy schedule calls the member
    singular (the rule's pivots, subnormals kept)."""
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


def warm_first_call(a: Any, b: Any) -> bool:
    """Prepare the first ``xl.solve(a, b, method="unrolled")`` of arrays like `a` and
    `b` in this process to be the same on every run (a benchmark's first-call column):
    where numba's kernel solves them (NumPy arrays; torch and JAX CPU arrays, eager),
    its (n, dtype) kernel is put in numba's disk cache (compiled in a child process
    where it is not) and dropped from this process, so that the first call loads it
    from the warm disk cache. Returns whether that is what the first call does; False
    where another kernel solves them (their compilers: ``jax.jit``, ``torch.compile``)
    or numba is missing."""
    ad, a, b = _dispatch.adapter2(a, b, "a", "b", None)
    if ad.numpy_arrays:  # NumPy's own kernel (its compiler: numba, where installed)
        numba_solves = numba_problem() is None and a.dtype.kind in "fc"
        views = (a, b) if numba_solves else None
    else:  # torch and JAX CPU arrays, eager: the same kernel on views of their memory
        views = _numpy_views(ad, a, b)
    if views is None:
        return False
    return warm_disk_cache(int(views[0].shape[-1]), views[0].dtype.name)


def _block(ab: np.ndarray, bb: np.ndarray, vector: bool, errors: str, layout: str) -> np.ndarray:
    """One block of a lazy array (Dask): NumPy's kernel, checked as on NumPy (see
    DaskAdapter.map_solve). Not the numba kernel: inside a dask.distributed worker
    its parallel launch hung the cluster tests; NumPy's own unrolled kernel runs."""
    return _solve_adapter(NUMPY, ab, bb, vector, errors, layout, False, False)[0]


#: solve_ex's request for the kernel's singular mask (:func:`kernel_mask`), per thread
_SINK = threading.local()


class _MaskSink:
    """Where :func:`solve_adapter` leaves ``(x, mask)`` for :func:`kernel_mask`'s caller."""

    __slots__ = ("_prev", "mask", "x")

    def __init__(self) -> None:
        self.x: Any = None
        self.mask: Any = None

    def __enter__(self) -> _MaskSink:
        self._prev = getattr(_SINK, "sink", None)
        _SINK.sink = self
        return self

    def __exit__(self, *exc: object) -> None:
        _SINK.sink = self._prev

    def mask_of(self, x: Any) -> Any:
        """The singular mask that came with the result `x` (the very object), or None."""
        return self.mask if self.x is not None and self.x is x else None


def kernel_mask() -> _MaskSink:
    """``with kernel_mask() as got: x = xl.solve(...)``; then ``got.mask_of(x)`` is the
    unrolled kernel's mask of the members xlinalg's rule calls singular (finite input),
    over the broadcast batch, in `x`'s library, when the call ran a kernel that decides
    it on the host (NumPy's, and torch-cpu and jax-cpu through it), else None
    (:func:`xlinalg.solve_ex` then computes the rule itself). This thread only."""
    return _MaskSink()


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
    ``ad.solve(a, b, vector, errors)`` for ``method="unrolled"``. Inside
    :func:`kernel_mask`, the singular mask is left there with the result.
    """
    sink = getattr(_SINK, "sink", None)
    x, mask = _solve_adapter(ad, a, b, vector, errors, layout, compile, sink is not None)
    if sink is not None:
        sink.x, sink.mask = x, mask
    return x


def _solve_adapter(ad: Adapter, a: Any, b: Any, vector: bool, errors: str, layout: str | None,
                   compile: bool | None, want_mask: bool) -> tuple[Any, Any]:
    """:func:`solve_adapter`'s ``(x, mask)``: `mask` as :func:`_finish` returns it, in
    `ad`'s library (converted only where `want_mask`)."""
    if not ad.numpy_arrays and compile is None and (views := _numpy_views(ad, a, b)) is not None:
        # torch-cpu, jax-cpu (eager): NumPy's compiled kernel on views of their memory;
        # its fresh result is handed over (JAX: aliased where XLA can, not copied)
        x, mask = _solve_adapter(NUMPY, views[0], views[1], vector, errors, layout, None, want_mask)
        if mask is not None:
            mask = ad.from_numpy_view(mask, a) if want_mask else None
        return ad.from_numpy_view(x, a), mask
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
            return ad.map_solve(a, b, vector, errors, kernel), None  # type: ignore[misc]
        with _LOCK:
            if len(_RESOLVED) > 256:  # bounded (dtype x device x n x options)
                _RESOLVED.clear()
            _RESOLVED[rkey] = kern
    if vector and kern.takes_vector:
        # JAX: the vector's expand and squeeze happen inside the compiled program
        x, bad = kern(a, b, (a.shape, (*b.shape, 1)), vector=True)
        return _finish(ad, a, b, x, bad, kern.flag_only, errors, _traced(ad, kern, x), vector=True)
    bm = b[..., None] if vector else b
    out = kern(a, bm, (tuple(a.shape), tuple(bm.shape)))
    x, bad = out[0], out[1]
    x, mask = _finish(ad, a, bm, x, bad, kern.flag_only, errors, _traced(ad, kern, x),
                      clean=out[2] if kern.reports_clean else None)
    return (x[..., 0] if vector else x), mask


def _resolve(ad: Adapter, a: Any, n: int, layout: str | None, compile: bool | None) -> tuple[str, Kernel | None]:
    """The layout and kernel for these arguments (kernel None: blockwise, Dask); argument errors raised here."""
    if n > MAX_N:
        raise ValueError(
            f"solve_unrolled: n = {n} is above the unrolled solver's limit of {MAX_N} "
            "(its code grows like n³ and LAPACK wins long before); use method='native'"
        )
    backend = ad.backend(a)
    hooks = get_backend(backend)
    if layout is None:
        layout = hooks.unrolled.layout
    elif layout not in LAYOUTS:
        raise ValueError(f"solve_unrolled: `layout` must be None or one of {LAYOUTS}, got {layout!r}")
    if hooks.unrolled.blockwise:  # lazy arrays of blocks: NumPy's kernel per block
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
        ``"raise"``: :class:`xlinalg.LinAlgError` naming the singular members (a
        pivot ``<= n * eps *`` its column's largest modulus, as :func:`xlinalg.solve`
        decides on every backend); this reads a mask from the
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
        If a member is singular and ``errors="raise"`` (eager).
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
