"""Test your own portable code on every installed array library.

``xlinalg.testing`` is the kit xlinalg's own test-suite runs on, made public:

* a **pytest plugin** (registered through the ``pytest11`` entry point when
  xlinalg is installed, or loaded with ``pytest -p xlinalg.testing``). A test
  that takes the fixture ``xp`` runs once per backend, with ``xp`` the
  backend's array API namespace (array-api-compat's wrapper where the library
  needs one, as array-api-extra names it). A backend that cannot run here is
  skipped with the registry's reason; ``--xlinalg-backends=numpy,dask`` or
  ``XLINALG_TEST_BACKENDS`` chooses backends; GPU backends carry the ``gpu``
  marker (``-m "not gpu"`` leaves them out);
* :func:`assert_close`, which checks library, device, dtype, shape and values
  and says which of these differs, and where;
* :func:`assert_trace_safe` and :func:`assert_lazy_safe`, which prove a
  function runs under ``jax.jit`` and builds a Dask graph without computing;
* ``--xlinalg-doctest-xp=ID``: doctests see ``xp``, the namespace of backend
  ``ID``, so that examples written with ``xp`` run on each backend in turn.

Importing this module imports neither pytest nor any array library but NumPy;
the fixtures live in ``xlinalg.testing._plugin``, registered when pytest
configures the plugin. Its assertions write their own messages, so pytest is
told not to rewrite it (``PYTEST_DONT_REWRITE``): a conftest may import it
before pytest loads it as a plugin.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import backends as _registry
from ._select import ENV_BACKENDS as ENV_BACKENDS
from ._select import ENV_REQUIRE_CPU as ENV_REQUIRE_CPU
from ._select import resolve_backend as resolve_backend
from ._select import selected_backends

__all__ = [
    "LazyComputeError",
    "assert_close",
    "assert_lazy_safe",
    "assert_trace_safe",
    "default_tolerance",
    "selected_backends",
]

# ---------------------------------------------------------------------- assert_close
def default_tolerance(dtype: Any) -> tuple[float, float]:
    """The default ``(rtol, atol)`` of :func:`assert_close` for results in `dtype`.

    ``rtol`` is ``4 * sqrt(eps)`` of the dtype (array-api-extra's rule): 6e-8 for
    float64 and complex128, 1.4e-3 for float32 and complex64, 0.13 for float16
    (and torch's complex32). bfloat16 and the other ml_dtypes floats (float8_*)
    take ``2 * eps``: 1.6e-2 for bfloat16, torch.testing's default (values one
    unit in the last place apart are close). Integers and booleans compare
    exactly. ``atol`` equals ``rtol``; :func:`assert_close` scales it by the
    largest finite ``|expected|`` (at least 1).

    Parameters
    ----------
    dtype : dtype or str
        A NumPy dtype, or anything ``numpy.dtype`` accepts (``"float32"``).

    Returns
    -------
    tuple of float
        ``(rtol, atol)``.

    Examples
    --------
    >>> from xlinalg.testing import default_tolerance
    >>> default_tolerance("float32")
    (0.0013810679...)
    >>> default_tolerance("int64")
    (0.0, 0.0)
    """
    dt = _np_dtype(dtype)
    if _low_float(dt):
        import ml_dtypes

        rtol = 2 * float(ml_dtypes.finfo(dt).eps)
        return rtol, rtol
    if dt.kind not in "fc":
        return 0.0, 0.0
    rtol = 4 * float(np.finfo(dt).eps) ** 0.5
    return rtol, rtol


def _np_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of `dtype`, also another library's (``torch.bfloat16``):
    ml_dtypes' for bfloat16 and float8, float16 for torch's complex32 (its parts)."""
    if isinstance(dtype, np.dtype):
        return dtype
    name = dtype if isinstance(dtype, str) else str(dtype).rsplit(".", 1)[-1]
    if name == "complex32":
        return np.dtype(np.float16)
    for candidate in (dtype, name):
        try:
            return np.dtype(candidate)
        except TypeError:
            pass
    import ml_dtypes  # bfloat16, float8_e4m3fn, ...: NumPy knows them from ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def _ml_dtype(dt: np.dtype) -> str:
    """``"f"`` for ml_dtypes' floats (bfloat16, float8_*), ``"i"`` for its integers
    (int4, ...), else ``""``: NumPy stores them as kind "V" and has no finfo of them."""
    if dt.kind != "V" or dt.names is not None or dt.type.__module__.partition(".")[0] != "ml_dtypes":
        return ""
    return "f" if "float" in dt.name else "i"


def _low_float(dt: np.dtype) -> bool:
    return _ml_dtype(dt) == "f"


def _tolerance(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Real):
        raise TypeError(f"assert_close: `{name}` must be a number >= 0, got {type(value).__name__} {value!r}")
    v = float(value)
    if not v >= 0:  # (NaN fails this too)
        raise ValueError(
            f"assert_close: `{name}` must be a number >= 0, got {value!r}: a negative or NaN "
            "tolerance would make every comparison fail, or pass unchecked"
        )
    return v


def _backend_id(x: Any, what: str) -> str:
    try:
        return _registry.backend_of(x)
    except TypeError:
        raise AssertionError(
            f"{what} is not an array of a known backend: {type(x).__module__}.{type(x).__qualname__} "
            "(build it with xp.asarray(...))"
        ) from None


def _device(x: Any) -> str:
    import array_api_compat

    try:
        return str(array_api_compat.device(x))
    except Exception:  # a library without a device notion: nothing to compare
        return ""


def _host(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if str(x.dtype) == "torch.complex32":  # NumPy has no complex32: complex64 holds it exactly
        import torch

        x = x.to(torch.complex64)
    return np.asarray(_registry.get_backend(name).to_numpy(x))


def _fmt_index(idx: tuple[int, ...]) -> str:
    return "()" if not idx else "(" + ", ".join(str(int(i)) for i in idx) + ("," if len(idx) == 1 else "") + ")"


def compare_values(
    got: np.ndarray,
    exp: np.ndarray,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    scale: float | None = None,
    header: str = "values differ",
) -> None:
    """Assert two NumPy arrays of one shape are close; the message says where not.

    `rtol` and `atol` default to :func:`default_tolerance` of ``got.dtype``; with
    `rtol` given and `atol` not, ``atol = rtol``. ``atol`` is multiplied by
    `scale`, by default the largest finite ``|exp|`` (at least 1). Integers
    compare exactly (as integers, never through float64) where both arrays hold
    integers and both tolerances are 0. A complex NaN equals only a complex NaN
    with its NaNs in the same parts and its other part close: ``nan+1j`` is not
    ``nan+5j`` (``numpy.isclose`` would call them equal).
    """
    r0, _ = default_tolerance(got.dtype)
    rtol = r0 if (rtol := _tolerance(rtol, "rtol")) is None else rtol
    atol = rtol if (atol := _tolerance(atol, "atol")) is None else atol
    # ml_dtypes' arrays as NumPy's own ufuncs take them: float32, int64 (values exact)
    got, exp = (x.astype({"f": np.float32, "i": np.int64}[k]) if (k := _ml_dtype(x.dtype)) else x
                for x in (got, exp))
    if got.dtype.kind in "biu" and exp.dtype.kind in "biu" and rtol == 0 and atol == 0:
        _compare_exact(got, exp, header)
        return
    if scale is None:
        finite = np.abs(exp[np.isfinite(exp)]) if exp.size else exp
        scale = float(np.max(finite)) if finite.size else 1.0
    bound = atol * max(scale, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.isclose(got, exp, rtol=rtol, atol=bound, equal_nan=equal_nan)
        # isclose calls inf == inf close, and so do we; it needs the values to be exact
        if got.dtype.kind == "c" or exp.dtype.kind == "c":
            ok &= _same_nan_parts(got, exp, rtol, bound)
    if bool(np.all(ok)):
        return
    bad = np.argwhere(~ok) if got.ndim else np.zeros((1, 0), dtype=np.intp)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64) - exp)
    diff = np.where(ok, 0.0, np.nan_to_num(diff, nan=np.inf))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), got.shape)) if got.ndim else ()
    g, e = got[worst].item(), exp[worst].item()
    lines = [
        f"{header} at {len(bad)} of {max(got.size, 1)} position(s) "
        f"(rtol={rtol:.3g}, atol={atol:.3g} x {max(scale, 1.0):.3g} = {bound:.3g})",
        f"  worst at index {_fmt_index(worst)}: actual {g!r}, expected {e!r}, |difference| {diff[worst]:.3g}",
    ]
    if len(bad) > 1:
        shown = ", ".join(_fmt_index(tuple(b)) for b in bad[:5])
        lines.append(f"  first differing indices: {shown}{', ...' if len(bad) > 5 else ''}")
    raise AssertionError("\n".join(lines))


def _same_nan_parts(got: np.ndarray, exp: np.ndarray, rtol: float, bound: float) -> np.ndarray:
    """Where either complex value holds a NaN: its NaNs in the same parts, its other
    parts close (isclose calls every complex NaN equal: nan+1j and nan+5j)."""
    gr, gi, er, ei = np.real(got), np.imag(got), np.real(exp), np.imag(exp)
    nan = np.isnan(gr) | np.isnan(gi) | np.isnan(er) | np.isnan(ei)
    same = (np.isnan(gr) == np.isnan(er)) & (np.isnan(gi) == np.isnan(ei))
    parts = np.isclose(gr, er, rtol=rtol, atol=bound, equal_nan=True) & np.isclose(
        gi, ei, rtol=rtol, atol=bound, equal_nan=True)
    return np.asarray(~nan | (same & parts))


def _compare_exact(got: np.ndarray, exp: np.ndarray, header: str) -> None:
    """Integers (and booleans) equal as integers: int64 ``2**62 + 1`` is not ``2**62``
    (through float64 they were), uint64 and int64 compared by value."""
    g, e = np.broadcast_arrays(got.astype(object), exp.astype(object))
    ok = np.asarray(g == e, dtype=bool) if g.size else np.ones(g.shape, bool)
    if bool(np.all(ok)):
        return
    bad = np.argwhere(~ok) if g.ndim else np.zeros((1, 0), dtype=np.intp)
    first = tuple(int(i) for i in bad[0])
    lines = [
        f"{header} at {len(bad)} of {max(g.size, 1)} position(s) (rtol=0, atol=0: integers compare exactly)",
        f"  first at index {_fmt_index(first)}: actual {g[first]!r}, expected {e[first]!r}, "
        f"|difference| {abs(int(g[first]) - int(e[first]))}",
    ]
    if len(bad) > 1:
        shown = ", ".join(_fmt_index(tuple(b)) for b in bad[:5])
        lines.append(f"  first differing indices: {shown}{', ...' if len(bad) > 5 else ''}")
    raise AssertionError("\n".join(lines))


def assert_close(
    actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None
) -> None:
    """Assert `actual` is `expected`: same library, device, dtype, shape; close values.

    Both must be arrays of the same backend (build `expected` with the test's
    ``xp``). The checks run in that order and the first that fails raises an
    ``AssertionError`` saying which property differs; for values it says how
    many elements differ, the worst index and both values there. Dask arrays are
    computed, device arrays copied to the host, only to compare the values.

    Parameters
    ----------
    actual, expected : array
        Arrays of any backend xlinalg knows (:data:`xlinalg.BACKEND_NAMES`).
    rtol : float, optional
        Relative tolerance, a number >= 0 (a negative or NaN one raises
        ValueError). Default: :func:`default_tolerance` of the dtype
        (``4 * sqrt(eps)``, bfloat16 ``2 * eps``; integers and booleans exactly,
        int64 and uint64 as integers).
    atol : float, optional
        Absolute tolerance, multiplied by the largest finite ``|expected|`` (at
        least 1), so that it is relative to the size of the result. Default:
        ``rtol``. NaN equals NaN; infinities must match; a complex NaN equals a
        complex NaN with NaNs in the same parts and the other part close
        (``nan+1j`` is not ``nan+5j``).

    Raises
    ------
    AssertionError
        Naming what differs: library, device, dtype, shape or values.

    Examples
    --------
    >>> import numpy as xp
    >>> from xlinalg.testing import assert_close
    >>> assert_close(xp.asarray([1.0, 2.0]), xp.asarray([1.0, 2.0 + 1e-12]))
    >>> assert_close(xp.asarray([1.0, 2.0]), xp.asarray([1.0, 2.5]))
    Traceback (most recent call last):
    ...
    AssertionError: values differ at 1 of 2 position(s) (rtol=5.96e-08, atol=5.96e-08 x 2.5 = 1.49e-07)
      worst at index (1,): actual 2.0, expected 2.5, |difference| 0.5
    >>> assert_close(xp.asarray([1.0, 2.0], dtype=xp.float32), xp.asarray([1.0, 2.0]))
    Traceback (most recent call last):
    ...
    AssertionError: dtype differs: actual float32, expected float64
    """
    la, le = _backend_id(actual, "actual"), _backend_id(expected, "expected")
    if la != le:
        raise AssertionError(
            f"library differs: actual is a {la} array, expected a {le} array "
            "(make expected with the same xp, or convert it with xlinalg.to)"
        )
    da, de = _device(actual), _device(expected)
    if da != de:
        raise AssertionError(f"device differs: actual is on {da}, expected on {de}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"dtype differs: actual {actual.dtype}, expected {expected.dtype}")
    rtol, atol = _tolerance(rtol, "rtol"), _tolerance(atol, "atol")  # (before any work)
    got, exp = _host(actual, la), _host(expected, le)  # Dask: shapes are known once computed
    if got.shape != exp.shape:
        raise AssertionError(f"shape differs: actual {got.shape}, expected {exp.shape}")
    if rtol is None:  # the dtype's own, also where the host copy is wider (complex32)
        rtol = default_tolerance(actual.dtype)[0]
    compare_values(got, exp, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------- trace-safe
def _leaves(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    if isinstance(out, dict):
        return [leaf for k in _sorted_keys(out) for leaf in _leaves(out[k])]
    return [out]


def _sorted_keys(d: dict[Any, Any]) -> list[Any]:
    """A dict's keys in the order JAX flattens them (sorted), or a TypeError naming
    the key types where they cannot be sorted (``{1: x, "a": y}``)."""
    try:
        return sorted(d)
    except TypeError:
        kinds = sorted({type(k).__name__ for k in d})
        raise TypeError(
            f"a returned dict has keys of types {', '.join(kinds)}, which cannot be sorted: "
            "jax.jit flattens a dict by its sorted keys, so it supports dicts whose keys are "
            "all of one orderable type (all str, or all int); return a list, a tuple or such a dict"
        ) from None


def _is_array(a: Any) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype")


def _jax_target() -> str:
    return "jax-gpu" if _registry.get_backend("jax-gpu").is_available() else "jax-cpu"


def assert_trace_safe(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Assert `func` runs under ``jax.jit`` and gives what it gives eagerly.

    The array arguments (NumPy arrays are moved to JAX first) are traced; other
    positional arguments and every keyword argument are held fixed (static). A
    function that needs a concrete value of a traced array (``bool(x)``,
    ``float(x)``, Python ``if`` on an array, ``np.asarray(x)``) is not
    trace-safe: the ``AssertionError`` says which operation needed a value.

    Parameters
    ----------
    func : callable
        The function under test.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object
        What the compiled function returned (JAX arrays).

    Raises
    ------
    AssertionError
        If tracing fails for want of a concrete value, the result is a dict
        whose keys cannot be sorted (``{1: x, "a": y}``: jax.jit flattens dicts
        by sorted keys), or the compiled result is not :func:`assert_close` to
        the eager one.

    Notes
    -----
    JAX runs in its 64-bit mode during the call (``jax.enable_x64``), and in
    the caller's mode again after it: the call changes no global setting.
    """
    import jax

    target = _registry.get_backend(_jax_target())
    target.require()
    # 64-bit mode (float64 means float64) for this call only: the caller's mode is
    # restored on the way out, so tests do not depend on the order they run in
    with jax.enable_x64(True):
        return _trace_safe(jax, target, func, args, kwargs)


def _trace_safe(jax: Any, target: Any, func: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    args = tuple(target.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)
    traced_at = [i for i, a in enumerate(args) if isinstance(a, jax.Array)]

    def with_arrays(*arrays: Any) -> Any:
        full = list(args)
        for i, a in zip(traced_at, arrays):
            full[i] = a
        return func(*full, **kwargs)

    name = getattr(func, "__qualname__", repr(func))
    eager = func(*args, **kwargs)
    try:
        want = _leaves(eager)
    except TypeError as exc:
        raise AssertionError(f"{name} is not trace-safe: {exc}") from None
    unsafe = (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerArrayConversionError,
        jax.errors.TracerBoolConversionError,
        jax.errors.TracerIntegerConversionError,
    )
    try:
        compiled = jax.jit(with_arrays)(*(args[i] for i in traced_at))
    except unsafe as exc:
        first = str(exc).strip().splitlines()[0]
        raise AssertionError(
            f"{name} is not trace-safe: under jax.jit it needed the value of a traced array "
            f"({type(exc).__name__}: {first}). Keep Python control flow and conversions "
            "(bool, float, int, np.asarray) off array values, or use xp.where."
        ) from exc
    got = _leaves(compiled)
    if len(got) != len(want):
        raise AssertionError(f"{name} returned {len(got)} value(s) under jax.jit, {len(want)} eagerly")
    for g, w in zip(got, want):
        if _is_array(g) or _is_array(w):
            assert_close(g, w)
    return compiled


# ---------------------------------------------------------------------- lazy-safe
class LazyComputeError(RuntimeError):
    """Raised by the scheduler of :func:`assert_lazy_safe` when a graph is computed."""


def _refuse(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    raise LazyComputeError(
        "it computed a Dask graph while building its result "
        "(compute, persist, bool/float/int of an array, np.asarray, or a value read)"
    )


def _dask_leaves(out: Iterable[Any]) -> list[Any]:
    return [leaf for leaf in out if _is_array(leaf)]


def assert_lazy_safe(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Assert `func` builds its result on Dask arrays without computing anything.

    `func` runs with a Dask scheduler that refuses to run (NumPy array
    arguments are made Dask arrays first): any ``compute``, ``persist``,
    ``bool(x)``, ``float(x)``, ``np.asarray(x)`` or other read of a value while
    the graph is built fails the assertion. Every array `func` returns must be a
    Dask array. A scheduler named explicitly inside `func`
    (``x.compute(scheduler="threads")``) is not intercepted.

    Parameters
    ----------
    func : callable
        The function under test.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object
        What `func` returned, still lazy: compute it (or compare it with
        :func:`assert_close`) to check its values.

    Raises
    ------
    AssertionError
        If `func` computed while building, or returned a non-Dask array.
    """
    import dask

    target = _registry.get_backend("dask")
    target.require()
    args = tuple(target.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args)
    name = getattr(func, "__qualname__", repr(func))
    with dask.config.set(scheduler=_refuse):
        try:
            out = func(*args, **kwargs)
        except LazyComputeError as exc:
            raise AssertionError(f"{name} is not lazy-safe: {exc}") from exc
    for leaf in _dask_leaves(_leaves(out)):
        if not target.owns(leaf):
            raise AssertionError(
                f"{name} is not lazy-safe: it returned a {type(leaf).__module__}."
                f"{type(leaf).__qualname__}, not a Dask array (it computed, or left Dask)"
            )
    return out


# ---------------------------------------------------------------------- pytest hooks
# Plain functions: pytest calls them when it loads this module as a plugin
# (entry point ``pytest11``, or ``-p xlinalg.testing``). The fixtures need
# pytest itself, so they live in ``_plugin`` and are registered here.
def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("xlinalg", "xlinalg.testing: run tests on every array library")
    group.addoption(
        "--xlinalg-backends",
        default=None,
        metavar="IDS",
        help="comma-separated backend ids (or all, cpu, gpu) the xp fixture runs on; "
        f"default: ${ENV_BACKENDS}, else every backend",
    )
    group.addoption(
        "--xlinalg-require-cpu",
        action="store_true",
        default=False,
        help=f"fail, not skip, when a CPU backend cannot run (also ${ENV_REQUIRE_CPU}=1)",
    )
    group.addoption(
        "--xlinalg-doctest-xp",
        default=None,
        metavar="ID",
        help="doctests get xp, the namespace of this backend (run once per backend "
        "to check examples written with xp on each)",
    )


def pytest_configure(config: Any) -> None:
    from . import _plugin

    config.addinivalue_line("markers", "gpu: runs on a GPU backend (deselect with -m 'not gpu')")
    if not config.pluginmanager.has_plugin(_plugin.NAME):
        config.pluginmanager.register(_plugin, _plugin.NAME)
    _plugin.configure(config)
