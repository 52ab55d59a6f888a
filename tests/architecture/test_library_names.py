"""One place knows each library: no module outside ``xlinalg.backends`` decides on a library's name.

Everything outside the package receives a backend object and asks it (a hook of
``xlinalg.backends._base.Backend`` or of one of its facets, ``_facets.py``,
overridden in the library's module), so that adding a backend is one module and
one registry line, and a missed spot cannot fall back silently to another
library's behaviour. The scan reads the source (AST). A library name is every
backend id of the registry, every backend's module (``"torch"`` reads the
``"torch-cpu"`` id, ``"array_api_strict"`` a type's module), every library's word
in messages (``"PyTorch"``: ``ad.library == "PyTorch"`` decides as surely) and
JAX's other module. These are decisions on a library's name:

* a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) or a ``match``/``case``
  that involves one;
* a ``startswith``/``endswith`` call with one, or with a part of one (``"jax"``,
  ``"-gpu"``);
* a conditional expression that gives one (``"jax-gpu" if ... else "jax-cpu"``);
* one used as a dict key: in a dict display or comprehension, as ``dict(numpy=...)``,
  as a subscript (``table["dask"]``) or in ``.get``/``.pop``/``.setdefault``;
* a tuple, list or set of two or more of them: a list of libraries kept outside
  the registry.

Not decisions: looking a backend up by its id (``get_backend("dask")``, a call:
it names a backend, it does not branch on one); a question to ``sys.modules``
(whether a module is imported, not which backend is in use); the two tables
keyed per backend by design (:data:`TABLES`): the cells of the capabilities table
(``declare(..., backends={...})``), documentation rows that the registry validates
(``Operation.capabilities`` refuses a key no backend has); and the fields of the benchmark's records that carry a library's name
(:data:`RECORD_FIELDS`), frozen by the committed results.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import xlinalg
from xlinalg import backends

SRC = Path(xlinalg.__file__).resolve().parent

#: The library names a decision could be made on: every backend id, every
#: backend's module ("torch" reads the "torch-cpu" id, "array_api_strict" a type's
#: module), every library's word in messages (``Backend.library_word``: an
#: adapter's ``library``, "PyTorch"), and JAX's other module.
NAMES = frozenset(
    {*xlinalg.BACKEND_NAMES}
    | {backends.get_backend(n).module for n in xlinalg.BACKEND_NAMES}
    | {backends.get_backend(n).library_word for n in xlinalg.BACKEND_NAMES}
    | {"jaxlib"}
)

#: module -> the keys of the benchmark's records that carry a library's name: the
#: header's ``env.numpy`` (NumPy's version: every run needs it) and the fairness
#: record's ``dask`` (its scheduler), written, described and copied by name
RECORD_FIELDS: dict[str, frozenset[str]] = {
    "_machine.py": frozenset({"numpy"}),
    "bench/_schema.py": frozenset({"numpy"}),
    "bench/_cell.py": frozenset({"dask"}),
}


def _names_in(node: ast.AST | None) -> set[str]:
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


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


#: the registries keyed per backend, by design: call -> (keyword, position) of the
#: table. ``declare(..., backends=...)``: the capability table's cells
#: (documentation rows, validated against the registry). (An operation's fast paths
#: are keyless: ``fast_paths(op, np_maker(...), torch_maker(...))``, each maker
#: bound to its adapter class by its backend's module; a table keyed by library
#: name there is a decision like any other.)
TABLES: dict[str, tuple[str, int]] = {"declare": ("backends", -1)}


def _tables(tree: ast.AST) -> set[int]:
    """The ids of the dict displays that are one of :data:`TABLES`: given to the call
    directly, as a module constant, or as what a function called there returns."""
    cells: set[int] = set()
    builders: set[str] = set()
    constants: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in TABLES:
            keyword, position = TABLES[_call_name(node)]
            given = [kw.value for kw in node.keywords if kw.arg == keyword]
            if 0 <= position < len(node.args):
                given.append(node.args[position])
            for value in given:
                if isinstance(value, ast.Dict):
                    cells.add(id(value))
                elif isinstance(value, ast.Name):
                    constants.add(value.id)
                elif isinstance(value, ast.Call) and _call_name(value):
                    builders.add(_call_name(value))
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in constants for t in targets):
                cells.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in builders:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                    cells.add(id(ret.value))
    return cells


def _prefix_names(arg: ast.AST, end: bool) -> set[str]:
    """The library names a ``startswith``/``endswith`` argument reads on."""
    consts = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
    out: set[str] = set()
    for c in consts:
        if isinstance(c, ast.Constant) and isinstance(c.value, str) and len(c.value) >= 3:
            # a part of a name ("jax" reads "jax-cpu", "-gpu" "jax-gpu") or more
            v = c.value
            out |= {n for n in NAMES if (n.endswith(v) if end else n.startswith(v))
                    or (not end and v.startswith(n))}
    return out


def decisions(source: str, filename: str = "<source>") -> list[tuple[int, str, str]]:
    """``(line, form, library names)`` for each decision on a library's name in `source`."""
    tree = ast.parse(source, filename)
    cells = _tables(tree)
    fields = RECORD_FIELDS.get(filename, frozenset())
    found: list[tuple[int, str, str]] = []

    def key_names(node: ast.AST | None) -> set[str]:
        return _names_in(node) - fields if isinstance(node, ast.Constant) else set()

    for node in ast.walk(tree):
        names: set[str] = set()
        form = ""
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if not any(_is_sys_modules(o) for o in operands):
                names = set().union(*(_names_in(o) for o in operands))
                form = "comparison"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in ("startswith", "endswith") and node.args:
                names, form = _prefix_names(node.args[0], attr == "endswith"), attr
            elif (attr in ("get", "pop", "setdefault") and node.args
                  and not _is_sys_modules(node.func.value)):
                names, form = key_names(node.args[0]), f"dict key (.{attr})"
        elif isinstance(node, ast.Call) and _call_name(node) == "dict":
            names = {kw.arg for kw in node.keywords if kw.arg} & NAMES - fields
            form = "dict key (dict(...))"
        elif isinstance(node, ast.Dict) and id(node) not in cells:
            names = set().union(set(), *(key_names(k) for k in node.keys if k is not None))
            form = "dict key"
        elif isinstance(node, ast.DictComp):
            names, form = key_names(node.key), "dict key (comprehension)"
        elif isinstance(node, ast.Subscript) and not _is_sys_modules(node.value):
            names, form = key_names(node.slice), "dict key (subscript)"
        elif isinstance(node, ast.IfExp):
            names, form = _names_in(node.body) | _names_in(node.orelse), "conditional expression"
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(_names_in(node)) >= 2:
            names, form = _names_in(node), "a list of libraries"
        elif isinstance(node, ast.match_case):
            names = {c.value for c in ast.walk(node.pattern)
                     if isinstance(c, ast.Constant) and isinstance(c.value, str)} & NAMES
            form = "match/case"
        if names:
            line = node.pattern.lineno if isinstance(node, ast.match_case) else getattr(node, "lineno", 0)
            found.append((line, form, ", ".join(sorted(names))))
    return sorted(found)


def report(module: str, found: list[tuple[int, str, str]]) -> str:
    """The failure message: ``file:line: form (names)``, one a line."""
    return "\n".join(f"src/xlinalg/{module}:{ln}: {form} on {names}" for ln, form, names in found)


def _modules() -> list[str]:
    return sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] != "backends"
    )


@pytest.mark.parametrize("module", _modules())
def test_no_module_outside_the_backends_package_decides_on_a_library_name(module: str) -> None:
    found = decisions((SRC / module).read_text(encoding="utf-8"), module)
    assert not found, (
        f"{module} decides on library names:\n{report(module, found)}\n"
        "ask the backend object instead (a hook of xlinalg.backends._base.Backend or of "
        "one of its facets, xlinalg.backends._facets)"
    )


@pytest.mark.parametrize(
    "code",
    [
        'if backend == "jax-cpu": pass',
        'if ad.library == "PyTorch": pass',
        'lib = ad.library\nif lib in ("JAX", "NumPy"): pass',
        'if "numpy" != name: pass',
        'if b in ("numpy", "dask"): pass',
        'if name.startswith("torch"): pass',
        'if name.startswith(("jax", "cupy")): pass',
        'ok = name.endswith("-gpu")',
        'match name:\n    case "dask":\n        pass',
        'host = backend not in {"array-api-strict", "numpy"}',
        '_HOSTS = ("numpy", "dask")',
        'x = {"numpy": 1}',
        'skip = {"a": 1, "dask": "no convolution"}',
        'x = {k: 1 for k in ()} | {"torch-cpu": 2}',
        'x = {"jax-cpu": v for v in ()}',
        'x = dict(numpy=1)',
        'reason = SKIPS["dask"]',
        'reason = SKIPS.get("array-api-strict")',
        'target = "jax-gpu" if gpu else "jax-cpu"',
        'word = "torch" if faster else other',
        'declare("linalg", how="x", notes={"dask": "lazy"})',
        'Case(name="a7", skip={"dask": "tall-and-skinny only"})',
        '_SKIPS = {"numpy": "host"}\nCase(name="a11", skip=_SKIPS)',
        '_FAST = fast_paths("det", {"NumPy": np_maker(f), "PyTorch": torch_maker(g)})',
        '_FAST = fast_paths("det", makers={"jax-cpu": jax_maker(f)})',
        'def _makers(s):\n    return {"JAX": jax_maker(f)}\n\n\n_F = fast_paths("eig", _makers(True))',
        '_MAKERS = {"PyTorch": torch_maker(g)}\n_F = fast_paths("qr", _MAKERS)',
    ],
)
def test_the_scan_finds_each_form_of_decision(code: str) -> None:
    assert decisions(code), code


@pytest.mark.parametrize(
    "code",
    [
        'b = get_backend("dask")',
        'b = default_backend("jax")',
        'if "dask" in sys.modules: pass',
        'm = sys.modules.get("torch")',
        'm = sys.modules["jax"]',
        'if name == "solve": pass',
        'if s.startswith("x"): pass',
        'names = ("numpy", "scipy")',
        'x = {"solve": 1}',
        'x = a if c else "solve"',
        'declare("linalg", how="x", backends={"dask": "lazy"})',
        'def _cells(op):\n    return {"torch": op}\n\n\ndeclare("e", backends=_cells("add"))',
        '_CELLS = {"numpy": "a gufunc"}\ndeclare("linalg", backends=_CELLS)',
        '_FAST = fast_paths("det", np_maker(f), torch_maker(g), jax_maker(h))',
        'def _makers(s):\n    return (np_maker(f), jax_maker(g))\n\n\n_F = fast_paths("eig", *_makers(True))',
    ],
)
def test_the_scan_leaves_other_code_alone(code: str) -> None:
    assert not decisions(code), code


def test_a_record_field_is_left_alone_only_where_the_records_are_written() -> None:
    code = 'env = {"xlinalg": v, "numpy": np.__version__}'
    assert not decisions(code, "_machine.py")
    assert decisions(code, "bench/_report.py")


#: a planted module: one decision of each form, each on the line named beside it
_PLANTED = '''\
import sys

def pick(backend, gpu, name, table):
    if backend == "dask":                                   # line 4: comparison
        return 1
    if name.startswith("torch"):                            # line 6: startswith
        return 2
    target = "jax-gpu" if gpu else "jax-cpu"                # line 8: conditional expression
    skip = {"array-api-strict": "no einsum"}                # line 9: dict key
    why = table["cupy"]                                     # line 10: dict key (subscript)
    why = table.get("numpy")                                # line 11: dict key (.get)
    match name:
        case "jax-cpu":                                     # line 13: match/case
            pass
    hosts = ["numpy", "dask"]                               # line 15: a list of libraries
    if "dask" in sys.modules:                               # line 16: not a decision
        pass
    return target, skip, why, hosts
'''


def test_a_planted_module_is_flagged_at_each_line_with_its_form(tmp_path: Path) -> None:
    path = tmp_path / "planted.py"
    path.write_text(_PLANTED, encoding="utf-8")
    found = decisions(path.read_text(encoding="utf-8"), "planted.py")
    got = {(ln, form) for ln, form, _ in found}
    assert got == {
        (4, "comparison"), (6, "startswith"), (8, "conditional expression"),
        (9, "dict key"), (10, "dict key (subscript)"), (11, "dict key (.get)"),
        (13, "match/case"), (15, "a list of libraries"),
    }, found
    message = report("planted.py", found)
    assert "src/xlinalg/planted.py:8: conditional expression on jax-cpu, jax-gpu" in message
    assert "src/xlinalg/planted.py:9: dict key on array-api-strict" in message


def test_a_fast_path_table_keyed_by_library_fails_the_guard_in_an_operation_module() -> None:
    """An operation module's fast paths are keyless (each maker knows its adapter);
    the old form, a table keyed by library name, planted back into the real
    ``_factor.py``, is flagged at its keys."""
    source = (SRC / "_factor.py").read_text(encoding="utf-8")
    keyless = "    np_maker(_np_cholesky_fast),\n    torch_maker(_torch_cholesky_fast),\n"
    assert keyless in source, "the planted table needs _factor.py's cholesky makers: update the test"
    assert not decisions(source, "_factor.py")
    planted = source.replace(keyless, '    {"NumPy": np_maker(_np_cholesky_fast),\n'
                                      '     "PyTorch": torch_maker(_torch_cholesky_fast)},\n')
    line = planted[:planted.index('{"NumPy"')].count("\n") + 1
    found = decisions(planted, "_factor.py")
    assert [(ln, form) for ln, form, _ in found] == [(line, "dict key")], found
    assert "NumPy, PyTorch" in report("_factor.py", found)
