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

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import backends as _registry
from .._lib._compare import check_tolerance, compare_values
from .._lib._compare import default_tolerance as default_tolerance
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
    rtol, atol = check_tolerance(rtol, "rtol"), check_tolerance(atol, "atol")  # (before any work)
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

    target = _registry.default_backend("jax")  # JAX's default device: its GPU where it has one
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
