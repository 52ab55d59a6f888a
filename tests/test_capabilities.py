"""The capabilities table (xlinalg._capabilities): complete, and its docs page current."""

from __future__ import annotations

import inspect
from pathlib import Path

import xlinalg as xl
from xlinalg import backends
from xlinalg._capabilities import CAPABILITIES, ELEMENTWISE, EXTENSION, LINALG, OPERATIONS, markdown

ROOT = Path(__file__).resolve().parents[1]


def test_operations_are_the_public_functions() -> None:
    # every public function is an operation of the table or one of the registry's own
    functions = {n for n in xl.__all__ if inspect.isfunction(getattr(xl, n))}
    registry = functions & set(backends.__all__)
    assert registry == {"available_backends", "backend_of", "synchronize", "to"}
    assert set(OPERATIONS) == functions - registry
    assert len(OPERATIONS) == len(set(OPERATIONS))
    assert set(LINALG) | set(ELEMENTWISE) | {"solve_many"} | set(EXTENSION) == set(OPERATIONS)


def test_every_operation_has_every_backend() -> None:
    assert list(CAPABILITIES) == list(OPERATIONS)
    for op, cells in CAPABILITIES.items():
        assert list(cells) == list(backends.BACKEND_NAMES), op
        for backend, cap in cells.items():
            assert isinstance(cap.supported, bool), (op, backend)
            assert cap.how.strip(), (op, backend)


def test_docs_page_is_generated() -> None:
    page = (ROOT / "docs" / "capabilities.md").read_text(encoding="utf-8")
    assert page == markdown(), "regenerate: python -m xlinalg._capabilities > docs/capabilities.md"
