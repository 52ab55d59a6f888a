"""The GPU run script (tools/gpu/run.sh) parses, and its GPU benchmark skips with reasons.

The script itself only runs for real on a lent GPU machine; here it must at least be
valid shell, and `benchmarks/unrolled.py --gpu` (its last step) must say why each GPU
backend was skipped rather than fail or print nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg import backends

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("script", ["run.sh", "wheels.sh"])
def test_gpu_scripts_parse(script: str) -> None:
    subprocess.run(["bash", "-n", str(ROOT / "tools" / "gpu" / script)], check=True)


def test_unrolled_gpu_names_each_skip(tmp_path: Path) -> None:
    gpu = [b for b in backends.BACKEND_NAMES if backends.get_backend(b).gpu]
    gpus = [b for b in gpu if backends.get_backend(b).unavailable_reason()]
    if len(gpus) < len(gpu):
        pytest.skip("a GPU backend is available: the real run is tools/gpu/run.sh")
    out = tmp_path / "u.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "unrolled.py"), "--gpu", "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for backend in gpus:
        reason = backends.get_backend(backend).unavailable_reason()
        assert f"{backend}: skipped ({reason})" in proc.stdout
    assert "no GPU backend is available" in proc.stdout
    data = json.loads(out.read_text())
    assert data["gpu"] == []
    assert data["crossover_gpu"] == []


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                    reason="bash or coreutils' timeout is not installed")
def test_run_script_keeps_to_its_total_time(tmp_path: Path) -> None:
    # the device call is cut at its timeout: the script must skip the steps it has no
    # time left for (saying so) and still end normally, with its listing
    env = {**os.environ, "OUT": str(tmp_path), "T_TOTAL": "30", "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(ROOT / "tools" / "gpu" / "run.sh")], capture_output=True,
                          text=True, timeout=240, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "log.txt").read_text()
    assert "pytest (GPU backends): skipped, " in log
    assert "left of T_TOTAL=30s" in log
    assert "done; files in" in log
