"""Every code block of the README and the docs runs: Python blocks are executed, shell
commands are executed or dry-run (``xlinalg bench`` with ``--dry-run``, scripts with
``--help`` after their arguments, installs checked against pyproject's extras, paths
checked to exist). The ``>>>`` examples run as doctests (tests/architecture/test_public_api.py)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(`{3,})([^\n]*)\n(.*?)^\1[ \t]*$", re.S | re.M)
SHELL = ("bash", "sh", "shell", "console")


def _blocks() -> list[tuple[str, int, str, str, str]]:
    """(page, index, language, caption, code) of every fenced block of every page."""
    out = []
    for page in PAGES:
        for i, m in enumerate(_FENCE.finditer(page.read_text(encoding="utf-8"))):
            info, code = m.group(2).strip(), m.group(3)
            lang = info.removeprefix("{code-block}").strip() if info.startswith("{code-block}") else info
            caption = re.search(r"^:caption:\s*(\S+)", code, re.M)
            code = re.sub(r"^:\w[\w-]*:.*\n", "", code, flags=re.M) if info.startswith("{") else code
            out.append((page.name, i, lang, caption.group(1) if caption else "", code))
    return out


BLOCKS = _blocks()


def _extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z][\w-]*) = \[", section, re.M))


def _commands(lang: str, code: str) -> list[str]:
    """The commands of a shell block: a console block's ``$`` lines, a bash block's
    lines (comments dropped, continuation lines joined), each split at ``&&``."""
    code = re.sub(r"\\\n\s*", " ", code)
    lines = code.splitlines()
    if lang == "console":
        lines = [ln[2:] for ln in lines if ln.startswith("$ ")]
    out = []
    for ln in lines:
        ln = ln.split(" #", 1)[0].strip()
        if ln and not ln.startswith("#"):
            out += [c.strip() for c in ln.split("&&")]
    return out


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _dry_run(cmd: str, page: str, cwd: Path, files: dict[str, str]) -> None:
    argv = shlex.split(cmd)
    tool, args = argv[0], argv[1:]
    if tool == "git":  # fetching a repository the page names (xlinalg, array-api-tests)
        assert args[0] in ("clone", "submodule"), cmd
        return
    if tool == "cd":
        return
    if tool == "pip":
        assert args[0] == "install", cmd
        for a in args[1:]:
            m = re.fullmatch(r"\.\[([\w,-]+)\]", a)
            if m:
                missing = set(m.group(1).split(",")) - _extras()
                assert not missing, f"{page}: {cmd}: no extra {missing}"
        return
    if tool in ("mypy", "ruff"):
        assert f'"{tool}>=' in (ROOT / "pyproject.toml").read_text(), f"{tool} is in no extra"
        return
    if tool == "bash":
        assert (ROOT / args[0]).is_file(), cmd
        return
    if tool == "xlinalg":
        for name, code in files.items():  # a case file the page shows
            if name in args:
                (cwd / name).write_text(code, encoding="utf-8")
        if args[0] == "bench":
            old = os.getcwd()
            os.chdir(cwd)
            try:
                assert main([*args, "--dry-run"]) == 0, f"{page}: {cmd}"
            finally:
                os.chdir(old)
        elif args[0] == "info":
            assert main(args) == 0, cmd
        else:  # report and compare read results files the page only names: parse
            from xlinalg._cli._parser import build_parser

            build_parser().parse_args(args)
        return
    assert tool == "python", f"{page}: a command this test cannot check: {cmd}"
    if args[:2] == ["-m", "pytest"]:
        rest = args[2:]
        for j, a in enumerate(rest):
            value = j > 0 and rest[j - 1] in ("-p", "-k", "-m")  # an option's value
            if not a.startswith("-") and not value:
                assert (ROOT / a).exists() or a in files, f"{page}: {cmd}: no {a}"
        return
    if args[:2] == ["-m", "sphinx"]:
        assert (ROOT / "docs" / "conf.py").is_file()
        return
    script = ROOT / args[0]
    assert script.is_file(), cmd
    res = subprocess.run([sys.executable, str(script), *args[1:], "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"{page}: {cmd}: {res.stderr[-2000:]}"


@pytest.mark.parametrize("page", sorted({b[0] for b in BLOCKS}))
def test_every_block_of_the_page_runs(page: str, tmp_path: Path, capsys) -> None:
    blocks = [b for b in BLOCKS if b[0] == page]
    files: dict[str, str] = {}
    ran = 0
    for _, i, lang, caption, code in blocks:
        if lang == "python":
            if caption:  # a file the page shows: its commands use it
                files[caption] = code
                compile(code, caption, "exec")
                continue
            if page == "README.md" and i == 1:
                continue  # the README's example: tests/architecture/test_readme.py runs it, output too
            files.setdefault("my_cases.py", code) if "register_case" in code else None
            res = _python(code, tmp_path)
            assert res.returncode == 0, f"{page} block {i}:\n{res.stderr[-3000:]}"
            ran += 1
        elif lang in SHELL:
            for cmd in _commands(lang, code):
                _dry_run(cmd, page, tmp_path, files)
                ran += 1
        else:  # output, layout, directives, doctests (pycon: run as doctests)
            assert lang in ("", "text", "pycon", "{toctree}", "{eval-rst}", "{include}",
                            "{figure}") or lang.startswith("{"), f"{page} block {i}: {lang!r}"
            assert lang or not re.search(r"^(python|pip|xlinalg) ", code, re.M), (
                f"{page} block {i}: commands in a block without a language: label it bash")
    capsys.readouterr()
    if any(b[2] in ("python", *SHELL) for b in blocks):
        assert ran


def test_the_pages_have_blocks_to_run() -> None:
    langs = {b[2] for b in BLOCKS}
    assert {"python", "bash", "console"} <= langs


def test_no_page_names_a_path_of_one_machine() -> None:
    # a page read elsewhere must not send readers to this VM's tools or homes
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = [f"{p.name}:{i}: {line.strip()[:100]}" for p in pages
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.search(r"(?<![\w.])/(work|home|root)/", line)]
    assert not bad, "\n".join(bad)
