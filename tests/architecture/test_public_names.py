"""Public classes print with their public module path; xl.to takes library names (issue 36)."""

from __future__ import annotations

import importlib
import pickle
import traceback
import warnings

import numpy as np
import pytest

import xlinalg as xl
import xlinalg.backends
import xlinalg.testing
from conftest import BackendCase, require_backend

PUBLIC_MODULES = ("xlinalg", "xlinalg.backends", "xlinalg.testing")


def _public_classes() -> list[tuple[str, type]]:
    out = []
    for mod_name in PUBLIC_MODULES:
        mod = importlib.import_module(mod_name)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type) and obj.__module__.partition(".")[0] == "xlinalg":
                out.append((mod_name, obj))
    return out


def test_there_are_public_classes_to_check() -> None:
    names = {cls.__name__ for _, cls in _public_classes()}
    assert {"LinAlgError", "XlinalgWarning", "SVDResult", "QRResult", "BackendUnavailableError",
            "LazyComputeError"} <= names, names


@pytest.mark.parametrize(("module", "cls"), _public_classes(), ids=lambda v: getattr(v, "__name__", v))
def test_every_public_class_names_its_public_module(module: str, cls: type) -> None:
    # the module path a user imports it from, and that path resolves to the class
    assert "._" not in cls.__module__, cls.__module__
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls
    assert repr(cls) == f"<class '{cls.__module__}.{cls.__qualname__}'>"


def test_a_raised_linalg_error_prints_xlinalg_linalgerror(backend: BackendCase) -> None:
    a = backend.arr(np.zeros((2, 2)))
    b = backend.arr(np.ones(2))
    with pytest.raises(xl.LinAlgError) as info:
        backend.np(xl.solve(a, b))
    text = "".join(traceback.format_exception(info.value))
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("xlinalg.LinAlgError: "), last
    assert "_lib" not in last
    # pickled (a Dask worker to its client) by the public path, attributes kept
    err = pickle.loads(pickle.dumps(info.value))
    assert type(err) is xl.LinAlgError
    assert err.members == info.value.members


def test_warnings_and_results_print_public_paths() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("w", xl.XlinalgWarning, stacklevel=1)
    assert caught[0].category is xl.XlinalgWarning
    assert "xlinalg.XlinalgWarning" in repr(caught[0].category)
    r = xl.svd(np.eye(2))
    assert type(r).__module__ == "xlinalg"
    assert pickle.loads(pickle.dumps(r))[1].tolist() == [1.0, 1.0]
    err = xl.backends.BackendUnavailableError("x")
    assert traceback.format_exception_only(err)[0].startswith("xlinalg.backends.BackendUnavailableError")


# ------------------------------------------------------------ xl.to(x, "torch")


@pytest.mark.parametrize(("alias", "backend_id"), [
    ("numpy", "numpy"), ("torch", "torch-cpu"), ("jax", "jax-cpu"), ("dask", "dask"),
    ("array-api-strict", "array-api-strict"), ("strict", "array-api-strict"),
    ("array_api_strict", "array-api-strict"), ("Torch", "torch-cpu"),
])
def test_a_library_name_is_its_default_device(backend: BackendCase, alias: str, backend_id: str) -> None:
    require_backend(backend_id)
    x = backend.arr(np.array([1.0, 2.0]))
    y = xl.to(x, alias)
    assert xl.backend_of(y) == backend_id
    np.testing.assert_array_equal(xl.to(y, "numpy"), [1.0, 2.0])


def test_torch_follows_its_default_device() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_default_device()
    try:
        torch.set_default_device("meta")
        with pytest.raises(ValueError, match=r"'torch' means torch's default device, which is 'meta' here"):
            xl.to(np.ones(2), "torch")
    finally:
        torch.set_default_device(before)
    assert xl.backend_of(xl.to(np.ones(2), "torch")) == "torch-cpu"


def test_cupy_means_the_cupy_backend() -> None:
    be = xl.backends.get_backend("cupy")
    if be.unavailable_reason() is None:
        assert xl.backend_of(xl.to(np.ones(2), "cupy")) == "cupy"
    else:
        with pytest.raises(xl.backends.BackendUnavailableError, match="cupy"):
            xl.to(np.ones(2), "cupy")


@pytest.mark.parametrize("bad", ["pytorch", "jnp", "", "torch-tpu", 3, None])
def test_an_unknown_name_lists_ids_and_library_names(bad) -> None:
    with pytest.raises(ValueError, match=r"unknown backend .*; valid backends: numpy, torch-cpu.*; or a library "
                                         r"name \(numpy, torch, jax, cupy, dask, array-api-strict"):
        xl.to(np.ones(2), bad)
