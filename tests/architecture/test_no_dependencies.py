"""Importing xlinalg imports no array library but NumPy, nor the benchmark's
and tests' heavy dependencies (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("torch", "jax", "jaxlib", "cupy", "dask", "array_api_strict", "rich", "matplotlib", "scipy", "pytest")

CODE = """
import json, sys
import xlinalg
import xlinalg.backends
xlinalg.available_backends  # touch, without probing
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""


def _modules_after(code: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))


def test_import_xlinalg_imports_no_array_library() -> None:
    loaded = _modules_after(CODE)
    assert "numpy" in loaded
    assert "xlinalg" in loaded
    assert not loaded & set(FORBIDDEN), sorted(loaded & set(FORBIDDEN))


def test_numpy_only_use_imports_no_other_library() -> None:
    # using the library on NumPy arrays (every function) stays NumPy-only, scipy aside:
    # sigmoid uses scipy.special.expit when SciPy is installed
    code = """
import json, sys
import numpy as np, xlinalg as xl
a = np.eye(3) * 2
xl.solve(a, np.ones(3)); xl.matmul(a, a); xl.svd(a); xl.svdvals(a); xl.qr(a)
xl.add(a, 1.0); xl.subtract(a, a); xl.multiply(a, 2); xl.divide(a, 2); xl.exp(a)
xl.backend_of(a); xl.to(a, "numpy"); xl.synchronize(a)
print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""
    loaded = _modules_after(code)
    assert not loaded & (set(FORBIDDEN) - {"scipy"}), sorted(loaded & set(FORBIDDEN))


@pytest.mark.parametrize("module", ["xlinalg.backends", "xlinalg._dispatch"])
def test_internal_modules_import_nothing_heavy(module: str) -> None:
    loaded = _modules_after(f"import json, sys, {module}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")
    assert not loaded & set(FORBIDDEN), sorted(loaded & set(FORBIDDEN))
