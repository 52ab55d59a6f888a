"""xlinalg.testing, the kit users test their own portable code with (and so do we).

The plugin is exercised with pytest's ``pytester``: in-process runs share this
process's backend registry (so a backend can be made "unavailable" with
monkeypatch); subprocess runs prove what gets imported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xlinalg as xl
from xlinalg import backends as registry
from xlinalg.testing import assert_close, assert_lazy_safe, assert_trace_safe, selected_backends

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[2]
CPU = [n for n in xl.BACKEND_NAMES if not registry.get_backend(n).gpu]
GPU = [n for n in xl.BACKEND_NAMES if registry.get_backend(n).gpu]

USER_TEST = """
import xlinalg as xl
from xlinalg.testing import assert_close

def test_solve(xp, xlinalg_backend):
    A = xp.asarray([[2.0, 0.0], [0.0, 4.0]], dtype=xp.float64)
    x = xl.solve(A, xp.asarray([2.0, 4.0], dtype=xp.float64))
    assert xl.backend_of(x) == xlinalg_backend.name
    assert x.dtype == xp.float64  # JAX runs in 64-bit mode
    assert_close(x, xp.asarray([1.0, 1.0], dtype=xp.float64))
"""


@pytest.fixture(scope="module", autouse=True)
def _libraries_imported_first() -> None:
    # pytester's in-process runs forget the modules imported after its fixture was
    # set up (torch cannot be imported twice, xlinalg's caches would hold forgotten
    # modules): import every installed library before any pytester fixture.
    for n in CPU:
        if registry.get_backend(n).is_available():
            registry.get_backend(n).namespace()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("XLINALG_TEST_BACKENDS", "XLINALG_REQUIRE_CPU_BACKENDS", "XLINALG_ALLOW_NO_BACKEND", "CI"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def _unavailable(monkeypatch: pytest.MonkeyPatch, name: str, reason: str) -> None:
    be = registry.get_backend(name)
    monkeypatch.setattr(be, "_reason", reason)


# ---------------------------------------------------------------------- the plugin
def test_xp_runs_once_per_chosen_backend(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile(USER_TEST)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=numpy,array-api-strict", "-v")
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines(["*test_solve?numpy? PASSED*", "*test_solve?array-api-strict? PASSED*"])
    res.stdout.fnmatch_lines(["xlinalg.testing backends: numpy, array-api-strict"])


def test_xp_is_each_installed_backends_namespace(pytester: pytest.Pytester, clean_env) -> None:
    available = [n for n in CPU if registry.get_backend(n).is_available()]
    pytester.makepyfile(USER_TEST)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=cpu")
    res.assert_outcomes(passed=len(available), skipped=len(CPU) - len(available))


def test_environment_variable_chooses_and_the_option_wins(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile(USER_TEST)
    clean_env.setenv("XLINALG_TEST_BACKENDS", "numpy")
    pytester.runpytest("-p", "xlinalg.testing").assert_outcomes(passed=1)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=numpy,dask", "-v")
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines(["*test_solve?dask? PASSED*"])


@pytest.mark.parametrize("how", ["option", "env"])
def test_unknown_backend_is_a_usage_error_listing_the_valid_ones(pytester: pytest.Pytester, clean_env, how) -> None:
    pytester.makepyfile(USER_TEST)
    args = ["-p", "xlinalg.testing"]
    if how == "option":
        args.append("--xlinalg-backends=numpy,torch-gpu")
    else:
        clean_env.setenv("XLINALG_TEST_BACKENDS", "numpy,torch-gpu")
    res = pytester.runpytest(*args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    source = "--xlinalg-backends" if how == "option" else "XLINALG_TEST_BACKENDS"
    res.stderr.fnmatch_lines([f"*{source} names unknown backend(s) ?'torch-gpu'?; valid: numpy, torch-cpu*"])


def test_unavailable_backend_is_skipped_with_the_registry_reason(pytester: pytest.Pytester, clean_env) -> None:
    _unavailable(clean_env, "dask", "dask is not installed (pretend)")
    pytester.makepyfile(USER_TEST)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=numpy,dask", "-rs")
    res.assert_outcomes(passed=1, skipped=1)
    res.stdout.fnmatch_lines(["SKIPPED*dask: dask is not installed (pretend)"])


def test_a_run_where_no_selected_backend_could_run_fails(pytester: pytest.Pytester, clean_env) -> None:
    # XLINALG_TEST_BACKENDS=torch-cuda with a CPU-only torch: every test skipped, and
    # the run passed (a green GPU job that tested nothing)
    _unavailable(clean_env, "dask", "dask is not installed (pretend)")
    pytester.makepyfile(USER_TEST)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=dask")
    res.assert_outcomes(skipped=1)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*xlinalg.testing: no selected backend could run here*"
                              "dask: dask is not installed (pretend)*"])
    # one backend that ran is enough (the others skip with their reasons, as before)
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=numpy,dask")
    res.assert_outcomes(passed=1, skipped=1)
    assert res.ret == pytest.ExitCode.OK
    # a run that means to test nothing here says so
    clean_env.setenv("XLINALG_ALLOW_NO_BACKEND", "1")
    res = pytester.runpytest("-p", "xlinalg.testing", "--xlinalg-backends=dask")
    res.assert_outcomes(skipped=1)
    assert res.ret == pytest.ExitCode.OK


@pytest.mark.parametrize("how", ["option", "env"])
def test_required_cpu_backend_fails_instead_of_skipping(pytester: pytest.Pytester, clean_env, how) -> None:
    _unavailable(clean_env, "dask", "dask is not installed (pretend)")
    _unavailable(clean_env, "cupy", "cupy is not installed (pretend)")
    pytester.makepyfile(USER_TEST)
    args = ["-p", "xlinalg.testing", "--xlinalg-backends=numpy,dask,cupy"]
    if how == "option":
        args.append("--xlinalg-require-cpu")
    else:
        clean_env.setenv("XLINALG_REQUIRE_CPU_BACKENDS", "1")
    res = pytester.runpytest(*args)
    res.assert_outcomes(passed=1, errors=1, skipped=1)  # a GPU backend still skips
    res.stdout.fnmatch_lines(["*dask must run here (XLINALG_REQUIRE_CPU_BACKENDS) but: dask is not installed*"])


@pytest.mark.parametrize("with_option", [False, True])
def test_a_bad_require_cpu_value_is_one_usage_error(pytester: pytest.Pytester, clean_env, with_option) -> None:
    # it was read in every test's set-up: each test errored with a traceback, or, with
    # the option given, the typo went unnoticed
    pytester.makepyfile(USER_TEST)
    clean_env.setenv("XLINALG_REQUIRE_CPU_BACKENDS", "y")
    args = ["-p", "xlinalg.testing", "--xlinalg-backends=numpy"] + (["--xlinalg-require-cpu"] if with_option else [])
    res = pytester.runpytest(*args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*XLINALG_REQUIRE_CPU_BACKENDS='y' is not a boolean*"])


def test_our_suite_fails_in_ci_when_a_cpu_backend_is_missing(pytester: pytest.Pytester, clean_env) -> None:
    # tests/conftest.py turns CI=1 into the kit's requirement
    _unavailable(clean_env, "dask", "dask is not installed (pretend)")
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile("def test_b(backend):\n    assert backend.name\n")
    clean_env.setenv("XLINALG_TEST_BACKENDS", "numpy,dask")
    clean_env.setenv("CI", "1")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, errors=1)
    clean_env.delenv("CI")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, skipped=1)


def test_gpu_backends_carry_the_gpu_marker(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile(USER_TEST)
    res = pytester.runpytest("-p", "xlinalg.testing", "-m", "not gpu", "--strict-markers")
    res.assert_outcomes(passed=sum(registry.get_backend(n).is_available() for n in CPU),
                        skipped=sum(not registry.get_backend(n).is_available() for n in CPU),
                        deselected=len(GPU))
    res = pytester.runpytest("-p", "xlinalg.testing", "-m", "gpu", "--collect-only", "-q")
    collected = [ln.split("[")[1].rstrip("]") for ln in res.stdout.lines if "::test_solve[" in ln]
    assert collected == GPU


def test_xlinalg_backend_outside_the_parametrization_is_a_clear_error(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile("def test_x(request):\n    request.getfixturevalue('xlinalg_backend')\n")
    res = pytester.runpytest("-p", "xlinalg.testing")
    res.stdout.fnmatch_lines(["*xlinalg_backend is parametrized by the xlinalg.testing plugin only*"])


def test_entry_point_is_declared_under_the_module_name() -> None:
    # The name equals the module's, so `-p xlinalg.testing`, the entry point and
    # our conftest's pytest_plugins register it once.
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["entry-points"]["pytest11"] == {"xlinalg.testing": "xlinalg.testing"}


def test_importing_xlinalg_or_the_kit_imports_no_pytest_and_no_array_library() -> None:
    code = (
        "import sys, xlinalg, xlinalg.testing\n"
        "bad = [m for m in ('pytest', 'torch', 'jax', 'dask', 'cupy', 'array_api_strict') if m in sys.modules]\n"
        "print(bad)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_a_numpy_only_run_imports_no_other_array_library(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile(
        "import sys\n"
        "def test_x(xp):\n"
        "    assert xp.asarray([1.0]).shape == (1,)\n"
        "    assert not [m for m in ('torch', 'jax', 'dask', 'cupy') if m in sys.modules]\n"
    )
    clean_env.setenv("PYTHONPATH", str(ROOT / "src"))
    res = pytester.runpytest_subprocess("-p", "xlinalg.testing", "--xlinalg-backends=numpy", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1)


# ---------------------------------------------------------------------- assert_close
def test_selected_backends_groups_and_order() -> None:
    assert selected_backends("dask,numpy") == ("numpy", "dask")
    assert selected_backends("cpu") == tuple(CPU)
    assert selected_backends("gpu,numpy") == ("numpy", *GPU)
    assert selected_backends("") == tuple(xl.BACKEND_NAMES)


@pytest.mark.parametrize(
    ("actual", "expected", "message"),
    [
        (np.ones(2), np.ones(2, dtype=np.float32), r"^dtype differs: actual float64, expected float32$"),
        (np.ones(2), np.ones(3), r"^shape differs: actual \(2,\), expected \(3,\)$"),
        (np.ones((2, 2)), np.eye(2), r"^values differ at 2 of 4 position\(s\).*\n  worst at index \(0, 1\): actual 1.0, expected 0.0"),
        (np.array([1, 2]), np.array([1, 3]), r"^values differ at 1 of 2 .*rtol=0, atol=0"),
        (np.array([np.nan, 1.0]), np.array([1.0, 1.0]), r"worst at index \(0,\): actual nan, expected 1.0"),
        (np.array([np.inf]), np.array([-np.inf]), r"actual inf, expected -inf"),
        (np.float64(1.0), 1.0, r"^expected is not an array of a known backend: builtins.float"),
    ],
    ids=["dtype", "shape", "values", "integers-exact", "nan", "inf", "not-an-array"],
)
def test_assert_close_names_what_differs(actual, expected, message) -> None:
    with pytest.raises(AssertionError, match=message):
        assert_close(actual, expected)


def test_assert_close_default_tolerance_follows_the_dtype() -> None:
    assert_close(np.float32([1.0, 100.0]), np.float32([1.001, 100.1]))  # 1e-3 relative: float32 accepts
    with pytest.raises(AssertionError, match="values differ"):
        assert_close(np.float64([1.0, 100.0]), np.float64([1.001, 100.1]))
    assert_close(np.float64([1.0, 100.0]), np.float64([1.001, 100.1]), rtol=2e-3)
    assert_close(np.float64([0.0, np.nan]), np.float64([1e-12, np.nan]))  # atol scales, NaN == NaN
    with pytest.raises(AssertionError, match="values differ"):
        assert_close(np.float64([0.0, 1.0]), np.float64([1e-12, 1.0]), rtol=0.0)  # atol follows rtol


def test_assert_close_checks_the_library() -> None:
    strict = registry.get_backend("array-api-strict")
    if not strict.is_available():
        pytest.skip(f"array-api-strict: {strict.unavailable_reason()}")
    with pytest.raises(AssertionError, match=r"^library differs: actual is a numpy array, expected a array-api-strict"):
        assert_close(np.ones(2), strict.from_numpy(np.ones(2)))
    assert_close(strict.from_numpy(np.ones(2)), strict.from_numpy(np.ones(2)))


def test_assert_close_checks_the_device() -> None:
    # Two host devices of JAX: same backend id, different devices.
    code = (
        "import jax, numpy as np\n"
        "from xlinalg.testing import assert_close\n"
        "a, b = (jax.device_put(np.ones(2), d) for d in jax.devices('cpu')[:2])\n"
        "try:\n"
        "    assert_close(a, b)\n"
        "except AssertionError as e:\n"
        "    print(e)\n"
    )
    jax = registry.get_backend("jax-cpu")
    if not jax.is_available():
        pytest.skip(f"jax-cpu: {jax.unavailable_reason()}")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"device differs: actual is on TFRT_CPU_0, expected on TFRT_CPU_1|device differs: actual is on \S+0, expected on \S+1", r.stdout.strip()), r.stdout


def test_assert_close_computes_dask_and_names_the_index(backend) -> None:
    a = backend.arr(np.arange(6.0).reshape(2, 3))
    bump = np.zeros((2, 3))
    bump[1, 1] = 0.5
    b = backend.arr(np.arange(6.0).reshape(2, 3) + bump)
    assert_close(a, backend.arr(np.arange(6.0).reshape(2, 3)))
    with pytest.raises(AssertionError, match=r"values differ at 1 of 6 .*\n  worst at index \(1, 1\): actual 4.0, expected 4.5"):
        assert_close(a, b)


# ---------------------------------------------------------------------- trace-safe, lazy-safe
def _branchy(x):
    if float(x[0]) > 0:  # a Python branch on a value: neither traceable nor lazy
        return x * 2
    return x


def test_trace_safe_accepts_xlinalg_and_refuses_a_value_branch() -> None:
    jax = registry.get_backend("jax-cpu")
    if not jax.is_available():
        pytest.skip(f"jax-cpu: {jax.unavailable_reason()}")
    a, b = np.eye(3) * 2.0, np.ones(3)
    out = assert_trace_safe(xl.solve, a, b, errors="nan")
    assert xl.backend_of(out) == "jax-cpu"
    np.testing.assert_allclose(np.asarray(out), 0.5)
    with pytest.raises(AssertionError, match=r"_branchy is not trace-safe: .*ConcretizationTypeError"):
        assert_trace_safe(_branchy, b)


def test_trace_safe_compares_the_compiled_and_eager_results() -> None:
    jax = registry.get_backend("jax-cpu")
    if not jax.is_available():
        pytest.skip(f"jax-cpu: {jax.unavailable_reason()}")
    from jax.core import Tracer

    def differs_when_traced(x):  # wrong only when compiled
        return x + 1.0 if isinstance(x, Tracer) else x

    with pytest.raises(AssertionError, match="values differ"):
        assert_trace_safe(differs_when_traced, np.ones(2))


def test_lazy_safe_accepts_xlinalg_and_refuses_computing() -> None:
    dask = registry.get_backend("dask")
    if not dask.is_available():
        pytest.skip(f"dask: {dask.unavailable_reason()}")
    a, b = np.eye(3) * 2.0, np.ones(3)
    out = assert_lazy_safe(xl.solve, a, b)
    assert xl.backend_of(out) == "dask"
    np.testing.assert_allclose(out.compute(), 0.5)
    with pytest.raises(AssertionError, match=r"_branchy is not lazy-safe: it computed a Dask graph"):
        assert_lazy_safe(_branchy, b)
    with pytest.raises(AssertionError, match=r"is not lazy-safe: it computed"):
        assert_lazy_safe(lambda x: x.persist(), b)
    with pytest.raises(AssertionError, match=r"is not lazy-safe: it returned a numpy.ndarray"):
        assert_lazy_safe(lambda x: np.ones(2), b)


# ---------------------------------------------------------------------- the docs page
def test_the_docs_pages_user_test_file_runs_on_every_installed_backend(pytester: pytest.Pytester, clean_env) -> None:
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    block = re.search(r"```\{code-block\} python\n:caption: test_center.py\n\n(.*?)```", page, re.S)
    assert block is not None, "docs/testing.md lost its test_center.py example"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 13, "the page promises a dozen lines"
    pytester.makepyfile(test_center=code)
    res = pytester.runpytest("-p", "xlinalg.testing", "-v")
    available = [n for n in xl.BACKEND_NAMES if registry.get_backend(n).is_available()]
    res.assert_outcomes(passed=len(available), skipped=len(xl.BACKEND_NAMES) - len(available))
    res.stdout.fnmatch_lines([f"*test_center?{n}? PASSED*" for n in available], consecutive=False)
