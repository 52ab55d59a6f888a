"""No import cycle among xlinalg's modules.

The graph is read from the source (AST), not from a running interpreter, so an
import hidden inside a function, or made by name through
``importlib.import_module("xlinalg...")``, counts like one at the top: hiding a
cycle that way is exactly what this test exists to refuse. Imports under
``if TYPE_CHECKING:`` never run and are left out. The implicit import of a
module's parent package (``xlinalg.bench`` before ``xlinalg.bench._cases``) is
not an edge: every package would be a cycle with its own modules otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from source_graph import imports, modules


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The xlinalg modules that module `name` imports, anywhere in its body but
    under ``if TYPE_CHECKING:``."""
    return {i.module for i in imports(name, path, known) if not i.type_checking and i.module != name}


def _graph() -> dict[str, set[str]]:
    known = modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_the_graph_is_read() -> None:
    # the reader finds the imports it must (guards against a reader that finds nothing)
    g = _graph()
    assert "xlinalg.backends._base" in g["xlinalg._dispatch"]
    assert "xlinalg._unrolled" in g["xlinalg._solve"]  # `from . import _unrolled`
    assert "xlinalg.bench._cases" in g["xlinalg.study.cases.questions"]  # `from ...bench._cases import`
    # `from ... import backends`, in a function
    assert "xlinalg.backends" in g["xlinalg.study.cases.article_memory"]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_cycle_finder(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected


def test_hidden_imports_are_seen(tmp_path: Path) -> None:
    # a function-level import and one by name both make an edge; TYPE_CHECKING ones do not
    (tmp_path / "xlinalg").mkdir()
    (tmp_path / "xlinalg" / "__init__.py").write_text("")
    (tmp_path / "xlinalg" / "a.py").write_text(
        "import importlib\ndef f():\n    from . import b\n"
        "def g():\n    importlib.import_module('xlinalg.c')\n"
    )
    (tmp_path / "xlinalg" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n")
    (tmp_path / "xlinalg" / "c.py").write_text("")
    modules = {"xlinalg.a": tmp_path / "xlinalg/a.py", "xlinalg.b": tmp_path / "xlinalg/b.py",
               "xlinalg.c": tmp_path / "xlinalg/c.py", "xlinalg": tmp_path / "xlinalg/__init__.py"}
    assert _imports("xlinalg.a", modules["xlinalg.a"], modules) == {"xlinalg.b", "xlinalg.c"}
    assert _imports("xlinalg.b", modules["xlinalg.b"], modules) == set()


def test_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles among xlinalg modules (break them; see this test's docstring): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )
