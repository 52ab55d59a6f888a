"""Which backends a test session runs on, and each made ready for a test.

Shared by :mod:`xlinalg.testing` (which re-exports it) and its pytest plugin
(:mod:`._plugin`), so that neither imports the other's module at run time.
Imports neither pytest (on use only) nor any array library but NumPy's registry.
"""

from __future__ import annotations

import os

from .. import backends as _registry
from .._lib._env import env_flag

#: The environment variable that chooses backends (the option wins over it).
ENV_BACKENDS = "XLINALG_TEST_BACKENDS"
#: With this boolean environment variable true (1/true/yes/on, any case), a CPU
#: backend that cannot run fails instead of skipping.
ENV_REQUIRE_CPU = "XLINALG_REQUIRE_CPU_BACKENDS"
#: With this boolean environment variable true, a session in which no selected
#: backend could run passes (it fails by default: it tested nothing).
ENV_ALLOW_NONE = "XLINALG_ALLOW_NO_BACKEND"


# ---------------------------------------------------------------------- backends
def _groups() -> dict[str, tuple[str, ...]]:
    names = _registry.BACKEND_NAMES
    gpu = tuple(n for n in names if _registry.get_backend(n).gpu)
    return {"all": names, "gpu": gpu, "cpu": tuple(n for n in names if n not in gpu)}


def selected_backends(spec: str | None = None, *, source: str = ENV_BACKENDS) -> tuple[str, ...]:
    """The backend ids a comma-separated `spec` names, in the registry's order.

    Parameters
    ----------
    spec : str, optional
        Backend ids (:data:`xlinalg.BACKEND_NAMES`) and the groups ``all``,
        ``cpu`` and ``gpu``, separated by commas. ``None`` reads the
        ``XLINALG_TEST_BACKENDS`` environment variable; empty means all.
    source : str
        What `spec` came from, for the error message.

    Returns
    -------
    tuple of str
        The chosen ids, whether or not they can run here.

    Raises
    ------
    ValueError
        If `spec` names an unknown backend; the message lists the valid ones.

    Examples
    --------
    >>> from xlinalg.testing import selected_backends
    >>> selected_backends("dask, numpy")
    ('numpy', 'dask')
    >>> selected_backends("cpu") == selected_backends("all,-gpu")
    Traceback (most recent call last):
    ...
    ValueError: XLINALG_TEST_BACKENDS names unknown backend(s) ['-gpu']; valid: numpy, torch-cpu, ... (or the groups all, cpu, gpu)
    """
    raw = os.environ.get(ENV_BACKENDS, "") if spec is None else spec
    names = [n.strip().strip("'\"[] ") for n in str(raw).split(",")]
    names = [n for n in names if n]
    if not names:
        return tuple(_registry.BACKEND_NAMES)
    groups = _groups()
    unknown = [n for n in names if n not in _registry.BACKEND_NAMES and n not in groups]
    if unknown:
        raise ValueError(
            f"{source} names unknown backend(s) {unknown}; valid: "
            f"{', '.join(_registry.BACKEND_NAMES)} (or the groups all, cpu, gpu)"
        )
    chosen = {m for n in names for m in groups.get(n, (n,))}
    return tuple(n for n in _registry.BACKEND_NAMES if n in chosen)


def _env_flag(name: str) -> bool:
    return env_flag(name)


def _setup(name: str) -> None:
    """Per-library configuration, done before the first array of a test is made."""
    _registry.get_backend(name).testing.configure()


def resolve_backend(name: str, *, require_cpu: bool = False) -> _registry.Backend:
    """The registry backend `name`, ready for a test, or skip with its reason.

    Skips (``pytest.skip``) with the registry's
    :meth:`~xlinalg.backends.Backend.unavailable_reason` when it cannot run here;
    fails instead when `require_cpu` is true and `name` is a CPU backend.
    """
    be = _registry.get_backend(name)
    reason = be.unavailable_reason()
    if reason is not None:
        import pytest

        if require_cpu and not be.gpu:
            pytest.fail(f"{name} must run here ({ENV_REQUIRE_CPU}) but: {reason}")
        pytest.skip(f"{name}: {reason}")
    _setup(name)
    return be
