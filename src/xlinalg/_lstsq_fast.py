"""The fast paths of lstsq, pinv and matrix_rank: the library's own LAPACK call where
it gives xlinalg's answer (NumPy's ``gelsd`` and SVD gufuncs, on NumPy arrays and on
torch-cpu tensors NumPy can view; torch's ``gelsd`` for CPU tensors that need
gradients; on JAX the SVD's computation in one ``jax.jit``), MISSING elsewhere, where
:mod:`._lstsq`'s SVD written once runs. Both paths of each function call these
(the fast path from its table, the checked path through :class:`OwnCall`), so they
give the same answer.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from ._dispatch import fast_paths
from ._fastpath import (
    JAX_FLOAT,
    MISSING,
    NP_FLOAT,
    FastMaker,
    jax_finite,
    jax_maker,
    np_finite,
    np_loud,
    np_maker,
    np_quiet,
    torch_finite,
    torch_float,
    torch_maker,
    torch_plain,
)
from ._lib._typing import Array
from ._orthogonal import _np_svd_fast
from .backends._base import Adapter
from .backends._numpy_adapter import NumPyAdapter


class LstsqResult(NamedTuple):
    """Result of :func:`lstsq`."""

    solution: Array
    residuals: Array
    rank: Array
    singular_values: Array


# non-empty stack of one floating dtype with the default tolerance; the SVD's S
# looked at quickly (NaN or inf: the checked path raises "did not converge").
# Each step is the checked path's, in its order, so the results are its results.
_EPS = {np.dtype(c): float(np.finfo(c).eps) for c in "fd"}
_EPS.update({np.dtype("F"): _EPS[np.dtype("f")], np.dtype("D"): _EPS[np.dtype("d")]})


# (methods and weak Python scalars where they compute what the checked path's
# functions compute: each NumPy function in front of its method costs ~1 µs)
def _inverse(xp: Any, s: Any, keep: Any) -> Any:
    """1/s where `keep`, else 0: the checked path's ``where(keep, 1/where(keep, s, 1), 0)``."""
    return xp.where(keep, 1.0 / xp.where(keep, s, 1.0), 0.0)


def _pinv_body(xp: Any, amax: Any, cast: Any, x: Any, u: Any, s: Any, vh: Any, scale: float, cplx: bool) -> Any:
    keep = s > amax(s) * scale
    sinv = _inverse(xp, s, keep)
    v = (xp.conj(vh) if cplx else vh).swapaxes(-1, -2)
    uh = (xp.conj(u) if cplx else u).swapaxes(-1, -2)
    return xp.matmul(v * cast(sinv, x.dtype)[..., None, :], uh)


def _rank_body(xp: Any, amax: Any, cast: Any, s: Any, scale: float, it: Any) -> Any:
    return xp.sum(cast(s > amax(s) * scale, it), -1)


def _lstsq_body(xp: Any, amax: Any, cast: Any, a: Any, bm: Any, u: Any, s: Any, vh: Any, r: float,
                cplx: bool, it: Any) -> tuple[Any, Any, Any]:
    keep = s > amax(s) * r
    sinv = _inverse(xp, s, keep)
    uh = (xp.conj(u) if cplx else u).swapaxes(-1, -2)
    v = (xp.conj(vh) if cplx else vh).swapaxes(-1, -2)
    x = xp.matmul(v, cast(sinv, a.dtype)[..., None] * xp.matmul(uh, bm))
    mag = xp.abs(bm - xp.matmul(a, x))
    return x, (mag * mag).sum(-2), xp.sum(cast(keep, it), -1)


def _np_amax(s: Any) -> Any:
    return s.max(-1, keepdims=True)


def _np_cast(x: Any, dt: Any) -> Any:
    return x if x.dtype == dt else x.astype(dt)


def _np_svd(x: Any, values_only: bool) -> Any:
    return _np_svd_fast(x, None if values_only else False)


def _np_pinv_fast(x: Any) -> Any:
    if x.dtype not in NP_FLOAT or (out := _np_svd(x, False)) is MISSING:
        return MISSING
    u, s, vh = out
    return _pinv_body(np, _np_amax, _np_cast, x, u, s, vh, max(x.shape[-2:]) * _EPS[x.dtype], x.dtype.kind == "c")


def _np_rank_fast(x: Any) -> Any:
    if x.dtype not in NP_FLOAT or (s := _np_svd(x, True)) is MISSING:
        return MISSING
    return _rank_body(np, _np_amax, _np_cast, s, max(x.shape[-2:]) * _EPS[x.dtype], _NP_INT)


_NP_INT = np.asarray(0).dtype


def _rcond_value(rcond: Any, eps: float, m: int, n: int) -> float | None:
    """lstsq's relative cutoff: ``max(M, N) * eps`` by default, `eps` for a negative
    `rcond`; None for an `rcond` the checked path refuses (it names it)."""
    if rcond is None:
        return eps * max(m, n)
    if isinstance(rcond, bool) or not isinstance(rcond, (int, float)):
        return None
    return eps if rcond < 0 else float(rcond)


try:  # the gufunc behind numpy.linalg.lstsq (LAPACK's gelsd), stacks and all
    from numpy.linalg import _umath_linalg

    _NP_GELSD: Any = _umath_linalg.lstsq
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout
    _NP_GELSD = None
#: dtype (native byte order) -> (signature, solution dtype to cast to, real dtype to
#: cast to): as numpy.linalg.lstsq calls it (single precision computed in double,
#: then cast back)
_NP_GELSD_SIG = {
    np.dtype("f"): ("ddd->ddid", np.float32, np.float32), np.dtype("d"): ("ddd->ddid", None, None),
    np.dtype("F"): ("DDd->Ddid", np.complex64, np.float32), np.dtype("D"): ("DDd->Ddid", None, None),
}
_VECDOT = getattr(np, "vecdot", None)  # (NumPy 2)


def _np_sq_columns(d: Any, cplx: bool) -> Any:
    """The squared 2-norm of each column of `d` (..., M, K): shape (..., K), real."""
    if _VECDOT is not None:  # (one pass: vecdot conjugates its first operand)
        r = _VECDOT(d, d, axis=-2)
        return r.real if cplx else r
    return (d.conj() * d).real.sum(-2) if cplx else (d * d).sum(-2)


def _np_lstsq_fast(a: Any, b: Any, rcond: Any = None) -> Any:
    """NumPy's gelsd (numpy.linalg.lstsq's gufunc, the minimum-norm solution with the
    cutoff ``rcond * s_max``) on a non-empty finite `a` (..., M, N) and `b` (M,),
    (M, K) or (..., M, K) with `a`'s batch, of one dtype; its residuals where it gives
    them (rank N and M > N), else ``||b - a x||²`` per column (xlinalg's residuals are
    always computed). MISSING for anything else: the checked path."""
    dt = a.dtype
    # (the table holds the native byte order only)
    if (dt is not b.dtype and dt != b.dtype) or (how := _NP_GELSD_SIG.get(dt)) is None or a.ndim < 2 or not b.ndim:
        return MISSING
    m, n = a.shape[-2:]
    vector = b.ndim == 1
    bm = b[..., None] if vector else b
    if (bm.shape[-2] != m or (bm.ndim > 2 and bm.shape[:-2] != a.shape[:-2]) or not a.size or not bm.size
            or (r := _rcond_value(rcond, _EPS[dt], m, n)) is None or not np_finite(a) or not np_finite(bm)):
        return MISSING  # (NaN or inf: the checked path's SVD raises "did not converge")
    token = np_quiet()
    try:
        x, res, rank, s = _NP_GELSD(a, bm, r, signature=how[0])
        # gelsd gave no residuals (NaN) unless the rank is N and M > N: the formula
        if m <= n or (rank != n if a.ndim == 2 else (rank != n).any()):
            res = _np_sq_columns(bm - a @ x, dt.kind == "c")
    finally:
        np_loud(token)
    if not np_finite(s):
        return MISSING
    if how[1] is not None:
        x, res, s = x.astype(how[1]), res.astype(how[2]), s.astype(how[2])
    if a.ndim == 2:  # NumPy scalars for the 0-d outputs, as the checked path gives them
        rank = _NP_INT.type(rank)
        if vector:
            x, res = x[:, 0], res[0]
    else:
        rank = rank.astype(_NP_INT)
        if vector:
            x, res = x[..., 0], res[..., 0]
    return LstsqResult(x, res, rank, s)


def torch_dense(torch: Any) -> Any:
    """``dense(x)``: whether tensor `x` is dense (strided, not nested), the test every
    torch fast path makes before it reads anything else of `x`: a nested tensor's
    shape and strides raise, a sparse one's strides do (the checked path names them)."""
    strided = torch.strided

    def dense(x: Any) -> bool:
        return x.layout is strided and not x.is_nested

    return dense


def torch_numpy_view(torch: Any) -> Any:
    """``view(x)``: the NumPy view of a dense CPU tensor `x` outside autograd and
    traces, without the lazy conjugate/negative bits; None where there is none.
    NumPy's LAPACK call on it costs a fraction of torch's dispatch of a small one."""
    plain = torch_plain(torch)

    def view(x: Any) -> Any:
        if not plain(x) or x.requires_grad or x.device.type != "cpu" or x.is_conj() or x.is_neg():
            return None
        try:
            return x.numpy()
        except (RuntimeError, TypeError):  # a dtype NumPy has not
            return None

    return view


class _TorchOps:
    """What the bodies above call, for torch (NumPy's names where torch's differ)."""

    def __init__(self, torch: Any) -> None:
        self.t = torch
        for name in ("where", "conj", "matmul", "abs", "sum"):
            setattr(self, name, getattr(torch, name))


@functools.cache
def _torch_lstsq_paths(torch: Any) -> dict[str, Any]:
    ops = _TorchOps(torch)
    ok = torch_float(torch)
    plain = torch_plain(torch)
    svd, svdvals = torch.linalg.svd, torch.linalg.svdvals
    eps = {d: float(torch.finfo(d).eps) for d in ok}
    it = torch.asarray(0).dtype

    def amax(s: Any) -> Any:
        return torch.amax(s, -1, keepdim=True)

    def cast(x: Any, dt: Any) -> Any:
        return x if x.dtype == dt else x.to(dt)

    def usv(x: Any) -> Any:
        if x.dtype not in ok or not plain(x) or not x.numel():
            return MISSING
        try:
            u, s, vh = svd(x, full_matrices=False)
        except Exception:  # a shape or layout it refuses: named by the checked path
            return MISSING
        return (u, s, vh) if torch_finite(torch, s) else MISSING

    dense = torch_dense(torch)
    view = torch_numpy_view(torch)
    from_numpy = torch.from_numpy

    def pinv(x: Any) -> Any:
        if not dense(x) or x.dtype not in ok:
            return MISSING
        if (xn := view(x)) is not None:
            r = _np_pinv_fast(xn)
            return r if r is MISSING else from_numpy(r)
        if (out := usv(x)) is MISSING:
            return MISSING
        u, s, vh = out
        return _pinv_body(ops, amax, cast, x, u, s, vh, max(x.shape[-2:]) * eps[x.dtype], x.is_complex())

    def rank(x: Any) -> Any:
        if not dense(x) or x.dtype not in ok:
            return MISSING
        if (xn := view(x)) is not None:
            r = _np_rank_fast(xn)
            return r if r is MISSING else from_numpy(np.asarray(r))
        if not plain(x) or not x.numel():
            return MISSING
        try:
            s = svdvals(x)
        except Exception:  # a shape or layout it refuses: named by the checked path
            return MISSING
        if not torch_finite(torch, s):
            return MISSING
        return _rank_body(ops, amax, cast, s, max(x.shape[-2:]) * eps[x.dtype], it)

    native = torch.linalg.lstsq

    def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
        # torch's gelsd (the minimum-norm solution, cutoff rcond * s_max, with autograd)
        # on the CPU only: on CUDA torch has "gels" alone (full rank only), and the
        # checked path's SVD keeps xlinalg's answer there
        if not dense(a) or not dense(b) or a.dtype not in ok or a.dtype is not b.dtype:
            return MISSING
        if (an := view(a)) is not None and (bn := view(b)) is not None:  # (its own shape checks)
            out = _np_lstsq_fast(an, bn, rcond)
            return out if out is MISSING else LstsqResult(*(from_numpy(np.asarray(v)) for v in out))
        if a.ndim < 2 or not b.ndim or not plain(a) or not plain(b) or a.device.type != "cpu" or b.device.type != "cpu":
            return MISSING
        m, n = a.shape[-2:]
        vector = b.ndim == 1
        bm = b.unsqueeze(-1) if vector else b
        if (bm.shape[-2] != m or (bm.ndim > 2 and bm.shape[:-2] != a.shape[:-2]) or not a.numel()
                or not bm.numel() or (r := _rcond_value(rcond, eps[a.dtype], m, n)) is None):
            return MISSING
        if a.ndim > 2 and bm.ndim == 2:  # one right-hand side for the stack: torch wants its batch
            bm = bm.expand(*a.shape[:-2], m, bm.shape[-1])
        try:
            # (NaN or inf: LAPACK refuses it loudly; the checked path's SVD raises)
            if not torch_finite(torch, a) or not torch_finite(torch, bm):
                return MISSING
            x, res, rk, s = native(a, bm, rcond=r, driver="gelsd")
        except Exception:  # a layout or device it refuses: named by the checked path
            return MISSING
        if not torch_finite(torch, s):
            return MISSING
        if not res.numel():  # gelsd's residuals only for rank N and M > N: ||b - a x||² per column
            d = torch.baddbmm(bm, a, x, alpha=-1) if a.ndim == 3 else bm - torch.matmul(a, x)
            res = torch.linalg.vecdot(d, d, dim=-2)
            if res.is_complex():
                res = res.real
        return LstsqResult(x[..., 0] if vector else x, res[..., 0] if vector else res, rk, s)

    return {"pinv": pinv, "matrix_rank": rank, "lstsq": lstsq}


@functools.cache
def _jax_lstsq_paths(jax: Any, jnp: Any) -> dict[str, Any]:
    it = jnp.asarray(0).dtype

    def amax(s: Any) -> Any:
        return jnp.max(s, axis=-1, keepdims=True)

    def cast(x: Any, dt: Any) -> Any:
        return x if x.dtype == dt else x.astype(dt)

    def pinv_body(x: Any) -> Any:
        if x.dtype not in JAX_FLOAT:
            return None
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        cplx = jnp.iscomplexobj(x)
        return _pinv_body(jnp, amax, cast, x, u, s, vh, max(x.shape[-2:]) * _EPS[np.dtype(x.dtype)], cplx), s

    def rank_body(x: Any) -> Any:
        if x.dtype not in JAX_FLOAT:
            return None
        s = jnp.linalg.svdvals(x)
        return _rank_body(jnp, amax, cast, s, max(x.shape[-2:]) * _EPS[np.dtype(x.dtype)], it), s

    def lstsq_body(a: Any, b: Any) -> Any:
        if a.dtype not in JAX_FLOAT or a.dtype != b.dtype:
            return None
        vector = b.ndim == 1
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        x, res, rk = _lstsq_body(jnp, amax, cast, a, b[..., None] if vector else b, u, s, vh,
                                 _EPS[np.dtype(a.dtype)] * max(a.shape), jnp.iscomplexobj(a), it)
        return LstsqResult(x[..., 0] if vector else x, res[..., 0] if vector else res, rk, s)

    calls = {"pinv": jax.jit(pinv_body), "matrix_rank": jax.jit(rank_body), "lstsq": jax.jit(lstsq_body)}

    def one(name: str) -> Any:
        call = calls[name]
        # pinv's full SVD (LAPACK gesdd) may not return on NaN or inf: such an `x`
        # goes to the checked path, whose SVD never hands it to LAPACK
        look = name == "pinv"

        def fast(x: Any) -> Any:
            if x.ndim < 2 or not x.size or (look and not jax_finite(x)):
                return MISSING
            try:
                out = call(x)
            except Exception:  # a shape it refuses: named by the checked path
                return MISSING
            return out[0] if out is not None and jax_finite(out[1]) else MISSING

        return fast

    def lstsq(a: Any, b: Any, rcond: Any = None) -> Any:
        if rcond is not None or a.ndim != 2 or not (b.ndim == 1 or b.ndim == 2) or b.shape[0] != a.shape[0] or not a.size or not b.size:
            return MISSING
        if not jax_finite(a):  # its SVD may not return (pinv above): the checked path
            return MISSING
        try:
            out = calls["lstsq"](a, b)
        except Exception:  # a shape it refuses: named by the checked path
            return MISSING
        return out if out is not None and jax_finite(out.singular_values) else MISSING

    return {"pinv": one("pinv"), "matrix_rank": one("matrix_rank"), "lstsq": lstsq}


class OwnCall:
    """The checked path's own call of one function: per array type, the path its
    makers give (the same function object as the fast path's: the paths of a library
    are built once, :func:`_torch_lstsq_paths`), kept apart from the fast-path table
    so that taking a fast path out of that table leaves the checked path's answer
    as it is (``tests/ops/test_fast_paths.py``'s ``_CheckedOnly``)."""

    def __init__(self, makers: tuple[FastMaker, ...]) -> None:
        self.makers = makers
        self.paths: dict[tuple[type, Adapter], Any] = {}

    def __call__(self, ad: Adapter, *args: Any) -> Any:
        """The library's own call on validated input (the same answer whichever path
        ran: NumPy's gelsd and SVD, on torch-cpu through NumPy's views where it can,
        else torch's gelsd; JAX's is the SVD's computation in one jax.jit), MISSING
        where it refuses (NaN or inf, CUDA, a trace, another type): then the SVD
        written once runs."""
        key = (type(args[0]), ad)
        f = self.paths.get(key, MISSING)
        if f is MISSING:
            f = self.paths[key] = next((p for m in self.makers if (p := m.path_for(ad, key[0])) is not None), None)
        return MISSING if f is None else f(*args)


def _np_as_is(fn: Any) -> FastMaker:
    """:func:`np_maker` for a `fn` that gives NumPy scalars for 0-d outputs itself
    (lstsq: the maker's pass over a NamedTuple's fields costs ~2 µs)."""
    return FastMaker(NumPyAdapter, lambda ad, cls: fn if cls is np.ndarray else None)


def _lstsq_group(name: str, np_fast: Any, as_is: bool = False) -> tuple[dict[type, Any], OwnCall]:
    """`name`'s fast-path table and its checked path's own call, of the same makers."""
    makers = (
        _np_as_is(np_fast) if as_is else np_maker(np_fast),
        torch_maker(lambda torch: _torch_lstsq_paths(torch)[name]),
        jax_maker(lambda jax, jnp: _jax_lstsq_paths(jax, jnp)[name], host_look=True),
    )
    return fast_paths(name, *makers), OwnCall(makers)


_PINV_FAST, _PINV_OWN = _lstsq_group("pinv", _np_pinv_fast)
_RANK_FAST, _RANK_OWN = _lstsq_group("matrix_rank", _np_rank_fast)
_LSTSQ_FAST, _LSTSQ_OWN = _lstsq_group("lstsq", _np_lstsq_fast, as_is=True)
