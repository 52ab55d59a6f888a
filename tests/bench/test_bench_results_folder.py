"""``xlinalg bench`` without --out writes into a results folder that .gitignore covers,
never loose files in the current directory."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg._cli._bench import default_out
from xlinalg._cli._common import RESULTS_DIR

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _bench(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "xlinalg.cli", "bench", *argv], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)


def test_the_default_results_file_is_in_the_results_folder():
    when = dt.datetime(2026, 12, 6, 14, 41, 12)
    assert default_out(when) == os.path.join("xlinalg-results",
                                             "xlinalg-bench-20261206-144112.jsonl")
    assert RESULTS_DIR == "xlinalg-results"


def test_a_run_without_out_writes_only_into_the_results_folder(tmp_path):
    p = _bench(tmp_path, "--quick", "--backends", "numpy", "--cases", "a4_add",
               "--no-calibrate", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["xlinalg-results"]
    files = sorted(x.name for x in (tmp_path / "xlinalg-results").iterdir())
    results = [f for f in files if f.endswith(".jsonl")]
    assert len(results) == 1, files
    assert results[0].startswith("xlinalg-bench-"), files
    assert results[0].removesuffix(".jsonl") + "-report" in files  # the report beside it
    assert f"xlinalg-results{os.sep}{results[0]}" in p.stdout


def test_a_results_folder_that_cannot_be_made_is_a_usage_error(tmp_path):
    (tmp_path / "xlinalg-results").write_text("a file where the folder goes")
    p = _bench(tmp_path, "--quick", "--backends", "numpy", "--cases", "a4_add",
               "--no-calibrate", "--no-progress", "--no-report")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "xlinalg-results/" in p.stderr
    assert "--out" in p.stderr
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_the_tune_table_goes_to_the_results_folder_too(tmp_path):
    p = _bench(tmp_path, "--tune", "--backends", "numpy", "--tune-n", "2", "--tune-batches",
               "10", "--tune-dtypes", "float64", "--dry-run")
    if p.returncode == 2 and "numba" in p.stderr:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr
    assert f"would write xlinalg-results{os.sep}xlinalg-unrolled-selection.json" in p.stdout
    assert list(tmp_path.iterdir()) == []  # a dry run makes nothing


def test_a_dry_run_makes_no_folder(tmp_path):
    p = _bench(tmp_path, "--quick", "--backends", "numpy", "--cases", "a4_add", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["xlinalg-results/x.jsonl",
                                   "docs/xlinalg-results/x-report/report.md"])
def test_gitignore_covers_the_results_folder(where):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        lines = (ROOT / ".gitignore").read_text().splitlines()
        assert "xlinalg-results/" in lines
        return
    p = subprocess.run(["git", "check-ignore", "--no-index", "-q", where], cwd=ROOT)
    assert p.returncode == 0, f"{where} is not ignored"
