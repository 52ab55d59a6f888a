"""The README's example runs as written, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _pyproject_value(key: str) -> str:
    m = re.search(rf'^{key} = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert m is not None, key
    return m.group(1)


def test_readme_opens_with_the_two_setup_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None
    lines = [ln for ln in first_block.group(1).splitlines() if ln.strip()]
    assert len(lines) == 2
    # the main job on a fresh clone: the libraries the documents compare, then the run
    # (no clone inside the command: it runs in the checkout the README belongs to)
    main_job = lines[0].split("#")[0].strip().split(" && ")
    assert main_job[0] == "pip install torch==2.13.0"
    assert "git clone" in README.split("```bash", 2)[1].split("```", 2)[1]
    assert 'pip install -e ".[compare]"' in main_job
    assert main_job[-1] == "xlinalg bench"
    compare = re.search(r"^compare = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert compare is not None
    assert all(x in compare.group(1) for x in ("bench", "torch", "jax"))
    assert "pytest" in lines[1]
    # CI runs the README's test command (the install part, then pytest)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = lines[1].split("&& python -m pytest")[0].strip()
    assert install in ci


def test_readme_links_are_absolute_and_name_files_of_the_repository() -> None:
    """Links work where the README is rendered outside the repository (PyPI): absolute
    URLs under pyproject's Repository, each naming a file or folder that exists."""
    repo = _pyproject_value("Repository")
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert links
    for link in links:
        assert re.match(r"https?://", link), link
        if link.startswith(repo):
            path = re.sub(r"^/(blob|tree)/main/?", "", link[len(repo):])
            assert (ROOT / path).exists(), link


def test_package_metadata_says_status_python_versions_and_urls() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    classifiers = re.findall(r'^    "([^"]+ :: [^"]+)",$', text, re.M)
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    lowest = re.search(r'^requires-python = ">=3\.(\d+)"$', text, re.M)
    assert lowest is not None
    versions = {int(c.rsplit(".", 1)[1]) for c in classifiers
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert min(versions) == int(lowest.group(1))
    assert versions == set(range(min(versions), max(versions) + 1))
    for key in ("Repository", "Documentation", "Issues"):
        assert _pyproject_value(key).startswith(_pyproject_value("Repository").rsplit("/", 1)[0])


def test_readme_example_runs_as_written() -> None:
    pytest.importorskip("torch", reason="the README example uses torch")
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 12
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "torch-cpu True"
