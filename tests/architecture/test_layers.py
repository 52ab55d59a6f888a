"""xlinalg is built in layers, and no import runs from a lower layer to a higher one.

The layers, bottom to top, are :data:`LAYERS`: each names the modules it holds
by their dotted prefix, and a module belongs to the layer of its longest
matching prefix (``xlinalg`` itself, the operations, takes every top-level
module that no other prefix claims). A module may import its own layer and the
layers below it; an import of a higher layer is an arrow back up, and fails.

A second rule keeps the layers' faces honest: no module imports a ``_``-prefixed
*name* (not a module) that another package defines. A package is a folder
directly under ``src/xlinalg`` (with all its subfolders); the top-level modules
are the package ``xlinalg``. What one package offers another is spelled without
a leading underscore; a private module (``backends/_base.py``) may hold such
names.

The imports are read from the source (AST), wherever they stand: at the top of
a module, inside a function, under ``if TYPE_CHECKING:`` (a type is a
dependency too), relative or absolute, and ``importlib.import_module("xlinalg...")``
with a literal name. The implicit import of a module's parent package is not an
import (``xlinalg.backends._base`` runs ``xlinalg/__init__.py`` first, as every
module does).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from source_graph import PACKAGE, SRC, imports, modules

#: The layers, bottom to top: (name, the module prefixes it holds). Each may
#: import its own layer and those below it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # stdlib and NumPy only: errors, declarations, shapes, comparisons, env flags,
    # untrusted text escaped for each sink, times and bytes as text
    ("internals", ("xlinalg._lib", "xlinalg._version")),
    # the unrolled kernels' code generator: Python, C and numba sources of one schedule
    ("kernels", ("xlinalg._kernels",)),
    # one module per library, the registry, conversion, the Dask cluster
    ("backends", ("xlinalg.backends",)),
    # dispatch, argument checks, the public operations, the unrolled solver
    ("operations", ("xlinalg",)),
    # the public testing kit and its pytest plugin
    ("testing", ("xlinalg.testing",)),
    # the benchmark harness: cases API, timer, workers, runner, store, report
    ("bench", ("xlinalg.bench",)),
    # the documents' study: their cases, findings and article parts of the report
    ("study", ("xlinalg.study",)),
    # the command line
    ("commands", ("xlinalg._cli", "xlinalg.cli", "xlinalg.__main__")),
)

#: (importing module, imported module or name) -> why it is allowed. None today:
#: an entry here needs a reason, and ``test_the_exceptions_are_still_needed``
#: fails on one that is no longer needed.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int:
    """The index in `layers` of the layer that holds `module` (longest prefix wins)."""
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best < 0:
        raise LookupError(f"module {module} is in no layer: add its prefix to LAYERS")
    return best


def package_of(module: str) -> str:
    """The package of `module`: the folder directly under src/xlinalg, or ``xlinalg``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def violations(
    known: Mapping[str, Path],
    layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS,
    exceptions: Mapping[tuple[str, str], str] = EXCEPTIONS,
    src: Path = SRC,
) -> list[str]:
    """``file:line -> target (why)`` for each arrow back up and each private name taken
    across packages among the modules `known` (dotted name -> path)."""
    found = []
    for name, path in sorted(known.items()):
        mine = layer_of(name, layers)
        for imp in imports(name, path, known, src):
            target = imp.module if imp.name is None else f"{imp.module}.{imp.name}"
            if (name, target) in exceptions or (name, imp.module) in exceptions:
                continue
            theirs = layer_of(imp.module, layers)
            if theirs > mine:
                found.append(f"{imp.path}:{imp.line} -> {target} (layer {layers[mine][0]} "
                             f"imports the higher layer {layers[theirs][0]})")
            if (imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__")
                    and package_of(imp.module) != package_of(name)):
                found.append(f"{imp.path}:{imp.line} -> {target} (a private name of the package "
                             f"{package_of(imp.module)} taken by {package_of(name)})")
    return found


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer_of(name)  # LookupError names the module


def test_the_imports_are_read() -> None:
    # the reader finds what it must: a guard against a reader that finds nothing
    known = modules()

    def read(module: str) -> set[tuple[str, str | None, bool]]:
        return {(i.module, i.name, i.type_checking) for i in imports(module, known[module], known)}

    assert ("xlinalg._kernels._build", "Kernel", False) in read("xlinalg._unrolled._cache")
    assert ("xlinalg.backends._base", "Backend", True) in read("xlinalg.backends._convert")  # TYPE_CHECKING
    assert ("xlinalg.backends", "BACKEND_NAMES", False) in read("xlinalg")  # a name of a package
    assert ("xlinalg._lib._finite", "np_finite", False) in read("xlinalg.backends._numpy_adapter")  # in a function


def _plant(tmp_path: Path, files: Mapping[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        p = tmp_path / PACKAGE / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return modules(tmp_path)


_LAYERS = (("low", ("xlinalg.low",)), ("mid", ("xlinalg",)), ("high", ("xlinalg.high",)))


@pytest.mark.parametrize(
    ("code", "target"),
    [
        ("from .. import high", "xlinalg.high"),
        ("from ..high import thing", "xlinalg.high.thing"),
        ("from ..high.mod import thing", "xlinalg.high.mod.thing"),
        ("import xlinalg.high.mod", "xlinalg.high.mod"),
        ("from xlinalg import top", "xlinalg.top"),
        ("import xlinalg", "xlinalg"),
        ("def f():\n    from ..high import mod\n", "xlinalg.high.mod"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high.mod import T\n", "xlinalg.high.mod.T"),
        ("import importlib\ndef f():\n    return importlib.import_module('xlinalg.high.mod')\n", "xlinalg.high.mod"),
        ("from .. import top as t", "xlinalg.top"),
    ],
)
def test_a_planted_arrow_back_up_fails(tmp_path: Path, code: str, target: str) -> None:
    known = _plant(tmp_path, {
        "__init__.py": "", "top.py": "", "low/__init__.py": "", "low/mod.py": code,
        "high/__init__.py": "", "high/mod.py": "thing = T = 1\n",
    })
    found = violations(known, _LAYERS, {}, tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith("xlinalg/low/mod.py:"), found
    assert f"-> {target} (layer low imports the higher layer " in found[0], found
    # the same import listed as an exception passes
    assert violations(known, _LAYERS, {("xlinalg.low.mod", target): "planted"}, tmp_path) == []


@pytest.mark.parametrize(
    ("code", "ok"),
    [
        ("from ..low.mod import _private", False),  # a private name of another package
        ("from ..low.mod import public, _private", False),
        ("from ..low import _mod", True),  # a private module: the name is a module
        ("from ..low.mod import public", True),
        ("from .. import _version", True),  # a module
        ("from ..low.mod import __doc__", True),  # a dunder is no private name
    ],
)
def test_a_planted_private_name_across_packages_fails(tmp_path: Path, code: str, ok: bool) -> None:
    known = _plant(tmp_path, {
        "__init__.py": "", "_version.py": "", "top.py": code.replace("..", "."),
        "low/__init__.py": "", "low/_mod.py": "", "low/mod.py": "_private = public = 1\n",
        "high/__init__.py": "", "high/mod.py": code,
    })
    found = violations(known, _LAYERS, {}, tmp_path)
    assert (found == []) == ok, found
    if not ok:
        assert {f.split(":")[0] for f in found} == {"xlinalg/top.py", "xlinalg/high/mod.py"}, found
        assert all("a private name of the package xlinalg.low" in f for f in found), found


def test_private_names_within_a_package_are_its_own(tmp_path: Path) -> None:
    known = _plant(tmp_path, {
        "__init__.py": "", "low/__init__.py": "", "low/sub/__init__.py": "",
        "low/sub/a.py": "from ..mod import _private\n", "low/mod.py": "_private = 1\n",
    })
    assert violations(known, _LAYERS, {}, tmp_path) == []


def test_no_arrow_back_up_and_no_private_name_across_packages() -> None:
    found = violations(modules())
    assert not found, (
        f"{len(found)} import(s) break the layers ({' < '.join(n for n, _ in LAYERS)}; "
        "see tests/architecture/test_layers.py and docs/contributing.md):\n  " + "\n  ".join(found)
    )


def test_the_exceptions_are_still_needed() -> None:
    known = modules()
    for (importer, target), why in EXCEPTIONS.items():
        assert why, f"the exception {importer} -> {target} gives no reason"
        assert importer in known, f"the exception names {importer}, which is no module"
        got = {i.module if i.name is None else f"{i.module}.{i.name}" for i in imports(importer, known[importer], known)}
        assert target in got or any(g.startswith(target + ".") for g in got), (
            f"{importer} no longer imports {target}: strike its exception")
