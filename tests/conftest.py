"""Shared fixtures: every test that takes ``backend`` runs once per backend id.

* The ids are :data:`xlinalg.BACKEND_NAMES` (numpy, torch-cpu, torch-cuda, cupy,
  jax-cpu, jax-gpu, dask, array-api-strict). ``XLINALG_TEST_BACKENDS=numpy,dask``
  narrows the set; an unknown id is an error (it lists the valid ones).
* A backend that cannot run here is *skipped with the registry's reason*
  (``Backend.unavailable_reason()``, e.g. "no CUDA device is visible"). With
  ``XLINALG_REQUIRE_CPU_BACKENDS=1`` (or ``CI`` set) an unavailable CPU backend
  fails instead: CI must really run numpy, torch-cpu, jax-cpu, dask and
  array-api-strict.
* JAX runs in 64-bit mode (``JAX_ENABLE_X64=1`` is set before JAX is imported,
  and ``jax_enable_x64`` before any array is made), so float64 means float64.
* Values are compared with NumPy float64 references through
  :meth:`BackendCase.assert_close`, with tolerances that follow the dtype.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

# Before anything can import JAX: 64-bit mode (JAX reads this at import).
os.environ.setdefault("JAX_ENABLE_X64", "1")

from hypothesis import HealthCheck, settings

import xlinalg as xl
from xlinalg import backends as _registry

settings.register_profile(
    "xlinalg",
    deadline=None,  # JAX compiles on first sight of a shape; no per-example deadline
    max_examples=20,
    derandomize=True,  # the same examples in every run (CI is reproducible)
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("XLINALG_HYPOTHESIS_PROFILE", "xlinalg"))

GPU_BACKENDS = frozenset(n for n in xl.BACKEND_NAMES if _registry.get_backend(n).gpu)
CPU_BACKENDS = tuple(n for n in xl.BACKEND_NAMES if n not in GPU_BACKENDS)


def selected_backends() -> tuple[str, ...]:
    """The backend ids to test: all, or those in ``XLINALG_TEST_BACKENDS``."""
    raw = os.environ.get("XLINALG_TEST_BACKENDS", "").strip()
    if not raw:
        return tuple(xl.BACKEND_NAMES)
    names = [n.strip().strip("'\"[] ") for n in raw.split(",")]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in xl.BACKEND_NAMES]
    if unknown:
        raise ValueError(
            f"XLINALG_TEST_BACKENDS names unknown backend(s) {unknown}; "
            f"valid: {', '.join(xl.BACKEND_NAMES)}"
        )
    return tuple(n for n in xl.BACKEND_NAMES if n in names)


SELECTED = selected_backends()


def _require_cpu() -> bool:
    return bool(os.environ.get("XLINALG_REQUIRE_CPU_BACKENDS") or os.environ.get("CI"))


def _setup(name: str) -> None:
    """Per-library configuration, done once before the first array is made."""
    if name.startswith("jax"):
        import jax

        jax.config.update("jax_enable_x64", True)


def require_backend(name: str) -> _registry.Backend:
    """The registry backend `name`, or skip (fail, for a CPU backend in CI) with its reason."""
    be = _registry.get_backend(name)
    reason = be.unavailable_reason()
    if reason is not None:
        if name in CPU_BACKENDS and _require_cpu():
            pytest.fail(f"{name} must run here (XLINALG_REQUIRE_CPU_BACKENDS/CI) but: {reason}")
        pytest.skip(f"{name}: {reason}")
    _setup(name)
    return be


# ---------------------------------------------------------------------- tolerances
def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for results computed in `dtype`, against a float64 reference."""
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        return 0.0, 0.0
    # float64: 6e-8, float32: 1.4e-3, float16: 0.13 (array-api-extra's rule)
    rtol = 4 * float(np.finfo(dt).eps) ** 0.5
    return rtol, rtol


def np_dtype_of(x: Any) -> np.dtype:
    """The NumPy dtype equivalent to the dtype of `x` (of any backend)."""
    dt = x.dtype
    if isinstance(dt, np.dtype):
        return dt
    return np.dtype(str(dt).rsplit(".", 1)[-1])


class BackendCase:
    """One backend in a test: make arrays, bring them back, compare with NumPy."""

    def __init__(self, name: str, be: _registry.Backend) -> None:
        self.name = name
        self.be = be
        self.lazy = be.lazy
        self.gpu = be.gpu

    def __repr__(self) -> str:
        return f"BackendCase({self.name})"

    @property
    def library(self) -> str:
        return self.name.split("-")[0] if self.name != "array-api-strict" else self.name

    def has_dtype(self, dtype: Any) -> bool:
        """Whether this backend has arrays of NumPy dtype `dtype` (strict: no float16)."""
        return not (self.name == "array-api-strict" and np.dtype(dtype) == np.float16)

    def arr(self, a: Any, dtype: Any = None) -> Any:
        """An array of this backend holding ``np.asarray(a, dtype)`` (a copy)."""
        host = np.asarray(a, dtype=dtype)
        return self.be.from_numpy(host)

    def np(self, x: Any) -> np.ndarray:
        """`x` as a NumPy array (computes Dask graphs, waits for devices)."""
        if isinstance(x, np.ndarray):
            return x
        if np.isscalar(x):
            return np.asarray(x)
        return np.asarray(_registry.get_backend(xl.backend_of(x)).to_numpy(x))

    def namespace(self) -> Any:
        return self.be.namespace()

    def check_owned(self, x: Any) -> None:
        """`x` is an array of this backend (library and device)."""
        assert xl.backend_of(x) == self.name, f"result is {xl.backend_of(x)}, not {self.name}"

    def assert_close(
        self,
        actual: Any,
        expected: Any,
        *,
        dtype: Any = None,
        rtol: float | None = None,
        atol: float | None = None,
        owned: bool = True,
        equal_nan: bool = False,
        scale: float | None = None,
    ) -> np.ndarray:
        """`actual` (this backend) equals `expected` (NumPy, float64) within tolerance.

        Checks the backend, the shape and (if given) the dtype, then the values with
        ``rtol`` and an ``atol`` relative to the size of `expected`.
        """
        if owned:
            self.check_owned(actual)
        got = self.np(actual)
        exp = np.asarray(expected)
        assert got.shape == exp.shape, f"shape {got.shape} != expected {exp.shape}"
        if dtype is not None:
            assert got.dtype == np.dtype(dtype), f"dtype {got.dtype} != expected {np.dtype(dtype)}"
        r0, a0 = tolerance(got.dtype)
        rtol = r0 if rtol is None else rtol
        atol = a0 if atol is None else atol
        if scale is None:
            finite = exp[np.isfinite(exp)] if exp.size else exp
            scale = float(np.max(np.abs(finite))) if finite.size else 1.0
        np.testing.assert_allclose(
            got, exp, rtol=rtol, atol=atol * max(scale, 1.0), equal_nan=equal_nan
        )
        return got


@pytest.fixture(params=SELECTED, ids=list(SELECTED))
def backend(request: pytest.FixtureRequest) -> BackendCase:
    """Each test taking this fixture runs once per backend id (skipped with a reason)."""
    name = request.param
    return BackendCase(name, require_backend(name))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260303)


@pytest.fixture
def no_warnings() -> Iterator[None]:
    """Fail on any warning raised inside the test body."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """Random square matrices (stack) with condition number O(1): randn + n·I."""
    n = shape[-1]
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a + 2 * n**0.5 * np.eye(n) if n else a
    return a.astype(dtype)


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def raises_at_compute(bk: BackendCase, fn: Callable[[], Any]) -> Any:
    """Call `fn` and bring its result back (Dask errors surface at compute)."""
    out = fn()
    if isinstance(out, tuple):
        return tuple(bk.np(o) for o in out)
    return bk.np(out)
