"""The imports among xlinalg's modules, read from the source (AST).

Shared by the architecture tests (``test_layers.py``, ``test_import_cycles.py``):
an import counts wherever it stands, at the top of a module or inside a
function, relative or absolute, and ``importlib.import_module("xlinalg...")``
(or ``__import__``) with a literal name; each import says whether it stands under
``if TYPE_CHECKING:`` (never run, but a dependency of the types).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "xlinalg"


class Import(NamedTuple):
    """One import: where it stands, the module it loads and the name it takes."""

    path: str  # the importing file, relative to the source root
    line: int
    module: str  # the xlinalg module loaded
    name: str | None  # a name (not a module) taken from `module` (`from m import name`), else None
    type_checking: bool  # under ``if TYPE_CHECKING:``


def modules(src: Path = SRC) -> dict[str, Path]:
    """Every module under ``src/xlinalg`` by its dotted name (a package by its folder's)."""
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, hidden: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below `node`, with whether it stands under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            assert isinstance(child, ast.If)
            for sub in child.body:
                yield sub, True
                yield from _walk(sub, True)
            for sub in child.orelse:
                yield sub, hidden
                yield from _walk(sub, hidden)
            continue
        yield child, hidden
        yield from _walk(child, hidden)


def imports(name: str, path: Path, known: Mapping[str, Path], src: Path = SRC) -> Iterator[Import]:
    """The imports of xlinalg modules and names that module `name` (at `path`) makes."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    where = path.relative_to(src).as_posix() if path.is_relative_to(src) else str(path)

    def resolve(node: ast.AST, hidden: bool, target: str, taken: str | None = None) -> Iterator[Import]:
        if target.split(".")[0] != PACKAGE:
            return
        if taken is not None and f"{target}.{taken}" in known:  # `from pkg import module`
            target, taken = f"{target}.{taken}", None
        while target not in known and "." in target:  # `import a.b.c`, c not a module
            target = target.rpartition(".")[0]
        yield Import(where, getattr(node, "lineno", 0), target, taken, hidden)

    for node, hidden in _walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from resolve(node, hidden, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                yield from resolve(node, hidden, stem, alias.name)
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield from resolve(node, hidden, arg.value)
