"""JAX's adapter: its paths of the operations (the ``"jax-*"`` backends are in :mod:`._jax`).

``solve`` is one jitted program, the native solve and the singular rule on
``lax.linalg.lu``'s pivots; on the CPU a small result is looked at on the host
(zero-copy) instead of reading a flag back. Which backend an array is on
(:func:`jax_backend_name`) is decided here, for the adapter and the backends alike.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from .._lib import _singular
from ._adapter import nan_members, singular_members
from ._base import MISSING, Adapter
from ._numpy_adapter import NUMPY
from ._speed import FastPaths

__all__ = ["HOST_LOOK_MAX", "JaxAdapter", "jax_backend_name", "jax_cpu_only", "jax_inv_ruled",
           "jax_solve_masked", "traced_backend_name"]


#: the largest identity JAXAdapter.eye keeps (a cache of large ones would hold memory)
_EYE_CACHE_MAX_N = 64


class JaxAdapter(Adapter):
    library = "JAX"
    stack_call = "jax.numpy.stack"
    speed = FastPaths(
        ops={**{n: f"jax.numpy.{n}" for n in ("add", "subtract", "multiply", "matmul")},
             "sigmoid": "jax.nn.sigmoid"},
        dtypes_from="numpy", numeric_only=True,
    )
    lower_triangle = MappingProxyType({"symmetrize_input": False})  # (NaN where cholesky fails)

    def __init__(self) -> None:
        import jax
        import jax.numpy as jnp
        import jax.scipy.linalg  # the solve paths use jax.scipy.linalg.lu_solve

        super().__init__(jnp)
        self.jax = jax
        self._tracer = jax.core.Tracer
        # every backend's devices: jax.devices() lists the default backend's only, and
        # on a GPU machine jax-cpu arrays exist beside jax-gpu ones
        every = _every_jax_device(jax)
        self._all_cpu = all(d.platform == "cpu" for d in every)
        # (a fact of this machine, not a setting: read here) one device of the default
        # backend: the fast path need not read .devices()
        # (microseconds); a jax-cpu array beside a jax-gpu one meets JAX's own refusal
        # of committed arrays on two devices there
        self.fast_device_check = len(jax.devices()) > 1
        # caches (the unrolled kernels) key on the device unless there is only one
        self.single_device = len(every) == 1
        self._masked_svd: dict[bool, Any] = {}
        self._eyes: dict[tuple[int, Any, Any], Any] = {}
        # jnp.linalg.solve under our own jit: its Python checks run once per input
        # signature (at trace time), not on every call; dtypes the fast path does
        # not take compile to a program returning None (cached too)
        ok = self.solve_dtypes

        def native(a: Any, b: Any) -> Any:
            if a.dtype != b.dtype or a.dtype not in ok:
                return None
            return _jax_solve_ruled(jax, jnp, a, b, b.ndim == 1)

        native_jit = jax.jit(native)
        self._solve_cpu = _finite_or_missing(native_jit)
        if self._all_cpu and not self.fast_device_check:
            self.solve_fast = _finite_or_missing(native_jit, one_matrix=True)
        # errors="raise" off the host look: one compiled function per `vector`
        # returning the solution and one flag, "some entry is not finite"
        self._solve_flagged = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_flagged(jax, jnp, a, b, v)) for v in (False, True)
        }
        # errors="nan" (and traced): the solution alone, so the call returns one
        # array, as jnp.linalg.solve does (each extra output costs time on every call)
        self._solve_nan = {
            v: jax.jit(lambda a, b, v=v: _jax_solve_ruled(jax, jnp, a, b, v)) for v in (False, True)
        }

    def solve_fast_for(self, cls: type) -> Callable[[Any, Any], Any] | None:
        # traced arrays (under jax.jit) have no values to look at: the checked path
        return None if issubclass(cls, self._tracer) else self.solve_fast

    def describe(self, x: Any) -> str:
        if self.traced(x):
            return f"a traced JAX array of shape {tuple(x.shape)} and dtype {x.dtype}"
        return f"a JAX array of shape {tuple(x.shape)} and dtype {x.dtype}{self._where(x)}"

    def _where(self, x: Any) -> str:
        try:
            devs = sorted(str(d) for d in x.devices())
        except Exception:
            return ""
        return "" if all(d.startswith("TFRT_CPU") or "cpu" in d.lower() for d in devs) else f" on {', '.join(devs)}"

    def device(self, x: Any) -> Any:
        if self.traced(x):
            return None
        try:
            return x.device
        except Exception:
            return None

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        if self.traced(a) or self.traced(b):
            return
        try:
            da, db = a.devices(), b.devices()
        except Exception:
            return
        if da != db and len(da) == 1 and len(db) == 1:
            super().check_same_device(a, b, na, nb)

    def traced(self, x: Any) -> bool:
        return isinstance(x, self._tracer)

    def eye(self, like: Any) -> Any:
        # an eager jnp.eye costs hundreds of µs (docs/performance.md) and JAX arrays
        # are immutable: small identities are made once per (n, dtype, device)
        if self.traced(like) or like.shape[-1] > _EYE_CACHE_MAX_N:
            return super().eye(like)
        # (one device: no read of x.device, 1.8 µs, for the key)
        key = (like.shape[-1], like.dtype, None if self.single_device else self.device(like))
        eye = self._eyes.get(key)
        if eye is None:
            eye = self._eyes[key] = super().eye(like)
        return eye

    def _on_cpu(self, x: Any) -> bool:
        try:
            return all(d.platform == "cpu" for d in x.devices())
        except Exception:  # no concrete device
            return False

    def backend(self, x: Any) -> str:
        return jax_backend_name(x)

    def svd(self, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
        # jaxlib's CPU SVD (LAPACK gesdd) loops forever on some non-finite input
        # ([[inf, 1, 0], [1, 3, 1], [0, 1, 4]]), eagerly and under jax.jit alike: such
        # members never reach it (masked_svd), their factors are NaN, and the check
        # below raises eagerly as on every backend (NaN under a trace)
        call = self._masked_svd.get(full_matrices)
        if call is None:
            jax, jnp = self.jax, self.xp
            call = self._masked_svd[full_matrices] = jax.jit(lambda x: masked_svd(jnp, x, full_matrices))
        out = tuple(call(a))
        self._check_svd(a, out[1], "svd")
        return out

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        jnp = self.xp
        return jnp.float32, (jnp.float64 if self.jax.config.read("jax_enable_x64") else jnp.float32)

    def has_int64(self, x: Any) -> bool:
        return bool(self.jax.config.read("jax_enable_x64"))

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        # a list through NumPy, as on every backend: jnp.asarray would read
        # [2**70, 1.0] as floats where NumPy (and so xlinalg) refuses the int
        host = NUMPY.asarray(obj, None, name) if isinstance(obj, (list, tuple)) else obj
        try:
            arr = self.xp.asarray(host)
        except Exception as exc:
            raise NUMPY.host_error(obj, name) or TypeError(
                f"`{name}` could not be converted to a JAX array: {exc}"
            ) from exc
        dev = None if like is None else self.device(like)
        return arr if dev is None else self.jax.device_put(arr, dev)

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def numpy_view(self, x: Any) -> np.ndarray | None:
        # a concrete array on the CPU backend: NumPy reads its buffer in place
        if self.traced(x) or not self._on_cpu(x):
            return None
        try:
            return np.asarray(x)
        except Exception:  # a sharded or deleted array: the library's path
            return None

    def from_numpy_view(self, arr: np.ndarray, like: Any) -> Any:
        # `arr` is a fresh result nobody else holds (the contract): XLA's CPU client
        # aliases a C-ordered host buffer through DLPack instead of copying it (a
        # copy of the whole result: docs/performance.md), and copies one it cannot
        dev = self.device(like)
        if arr.flags.c_contiguous and arr.flags.writeable and getattr(dev, "platform", None) == "cpu":
            try:
                return self.jax.dlpack.from_dlpack(arr, device=dev)
            except (TypeError, ValueError, BufferError, RuntimeError):  # a dtype DLPack cannot carry
                pass
        return self.jax.device_put(arr, dev)

    def stack(self, arrays: list[Any], like: Any = None) -> Any:
        # On the CPU, NumPy reads every array in place (zero-copy) and stacks them in
        # one C loop; jnp.stack dispatches per element (about 3x slower for many small
        # arrays: docs/performance.md). On an accelerator (or under a trace) the
        # stacking stays on the device.
        if self._all_cpu and not any(isinstance(x, self._tracer) for x in arrays):
            if self.fast_device_check and len({self.device(x) for x in arrays}) > 1:
                raise ValueError("the arrays are on different devices")  # solve_many groups them
            return self.asarray(np.array(arrays), arrays[0], "a")
        return self.xp.stack(arrays, axis=0)

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        traced = isinstance(a, self._tracer) or isinstance(b, self._tracer)
        if traced or errors == "nan":
            # One compiled call: the solution with NaN for the singular members and
            # those with NaN or inf input (the rule, _lib/_singular.py). No wait.
            return self._solve_nan[vector](a, b)
        if self._all_cpu and a.size + b.size <= HOST_LOOK_MAX:
            # errors="raise" on the CPU, a small result: the compiled call, then a
            # host-side look at the result (zero-copy; waits for it), cheaper than a
            # second output. Only a non-finite result costs more.
            x = self._solve_cpu(a, b)
            if x is not MISSING:
                return x
        # A large result, an accelerator (or a non-finite result): the solution and
        # the flag "some entry is not finite", reduced inside the compiled call
        # while the result is written; reading the flag waits, and it alone
        # crosses to the host.
        x, nonfinite = self._solve_flagged[vector](a, b)
        if nonfinite.item():
            x = self._confirm(a, b, vector, x)
        return x

    def _confirm(self, a: Any, b: Any, vector: bool, x: Any) -> Any:
        """Some entry of `x` is not finite (errors="raise", eager): the rule's verdict on
        the host, where subnormals are kept (XLA's CPU code flushes them to zero, so
        its LU calls ``1e-310 * I`` singular). Raises for the reported members; where
        XLA NaN'ed a member the host finds regular, the host's solution is returned."""
        ah, bh = self.to_host(a), self.to_host(b)
        bmh = bh[..., None] if vector else bh
        sing, scale = NUMPY.verdict(ah)
        rep = singular_members(np, sing, scale, bmh)
        if rep.any():
            self._raise_singular(rep, tuple(a.shape[:-2]))
        xh = self.to_host(x)
        all_nan = np.isnan(xh).all(axis=-1 if vector else (-2, -1))
        if (all_nan & ~nan_members(np, sing, scale, bmh)).any():
            dev = next(iter(a.devices()))
            return self.jax.device_put(NUMPY.solve(ah, bh, vector, "nan"), dev)
        return x

    def zero_pivots(self, a: Any) -> Any:
        # LAPACK's criterion from the LU factors: a zero pivot. (jnp.linalg.slogdet
        # reports sign 0 for tiny but non-zero determinants, e.g. 1e-300 * I.) XLA's
        # CPU code flushes subnormals to zero (its LU of 1e-310 * I has a zero pivot):
        # on the CPU the factors come from NumPy's LAPACK on a zero-copy host view.
        if not self.traced(a) and (self._all_cpu or self._on_cpu(a)):
            return NUMPY.zero_pivots(np.asarray(a))
        lu = self.jax.lax.linalg.lu(a)[0]
        return self.xp.any(self.xp.diagonal(lu, axis1=-2, axis2=-1) == 0, axis=-1)

    def sigmoid(self, x: Any) -> Any:
        return self.jax.nn.sigmoid(x)


def masked_svd(jnp: Any, x: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
    """``jnp.linalg.svd`` (traced) of the members of `x` that are all finite; the
    others get NaN factors and never reach LAPACK, whose gesdd may not return on
    NaN or inf (see :meth:`JaxAdapter.svd`)."""
    ok = jnp.all(jnp.isfinite(x), axis=(-2, -1))
    u, s, vh = jnp.linalg.svd(jnp.where(ok[..., None, None], x, 0), full_matrices=full_matrices)
    nan = float("nan")
    return (jnp.where(ok[..., None, None], u, nan), jnp.where(ok[..., None], s, nan),
            jnp.where(ok[..., None, None], vh, nan))


def _finite_or_missing(solve: Callable[[Any, Any], Any], one_matrix: bool = False) -> Callable[[Any, Any], Any]:
    """JAX on the CPU: `solve`, then a zero-copy host look at its result (waits for it).

    The result if all finite, else :data:`MISSING`: a zero pivot and NaN in the
    input both give non-finite results, and only the checked program tells them apart.
    :data:`MISSING` too where `solve` refuses the operands (raises, or returns None)
    and, with `one_matrix`, for a stack of matrices: xl.solve's checked path then
    names the argument. With `one_matrix` this is the adapter's ``solve_fast`` (one
    Python frame between xl.solve and the compiled call; the ``ndim`` read is
    cheaper than a cached compiled call that returns None for stacks).
    """

    def call(a: Any, b: Any) -> Any:
        if one_matrix and a.ndim != 2:
            return MISSING
        try:
            x = solve(a, b)
        except Exception:  # xl.solve's checked path re-raises, naming the argument
            return MISSING
        if x is None:
            return MISSING
        try:
            # JAX's CPU arrays export their memory (the buffer protocol; the export
            # waits for the result): a few elements are read as Python numbers
            # without making a NumPy array (a complex one as its real and imaginary
            # parts: the cast reads the parts' format). Their total is finite only
            # if every element is; a total that overflows just takes the slow path.
            # (No `with`: the views are released when the call returns, and the
            # context manager costs as much as it saves.)
            m = memoryview(x)
            if m.nbytes <= _HOST_SUM_BYTES:
                # (the ignore: typeshed's memoryview.cast takes only literal formats)
                return x if cmath.isfinite(sum(m.cast("B").cast(m.format[-1]).tolist())) else MISSING  # type: ignore[call-overload]
        except (TypeError, ValueError, BufferError, NotImplementedError):
            pass  # no export (another layout or device), or a format the cast refuses
        return x if _host_finite(np.asarray(x)) else MISSING

    return call


#: the largest result (bytes) that _finite_or_missing sums as Python numbers
_HOST_SUM_BYTES = 512


def _host_finite(h: np.ndarray) -> bool:
    """Whether a host array is all finite, as cheaply as the size allows (a quick test).

    Small arrays: the Python sum of their elements (no ufunc machinery, cheaper
    than one ufunc call at these sizes; ``cmath`` takes real and complex totals);
    larger ones: one BLAS dot product of non-negative terms. Either way inf or
    NaN anywhere makes the total non-finite and no floating-point warning is
    raised. ``False`` can also mean a huge finite result that overflows the
    total: callers then run their exact check, so that only costs time.
    """
    if h.size <= 64:
        try:  # a vector: no ravel, no dtype or ndim read (the one-system fast path)
            return cmath.isfinite(sum(h.tolist()))
        except TypeError:  # nested lists (a matrix), or a 0-d array's scalar
            return cmath.isfinite(sum(h.ravel().tolist()))
    return math.isfinite(np.vdot(h, h).real)


#: JaxAdapter.solve on the CPU, errors="raise": up to this many elements of `a` and
#: `b` together, the result is checked by a host look, above by a flag computed
#: inside the compiled call (docs/performance.md: where each is cheaper)
HOST_LOOK_MAX = 32768


def _jax_solve_ruled(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> Any:
    """Traced body: the solution, NaN for the members the singular rule names and for
    those with NaN or inf in `a` or `b` (``_lib/_singular.py``): :func:`jax_solve_masked`'s."""
    return jax_solve_masked(jax, jnp, a, b, vector)[0]


def jax_solve_masked(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> tuple[Any, Any]:
    """Traced body: the solution, NaN for the members the singular rule names and for
    those with NaN or inf in `a` or `b` (``_lib/_singular.py``), and the mask of the
    members the rule names whose input is finite (solve_ex's; unused, XLA drops it).

    One factorization, ``lax.linalg.lu`` (what ``jnp.linalg.solve`` runs inside):
    the rule reads its pivots and ``jax.scipy.linalg.lu_solve`` solves with its
    factors (XLA does not merge a second LU beside ``jnp.linalg.solve`` for larger
    matrices: 2× at 200×200, docs/performance.md).
    """
    bm = b[..., None] if vector else b
    lu, piv, _ = jax.lax.linalg.lu(a)
    # lu_solve reads a `b` with one axis fewer than `lu` as a batch of vectors: `b`
    # gets the broadcast batch, so that it is read as matrices (the standard's way)
    batch = jnp.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    x = jax.scipy.linalg.lu_solve((lu, piv), jnp.broadcast_to(bm, (*batch, *bm.shape[-2:])))
    a0 = jax.lax.stop_gradient(a)
    lu = jax.lax.stop_gradient(lu)
    scale = _singular.column_scale(jnp, a0)
    tol = _singular.tolerance(jnp, a.dtype, a.shape[-1])
    sing = _singular.singular_from_pivots(jnp, _singular.diagonal(jnp, lu), scale, tol)
    fin = _singular.finite_members(jnp, scale, jax.lax.stop_gradient(bm))
    x = jnp.where(jnp.logical_or(sing, jnp.logical_not(fin))[..., None, None], jnp.nan, x)
    mask = jnp.broadcast_to(jnp.logical_and(sing, fin), x.shape[:-2])
    return (x[..., 0] if vector else x), mask


def jax_inv_ruled(jax: Any, jnp: Any, x: Any) -> Any:
    """Traced body of ``inv`` of one matrix: :func:`_jax_solve_ruled` of `x` and the
    identity, made in the program (``xlinalg.inv``'s fast path: one argument, no
    cached identity read), the values of the checked path's solve."""
    return _jax_solve_ruled(jax, jnp, x, jnp.eye(x.shape[-1], dtype=x.dtype), False)


def _jax_solve_flagged(jax: Any, jnp: Any, a: Any, b: Any, vector: bool) -> tuple[Any, Any]:
    """Traced body: :func:`_jax_solve_ruled` and whether any of its entries is not finite.

    The barrier makes XLA reduce the written solution rather than fuse a second
    copy of the solve into the reduction.
    """
    x = _jax_solve_ruled(jax, jnp, a, b, vector)
    nonfinite = ~jnp.all(jnp.isfinite(jax.lax.optimization_barrier(x)))
    return x, nonfinite


def jax_backend_name(x: Any) -> str:
    """``"jax-cpu"`` or ``"jax-gpu"``: where JAX array `x` lies (a tracer: where JAX
    runs the trace by default, so ``method="auto"`` picks by the same rules under
    ``jax.jit`` as outside it)."""
    try:
        platforms = {d.platform for d in x.devices()}
    except Exception:  # traced: no concrete device
        return traced_backend_name(x)
    return "jax-cpu" if platforms == {"cpu"} else "jax-gpu"


def traced_backend_name(x: Any) -> str:
    """The backend id of a traced array: where JAX runs the trace by default."""
    import jax

    return "jax-cpu" if jax.default_backend() == "cpu" else "jax-gpu"


def _every_jax_device(jax: Any) -> list[Any]:
    """The devices of every JAX backend of this process (the CPU's included)."""
    try:
        from jax.extend.backend import backends

        return [d for name in backends() for d in jax.devices(name)]
    except Exception:  # a JAX without it: the default backend's
        return list(jax.devices())


def jax_cpu_only() -> bool:
    """Whether the only JAX backend of this process is the CPU (then every array is jax-cpu)."""
    try:
        from jax.extend.backend import backends

        return set(backends()) == {"cpu"}
    except Exception:  # a JAX without it: ask each array
        return False
