"""The report's summary figure: workloads x backends, time over the fastest, verdicts marked."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from test_bench_report import _cli, _rec, _records, _write
from xlinalg.study._plots import SUMMARY_PLOT, _summary_rows, plot_summary


def _group(case, size, times, verdict=None, **kw):
    out = []
    for b, t in times.items():
        r = _rec(case, b, size, t, **kw)
        if verdict is not None:
            r["verdict"] = verdict
        out.append(r)
    return out


def _verdict(fastest, over, ratio, lo, hi, *, tie=(), starved=None):
    v = {"fastest": fastest, "tie": list(tie), "speedup": {"over": over, "ratio": ratio,
                                                            "lo": lo, "hi": hi},
         "effective_cores": {"numpy": 1.0, "torch-cpu": 1.0}}
    if starved:  # as the runner records it (_passes.group_verdict)
        v.update(starved=starved, fastest=None, tie=[],
                 no_verdict=f"{min(starved)} was starved (the machine was oversubscribed)")
    return v


def test_rows_mark_fastest_tie_and_no_verdict() -> None:
    recs = (_group("a1_gemm", [128, 256, 512], {"numpy": 1e-3, "torch-cpu": 3e-3},
                   _verdict("numpy", "torch-cpu", 3.0, 2.9, 3.1))
            + _group("a4_add", [4096, 4096], {"numpy": 1e-2, "torch-cpu": 1.01e-2},
                     _verdict(None, "torch-cpu", 1.01, 0.98, 1.04, tie=["numpy", "torch-cpu"]))
            + _group("a7_svd", 512, {"numpy": 5e-2, "torch-cpu": 2e-2},
                     _verdict(None, "numpy", 2.5, 2.4, 2.6, starved={"numpy": 0.2}))
            + _group("q2_numba", [1000, 5], {"numpy": 1e-4})
            + _group("calib_gemm", 1024, {"numpy": 1e-2, "torch-cpu": 1e-2}))
    rows = {r["label"].split()[1]: r for r in _summary_rows(recs)}
    assert "calib_gemm" not in rows  # calibration is the machine's peak, not a workload
    assert rows["a1_gemm"]["mark"] == "fastest"
    assert rows["a1_gemm"]["winner"] == "numpy"
    assert rows["a1_gemm"]["ratios"]["torch-cpu"] == pytest.approx(3.0, rel=0.05)
    assert rows["a1_gemm"]["verdict"] == "numpy, 3.00x [2.90-3.10] over torch-cpu"
    assert rows["a4_add"]["mark"] == "tie"
    assert rows["a4_add"]["tied"] == {"numpy", "torch-cpu"}
    assert rows["a7_svd"]["mark"] == "none"
    assert "starved" in rows["a7_svd"]["verdict"]
    assert rows["q2_numba"]["mark"] == "none"
    assert rows["q2_numba"]["verdict"] == "no verdict: one backend ran"
    # the workloads' reading order: the question's solves first, then the article's parts
    labels = [r["label"].split()[1] for r in _summary_rows(recs)]
    assert labels == ["q2_numba", "a1_gemm", "a4_add", "a7_svd"]


def test_a_sweep_is_thinned_to_four_rows(tmp_path: Path) -> None:
    recs = [r for n in range(5, 505, 5)
            for r in _group("q3_solve_sweep", n, {"numpy": 1e-5 * n, "torch-cpu": 2e-5 * n})]
    rows = _summary_rows(recs)
    assert [r["label"].split()[2] for r in rows] == ["5", "170", "335", "500"]
    (fig,) = plot_summary(recs, tmp_path)
    assert fig["width"] <= 1600


def test_the_report_opens_its_summary_with_the_figure(tmp_path: Path) -> None:
    res = _write(tmp_path / "results.jsonl", _records())
    out = tmp_path / "out"
    p = _cli("report", str(res), "--out", str(out))
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text(encoding="utf-8")
    summary = md[md.index("## Summary"):md.index("## Contents")]
    first = next(line for line in summary.splitlines()[1:] if line.strip())
    assert f"({SUMMARY_PLOT}.png)" in first, first  # the figure, then the sentences
    assert "Measured on:" in summary
    assert summary.index(f"{SUMMARY_PLOT}.png") < summary.index("Measured on:")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.index(f'{SUMMARY_PLOT}.png') < html.index("Measured on:")
    from PIL import Image

    with Image.open(out / f"{SUMMARY_PLOT}.png") as im:
        assert 1000 <= im.size[0] <= 1600  # readable at 1400 px: drawn near that width
