"""Recipe 2 of docs/contributing.md, walked on every run: a new backend is one module
and the registry line, and the suite needs no edit for it.

The walked module, ``tests/fixtures/fakenp/_fakenp.py`` (``fakenp``: a throwaway host
library whose arrays are an ``ndarray`` subclass of their own), is put into a
temporary copy of ``src/`` with the recipe's registry line added to
``backends/__init__.py``. There, in a subprocess, the whole suite must collect and
the backend-parametrised tests of dispatch (``tests/backends/test_dispatch.py``) and
of the operations' shared semantics (``tests/ops/test_operations.py``) must pass on
fakenp, beside NumPy. A test that hard-codes the backend list, a backend's words or
a per-backend table breaks that, as the planted list below shows.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "fakenp" / "_fakenp.py"

#: the backend-parametrised tests run on fakenp (a -k expression over the whole suite)
KEY_TESTS = "fakenp and (test_dispatch or test_operations)"

pytestmark = pytest.mark.slow  # a subprocess collecting the whole suite (about a minute)


def add_backend(dst: Path) -> Path:
    """A copy of ``src/`` under `dst` with fakenp added as recipe 2 says: its module
    in ``backends/`` and its line in the registry (the import and the entry in
    ``_BACKENDS``, last). Returns the copy's ``src``."""
    if (ROOT / "src" / "xlinalg" / "backends" / "_fakenp.py").exists():
        pytest.skip("fakenp is registered in this tree already (a copy walking recipe 2 by hand)")
    src = dst / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    backends = src / "xlinalg" / "backends"
    shutil.copy(FIXTURE, backends / "_fakenp.py")
    init = backends / "__init__.py"
    text = init.read_text(encoding="utf-8")
    text, imports = re.subn(r"^(from \. import .*\b_numpy\b.*)$", r"\1, _fakenp", text, count=1, flags=re.M)
    text, entries = re.subn(r"^(_BACKENDS\b[^=\n]*= \(\n(?:[ \t]+.*\n)*?)\)", r"\1    *_fakenp.BACKENDS,\n)",
                            text, count=1, flags=re.M)
    assert imports == entries == 1, (
        "recipe 2's registry line (import the module in backends/__init__.py, add "
        "*_<library>.BACKENDS to _BACKENDS) no longer fits that file: update the recipe "
        "in docs/contributing.md and add_backend() here together"
    )
    init.write_text(text, encoding="utf-8")
    return src


def run_suite(src: Path, tests: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in a subprocess, with xlinalg imported from `src`, on numpy and fakenp
    (each must run: ``--xlinalg-require-cpu``)."""
    path = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(src), path) if p),
           "XLINALG_TEST_BACKENDS": "numpy,fakenp"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--xlinalg-require-cpu", *args]
    return subprocess.run(cmd, cwd=tests.parent, env=env, capture_output=True, text=True, timeout=1800)


def _counts(out: str) -> dict[str, int]:
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected)", summary)}


def test_a_new_backend_is_its_module_and_the_registry_line(tmp_path: Path) -> None:
    src = add_backend(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-c", "import xlinalg as xl; print(xl.__file__); print(*xl.available_backends())"],
        env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, text=True, timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    where, available = probe.stdout.splitlines()
    assert Path(where).is_relative_to(src), where
    assert "fakenp" in available.split(), available
    res = run_suite(src, ROOT / "tests", "tests", "-k", KEY_TESTS)
    counts = _counts(res.stdout)
    assert res.returncode == 0, (
        "with a new backend added as recipe 2 says, the suite fails (a test hard-codes the "
        "backend list or a backend's words: derive them from the registry):\n"
        + res.stdout[-6000:] + res.stderr[-2000:]
    )
    # every declared operation's dispatch and semantics cases ran on fakenp
    from xlinalg._lib._declare import OPERATIONS

    assert counts.get("passed", 0) >= 3 * len(OPERATIONS), counts


# A planted hard-coded table: the backends' library words written out, as
# test_dispatch.py once had them (its collection broke for a new backend).
_PLANTED = '''
import pytest

import xlinalg as xl
from conftest import BackendCase

LIBRARY_WORDS = {"numpy": "NumPy", "torch-cpu": "PyTorch", "torch-cuda": "PyTorch", "cupy": "CuPy",
                 "jax-cpu": "JAX", "jax-gpu": "JAX", "dask": "Dask", "array-api-strict": "array-api-strict"}
PAIRS = [(a, b) for a in xl.BACKEND_NAMES for b in xl.BACKEND_NAMES if LIBRARY_WORDS[a] != LIBRARY_WORDS[b]]


def test_words(backend: BackendCase) -> None:
    assert LIBRARY_WORDS[backend.name]
'''


def test_a_hard_coded_list_fails_the_walk(tmp_path: Path) -> None:
    src = add_backend(tmp_path)
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_dispatch.py").write_text(_PLANTED, encoding="utf-8")
    res = run_suite(src, tests, "tests", "-k", KEY_TESTS)
    assert res.returncode != 0, res.stdout[-3000:]
    assert "KeyError: 'fakenp'" in res.stdout, res.stdout[-3000:]
