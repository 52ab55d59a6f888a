"""One verdict: the runner, the report, the terminal table and ``compare`` read an
interval by one rule (:mod:`xlinalg.bench._verdict`) and say it in the same words."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from xlinalg._cli._table import verdicts
from xlinalg.bench import SCHEMA_VERSION, cell_key
from xlinalg.bench import _findings as F
from xlinalg.bench._compare import _beyond
from xlinalg.bench._passes import group_verdict
from xlinalg.bench._report import _pivots
from xlinalg.bench._verdict import BELOW_MARGIN, BEYOND, WITHIN_NOISE, reading
from xlinalg.study._findings._article import compare_text

ROOT = Path(__file__).resolve().parents[2]


def _group(case: str, rounds: dict[str, list[float]], cores: dict[str, float]) -> list[dict]:
    """The records of one side-by-side group as the runner writes them."""
    v = group_verdict(rounds, cores, {}, margin=1.05, level=0.95, seed=0)
    out = []
    for b, rs in rounds.items():
        med = float(np.median(rs))
        out.append({"type": "result", "schema_version": SCHEMA_VERSION, "run_id": "r1",
                    "key": cell_key(case, b, "float64", "64"), "case": case, "backend": b,
                    "dtype": "float64", "size": 64, "size_label": "64", "status": "ok",
                    "section": "Other", "tags": [], "units": "GFLOP/s", "peak": "arithmetic",
                    "compute_dtype": "", "verdict": v,
                    "time": {"median_s": med, "q1_s": float(np.quantile(rs, 0.25)),
                             "q3_s": float(np.quantile(rs, 0.75)), "raw_s": rs}})
    return out


def _rounds(rng: np.random.Generator, median: float, n: int = 60, noise: float = 0.002) -> list[float]:
    return list(median * np.exp(noise * rng.standard_normal(n)))


def _groups() -> dict[str, list[dict]]:
    rng = np.random.default_rng(1)
    one = {"numpy": 1.0, "torch-cpu": 1.0}
    return {
        "winner": _group("g_win", {"numpy": _rounds(rng, 1e-3), "torch-cpu": _rounds(rng, 2e-3)}, one),
        "within noise": _group("g_tie", {"numpy": _rounds(rng, 1e-3, 40, 0.05),
                                         "torch-cpu": _rounds(rng, 1e-3, 40, 0.05)}, one),
        "below the margin": _group("g_below", {"numpy": _rounds(rng, 1e-3, 200, 0.001),
                                               "torch-cpu": _rounds(rng, 1.02e-3, 200, 0.001)}, one),
        "starved": _group("g_starved", {"numpy": _rounds(rng, 1e-3), "torch-cpu": _rounds(rng, 3e-3)},
                          {"numpy": 1.0, "torch-cpu": 0.2}),
    }


@pytest.mark.parametrize("kind", ["winner", "within noise", "below the margin", "starved"])
def test_the_runner_the_report_and_the_terminal_say_the_same_words(kind: str) -> None:
    recs = _groups()[kind]
    by = {r["backend"]: r for r in recs}
    recorded = recs[0]["verdict"]["text"]
    found = F.verdict(by)["text"]
    (w,) = F.winners(recs)
    tables = [b for b in _pivots(recs, {(w["case"], w["dtype"], w["size"]): w}) if b[0] == "table"]
    in_report = tables[0][2][0][-1]
    in_terminal = next(iter(verdicts(recs)[1].values()))
    assert recorded == found == w["text"] == in_report == in_terminal, kind
    expected = {"winner": "numpy, ", "within noise": "tie within noise (",
                "below the margin": "a real difference below the margin (",
                "starved": "no verdict: torch-cpu ran only 20%"}[kind]
    assert recorded.startswith(expected), recorded
    if kind != "within noise":
        assert "within noise" not in recorded
    if kind == "starved":
        assert "tie" not in recorded


_INTERVALS = [(lo, hi) for lo in (0.5, 0.9, 0.95, 1 / 1.05, 0.99, 1.0, 1.01, 1.04, 1.05, 1.2)
              for hi in (0.9, 0.96, 0.99, 1.0, 1.01, 1.05, 1.06, 1.3, 2.0) if lo <= hi]


@pytest.mark.parametrize(("lo", "hi"), _INTERVALS)
def test_compare_and_the_article_read_an_interval_as_the_verdict_does(lo: float, hi: float) -> None:
    r = reading(lo, hi, 1.05)
    assert (_beyond(lo, hi, 0.05) is not None) == (r == BEYOND)
    if r == BEYOND:
        assert _beyond(lo, hi, 0.05) == ("REGRESSION" if lo > 1 else "improvement")
    assert (r == WITHIN_NOISE) == (lo <= 1.0 <= hi)
    # the article's pairs: numpy / torch-cpu times whose interval is [lo, hi]
    mid = math.sqrt(lo * hi)
    cell = {"status": "ok", "time": {"median_s": 1.0, "q1_s": 1.0, "q3_s": 1.0}}
    a = {**cell, "backend": "numpy", "case": "c", "dtype": "float64", "size_label": "1",
         "ratios": {"torch-cpu": {"lo": lo, "ratio": mid, "hi": hi}}}
    b = {**cell, "backend": "torch-cpu", "case": "c", "dtype": "float64", "size_label": "1"}
    said = compare_text(a, b, 2.0)[1]
    assert said.startswith({WITHIN_NOISE: "tie within noise", BELOW_MARGIN: BELOW_MARGIN,
                            BEYOND: ("agrees" if mid > 1 else "refuted")}[r]), said


#: (module, function) -> why it may compare a number with a margin: none decides a verdict.
ALLOWED = {
    ("bench/_runner.py", "validate_options"): "checks the --margin option itself",
    ("bench/_stats.py", "p_beyond"): "the p-value of a pair, not its verdict",
    ("study/_tune.py", "derive"): "the unrolled solver's crossover, not a verdict",
}
_MARGINS = {"MARGIN", "margin"}


def _named(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _decisions(path: Path) -> list[tuple[str, int]]:
    """(function, line) of each comparison with a margin, or of "lo <= 1 <= hi"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []

    def walk(node: ast.AST, fn: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            if isinstance(child, ast.Compare):
                operands = [child.left, *child.comparators]
                holds_one = (len(child.ops) == 2 and isinstance(child.comparators[0], ast.Constant)
                             and child.comparators[0].value == 1)
                if holds_one or any(_named(o) in _MARGINS for o in operands):
                    out.append((name, child.lineno))
            walk(child, name)

    walk(tree, "<module>")
    return out


def test_no_second_verdict_rule_in_the_source() -> None:
    """Only :mod:`xlinalg.bench._verdict` compares an interval with the margin or
    with 1: a second place that did would be a second verdict."""
    src = ROOT / "src" / "xlinalg"
    files = [p for d in ("bench", "study", "_cli") for p in (src / d).rglob("*.py")]
    files += list((ROOT / "benchmarks").glob("*.py"))
    found = []
    for p in files:
        rel = p.relative_to(src).as_posix() if p.is_relative_to(src) else p.relative_to(ROOT).as_posix()
        if rel == "bench/_verdict.py":
            continue
        found += [(rel, fn, line) for fn, line in _decisions(p) if (rel, fn) not in ALLOWED]
    assert not found, f"a verdict decided outside bench/_verdict.py: {found}"
    assert _decisions(src / "bench" / "_verdict.py"), "the guard sees nothing: it is broken"
