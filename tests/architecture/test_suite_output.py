"""The test suite's own output: skips summarised once per reason."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from conftest import skip_reasons

ROOT = Path(__file__).resolve().parents[2]


def test_skips_are_grouped_by_reason_alone() -> None:
    reports = [SimpleNamespace(longrepr=(f"tests/test_{i % 7}.py", i, "Skipped: cupy: cupy is not installed"))
               for i in range(128)]
    reports += [SimpleNamespace(longrepr=("tests/test_x.py", 3, "Skipped: jax-gpu: no gpu"))] * 2
    assert skip_reasons(reports) == [("cupy: cupy is not installed", 128), ("jax-gpu: no gpu", 2)]


def test_pytest_lists_no_skip_per_place() -> None:
    # `-ra`/`-rs` would list each (place, reason) pair: 3 GPU reasons x every test function
    addopts = re.search(r"^addopts = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert addopts is not None
    chars = "".join(re.findall(r'"-r(\w+)"', addopts.group(1)))
    assert chars
    assert not set(chars) & set("saA"), chars
