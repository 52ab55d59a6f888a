"""The benchmark's default run: what it selects, the figure that answers it, and the
examples of ``--help`` (each one dry-run)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg._cli._parser import build_parser
from xlinalg.backends import BACKEND_NAMES, available_backends, get_backend
from xlinalg.bench import RunConfig, case_names, get_case, plan_cells
from xlinalg.bench._runner import opt_in_backends, validate_options
from xlinalg.cli import main

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _document_cases() -> list[str]:
    return [c for c in case_names() if get_case(c).section[:1] in ("Q", "A")
            and get_case(c).section[1:].isdigit()]


# ---------------------------------------------------------------------- what runs
def test_default_backends_leave_out_the_opt_in_ones(tmp_path: Path) -> None:
    cfg = validate_options(RunConfig(out=str(tmp_path / "r.jsonl")))
    assert cfg.backends, "numpy is always available"
    for b in BACKEND_NAMES:
        be = get_backend(b)
        if be.bench.opt_in:
            assert b not in cfg.backends
        elif b in available_backends():
            assert b in cfg.backends
    # a named opt-in backend runs
    for b in opt_in_backends():
        named = validate_options(RunConfig(backends=["numpy", b], out=str(tmp_path / "s.jsonl")))
        assert named.backends == ["numpy", b]
    # the reason is a sentence, and only dask and array-api-strict have one
    assert {b for b in BACKEND_NAMES if get_backend(b).bench.opt_in} == {"dask", "array-api-strict"}


def test_default_scale_is_each_documents_headline_size() -> None:
    """Every case of the documents runs at the default scale, at sizes the documents
    use (its full scale holds them): the question's systems at 1000 x 5, each article
    part at its first size; the sweep keeps its two ends and a middle point."""
    cases = _document_cases()
    assert {get_case(c).section for c in cases} >= {f"Q{i}" for i in range(1, 5)} | {
        f"A{i}" for i in range(1, 16)}
    for name in cases:
        c = get_case(name)
        default, full = c.sizes_for("default"), c.sizes_for("full")
        assert default, name
        assert set(default) <= set(full), (name, default)
        if c.section in ("Q1", "Q2", "Q4"):
            assert default == [(1000, 5)], name
        elif c.section == "Q3":
            assert default[0] == min(full) * 2  # the first sweep's ends (10 and 500) and between
            assert default[-1] == max(full)
            assert len(default) == 3
        elif name == "a10_layout":  # the strided view and its contiguous copy: the comparison
            assert len(default) == 2
        elif name == "a6_broadcast_trap":  # the article's 10000 (800 MB a call) is --full's
            assert default == [4000]
        else:
            assert len(default) == 1, (name, default)
            # A5: the article's table measures 128x1 -> 128x1024 (its code shows 128x256 first)
            assert default[0] == full[0] or name == "a5_broadcast", (name, default)


def test_the_default_run_plans_one_group_per_headline_cell(tmp_path: Path) -> None:
    cells = plan_cells(RunConfig(backends=["numpy"], out=str(tmp_path / "r.jsonl")))
    groups = {(c["case"], str(c["size"])) for c in cells}
    # 2 calibration cells + one per case, three for the sweep and two for the layout
    assert len(groups) == 2 + len(_document_cases()) + 2 + 1


# ---------------------------------------------------------------------- --help examples
def _help_examples() -> list[tuple[str, list[str]]]:
    parser = build_parser()
    out = []
    for name, sub in parser.subparsers.items():  # type: ignore[attr-defined]
        for line in (sub.epilog or "").splitlines():
            m = re.match(r"\s+(xlinalg \S.*?)(?:\s{2,}\S.*)?$", line)
            if m:
                out.append((name, shlex.split(m.group(1))[1:]))
    return out


def test_help_has_examples() -> None:
    assert [n for n, _ in _help_examples()].count("bench") >= 4


@pytest.mark.parametrize("args", [a for _, a in _help_examples()], ids=" ".join)
def test_every_help_example_runs(args: list[str], tmp_path: Path, capsys) -> None:
    """Each ``xlinalg bench`` example of --help, dry-run: its options, cases, sizes and
    backends are checked and its cells planned, nothing is timed."""
    for b in (args[args.index("--backends") + 1].split(",") if "--backends" in args else []):
        if b not in available_backends():
            pytest.skip(f"the example names {b}, not available here")
    argv = [*args, "--dry-run"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "dry run:" in capsys.readouterr().out


def test_dry_run_refuses_what_the_run_would(capsys) -> None:
    assert main(["bench", "--cases", "matmul", "--dry-run"]) == 2
    assert "a1_gemm" in capsys.readouterr().err  # the removed case names its successor


# ---------------------------------------------------------------------- a [bench]-only install
@pytest.mark.slow
def test_quick_run_on_a_bench_only_install(tmp_path: Path) -> None:
    """Without the optional array libraries (each import refused, in the workers too),
    ``xlinalg bench --quick`` exits 0: every documented case ran or was skipped with
    its reason."""
    import json

    hide = tmp_path / "hide"
    hide.mkdir()
    for mod in ("torch", "jax", "jaxlib", "dask", "distributed", "array_api_strict", "cupy"):
        (hide / f"{mod}.py").write_text(f"raise ImportError('{mod} is hidden: a [bench]-only install')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(SRC)])}
    out = tmp_path / "r.jsonl"
    res = subprocess.run([sys.executable, "-m", "xlinalg", "bench", "--quick", "--no-report",
                          "--no-progress", "--out", str(out)], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=1800, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    recs = [json.loads(x) for x in out.read_text().splitlines()[1:]]
    assert {r["backend"] for r in recs} == {"numpy"}
    assert {r["case"] for r in recs} >= set(_document_cases())
    for r in recs:
        assert r["status"] in ("ok", "skipped"), r
        if r["status"] == "skipped":
            assert r.get("skip_reason"), r
    assert any(r["case"] == "q2_numba" for r in recs)
