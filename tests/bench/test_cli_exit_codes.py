"""One ExitCode for every command: its values, and no second definition anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import xlinalg
from xlinalg._cli._common import ExitCode
from xlinalg.cli import ExitCode as CliExitCode
from xlinalg.cli import main

SRC = Path(xlinalg.__file__).parent
DOCS = Path(__file__).resolve().parents[2] / "docs" / "benchmark.md"


def test_the_values_are_the_documented_ones():
    assert CliExitCode is ExitCode
    assert {e.name: int(e) for e in ExitCode} == {
        "OK": 0, "FAILED": 1, "USAGE": 2, "INTERNAL": 70, "SIGINT": 130, "SIGTERM": 143}
    text = DOCS.read_text(encoding="utf-8")
    for e in ExitCode:
        assert f"| {int(e)} | `{e.name}` |" in text, e


def test_no_module_defines_an_exit_status_of_its_own():
    """No ``EXIT_*`` name and no bare status literal returned by a command: every
    command reads ExitCode."""
    found = [f"{path.relative_to(SRC)}:{node.lineno}: {node.id}"
             for path in sorted(SRC.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Name) and node.id.startswith("EXIT_")]
    commands = [SRC / "cli.py", *sorted((SRC / "_cli").glob("*.py"))]
    found += [f"{path.relative_to(SRC)}:{node.lineno}: return {node.value.value}"
              for path in commands
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
              and type(node.value.value) is int]
    assert not found, "\n".join(found)


def test_every_command_returns_an_exit_code(tmp_path, capsys):
    assert main(["info"]) == ExitCode.OK
    assert main(["report", str(tmp_path / "missing.jsonl")]) == ExitCode.USAGE
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == ExitCode.USAGE
    assert main(["bench", "--cases", "no_such_case", "--out", str(tmp_path / "r.jsonl")]) == (
        ExitCode.USAGE)
    assert main([]) == ExitCode.USAGE
