"""Shared fixtures: every test that takes ``backend`` runs once per backend id.

The parametrization is the public kit's (:mod:`xlinalg.testing`, the plugin users
load): ``backend`` wraps its ``xlinalg_backend`` fixture, so our tests and users'
``xp`` tests choose, skip and fail backends by the same rules.

* The ids are :data:`xlinalg.BACKEND_NAMES` (the registry's, in its order).
  ``XLINALG_TEST_BACKENDS=numpy,dask`` narrows the set; an unknown id is an error (it lists the valid ones).
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

import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Before anything can import JAX: 64-bit mode (JAX reads this at import).
os.environ.setdefault("JAX_ENABLE_X64", "1")

from hypothesis import HealthCheck, settings

import xlinalg as xl
import xlinalg.study
from xlinalg import backends as _registry
from xlinalg._lib._env import FALSE, env_flag
from xlinalg.testing import (
    ENV_REQUIRE_CPU,
    compare_values,
    default_tolerance,
    resolve_backend,
    selected_backends,
)

#: The fixtures ``xp``, ``xlinalg_backend`` and the backend options come from the
#: public kit (also registered through the ``pytest11`` entry point when installed).
pytest_plugins = ("xlinalg.testing",)

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

#: The backend ids to test: all, or those in ``XLINALG_TEST_BACKENDS`` (an unknown
#: id fails here, at import, listing the valid ones). Modules that parametrize at
#: import read this; the ``backend`` fixture follows the kit's choice, which is
#: the same unless ``--xlinalg-backends`` narrows it further.
SELECTED = selected_backends()


def _require_cpu() -> bool:
    # CI systems set CI to "true" (or their own name): set and not a false spelling
    ci = os.environ.get("CI", "").strip().lower() not in ("", *FALSE)
    return env_flag(ENV_REQUIRE_CPU) or ci


def pytest_configure(config: pytest.Config) -> None:
    # In CI every CPU backend must really run: the kit's fixture fails, not skips.
    if _require_cpu():
        config.option.xlinalg_require_cpu = True


def skip_reasons(reports: list[Any]) -> list[tuple[str, int]]:
    """Skipped test reports grouped by their reason alone (pytest's ``-rs`` groups by
    reason *and* place: one GPU backend's reason printed once per test function), most
    frequent first."""
    counts: dict[str, int] = {}
    for rep in reports:
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Skips once per reason, with their count (pyproject's ``-r`` leaves ``s`` out)."""
    reports = terminalreporter.stats.get("skipped", [])
    if not reports:
        return
    terminalreporter.write_sep("=", "skipped tests, by reason")
    for reason, n in skip_reasons(reports):
        terminalreporter.write_line(f"{n:5d} x {reason}")


def require_backend(name: str) -> _registry.Backend:
    """The registry backend `name`, or skip (fail, for a CPU backend in CI) with its reason."""
    return resolve_backend(name, require_cpu=_require_cpu())



def benchmark_script(name: str) -> Any:
    """``benchmarks/<name>`` loaded as a module (the scripts are not a package)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / name
    spec = importlib.util.spec_from_file_location(f"benchmarks_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # a dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def kernel_input_converter(name: str, dtype: str) -> Any:
    """How a test hands NumPy data to `name`, one of the backends whose eager CPU
    arrays the numba kernel solves through NumPy views (numpy, torch-cpu, jax-cpu):
    ``np.asarray``, ``torch.from_numpy`` (the same memory) or ``jnp.asarray``; skips
    with the reason where the backend is absent or JAX's 64-bit mode is off."""
    if name == "numpy":
        return np.asarray
    require_backend(name)
    if name == "torch-cpu":
        import torch

        return torch.from_numpy
    import jax
    import jax.numpy as jnp

    if dtype == "float64" and not jax.config.read("jax_enable_x64"):
        pytest.skip("JAX's 64-bit mode is off")
    return jnp.asarray

# ---------------------------------------------------------------------- tolerances
#: (rtol, atol) for results computed in a dtype, against a float64 reference
tolerance = default_tolerance


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
        """The library's key in the registry (``"torch"`` for torch-cpu and torch-cuda)."""
        return self.be.library or self.name

    def has_dtype(self, dtype: Any) -> bool:
        """Whether this backend has arrays of NumPy dtype `dtype` (the backend's own
        answer: array-api-strict has no float16)."""
        return self.be.convert.dtype_refusal(np.dtype(dtype).name) is None

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
        compare_values(got, exp, rtol=rtol, atol=atol, equal_nan=equal_nan, scale=scale)
        return got


@pytest.fixture
def backend(xlinalg_backend: _registry.Backend) -> BackendCase:
    """Each test taking this fixture runs once per backend id (skipped with a reason).

    The parametrization, the skip with the registry's reason and the CI failure
    are the kit's (:mod:`xlinalg.testing`), as for a user's ``xp`` fixture.
    """
    return BackendCase(xlinalg_backend.name, xlinalg_backend)


@pytest.fixture(autouse=True)
def _bench_case_registry() -> Iterator[None]:
    """Cases a test registers (directly or through a case file loaded in-process)
    leave the benchmark's registry with the test: tests that read every built-in
    case must not see them, whatever order the tests ran in."""
    from xlinalg.bench import _cases

    saved = dict(_cases._CASES)
    yield
    _cases._CASES.clear()
    _cases._CASES.update(saved)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260303)


@pytest.fixture
def no_warnings() -> Iterator[None]:
    """Fail on any warning raised inside the test body."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def solve_record(size: int = 5) -> dict[str, Any]:
    """A minimal valid results record (numpy solve of `size`), for store and resume tests."""
    from xlinalg.bench import cell_key

    return {"key": cell_key("solve", "numpy", "float64", str(size)), "case": "solve",
            "backend": "numpy", "dtype": "float64", "size": size, "size_label": str(size),
            "status": "ok"}


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
