"""``benchmarks/overhead_against.py``: overhead.py's rows for two revisions, with the noise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[2]

TABLE = """\
solve 5x5
| what | native median (IQR) | xlinalg median (IQR) | ratio | target |
|---|---|---|---|---|
| numpy  xl.solve / numpy.linalg.solve | 10.78 µs (4.80) | 9.57 µs (4.67) | 0.887 | ≤ 1.10 |
| jax    xl.solve / jnp.linalg.solve (fenced) | 14.14 µs (3.19) | 25.45 µs (2.97) | 1.799 | ≤ 1.35 |
| broken row | - | - | n/a | - |
"""


def _load() -> Any:
    return benchmark_script("overhead_against.py")


def test_rows_are_read_from_the_closing_table() -> None:
    rows = _load().parse_rows(TABLE)
    assert rows == {"numpy  xl.solve / numpy.linalg.solve": 0.887,
                    "jax    xl.solve / jnp.linalg.solve (fenced)": 1.799}


def test_after_over_before_and_the_spreads() -> None:
    mod = _load()
    before = [{"a": 1.0, "b": 2.0, "gone": 1.0}, {"a": 1.2, "b": 2.0}]
    after = [{"a": 1.1, "b": 3.0, "new": 1.0}, {"a": 1.1, "b": 3.0, "new": 1.0}]
    got = {r[0]: r[1:] for r in mod.summarize(before, after)}
    assert set(got) == {"a", "b"}  # a row missing from any run of either side is left out
    assert got["a"] == pytest.approx((1.0, 1.2, 1.0))
    assert got["b"] == pytest.approx((1.5, 1.0, 1.0))


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_it_runs_both_trees(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    pytest.importorskip("scipy")
    subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True)
    assert _load().main(["HEAD", "--pairs", "1", "--quick", "--only", "fence"]) == 0
    out = capsys.readouterr().out
    assert "| jax    xl.synchronize(x) / x.block_until_ready() |" in out
    assert "1 rows, 1 run(s) a side; before = HEAD" in out


def test_the_noise_band_is_shared_by_the_rows() -> None:
    mod = _load()
    rows = [(f"r{i}", 1.0, 1.0 + i / 100, 1.0) for i in range(10)]
    assert mod.pooled_noise(rows) == pytest.approx(1.09)
    assert mod.pooled_noise([]) == 1.0
