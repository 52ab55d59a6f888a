"""The harness (xlinalg.bench) apart from the documents' study (xlinalg.study).

The harness knows no case of the study by name, importing it does not import the
study, and the study plugs in through its Study object (cases, report, plots).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

import xlinalg

SRC = Path(xlinalg.__file__).parent
#: the harness's modules (the command, xlinalg._cli, composes it with the study: its
#: help may name the study's cases as examples)
HARNESS = sorted((SRC / "bench").rglob("*.py"))


def _run(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_importing_the_harness_does_not_import_the_study():
    out = _run("import sys, xlinalg.bench\n"
               "print(sorted(m for m in sys.modules if m.startswith('xlinalg.study')))")
    assert out.strip() == "[]"


def test_the_harness_alone_has_only_its_calibration_cases():
    out = _run("import xlinalg.bench as b; print(b.case_names())")
    assert eval(out) == ["calib_gemm", "calib_stream"]


def test_a_study_case_asked_of_the_harness_alone_says_how_to_load_it():
    """A program that runs a documents' case without loading the study is told to."""
    out = _run("import xlinalg.bench as b\n"
               "try:\n"
               "    b.get_case('q3_solve_sweep')\n"
               "except ValueError as exc:\n"
               "    print(exc)\n")
    assert "unknown case 'q3_solve_sweep'" in out
    assert "import xlinalg.study" in out


def _study_case_names() -> set[str]:
    """The names the study registers, in a fresh process: every name after importing
    the study that was not there before."""
    out = _run("import json, xlinalg.bench as b\n"
               "before = set(b.case_names())\n"
               "import xlinalg.study\n"
               "after = set(b.case_names())\n"
               "print(json.dumps(sorted(after - before)))")
    return set(json.loads(out))


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a module (docstrings and f-strings included), with its line."""
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    toks = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(tok.start[0], tok.string) for tok in toks if tok.type in kinds]


def test_the_harness_names_no_case_of_the_study():
    names = _study_case_names()
    assert {"a1_gemm", "q3_solve_sweep", "a13_fusion_eager"} <= names  # the list is read
    hits = []
    for path in HARNESS:
        for line, text in _strings(path):
            body = text.strip("\"'rbfRBF")
            for n in names:
                # a name with "_" or a digit anywhere in a literal; a plain word
                # only as the whole literal
                distinctive = re.search(r"[_\d]", n) is not None
                if (re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", body) if distinctive
                        else body == n):
                    hits.append(f"{path.relative_to(SRC)}:{line}: {n}")
    assert not hits, "case names of the study in the harness:\n" + "\n".join(hits)


def test_the_finder_of_case_names_finds_one(tmp_path):
    # the check above can fail: a harness-like module naming a study case is caught
    mod = tmp_path / "m.py"
    mod.write_text('"""Doc naming a4_sigmoid."""\nX = f"{1}q4_loop"\nY = "solve"\n')
    found = [s for _, s in _strings(mod)]
    assert any("a4_sigmoid" in s for s in found)
    assert any("q4_loop" in s for s in found)
    assert any(s.strip("\"'") == "solve" for s in found)


def test_the_study_describes_itself():
    from xlinalg.bench import Study, study_case_modules
    from xlinalg.study import STUDY

    assert isinstance(STUDY, Study)
    assert STUDY.case_modules == ("xlinalg.study.cases",)
    assert "xlinalg.study.cases" in study_case_modules()
    assert {"Q1", "A15"} <= set(STUDY.section_titles)
    assert STUDY.report is not None
    assert STUDY.plots is not None
    assert STUDY.summary is not None


def test_workers_import_the_study_by_module_path(tmp_path):
    """A worker process finds the study's cases (it imports them by module path)."""
    from xlinalg.bench import RunConfig, _workerproc, run_benchmark

    cfg = RunConfig(backends=["numpy"], cases=["a4_add"], scale="quick", calibrate=False,
                    out=str(tmp_path / "r.jsonl"))
    summary = run_benchmark(cfg)
    assert summary.counts.get("ok", 0) >= 1, summary
    assert "--case-module" in Path(_workerproc.__file__).read_text()


def test_a_report_without_the_study_has_the_generic_parts(tmp_path):
    """The harness's report alone: no summary, no article, no question, its sections."""
    pytest.importorskip("matplotlib")
    from xlinalg.bench import RunConfig, run_benchmark
    from xlinalg.bench._report import write_report
    from xlinalg.study import STUDY

    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["a4_add"], scale="quick",
                            calibrate=False, out=str(out)))
    d1, _ = write_report([out], tmp_path / "bare", plots=False)
    d2, _ = write_report([out], tmp_path / "study", plots=False, study=STUDY)
    bare = (d1 / "report.md").read_text()
    full = (d2 / "report.md").read_text()
    assert "## A4: " in bare
    assert "## A4: " in full
    assert "The article side by side" not in bare
    assert "The article side by side" in full
    assert "Summary: which library" not in bare
    assert "Summary: which library" in full
