"""The README's example runs as written, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_setup_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None
    lines = [ln for ln in first_block.group(1).splitlines() if ln.strip()]
    assert len(lines) == 2
    assert "xlinalg bench" in lines[0]
    assert "pytest" in lines[1]
    # CI runs the README's test command (the install part, then pytest)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = lines[1].split("&& python -m pytest")[0].strip()
    assert install in ci


def test_readme_example_runs_as_written() -> None:
    pytest.importorskip("torch", reason="the README example uses torch")
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 12
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "torch-cpu True"
