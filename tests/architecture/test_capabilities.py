"""The capabilities table (xlinalg._capabilities, from the declarations): complete, and
its docs page built from it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import xlinalg as xl
from xlinalg import backends
from xlinalg._capabilities import CAPABILITIES, ELEMENTWISE, LINALG, OPERATIONS, markdown
from xlinalg._pages import render

ROOT = Path(__file__).resolve().parents[2]
#: what the capabilities are declared over: every backend of the registry
REGISTRY = [backends.get_backend(n) for n in backends.BACKEND_NAMES]


def test_operations_are_the_public_functions() -> None:
    # every public function is an operation of the table or one of the registry's own
    functions = {n for n in xl.__all__ if inspect.isfunction(getattr(xl, n))}
    registry = functions & set(backends.__all__)
    assert registry == {"available_backends", "backend_of", "synchronize", "to"}
    assert set(OPERATIONS) == functions - registry
    assert len(OPERATIONS) == len(set(OPERATIONS))
    assert set(LINALG) | set(ELEMENTWISE) | {"solve_many"} == set(OPERATIONS)


def test_every_operation_has_every_backend() -> None:
    assert list(CAPABILITIES) == list(OPERATIONS)
    for op, cells in CAPABILITIES.items():
        assert list(cells) == list(backends.BACKEND_NAMES), op
        for backend, cap in cells.items():
            assert isinstance(cap.supported, bool), (op, backend)
            assert cap.how.strip(), (op, backend)


def test_docs_page_is_generated_at_build_time() -> None:
    # the page holds the marker the site's extension fills, never a table by hand
    page = (ROOT / "docs" / "capabilities.md").read_text(encoding="utf-8")
    assert "```{xlinalg-generated} capabilities\n```" in page
    assert "| backend |" not in page
    text = render("capabilities")
    assert text in markdown()
    for op in OPERATIONS:
        assert f"## `{op}`" in text


def test_capability_cells_name_known_backends_or_libraries() -> None:
    import dataclasses

    from xlinalg._lib._declare import OPERATIONS as DECLARED

    op = DECLARED["exp"]
    op = dataclasses.replace(op, cells={**op.cells, "torch-tpu": "a kernel"})
    with pytest.raises(ValueError, match=r"exp: capability cells for unknown backends or libraries \['torch-tpu'\]"):
        op.capabilities(REGISTRY)


def test_a_library_cell_covers_each_of_its_backends_and_a_backend_cell_wins() -> None:
    from xlinalg._lib._declare import OPERATIONS as DECLARED
    from xlinalg._lib._declare import declare

    @declare("elementwise", args={"x": "any"}, reference="numpy:negative", dtypes="promote", how="standard",
             backends={"torch-cuda": "own", "torch": "lib"}, name="_probe_negative")
    def probe(x):  # pragma: no cover - never called
        return x

    try:
        cells = DECLARED["_probe_negative"].capabilities(REGISTRY)
    finally:
        del DECLARED["_probe_negative"]
    assert cells["torch-cpu"].how == "lib"
    assert cells["torch-cuda"].how == "own"
    assert cells["numpy"].how == "standard"


def test_the_api_reference_lists_every_operation_and_result() -> None:
    text = render("api-operations")
    for op in OPERATIONS:
        assert f".. autofunction:: {op}\n" in text
    assert ".. autoclass:: SVDResult" in text
    assert ".. autoclass:: QRResult" in text
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert ".. xlinalg-generated:: api-operations" in page
    assert ".. autofunction:: solve" not in page  # not by hand


def test_an_unknown_generated_name_is_refused() -> None:
    with pytest.raises(KeyError, match=r"no generated text named 'capabilites'; known: capabilities"):
        render("capabilites")
