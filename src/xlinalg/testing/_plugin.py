"""The fixtures of the ``xlinalg.testing`` pytest plugin (this module imports pytest).

Registered by :func:`xlinalg.testing.pytest_configure`; not imported by
``import xlinalg`` or ``import xlinalg.testing``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .. import backends as _registry
from ._select import (
    ENV_ALLOW_NONE,
    ENV_BACKENDS,
    ENV_REQUIRE_CPU,
    _env_flag,
    resolve_backend,
    selected_backends,
)

NAME = "xlinalg.testing.fixtures"
_SELECTED = pytest.StashKey[tuple[str, ...]]()
#: XLINALG_REQUIRE_CPU_BACKENDS, parsed once at configure time
_REQUIRE_CPU = pytest.StashKey[bool]()
#: the backends that ran a test, and those skipped (with the reason) in this session
_RAN = pytest.StashKey[set[str]]()
_SKIPPED = pytest.StashKey[dict[str, str]]()
#: XLINALG_ALLOW_NO_BACKEND, parsed once at configure time
_ALLOW_NONE = pytest.StashKey[bool]()


def configure(config: pytest.Config) -> None:
    """Read the backend choice once (an unknown id is a usage error)."""
    opt = config.getoption("xlinalg_backends", None)
    source = "--xlinalg-backends" if opt is not None else ENV_BACKENDS
    try:
        config.stash[_SELECTED] = selected_backends(opt, source=source)
        # read once, here: a bad value is one usage error, whether or not the option
        # overrides it (not an error in the set-up of every test)
        env = _env_flag(ENV_REQUIRE_CPU)
        config.stash[_ALLOW_NONE] = _env_flag(ENV_ALLOW_NONE)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_REQUIRE_CPU] = env
    doctest_xp = config.getoption("xlinalg_doctest_xp", None)
    if doctest_xp is not None:
        if doctest_xp not in _registry.BACKEND_NAMES:
            raise pytest.UsageError(
                f"--xlinalg-doctest-xp names unknown backend {doctest_xp!r}; "
                f"valid: {', '.join(_registry.BACKEND_NAMES)}"
            )
        config.pluginmanager.register(DoctestXP(doctest_xp), f"{NAME}.doctest")


def chosen(config: pytest.Config) -> tuple[str, ...]:
    """The backend ids this run's ``xp`` fixture runs on."""
    return config.stash.get(_SELECTED, tuple(_registry.BACKEND_NAMES))


def require_cpu(config: pytest.Config) -> bool:
    """Whether an unavailable CPU backend fails (option or environment variable)."""
    env = config.stash[_REQUIRE_CPU] if _REQUIRE_CPU in config.stash else _env_flag(ENV_REQUIRE_CPU)
    return bool(config.getoption("xlinalg_require_cpu", False)) or env


def pytest_report_header(config: pytest.Config) -> str:
    return f"xlinalg.testing backends: {', '.join(chosen(config))}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One call per chosen backend for tests that use ``xp`` or ``xlinalg_backend``."""
    if "xlinalg_backend" not in metafunc.fixturenames:
        return
    params = [
        pytest.param(n, id=n, marks=[pytest.mark.gpu] if _registry.get_backend(n).gpu else [])
        for n in chosen(metafunc.config)
    ]
    metafunc.parametrize("xlinalg_backend", params, indirect=True)


@pytest.fixture
def xlinalg_backend(request: pytest.FixtureRequest) -> _registry.Backend:
    """The registry :class:`~xlinalg.backends.Backend` of this test call.

    Skipped with the registry's reason when it cannot run here (failed instead
    for a CPU backend under ``--xlinalg-require-cpu``).
    """
    name = getattr(request, "param", None)
    if name is None:  # requested outside the parametrization (e.g. getfixturevalue)
        raise pytest.UsageError("xlinalg_backend is parametrized by the xlinalg.testing plugin only")
    return _resolve_recorded(request.config, name)


def _resolve_recorded(config: pytest.Config, name: str) -> _registry.Backend:
    """resolve_backend, and a note of whether `name` ran or was skipped (and why)."""
    try:
        be = resolve_backend(name, require_cpu=require_cpu(config))
    except pytest.skip.Exception as exc:
        config.stash.setdefault(_SKIPPED, {})[name] = str(exc)
        raise
    config.stash.setdefault(_RAN, set()).add(name)
    return be


def _nothing_ran(config: pytest.Config) -> dict[str, str]:
    """The skipped backends, when backend tests were collected and none of them ran
    (empty with XLINALG_ALLOW_NO_BACKEND). Under pytest-xdist each worker judges its
    own share."""
    if config.stash.get(_ALLOW_NONE, False):
        return {}
    skipped = config.stash.get(_SKIPPED, {})
    return skipped if skipped and not config.stash.get(_RAN, set()) else {}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # every selected backend skipped (a GPU run on a CPU-only torch build, a library
    # missing): the run tested nothing, and must not pass as if it had
    if _nothing_ran(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped = _nothing_ran(config)
    if skipped:
        terminalreporter.write_line(
            "xlinalg.testing: no selected backend could run here, so every backend test was "
            f"skipped and this run fails ({ENV_ALLOW_NONE}=1 lets it pass): "
            + "; ".join(skipped[n] for n in sorted(skipped)), red=True)


@pytest.fixture
def xp(xlinalg_backend: _registry.Backend) -> Iterator[Any]:
    """The array API namespace of this test call's backend.

    ``xp.asarray`` creates arrays on the backend's device: torch-cuda makes
    CUDA its default device and JAX its platform's device for the test.
    """
    with xlinalg_backend.testing.default_device():
        yield xlinalg_backend.namespace()


class DoctestXP:
    """With ``--xlinalg-doctest-xp=ID``: every doctest sees ``xp``, ID's namespace.

    The doctest is skipped with the registry's reason when ID cannot run here.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    @pytest.fixture(autouse=True)
    def _xlinalg_doctest_xp(self, request: pytest.FixtureRequest) -> None:
        if type(request.node).__name__ != "DoctestItem":
            return
        be = _resolve_recorded(request.config, self.name)
        request.getfixturevalue("doctest_namespace")["xp"] = be.namespace()
