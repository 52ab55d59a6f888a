"""``fairness.layout`` of a cell's inputs comes from the backend's bench facet
(``Backend.bench.layout``), never from probing the array for a library's attributes."""

from __future__ import annotations

from typing import Any

import numpy as np


def test_layout_of_a_contiguous_input_and_of_a_strided_view(backend: Any) -> None:
    h = np.arange(32.0).reshape(4, 8)
    x = backend.arr(h)
    got = backend.be.bench.layout(x)
    assert got["shape"] == [4, 8], backend.name
    if backend.lazy:  # a task graph: its chunks, not a memory layout
        assert got["chunks"] == [[int(c) for c in ch] for ch in x.chunks], backend.name
        return
    assert got["c_contiguous"] is True, backend.name
    view = backend.be.bench.layout(x.T)
    assert view["shape"] == [8, 4], backend.name
    # the libraries whose views are strided say so; JAX, CuPy and array-api-strict record
    # their arrays as row-major (what the record has always said of them)
    strided = backend.be.adapter().numpy_arrays or backend.name.startswith("torch")
    assert view["c_contiguous"] is (not strided), backend.name
