"""No module outside ``xlinalg.backends`` asks *which* backend's object it holds.

``test_library_names.py`` finds decisions on a library's name (``backend ==
"dask"``). The same decision can be spelled without a name: ``ad is NUMPY``,
``isinstance(ad, DaskAdapter)``, ``ad is get_backend("numpy").adapter()``, a dict
keyed by an adapter. Each is a capability of one library hidden at its use (an
eager host array, lazy blocks, NumPy's own gufuncs), which a new backend cannot
declare and which falls back silently to another library's behaviour. Outside
``xlinalg.backends`` such a decision asks a hook instead (an attribute of
``backends._adapter.Adapter`` or of ``Backend`` and its facets, with its default
there and each library's value in its module: ``ad.numpy_arrays``,
``ad.map_gufunc is not None``).

The scan reads the source (AST) and resolves what each name is by importing the
backends package (which imports no array library): a *library's object* is an
instance or a subclass of ``Adapter``, ``Backend`` or ``Facet`` defined in one
library's module (``backends/_numpy.py``, ``_dask.py``, ...), not the generic bases
(``_adapter.py``, ``_base.py``, ``_facets.py``), reached by an import of any form
(``from .backends._numpy import NUMPY as N``, ``from . import backends`` then
``backends._numpy.NUMPY``), or a backend looked up by its id
(``get_backend("numpy")``, ``default_backend("jax")``) and anything read off it.
These are decisions on one:

* a comparison (``is``, ``is not``, ``==``, ``!=``, ``in``, ``not in``) with one, alone
  or in a tuple, list or set;
* ``isinstance``/``issubclass`` against one (or a tuple holding one);
* one used as a dict key (a display, a subscript, ``.get``/``.pop``/``.setdefault``);
* a ``match``/``case`` on one (a value or a class pattern).

Using one is not a decision: ``NUMPY.fast`` (its kernels), ``solve_adapter(NUMPY,
...)`` (NumPy's own work on host blocks), ``ad = NUMPY`` (the adapter of an
``ndarray``, found by its type), ``return NUMPY`` (host data is NumPy's).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import types
from pathlib import Path
from typing import Any

import pytest

import xlinalg
from xlinalg.backends._adapter import Adapter
from xlinalg.backends._base import Backend
from xlinalg.backends._facets import Facet

SRC = Path(xlinalg.__file__).resolve().parent

#: the backends package's modules that hold no library: the bases and the registry
GENERIC_MODULES = frozenset({
    "xlinalg.backends", "xlinalg.backends._adapter", "xlinalg.backends._base",
    "xlinalg.backends._facets", "xlinalg.backends._speed",
})

#: the calls that look a backend up by its id (or a library by its name)
LOOKUPS = frozenset({"get_backend", "default_backend"})

#: stands for a backend looked up by its id, and anything read off it
_LOOKED_UP = object()


def one_library(obj: Any) -> bool:
    """Whether `obj` is one library's adapter, backend or facet (an instance or a class)."""
    if obj is _LOOKED_UP:
        return True
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, (Adapter, Backend, Facet)) and cls.__module__ not in GENERIC_MODULES


def _bindings(tree: ast.AST, package: str) -> dict[str, Any]:
    """Local name -> the object an import of ``xlinalg.backends`` (or of its modules or
    names) binds it to, wherever the import stands. `package`: the module's package,
    for relative imports."""
    out: dict[str, Any] = {}

    def load(module: str) -> Any:
        try:
            return importlib.import_module(module)
        except ImportError:
            return None

    def wanted(module: str) -> bool:
        return module == "xlinalg" or module.startswith("xlinalg.backends")

    def is_module(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, AttributeError, ValueError):  # a name inside a module
            return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if wanted(alias.name) and alias.asname:
                    out[alias.asname] = load(alias.name)
                elif wanted(alias.name):
                    out[alias.name.partition(".")[0]] = load(alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else (node.module or "")
            for alias in node.names:
                local = alias.asname or alias.name
                full = f"{base}.{alias.name}"
                if wanted(full) and is_module(full):
                    out[local] = load(full)  # a module
                elif wanted(base) and (mod := load(base)) is not None:
                    out[local] = getattr(mod, alias.name, None)
    return out


def decisions(source: str, package: str = "xlinalg") -> list[tuple[int, str, str]]:
    """``(line, form, what)`` for each decision on one library's object in `source`,
    a module of `package`."""
    tree = ast.parse(source)
    bound = _bindings(tree, package)

    def resolve(node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            obj = resolve(node.value)
            if obj is _LOOKED_UP:
                return _LOOKED_UP
            # modules and classes only: an instance's attribute may compute (an adapter)
            if isinstance(obj, (type, types.ModuleType)):
                return getattr(obj, node.attr, None)
            return None
        if isinstance(node, ast.Subscript):  # BACKENDS[0]
            obj = resolve(node.value)
            i = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if isinstance(obj, (tuple, list)) and isinstance(i, int) and -len(obj) <= i < len(obj):
                return obj[i]
            return None
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in LOOKUPS and node.args and isinstance(node.args[0], ast.Constant):
                return _LOOKED_UP
            if isinstance(f, ast.Attribute) and resolve(f.value) is _LOOKED_UP:  # .adapter()
                return _LOOKED_UP
        return None

    def libs(node: ast.AST | None) -> list[str]:
        """The library objects `node` is (or a tuple, list or set of them holds)."""
        if node is None:
            return []
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [ast.unparse(e) for e in elts if one_library(resolve(e))]

    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        hits: list[str] = []
        form = ""
        if isinstance(node, ast.Compare):
            hits = [h for o in (node.left, *node.comparators) for h in libs(o)]
            form = "comparison"
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in ("isinstance", "issubclass") and len(node.args) == 2:
                hits, form = libs(node.args[1]), name
            elif name in ("get", "pop", "setdefault") and isinstance(f, ast.Attribute) and node.args:
                hits, form = libs(node.args[0]), f"dict key (.{name})"
        elif isinstance(node, ast.Dict):
            hits, form = [h for k in node.keys for h in libs(k)], "dict key"
        elif isinstance(node, ast.DictComp):
            hits, form = libs(node.key), "dict key (comprehension)"
        elif isinstance(node, ast.Subscript):
            hits, form = libs(node.slice), "dict key (subscript)"
        elif isinstance(node, ast.match_case):
            pats = [p.value for p in ast.walk(node.pattern) if isinstance(p, ast.MatchValue)]
            pats += [p.cls for p in ast.walk(node.pattern) if isinstance(p, ast.MatchClass)]
            hits, form = [h for p in pats for h in libs(p)], "match/case"
        if hits:
            line = node.pattern.lineno if isinstance(node, ast.match_case) else getattr(node, "lineno", 0)
            found.append((line, form, ", ".join(sorted(set(hits)))))
    return sorted(found)


def _modules() -> list[str]:
    return sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] != "backends"
    )


def _package(module: str) -> str:
    """The package of `module` (a path under src/xlinalg), for its relative imports."""
    parts = ["xlinalg", *module.removesuffix(".py").split("/")]
    return ".".join(parts[:-1])  # (a package's __init__: its folder, the same parts)


@pytest.mark.parametrize("module", _modules())
def test_no_module_outside_the_backends_package_asks_which_backend_it_holds(module: str) -> None:
    found = decisions((SRC / module).read_text(encoding="utf-8"), _package(module))
    assert not found, (
        f"{module} decides on one library's object:\n"
        + "\n".join(f"src/xlinalg/{module}:{ln}: {form} with {what}" for ln, form, what in found)
        + "\nask a hook instead: an attribute of xlinalg.backends._adapter.Adapter (or of "
        "Backend or a facet) with its default there and the library's value in its module"
    )


@pytest.mark.parametrize(
    ("code", "package"),
    [
        ("from .backends._numpy_adapter import NUMPY\nif ad is NUMPY: pass", "xlinalg"),
        ("from .backends._numpy_adapter import NUMPY\nok = ad is not NUMPY and x", "xlinalg"),
        ("from .backends._numpy_adapter import NUMPY as NUMPY_ADAPTER\nif ad is NUMPY_ADAPTER: pass", "xlinalg"),
        ("from ..backends._numpy import NUMPY\nr = f(x) if ad is NUMPY else x", "xlinalg._unrolled"),
        ("from .backends._numpy import NUMPY\nif ad == NUMPY: pass", "xlinalg"),
        ("from .backends._numpy import NUMPY\nif ad in (NUMPY, other): pass", "xlinalg"),
        ("from .backends import _numpy\nif ad is _numpy.NUMPY: pass", "xlinalg"),
        ("from . import backends\nif ad is backends._dask.DaskAdapter: pass", "xlinalg"),
        ("from .. import backends as _registry\nif b is _registry._dask.BACKENDS[0]: pass", "xlinalg.testing"),
        ("import xlinalg.backends._numpy\nif ad is xlinalg.backends._numpy.NUMPY: pass", "xlinalg"),
        ("from .backends._dask import DaskAdapter\nif isinstance(ad, DaskAdapter): pass", "xlinalg"),
        ("from .backends._numpy_adapter import NumPyAdapter\nif type(ad) is NumPyAdapter: pass", "xlinalg"),
        ("from .backends._torch import TorchBackend\nok = issubclass(cls, (TorchBackend, int))", "xlinalg"),
        ("from .backends._dask import DaskBench\nif isinstance(f, DaskBench): pass", "xlinalg"),
        ("from .backends import get_backend\nif ad is get_backend('numpy').adapter(): pass", "xlinalg"),
        ("if ad.library == get_backend('torch-cpu').adapter_class.library: pass", "xlinalg"),
        ("if b == backends.default_backend('jax'): pass", "xlinalg"),
        ("from .backends._numpy import NUMPY\nt = {NUMPY: 1}", "xlinalg"),
        ("from .backends._numpy import NUMPY\nv = table[NUMPY]", "xlinalg"),
        ("from .backends._numpy import NUMPY\nv = table.get(NUMPY)", "xlinalg"),
        ("from .backends import _numpy\nmatch ad:\n    case _numpy.NUMPY:\n        pass", "xlinalg"),
        ("from .backends._dask import DaskAdapter\nmatch ad:\n    case DaskAdapter():\n        pass", "xlinalg"),
    ],
)
def test_the_scan_finds_each_form_of_decision(code: str, package: str) -> None:
    assert decisions(code, package), code


@pytest.mark.parametrize(
    ("code", "package"),
    [
        ("from .backends._numpy import NUMPY\nfast = NUMPY.fast", "xlinalg"),
        ("from .backends._numpy import NUMPY\nad = NUMPY", "xlinalg"),
        ("from ..backends._numpy import NUMPY\nx = solve_adapter(NUMPY, a, b)", "xlinalg._unrolled"),
        ("from .backends._numpy import NUMPY\ndef f():\n    return NUMPY", "xlinalg"),
        ("from .backends._base import Adapter\nok = isinstance(x, Adapter)", "xlinalg"),
        ("from .backends import Backend\nok = isinstance(b, Backend)", "xlinalg"),
        ("from .backends._facets import BenchFacet\nok = isinstance(f, BenchFacet)", "xlinalg"),
        ("if ad is None or ad is not found: pass", "xlinalg"),
        ("if ad.numpy_arrays and ad.map_gufunc is not None: pass", "xlinalg"),
        ("from .backends import get_backend\nb = get_backend('dask')", "xlinalg"),
        ("if get_backend(name) is b: pass", "xlinalg"),
        ("NUMPY = object()\nif ad is NUMPY: pass", "xlinalg"),
    ],
)
def test_the_scan_leaves_other_code_alone(code: str, package: str) -> None:
    assert not decisions(code, package), code


#: a planted module: the decisions this test guards against, each on the line named
_PLANTED = '''\
from .backends._numpy_adapter import NUMPY as NUMPY_ADAPTER, NumPyAdapter
from .backends import _dask, get_backend

def qr_r(ad, x, keep):
    if ad is NUMPY_ADAPTER:                                   # line 5: comparison
        return keep(x)
    if isinstance(ad, _dask.DaskAdapter):                     # line 7: isinstance
        return x
    skip = {get_backend("dask").adapter(): "lazy"}            # line 9: dict key
    fast = NUMPY_ADAPTER.fast                                 # line 10: a use, not a decision
    return skip, fast, type(ad) is NumPyAdapter               # line 11: comparison
'''


def test_a_planted_module_is_flagged_at_each_line_with_its_form() -> None:
    found = decisions(_PLANTED, "xlinalg")
    assert [(ln, form) for ln, form, _ in found] == [
        (5, "comparison"), (7, "isinstance"), (9, "dict key"), (11, "comparison"),
    ], found
    assert found[0][2] == "NUMPY_ADAPTER", found
    assert found[1][2] == "_dask.DaskAdapter", found


def test_every_library_module_is_seen_as_one_library() -> None:
    """The scan's notion of a library's object covers every registered backend:
    its backend, its adapter's class, and no generic base."""
    from xlinalg import backends

    for name in xlinalg.BACKEND_NAMES:
        be = backends.get_backend(name)
        assert one_library(be), name
        assert one_library(be.adapter_class), name
    assert not any(one_library(c) for c in (Adapter, Backend, Facet))
