"""The public surface: a sorted ``__all__`` equal to the public names, docstrings
that numpydoc's validator accepts on every public function, and every docstring
and documentation example run by pytest's doctest collection on two namespaces."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import xlinalg as xl
from xlinalg._capabilities import OPERATIONS
from xlinalg._lib._declare import OPERATIONS as DECLARED

PUBLIC = sorted(
    n for n in dir(xl)
    if not n.startswith("_") and not isinstance(getattr(xl, n), types.ModuleType)
)
FUNCTIONS = [n for n in xl.__all__ if inspect.isfunction(getattr(xl, n))]


def test_all_is_sorted_and_complete() -> None:
    assert xl.__all__ == sorted(xl.__all__)
    assert len(set(xl.__all__)) == len(xl.__all__)
    assert sorted(set(xl.__all__) - {"__version__"}) == PUBLIC


def test_every_module_has_all() -> None:
    import xlinalg._dispatch
    import xlinalg._elementwise
    import xlinalg._lib._errors
    import xlinalg._validate
    import xlinalg.backends
    import xlinalg.backends._adapter
    import xlinalg.backends._base
    import xlinalg.backends._cupy
    import xlinalg.backends._dask
    import xlinalg.backends._jax
    import xlinalg.backends._jax_adapter
    import xlinalg.backends._numpy
    import xlinalg.backends._numpy_adapter
    import xlinalg.backends._strict
    import xlinalg.backends._torch
    import xlinalg.backends._torch_adapter

    b = xlinalg.backends
    # every module that defines a declared operation, and lists it in its __all__
    homes = {sys.modules[op.func.__module__] for op in DECLARED.values()}
    for op in DECLARED.values():
        assert op.func.__name__ in sys.modules[op.func.__module__].__all__, op.name
    for mod in (*sorted(homes, key=lambda m: m.__name__), xlinalg._elementwise, b, b._adapter, b._base,
                b._numpy, b._torch, b._jax, b._numpy_adapter, b._torch_adapter, b._jax_adapter,
                b._cupy, b._dask, b._strict,
                xlinalg._dispatch, xlinalg._lib._errors, xlinalg._validate):
        assert isinstance(mod.__all__, list), mod.__name__
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.__all__ names missing {name}"


def test_version() -> None:
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?([.+-].*)?", xl.__version__)


#: numpydoc's validator (the checks its ``numpydoc lint`` and Sphinx extension run),
#: every check except two that do not fit short API functions: ES01 (an extended
#: summary: a one-line summary plus Parameters/Returns/Examples says enough for
#: ``add``) and SA01 (a See Also section: most functions have no useful sibling).
#: So the gate covers, among others: GL08 a docstring exists, SS01-SS06 the summary
#: line, PR01/PR02 every parameter documented and none invented, PR03-PR10 their
#: types and descriptions, RT01-RT05 the Returns section, EX01 an Examples section.
NUMPYDOC_SKIPPED = frozenset({"ES01", "SA01"})


@pytest.mark.parametrize("name", FUNCTIONS)
def test_numpydoc_validates(name: str) -> None:
    from numpydoc.validate import validate

    errors = [f"{code}: {msg}" for code, msg in validate(f"xlinalg.{name}")["errors"]
              if code not in NUMPYDOC_SKIPPED]
    assert not errors, f"xlinalg.{name}: " + "; ".join(errors)


def test_public_classes_have_docstrings() -> None:
    for name in xl.__all__:
        obj = getattr(xl, name)
        if inspect.isclass(obj):
            assert inspect.getdoc(obj), name
    assert issubclass(xl.LinAlgError, np.linalg.LinAlgError)
    assert issubclass(xl.LinAlgError, RuntimeError)
    assert xl.SVDResult._fields == ("U", "S", "Vh")
    assert xl.QRResult._fields == ("Q", "R")


def test_arrays_positional_options_keyword_only() -> None:
    for name in OPERATIONS:
        sig = inspect.signature(getattr(xl, name))
        kinds = {p.name: p.kind for p in sig.parameters.values()}
        for pname, kind in kinds.items():
            if pname in ("a", "b", "x", "x1", "x2"):
                assert kind is inspect.Parameter.POSITIONAL_ONLY, (name, pname)
            elif (name, pname) == ("matrix_power", "n"):  # positional, as the standard's; by keyword too
                assert kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            else:
                assert kind is inspect.Parameter.KEYWORD_ONLY, (name, pname)


DOCTEST_PATHS = ("src/xlinalg", "docs")


@pytest.mark.parametrize("xp_name", ["numpy", "array-api-strict"])
def test_doctests_run(xp_name: str) -> None:
    # pytest's own doctest collection over every module's docstrings and the docs'
    # Markdown pages, run once per namespace: examples use `xp`, the reader's array
    # namespace, and must run on NumPy and on array-api-strict (the standard and
    # nothing more). A separate pytest process because --doctest-modules and
    # --xlinalg-doctest-xp are options of a whole session; here it keeps the
    # README's one test command (python -m pytest) running the examples too.
    from conftest import require_backend

    require_backend(xp_name)  # unavailable: skipped with the reason (fails in CI)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xlinalg.testing",
         "-q", "-rs", "--doctest-modules", "--doctest-glob=*.md", *DOCTEST_PATHS,
         "--ignore=docs/conf.py", "--ignore=docs/_build", f"--xlinalg-doctest-xp={xp_name}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"doctests on {xp_name} failed:\n{out[-6000:]}"
    assert re.search(r"\b\d+ passed\b", out), f"no doctest ran on {xp_name}:\n{out[-3000:]}"
