"""NumPy's adapter: the library every other one falls back on, and its paths of the operations.

Host data and dtypes as NumPy reads them, the solve under the singular rule (SciPy's
LAPACK where it is installed: one ``gesv`` a matrix and the rule on its pivots; else
NumPy's gufunc after the rule's vectorized LU), SVD and QR guarded against input
LAPACK loops on. The ``"numpy"`` backend itself is in :mod:`._numpy`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib import _singular
from .._lib._typing import QRMode
from ._adapter import nan_members, singular_members
from ._base import NARROW_FLOATS, Adapter
from ._numpy_rule import _column_scale, _gesv_ruled, _pow2_normalized, _screen_bound
from ._speed import FastPaths

__all__ = ["NUMPY", "NumPyAdapter", "int_text", "low_float", "refused_subclass"]


def int_text(n: int) -> str:
    """A Python int for a message: its digits, or its size where it is long (``str``
    of an int past 4,300 digits raises ValueError, and a message of a million
    digits helps nobody)."""
    if abs(n).bit_length() <= 128:
        return str(n)
    return f"about {'-' if n < 0 else ''}10**{int(math.log10(abs(n)))}"


#: the integers NumPy makes an integer array of (int64, else uint64)
_NP_INT_RANGE = (-(2**63), 2**64 - 1)


def _not_numbers(obj: Any, name: str, dtype: np.dtype) -> str:
    """Why host data `obj` converted to dtype `dtype` (object or text), naming the
    first element that is no number. The walk is iterative, visits each list once
    and stops at NumPy's 64 dimensions."""
    todo: list[tuple[Any, str, int]] = [(obj, name, 0)]
    seen: set[int] = set()
    while todo:
        x, where, depth = todo.pop()
        if isinstance(x, (list, tuple)):
            if id(x) not in seen and depth < 64:
                seen.add(id(x))
                todo.extend((e, f"{where}[{i}]", depth + 1) for i, e in reversed(list(enumerate(x))))
            continue
        if isinstance(x, (bool, float, complex, np.bool_, np.number)):
            continue
        if isinstance(x, np.ndarray):
            if x.dtype.kind in "biufc":
                continue
            return f"`{where}` is a NumPy array of dtype {x.dtype}"
        if isinstance(x, int):
            if _NP_INT_RANGE[0] <= x <= _NP_INT_RANGE[1]:
                continue
            return (
                f"the Python int {int_text(x)} at `{where}` is beyond int64 and uint64, which NumPy "
                "would hold as a Python object; pass it as a float (`float(...)`) if that is what you mean"
            )
        cls = type(x)
        what = "None" if x is None else f"a {cls.__qualname__ if cls.__module__ == 'builtins' else f'{cls.__module__}.{cls.__qualname__}'}"
        return f"`{where}` is {what}"
    return f"it converts to dtype {dtype}"


#: (n, dtype) -> a read-only identity (NumPyAdapter.eye)
_EYES: dict[tuple[int, Any], np.ndarray] = {}


class NumPyAdapter(Adapter):
    library = "NumPy"
    stack_call = "numpy.stack"
    single_device = True
    numpy_arrays = True
    speed = FastPaths(
        ops={n: f"numpy.{n}" for n in ("add", "subtract", "multiply", "matmul")},
        # SciPy's expit: one stable ufunc (float32/64); without SciPy, the standard formula
        optional_ops={"sigmoid": "scipy.special.expit"},
        dtypes_from="numpy", device_check=False, numeric_only=True,
    )

    def __init__(self) -> None:
        import array_api_compat.numpy as xnp

        super().__init__(xnp)
        # the gufuncs behind numpy.linalg.solve (compat does the same for NumPy 1.x);
        # None: a NumPy without them
        self._solve_gufunc: Callable[..., Any] | None = None
        self._solve1_gufunc: Callable[..., Any] | None = None
        self._slogdet_gufunc: Callable[..., Any] | None = None
        try:
            from numpy.linalg import _umath_linalg

            self._solve_gufunc = _umath_linalg.solve
            self._solve1_gufunc = _umath_linalg.solve1
            self._slogdet_gufunc = _umath_linalg.slogdet
        except (ImportError, AttributeError):  # pragma: no cover - a NumPy without them
            pass

    def device(self, x: Any) -> Any:
        return "cpu"

    def describe(self, x: Any) -> str:
        return f"a NumPy array of shape {tuple(x.shape)} and dtype {x.dtype}"

    def backend(self, x: Any) -> str:
        return "numpy"

    def dtype_name(self, dtype: Any) -> str:
        return np.dtype(dtype).name

    def kind(self, dtype: Any) -> str:
        k = dtype.kind
        if k == "f":  # (ml_dtypes' float8_e5m2 is a one-byte "f")
            return "h" if dtype.itemsize <= 2 else ("f" if dtype.itemsize in (4, 8) else "x")
        if k == "V" and (dtype.name == "bfloat16" or dtype.name.startswith(NARROW_FLOATS)):
            return "h"  # ml_dtypes' other low-precision floats
        if k == "c":
            return "c" if dtype.itemsize in (8, 16) else "x"
        if k in "iu":
            return "i"
        return "b" if k == "b" else "?"

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        return np.dtype(np.float32), np.dtype(np.float64)

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        return None

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        try:
            out = np.asarray(obj)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a NumPy array: {exc}") from exc
        if out.dtype == object or out.dtype.kind in "USV":
            raise TypeError(f"`{name}` must hold numbers: {_not_numbers(obj, name, out.dtype)}")
        return out

    def host_error(self, obj: Any, name: str) -> TypeError | None:
        """NumPy's error for host data `obj` that another library failed to convert
        (a Python object or text inside it, named), or None: the other libraries'
        own messages differ; this one is the same everywhere."""
        try:
            self.asarray(obj, None, name)
        except TypeError as exc:
            return exc
        return None

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        # The singular rule (_lib/_singular.py) needs LU's pivots, which numpy.linalg
        # does not give: one matrix is factored by SciPy's getrf and solved by getrs
        # with those factors (no more work than gesv); stacks get the rule's verdict
        # from the LU vectorized over the batch, then NumPy's gufunc solves
        # (docs/performance.md, "singular rule").
        if a.ndim == 2 and b.ndim <= 2 and type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype:
            lap = _LAPACK.get(a.dtype.char, _UNLOADED)
            if lap is _UNLOADED:
                lap = lapack_for(a.dtype)
            if lap is not None:
                return self._solve_one(a, b, vector, errors, lap)
        dt = np.result_type(a.dtype, b.dtype)
        a = a.astype(dt, copy=False)
        bm = b[..., None] if vector else b
        if type(a) is np.ndarray and type(bm) is np.ndarray and self._loop_pays(a, bm, dt):
            loop = self._solve_few if math.prod(a.shape[:-2]) <= _FEW else self._solve_loop
            x = loop(a, bm.astype(dt, copy=False), errors)
            return x[..., 0] if vector else x
        if a.nbytes > _CHUNK_BYTES and a.shape[:-2] == bm.shape[:-2] and type(a) is type(bm) is np.ndarray:
            # a chunk of members at a time: the rule's copies stay a chunk's (performance.md)
            a3, b3 = a.reshape(-1, *a.shape[-2:]), bm.reshape(-1, *bm.shape[-2:])
            x, step = np.empty(b3.shape, dtype=dt), max(1, _CHUNK_BYTES // a3[0].nbytes)
            masks: list[Any] = [None, None]  # rep, bad over the flat batch, made when first set
            for i in range(0, len(a3), step):
                for k, m in enumerate(self._solve_ruled(a3[i:i + step], b3[i:i + step], dt, x[i:i + step])[1:]):
                    if m is not None:
                        masks[k] = np.zeros(len(a3), bool) if masks[k] is None else masks[k]
                        masks[k][i:i + step] = m
            rep, bad = (None if m is None else m.reshape(a.shape[:-2]) for m in masks)
            x = x.reshape(bm.shape)
        else:
            x, rep, bad = self._solve_ruled(a, bm, dt)
        if errors == "raise" and rep is not None and rep.any():
            self._raise_singular(rep, tuple(a.shape[:-2]))
        if bad is not None:  # rule 2: NaN in, NaN out (whole members)
            x[np.broadcast_to(bad[..., None, None], x.shape)] = np.nan
        return x[..., 0] if vector else x

    def _solve_ruled(self, a: Any, bm: Any, dt: Any, out: Any = None) -> tuple[Any, Any, Any]:
        """The rule's verdict and NumPy's gufunc solve of a stack (into `out` if given):
        the solution, and the masks of the members reported singular and of those whose
        solution is NaN (None: no such member)."""
        sing, scale = self.verdict(a)
        skip = sing | ~np.isfinite(scale).all(axis=-1)
        some = bool(skip.any())
        a_safe = np.where(skip[..., None, None], np.eye(a.shape[-1], dtype=dt), a) if some else a
        gufunc = self._solve_gufunc
        try:
            with np.errstate(call=_np_raise, invalid="call", over="ignore", divide="ignore", under="ignore"):
                # the gufunc behind numpy.linalg.solve, in the inputs' precision (see
                # _NP_SIGNATURES); it signals an exact zero pivot as "invalid"
                if gufunc is None:  # pragma: no cover - a NumPy without it
                    x = np.linalg.solve(a_safe, bm)
                else:
                    x = gufunc(a_safe, bm, signature=_NP_SIGNATURES[dt.char], out=out)
        except (_NumPySingular, np.linalg.LinAlgError):
            # LAPACK met an exact zero pivot where the rule's LU did not (rounding):
            # singular too, by LAPACK's word
            zero = self.zero_pivots(a_safe)
            sing, skip, some = sing | zero, skip | zero, True
            a_safe = np.where(skip[..., None, None], np.eye(a.shape[-1], dtype=dt), a)
            with np.errstate(all="ignore"):
                x = np.linalg.solve(a_safe, bm) if gufunc is None else gufunc(
                    a_safe, bm, signature=_NP_SIGNATURES[dt.char], out=out)
        if out is not None and x is not out:  # pragma: no cover - the NumPy without the gufunc
            out[...] = x
        rep = singular_members(np, sing, scale, bm) if some and sing.any() else None
        return x, rep, nan_members(np, sing, scale, bm) if some or not np.isfinite(x).all() else None

    def _solve_one(self, a: Any, b: Any, vector: bool, errors: str, lap: Any) -> Any:
        """One matrix: LAPACK's gesv (getrf + getrs) and the rule (:func:`_gesv_ruled`)."""
        x, sing = self.solve_one_masked(a, b, lap)
        if sing and errors == "raise":
            self._raise_singular(np.True_, ())
        return x

    def solve_one_masked(self, a: Any, b: Any, lap: Any) -> tuple[Any, bool]:
        """``(x, singular)`` of one matrix `a` (n, n) and `b` (n,) or (n, K) of its dtype,
        from one LAPACK gesv (`lap`: :func:`lapack_for`): `x` as ``solve(a, b,
        errors="nan")`` gives it, `singular` the rule's verdict (solve_ex's mask)."""
        x, piv, scale = _gesv_ruled(lap, a, b)
        if piv is None:
            return x, False
        fin = bool(np.isfinite(scale).all() and np.isfinite(b).all())
        sing = fin and bool((np.abs(piv) <= _singular.tolerance(np, a.dtype, a.shape[0]) * scale).any())
        if sing or not fin:  # NaN or inf in a or b: never singular, NaN (rule 2)
            return np.full(x.shape, np.nan, dtype=x.dtype), sing
        return x, False  # finite input, an overflowing solution (1e-310 * I): kept

    def _loop_pays(self, a: Any, bm: Any, dt: np.dtype) -> bool:
        """Whether a stack is solved one ``gesv`` a member (:meth:`_solve_loop`): where
        SciPy is there, `a` is not broadcast against `bm`, and either the matrices are
        too large for :meth:`verdict`'s screen (a second factorization there) or the
        batch is small (a few LAPACK calls cost less than the screen's NumPy passes)."""
        sa, sb = a.shape[:-2], bm.shape[:-2]
        if sb != sa and sb and sa != np.broadcast_shapes(sa, sb):
            return False
        if lapack_for(dt) is None:
            return False
        n = a.shape[-1]
        return _screen_bound(dt, n) > -2 or math.prod(a.shape[:-2]) <= _FEW

    def _solve_few(self, a: Any, bm: Any, errors: str) -> Any:
        """A few matrices (up to 16), one LAPACK ``gesv`` each, each screened as one
        matrix is (:func:`_gesv_ruled`: a few Python-level reads, where NumPy's
        reductions over the stack would cost more than the solves)."""
        lap = lapack_for(a.dtype)
        n, k = a.shape[-1], bm.shape[-1]
        batch = a.shape[:-2]
        a3 = a.reshape(-1, n, n)
        b3 = (bm if bm.shape[:-2] == batch else np.broadcast_to(bm, (*batch, n, k))).reshape(-1, n, k)
        x = np.empty(b3.shape, dtype=a.dtype)
        piv: Any = None  # kept once some member fails the screen
        scale: Any = None
        for i in range(len(a3)):
            x[i], p, c = _gesv_ruled(lap, a3[i], b3[i])
            if p is not None:
                if piv is None:  # screened members: pivots that are never small
                    piv = np.full((len(a3), n), np.inf, dtype=a.dtype)
                    scale = np.ones((len(a3), n), dtype=np.abs(piv).dtype)
                piv[i], scale[i] = p, c
        x = x.reshape(*batch, n, k)
        if piv is None:
            return x
        with np.errstate(all="ignore"):
            scale = scale.reshape(*batch, n)
            sing = _singular.singular_from_pivots(np, piv.reshape(*batch, n), scale, _singular.tolerance(np, a.dtype, n))
        sing &= np.isfinite(scale).all(axis=-1)
        if errors == "raise" and sing.any():
            rep = singular_members(np, sing, scale, bm)
            if rep.any():
                self._raise_singular(rep, batch)
        # rule 2: NaN in, NaN out (whole members; the screen cleared finite ones only)
        bad = nan_members(np, sing, scale, bm)
        x[np.broadcast_to(bad[..., None, None], x.shape)] = np.nan
        return x

    def _solve_loop(self, a: Any, bm: Any, errors: str) -> Any:
        """A stack, one LAPACK ``gesv`` per member: the solution and the rule's pivots
        from one factorization (the work of NumPy's gufunc, a Python call a member);
        the rule then runs over the whole stack at once."""
        gesv = lapack_for(a.dtype)[0]
        n, k = a.shape[-1], bm.shape[-1]
        batch = a.shape[:-2]
        with np.errstate(all="ignore"):
            scale = _column_scale(a)
            fin = np.isfinite(scale).all(axis=-1)
            a, scale, s = _pow2_normalized(a, scale, fin, factor=True)
        a3 = a.reshape(-1, n, n)
        b3 = (bm if bm.shape[:-2] == batch else np.broadcast_to(bm, (*batch, n, k))).reshape(-1, n, k)
        x = np.empty(b3.shape, dtype=a.dtype)
        piv = np.empty((len(a3), n), dtype=a.dtype)
        for i in range(len(a3)):
            lu, _, x[i], _ = gesv(a3[i], b3[i])
            piv[i] = lu.diagonal()
        x = x.reshape(*batch, n, k)
        with np.errstate(all="ignore"):
            if s is not None:  # (s·a) x' = b: x = s·x' (inf where it overflows)
                x *= s[0][..., None, None]
                x *= s[1][..., None, None]
            sing = _singular.singular_from_pivots(np, piv.reshape(*batch, n), scale, _singular.tolerance(np, a.dtype, n))
            sing &= fin
            if errors == "raise" and sing.any():
                rep = singular_members(np, sing, scale, bm)
                if rep.any():
                    self._raise_singular(rep, batch)
            if sing.any() or not (fin.all() and np.isfinite(x).all()):  # rule 2: NaN in, NaN out
                bad = nan_members(np, sing, scale, bm)
                x[np.broadcast_to(bad[..., None, None], x.shape)] = np.nan
        return x

    def verdict(self, a: Any) -> tuple[Any, Any]:
        """The rule's verdict over a stack (:meth:`Adapter.verdict`), cheaply where it can be.

        A screen from NumPy's ``slogdet`` gufunc (LAPACK's LU, in `a`'s precision):
        partial pivoting bounds each pivot by ``|u_jj| <= 2**j * c_j``, so a member
        singular by the rule has ``|det| <= n·eps·2**(n(n-1)/2)·prod(c)``; a member
        whose ``log|det|`` clears that bound (with a margin of 16 for rounding) is
        not singular. The others (and every member where the bound is too loose to
        clear: n > 9 in float64, n > 5 in float32) get the rule on LAPACK's own LU,
        one ``getrf`` per member (SciPy), or the rule's vectorized LU without SciPy.
        """
        n = a.shape[-1]
        tol = _singular.tolerance(np, a.dtype, n)
        with np.errstate(all="ignore"):
            scale = _column_scale(a)
            fin = np.isfinite(scale).all(axis=-1)
            a, scale = _pow2_normalized(a, scale, fin)
            todo = fin
            bound = _screen_bound(a.dtype, n)
            sig = _SLOGDET_SIGNATURES.get(a.dtype.char)
            if bound <= -2 and sig is not None and self._slogdet_gufunc is not None and fin.any():
                _, logdet = self._slogdet_gufunc(a, signature=sig)
                todo = fin & ~(logdet - np.log(scale).sum(axis=-1) > bound)
        sing = np.zeros(a.shape[:-2], dtype=bool)
        if todo.any():
            sub = a[todo]
            sing[todo] = _singular.singular_from_pivots(np, self._pivots(sub), scale[todo], tol)
        return sing, scale

    def _pivots(self, a3: Any) -> Any:
        """The pivots ``(k, n)`` of LU with partial pivoting of each matrix of `a3` ``(k, n, n)``."""
        lap = lapack_for(a3.dtype)
        if lap is None or (a3.shape[-1] <= 4 and len(a3) > 64):  # tiny and many: vectorized
            with np.errstate(all="ignore"):
                return _singular.lu_pivots(np, a3)
        getrf = lap[2]
        return np.stack([getrf(m)[0].diagonal() for m in a3]) if len(a3) else np.empty((0, a3.shape[-1]), a3.dtype)

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, (np.linalg.LinAlgError, _NumPySingular))

    def zero_pivots(self, a: Any) -> Any:
        # LU in `a`'s own precision, as the solve ran (_NP_SIGNATURES): numpy.linalg.slogdet
        # computes float32 in float64, where a float32 zero pivot (l = fl(1/3) = a22 in
        # [[3, 1], [1, 1/3]]) is a tiny non-zero one
        sig = _SLOGDET_SIGNATURES.get(a.dtype.char)
        with np.errstate(all="ignore"):
            if sig is None or self._slogdet_gufunc is None:
                sign, _ = np.linalg.slogdet(a)
            else:
                sign, _ = self._slogdet_gufunc(a, signature=sig)
        return sign == 0

    def _refuse_nonfinite_svd_input(self, a: Any, fn: str) -> None:
        # the base rule (OpenBLAS's gesdd loops forever on some NaN/inf input, e.g.
        # [[inf, 1, 0], [1, 3, 1], [0, 1, 4]]), read the quick way: a total first
        # (docs/performance.md), the exact test only when it is not finite
        from .._lib._finite import np_finite

        if not np_finite(a) and not bool(np.isfinite(a).all()):
            raise self._svd_error(a, fn)

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        self._refuse_nonfinite_svd_input(a, "svd")
        try:
            out = np.linalg.svd(a, full_matrices=full_matrices)
        except np.linalg.LinAlgError as exc:
            raise self._svd_error(a, "svd") from exc
        if not np.isfinite(out.S).all() and _not_converged(a, out.S):
            raise self._svd_error(a, "svd")
        return tuple(out)  # type: ignore[return-value]

    def svdvals(self, a: Any) -> Any:
        self._refuse_nonfinite_svd_input(a, "svdvals")
        try:
            s = np.linalg.svd(a, compute_uv=False)
        except np.linalg.LinAlgError as exc:
            raise self._svd_error(a, "svdvals") from exc
        if not np.isfinite(s).all() and _not_converged(a, s):
            raise self._svd_error(a, "svdvals")
        return s

    def qr(self, a: Any, mode: QRMode) -> tuple[Any, Any]:
        q, r = np.linalg.qr(a, mode=mode)
        return q, r

    def eye(self, like: Any) -> Any:
        # made once per (n, dtype) for small n, read-only: it is shared
        key = (like.shape[-1], like.dtype)
        eye = _EYES.get(key)
        if eye is None:
            eye = np.eye(key[0], dtype=key[1])
            eye.flags.writeable = False
            if key[0] <= 64:  # small ones only: a cache of large identities would hold memory
                _EYES[key] = eye
        return eye

    def matmul(self, a: Any, b: Any) -> Any:
        if a.dtype.kind == "V" and low_float(a.dtype):
            # ml_dtypes' bfloat16/float8 matmul gives float32; torch and JAX keep the
            # dtype: the products are summed in float32 and rounded once, as torch does
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
        return np.matmul(a, b)

    def native_matrix_norm(self) -> Callable[[Any, Any, bool], Any] | None:
        return lambda x, o, keep: np.linalg.norm(x, ord=o, axis=(-2, -1), keepdims=keep)

    def sigmoid(self, x: Any) -> Any:
        expit = self.fast.get("sigmoid") or self.optional_op("sigmoid")
        if expit is None or x.dtype.kind not in "f" or x.dtype.itemsize < 4:
            with np.errstate(all="ignore"):  # complex: inf/inf is "invalid", quietly NaN
                return super().sigmoid(x)
        return expit(x)


def low_float(dt: np.dtype) -> bool:
    """Whether NumPy dtype `dt` is one of ml_dtypes' floats (bfloat16, float8_*, ...),
    which NumPy stores as kind "V" and whose matmul NumPy computes in float32."""
    return dt.kind == "V" and dt.names is None and dt.type.__module__.partition(".")[0] == "ml_dtypes" and (
        "float" in dt.name)


def refused_subclass(x: Any, name: str) -> TypeError | None:
    """The error for a NumPy array subclass that xlinalg does not take as it is
    (a masked array, np.matrix), naming `name` and what to pass; None for others.

    A mask is something no other library has and no linear algebra routine
    honors: taking the array would drop it and compute with the values under it
    (np.linalg does), or, converted, hand them to another library. The user says
    which values are meant.
    """
    ma = sys.modules.get("numpy.ma")  # not loaded: no masked array can exist
    if ma is not None and isinstance(x, ma.MaskedArray):
        n = int(ma.count_masked(x))
        return TypeError(
            f"`{name}` is a NumPy masked array of shape {tuple(x.shape)} and dtype {x.dtype} "
            f"with {n} masked {'entry' if n == 1 else 'entries'}: xlinalg has no masks (nor do the "
            "other libraries), so the mask would be dropped and the values under it used. "
            f"Say which values are meant: pass `{name}.filled(value)` (e.g. numpy.nan) or "
            f"`numpy.ma.getdata({name})` (the values as stored)"
        )
    if isinstance(x, np.matrix):
        return TypeError(
            f"`{name}` is a numpy.matrix of shape {tuple(x.shape)} and dtype {x.dtype}, which is "
            "not an array API array (always 2-D, `*` is its matrix product): pass "
            f"`numpy.asarray({name})`"
        )
    return None


def _not_converged(a: Any, s: Any) -> bool:
    """A non-finite S means no convergence when it holds NaN or `a` is not finite; a
    finite `a` whose largest singular value overflows its dtype gets inf, as from
    every library's own call ([[3e38, 3e38]] in float32)."""
    return bool(np.isnan(s).any()) or not bool(np.isfinite(a).all())


class _NumPySingular(np.linalg.LinAlgError):
    pass


def _np_raise(err: Any, flag: Any) -> None:
    raise _NumPySingular("Singular matrix")


#: dtype char -> SciPy's ``(gesv, lange, getrf, eps)``, or None (no SciPy, or a dtype
#: LAPACK has no routines for). Module state, not the adapter's: Dask pickles the
#: adapter into its tasks, and f2py routines do not pickle.
_LAPACK: dict[str, Any] = {}
#: stacks of up to this many matrices are solved one gesv each, screened one by one
_FEW = 16
#: stacks of more bytes than this are solved a chunk of members of this size at a time
_CHUNK_BYTES = 1 << 20
_UNLOADED = object()


def lapack_for(dtype: np.dtype) -> Any:
    """SciPy's LAPACK routines for `dtype` (:data:`_LAPACK`), loaded on first use."""
    ent = _LAPACK.get(dtype.char, _UNLOADED)
    if ent is not _UNLOADED:
        return ent
    ent = None
    if dtype.char in _NP_SIGNATURES:
        try:
            from scipy.linalg import lapack
        except ImportError:  # SciPy is optional: the gufunc and the rule's vectorized LU
            pass
        else:
            p = {"f": "s", "d": "d", "F": "c", "D": "z"}[dtype.char]
            ent = (getattr(lapack, p + "gesv"), getattr(lapack, p + "lange"), getattr(lapack, p + "getrf"),
                   float(np.finfo(dtype).eps))
    _LAPACK[dtype.char] = ent
    return ent


# The gufunc has single- and double-precision loops only ("dd->f" does not exist):
# float32 input is solved in float32 LAPACK (sgesv), as PyTorch, JAX and CuPy do.
_NP_SIGNATURES = {"f": "ff->f", "d": "dd->d", "F": "FF->F", "D": "DD->D"}
# slogdet's loops: sign in the input's dtype, log|det| real
_SLOGDET_SIGNATURES = {"f": "f->ff", "d": "d->dd", "F": "F->Ff", "D": "D->Dd"}


NUMPY = NumPyAdapter()
