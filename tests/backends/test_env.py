"""Environment variables: one boolean parser, every variable documented in one place."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg._lib._env import env_flag, parse_flag

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "True", "yes", "Yes", "on", "ON", " on "])
def test_true_spellings(raw: str) -> None:
    assert parse_flag("XLINALG_X", raw, False) is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", "False", "no", "NO", "off", "Off"])
def test_false_spellings(raw: str) -> None:
    assert parse_flag("XLINALG_X", raw, True) is False


@pytest.mark.parametrize("raw", [None, "", "  "])
def test_unset_or_blank_is_the_default(raw: str | None) -> None:
    assert parse_flag("XLINALG_X", raw, True) is True
    assert parse_flag("XLINALG_X", raw, False) is False


@pytest.mark.parametrize("raw", ["maybe", "2", "enable", "tru"])
def test_bad_value_names_the_variable(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLINALG_SOME_FLAG", raw)
    with pytest.raises(ValueError, match=rf"environment variable XLINALG_SOME_FLAG='{raw}' is not a boolean: use 1/0, true/false"):
        env_flag("XLINALG_SOME_FLAG")


def _readers() -> set[str]:
    """The XLINALG_* variables the sources and the test configuration mention."""
    names: set[str] = set()
    for path in [*sorted((ROOT / "src").rglob("*.py")), ROOT / "tests" / "conftest.py"]:
        names.update(re.findall(r"\bXLINALG_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    return names


def test_every_variable_is_documented_in_one_place() -> None:
    doc = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    names = _readers()
    assert "XLINALG_TORCH_COMPILE" in names
    missing = sorted(n for n in names if f"`{n}`" not in doc)
    assert not missing, f"read but not in docs/environment.md: {missing}"
    assert "docs/environment.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("raw", "available"), [("False", False), ("OFF", False), ("no", False)])
def test_torch_compile_flag_spellings(raw: str, available: bool) -> None:
    pytest.importorskip("torch")
    env = dict(os.environ, XLINALG_TORCH_COMPILE=raw)
    code = "import xlinalg.backends._torch as u; print(u.torch_compile_available(), u.torch_compile_reason())"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[0] == str(available), proc.stdout
    assert "disabled by XLINALG_TORCH_COMPILE" in proc.stdout


def test_torch_compile_flag_bad_value_is_an_error() -> None:
    env = dict(os.environ, XLINALG_TORCH_COMPILE="maybe")
    code = "import xlinalg._unrolled as u; u.torch_compile_available()"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "XLINALG_TORCH_COMPILE='maybe' is not a boolean" in proc.stderr


@pytest.mark.parametrize("content", [None, "not json", '{"rules": 3}', '{"rules": [{"backend": "numpy"}]}', "[]"],
                         ids=["missing", "not-json", "rules-not-a-list", "rule-missing-fields", "top-level-list"])
def test_a_bad_selection_table_names_the_variable(content: str | None, tmp_path) -> None:
    # the file is untrusted: `import xlinalg` still works, and the first solve that
    # asks for the table says which variable to fix; the shipped table is never silently used
    path = tmp_path / "table.json"
    if content is not None:
        path.write_text(content)
    env = dict(os.environ, XLINALG_UNROLLED_SELECTION=str(path))
    code = ("import numpy as np, xlinalg as xl\n"
            "print('imported', flush=True)\n"
            "xl.solve(np.ones((4096, 3, 3)) + np.eye(3), np.ones((4096, 3, 1)))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("imported"), proc.stderr[-2000:]
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f"ValueError: environment variable XLINALG_UNROLLED_SELECTION={str(path)!r} does not name a selection table"
    ), proc.stderr[-2000:]


def test_a_good_selection_table_is_used(tmp_path) -> None:
    from xlinalg._unrolled import _selection

    shipped = _selection._load_selection(None)
    path = tmp_path / "table.json"
    path.write_text('{"rules": []}')
    env = dict(os.environ, XLINALG_UNROLLED_SELECTION=str(path))
    code = "import xlinalg._unrolled as u; print(len(u.SELECTION))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "0"
    assert len(shipped) > 0
