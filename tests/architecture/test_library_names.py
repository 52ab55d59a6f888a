"""One place knows each library: no module outside ``xlinalg.backends`` decides on a library's name.

Everything outside the package receives a backend object and asks it (a hook of
``xlinalg.backends._base.Backend``, overridden in the library's module), so that
adding a backend is one module and one registry line, and a missed spot cannot
fall back silently to another library's behaviour. The scan reads the source
(AST): a comparison (``==``, ``!=``, ``in``, ``not in``, ``match``/``case``) or a
``startswith``/``endswith`` call that involves a backend id or an array library's
name is a decision on a library's name, and a tuple, list or set of two or more
of them is a list of libraries kept outside the registry. Looking a backend up by its id
(``get_backend("dask")``) is not: it names a backend, it does not branch on one.
A membership test against ``sys.modules`` asks whether a module is imported,
not which backend is in use, and is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import xlinalg
from xlinalg import backends

SRC = Path(xlinalg.__file__).resolve().parent

#: The library names a decision could be made on: every backend id and every
#: backend's module ("torch" reads the "torch-cpu" id, "array_api_strict" a type's
#: module), and JAX's other module.
NAMES = frozenset(
    {*xlinalg.BACKEND_NAMES}
    | {backends.get_backend(n).module for n in xlinalg.BACKEND_NAMES}
    | {"jaxlib"}
)


def _names_in(node: ast.AST) -> set[str]:
    """The library names among the string constants of `node` (a constant, or a
    tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)} & NAMES
    return set()


def _is_sys_modules(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "modules"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def decisions(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """``(line, library names)`` for each decision on a library's name in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename)):
        names: set[str] = set()
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_sys_modules(o) for o in operands):
                continue
            for o in operands:
                names |= _names_in(o)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and node.args):
            arg = node.args[0]
            consts = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
            end = node.func.attr == "endswith"
            for c in consts:
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and len(c.value) >= 3:
                    # a part of a name ("jax" reads "jax-cpu", "-gpu" "jax-gpu") or more
                    v = c.value
                    names |= {n for n in NAMES if (n.endswith(v) if end else n.startswith(v))
                              or (not end and v.startswith(n))}
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(_names_in(node)) >= 2:
            names = _names_in(node)  # a list of libraries kept outside the registry
        elif isinstance(node, ast.match_case):
            names |= {c.value for c in ast.walk(node.pattern)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)} & NAMES
        if names:
            found.append((node.lineno if hasattr(node, "lineno") else node.pattern.lineno,
                          ", ".join(sorted(names))))
    return found


def _modules() -> list[str]:
    return sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] != "backends"
    )


@pytest.mark.parametrize("module", _modules())
def test_no_module_outside_the_backends_package_decides_on_a_library_name(module: str) -> None:
    found = decisions((SRC / module).read_text(encoding="utf-8"), module)
    assert not found, (
        f"{module} decides on library names at "
        + "; ".join(f"line {ln} ({n})" for ln, n in found)
        + ": ask the backend object instead (a hook of xlinalg.backends._base.Backend)"
    )


@pytest.mark.parametrize(
    "code",
    [
        'if backend == "jax-cpu": pass',
        'if "numpy" != name: pass',
        'if b in ("numpy", "dask"): pass',
        'if name.startswith("torch"): pass',
        'if name.startswith(("jax", "cupy")): pass',
        'ok = name.endswith("-gpu")',
        'match name:\n    case "dask":\n        pass',
        'host = backend not in {"array-api-strict", "numpy"}',
        '_HOSTS = ("numpy", "dask")',
    ],
)
def test_the_scan_finds_each_form_of_decision(code: str) -> None:
    assert decisions(code), code


@pytest.mark.parametrize(
    "code",
    [
        'b = get_backend("dask")',
        'if "dask" in sys.modules: pass',
        'x = {"numpy": 1}',
        'if name == "solve": pass',
        'if s.startswith("x"): pass',
        'names = ("numpy", "scipy")',
    ],
)
def test_the_scan_leaves_other_code_alone(code: str) -> None:
    assert not decisions(code), code
