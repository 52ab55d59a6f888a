"""The :class:`~xlinalg.backends.Backend` core stays small; what one user asks is a facet.

The core is what every user of a backend asks (identity, availability, array
types, adapter, fence); the benchmark, the unrolled solver, conversion and the
testing kit each ask a facet of their own (``xlinalg/backends/_facets.py``), so
that a hook added for one of them does not grow the class everyone reads. The
facts of one study (which backend stands for an article's column) are the
study's, not the backends'.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import xlinalg
from xlinalg import backends
from xlinalg.backends import Backend
from xlinalg.backends import _facets as F

SRC = Path(xlinalg.__file__).resolve().parent
#: the most members the core may define (attributes and methods, public and private)
MAX_CORE = 30
#: the facets every backend has, and the base class each one's class derives from
FACETS = {"bench": F.BenchFacet, "unrolled": F.UnrolledFacet, "convert": F.ConvertFacet,
          "testing": F.TestingFacet}


def core_members(source: str) -> list[str]:
    """The members the class ``Backend`` of `source` defines in its body."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Backend":
            names: list[str] = []
            for s in node.body:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.append(s.name)
                elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                    names.append(s.target.id)
                elif isinstance(s, ast.Assign):
                    names += [t.id for t in s.targets if isinstance(t, ast.Name)]
            return names
    raise AssertionError("no class Backend in the source")


def test_the_backend_core_has_at_most_30_members() -> None:
    members = core_members((SRC / "backends" / "_base.py").read_text(encoding="utf-8"))
    assert len(members) == len(set(members))
    assert len(members) <= MAX_CORE, (
        f"Backend defines {len(members)} members (at most {MAX_CORE}): {', '.join(members)}; "
        "put what one user asks in a facet (xlinalg/backends/_facets.py)"
    )
    # what the class holds at run time agrees (dunders of every class left out)
    runtime = [n for n in vars(Backend) if not (n.startswith("__") and n.endswith("__"))]
    assert set(runtime) <= set(members), set(runtime) - set(members)


def test_the_count_reads_every_kind_of_member() -> None:
    src = ("class Backend:\n    a: int = 1\n    b = c = 2\n    def f(self): pass\n"
           "    async def g(self): pass\n    @property\n    def h(self): return 1\n")
    assert core_members(src) == ["a", "b", "c", "f", "g", "h"]


@pytest.mark.parametrize("name", backends.BACKEND_NAMES)
def test_every_backend_has_each_facet_made_once(name: str) -> None:
    b = backends.get_backend(name)
    for attr, base in FACETS.items():
        f = getattr(b, attr)
        assert isinstance(f, base), (name, attr, type(f))
        assert f.backend is b
        assert getattr(b, attr) is f  # kept on the backend, not made per read
        assert isinstance(vars(Backend)[attr], F.facet)


def test_a_facet_read_on_two_threads_at_once_is_one_object() -> None:
    from concurrent.futures import ThreadPoolExecutor

    class _B(Backend):
        name = "fresh"

    b = _B()
    with ThreadPoolExecutor(8) as pool:
        got = set(map(id, pool.map(lambda _: b.bench, range(64))))
    assert len(got) == 1


@pytest.mark.parametrize("name", backends.BACKEND_NAMES)
def test_no_backend_declares_a_fact_of_the_study(name: str) -> None:
    # the article's columns are the study's table (study/_findings/_setup.py), read
    # against what the backends declare in general (library_word, processor class)
    b = backends.get_backend(name)
    for obj in (b, *(getattr(b, a) for a in FACETS)):
        assert not [n for n in dir(obj) if n.startswith("article")], (name, type(obj))


def test_the_study_finds_the_articles_two_backends_in_the_registry() -> None:
    from xlinalg.study._findings._setup import ARTICLE_NUMPY, ARTICLE_SIDES, ARTICLE_TORCH_CPU

    found = {ARTICLE_NUMPY, ARTICLE_TORCH_CPU}
    assert len(found) == 2
    assert found <= set(backends.BACKEND_NAMES)
    for side, name in zip(ARTICLE_SIDES, (ARTICLE_NUMPY, ARTICLE_TORCH_CPU)):
        b = backends.get_backend(name)
        assert (b.library_word, b.bench.processor_class()) == (side.library_word, side.processor)


def stray_members(cls: type) -> list[str]:
    """Facet members (and the old ``unrolled_*``/``bench_*``/``*_for_tests`` hook
    names) that a backend class, or a class between it and ``Backend``, defines on
    the backend itself: nothing reads them there, so the declaration is silently lost."""
    facet_names = {n for base in FACETS.values() for n in dir(base)} - set(dir(F.Facet))
    out = []
    for c in cls.__mro__:
        if c is Backend:
            break
        out += [n for n in vars(c)
                if (n in facet_names and n not in vars(Backend))
                or n.startswith(("unrolled_", "bench_")) or n.endswith("_for_tests")]
    return out


def test_the_stray_member_finder_finds_them() -> None:
    class _Old(Backend):
        name = "old"
        unrolled_layout = "batch-last"
        numpy_host = True

        def configure_for_tests(self) -> None: ...

    assert sorted(stray_members(_Old)) == ["configure_for_tests", "numpy_host", "unrolled_layout"]


@pytest.mark.parametrize("name", backends.BACKEND_NAMES)
def test_no_backend_declares_a_facet_member_on_itself(name: str) -> None:
    assert stray_members(type(backends.get_backend(name))) == [], name
