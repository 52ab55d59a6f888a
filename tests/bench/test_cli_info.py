"""``xlinalg info``: an install hint for every backend that fits the backend (a GPU
backend's hint installs a GPU build, never a CPU one)."""

from __future__ import annotations

import json

import pytest

from xlinalg.backends import BACKEND_NAMES, get_backend
from xlinalg.cli import main

#: the package each backend's hint must name, with the extra or the GPU build that the
#: backend's own declarations do not say; a backend not listed (a new library) names
#: one of its declared distributions or its module
PACKAGE = {"numpy": "numpy", "torch-cpu": "torch", "torch-cuda": "torch", "cupy": "cupy-cuda12x",
           "jax-cpu": "jax[cpu]", "jax-gpu": "jax[cuda12]", "dask": "dask[array]",
           "array-api-strict": "array-api-strict"}


def _packages(name: str) -> tuple[str, ...]:
    if name in PACKAGE:
        return (PACKAGE[name],)
    b = get_backend(name)
    return (b.module, *(d for _, names in b.distributions for d in names))


def test_the_table_names_registered_backends_only() -> None:
    assert set(PACKAGE) <= set(BACKEND_NAMES)


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_install_hint_fits_the_backend(name: str) -> None:
    b = get_backend(name)
    hint = b.install
    assert hint.startswith("pip install"), hint
    assert any(p in hint for p in _packages(name)), hint
    if b.gpu:
        assert "[cpu]" not in hint, hint
        assert "torch==2.13.0" not in hint, hint
        assert "NVIDIA GPU" in hint, hint
    else:
        assert "cuda" not in hint.lower(), hint


def test_info_json_gives_each_unavailable_backend_its_own_hint(capsys) -> None:
    assert main(["info", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["backends"]
    assert [r["backend"] for r in rows] == list(BACKEND_NAMES)
    for r in rows:
        if not r["available"]:
            assert r["install"] == get_backend(r["backend"]).install
            assert r["reason"]
