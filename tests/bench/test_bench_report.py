"""``xlinalg report`` and ``xlinalg compare`` on synthesized results files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from xlinalg._lib._escape import markdown as _md_text
from xlinalg.bench import SCHEMA_VERSION, case_names, cell_key, get_case
from xlinalg.bench import _findings as F
from xlinalg.bench._compare import compare_records
from xlinalg.bench._plots import MAX_WIDTH_PX
from xlinalg.bench._store import dumps_record
from xlinalg.study import _findings as S

ENV = {"xlinalg": "0.1.0", "python": {"version": "3.11"}, "cpu": {"model": "test CPU",
       "logical_cores": 2, "usable_cores": 2}, "memory_bytes": 16 * 2**30, "gpus": [],
       "packages": {"numpy": np.__version__}, "blas": []}


def _header(run_id: str = "r1") -> dict:
    return {"type": "header", "schema_version": SCHEMA_VERSION, "run_id": run_id,
            "created": "2026-01-01T00:00:00+00:00", "env": ENV, "run": {}}


def _rec(case, backend, size, median, *, dtype="float64", flops=None, nbytes=None,
         status="ok", seed=0, doc=None, **extra):
    label = "x".join(map(str, size)) if isinstance(size, (list, tuple)) else str(size)
    rec = {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": "r1",
           "key": cell_key(case, backend, dtype, label), "case": case, "backend": backend,
           "dtype": dtype, "size": size, "size_label": label, "status": status}
    if case in case_names():  # the fields the runner writes: what the case declares
        rec.update(get_case(case).describe(dtype))
    rec["case_doc"] = doc or f"{case}: test case"
    if status in ("ok", "wrong"):
        rng = np.random.default_rng(seed)
        raw = list(median * (1 + 0.01 * rng.standard_normal(15)))
        rec["time"] = {"median_s": float(np.median(raw)), "iqr_s": median * 0.01,
                       "min_s": min(raw), "raw_s": raw, "noisy": False}
        tp = {}
        if flops:
            tp.update(flops=flops, gflops=flops / median / 1e9)
        if nbytes:
            tp.update(bytes=nbytes, gbs=nbytes / median / 1e9)
        rec["throughput"] = tp
        rec["check"] = {"verdict": "ok" if status == "ok" else "wrong", "message": "off"}
        rec["memory"] = {"tracemalloc_peak_bytes": 1024 * 1024, "measured": ["tracemalloc"]}
    rec.update(extra)
    return rec


def _records(scale: float = 1.0) -> list[dict]:
    rs = []
    for b, f in (("numpy", 1.0), ("torch-cpu", 3.0)):
        rs.append(_rec("q1_solve_loop", b, 5, 6e-3 * f * scale))
        for n in (5, 10, 20, 50, 100, 200):
            # numpy is faster for small n, torch-cpu for n >= 50: a crossover
            t = (2e-6 if b == "numpy" else 6e-6) + n**3 * (1e-10 if b == "numpy" else 4e-11)
            rs.append(_rec("q3_solve_sweep", b, n, t * scale, flops=2 * n**3 / 3))
        for n in (5, 50):
            rs.append(_rec("q4_loop", b, [1000, n], 6e-3 * f * n / 5 * scale))
            rs.append(_rec("q4_batched", b, [1000, n], 2e-4 * f * n / 5 * scale))
        for m, k, n in ((128, 256, 512), (2048, 4096, 8192)):
            rs.append(_rec("a1_gemm", b, [m, k, n], 2 * m * k * n / (50e9 / f) * scale,
                           flops=2 * m * k * n, nbytes=8 * (m * k + k * n + m * n)))
        rs.append(_rec("a4_add", b, [4096, 4096], 0.02 * scale, nbytes=3 * 8 * 4096**2))
        rs.append(_rec("a10_layout", b, "strided", 2e-3 * scale, flops=1e9))
        rs.append(_rec("a10_layout", b, "contiguous", 1e-3 * scale, flops=1e9))
    rs.append(_rec("a7_svd", "numpy", [512, 512], 0.05 * scale, flops=1e9))
    rs.append(_rec("a7_svd", "torch-cpu", [512, 512], None, status="failed",
                   error={"kind": "oom", "type": "MemoryError", "message": "out of memory"}))
    rs.append(_rec("a15_conv", "numpy", [3, 3, 3], None, status="skipped",
                   skip_reason="no array-API convolution"))
    # a case file's repeat of a document case, in the Extra section
    rs.append(_rec("matmul", "numpy", [64, 64, 64], 1e-5 * scale, flops=2 * 64**3,
                   doc="A1: GEMM a @ b", section="Extra", tags=["gemm"]))
    return rs


def _write(path: Path, records: list[dict]) -> Path:
    lines = [dumps_record(_header())] + [dumps_record(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xlinalg", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    res = _write(d / "results.jsonl", _records())
    out = d / "out"
    p = _cli("report", str(res), "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out


def test_report_markdown_has_sections_tables_and_every_case(report):
    md = (report / "report.md").read_text(encoding="utf-8")
    for sec in ("Q1", "Q3", "Q4", "A1", "A4", "A7", "A10", "A15"):
        assert f"## {sec}: " in md, sec
    for case in {r["case"] for r in _records()}:
        assert f"| {_md_text(case)} |" in md, case
    assert ("| case | backend | size | compute dtype | median | IQR | first call | rate | "
            "% of peak |") in md
    assert "Peak of this machine per processor" in md
    assert "skipped: no array-API convolution" in md
    assert "failed (oom)" in md
    # findings from the data
    assert "torch-cpu first wins at n = 50" in md
    assert "q4_batched" in md
    assert "30.0x" in md
    assert "not measurable on this machine" in md  # the GPU claim, no GPU here
    assert "strided/contiguous time = 2.00x" in md
    assert "refuted" in md


def test_report_html_links_its_plots_and_nothing_outside(report):
    html = (report / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    # each plot once, as the PNG file beside the report (no base64 copy inside the HTML)
    assert "base64" not in html
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert sorted(srcs) == sorted(p.name for p in report.glob("*.png"))
    for bad in ("src=\"http", "href=\"http", "<link ", "<script"):
        assert bad not in html
    # what a reader came for is in the HTML too
    for text in ('id="summary"', 'id="contents"', 'id="article"', "<nav>",
                 "<th>first call</th>", "here, article&#39;s setup"):
        assert text in html, text


def test_plots_are_palette_pngs_of_a_sane_size(report):
    from PIL import Image

    pngs = sorted(report.glob("*.png"))
    names = {p.stem for p in pngs}
    assert any(n.startswith("sweep_q3_solve_sweep") for n in names)
    assert "loop_vs_q4_batched" in names
    assert "speedup_A1_a1_gemm_float64" in names
    assert not list(report.glob("*.svg"))  # one file per plot
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(p) as im:
            assert im.mode == "P", (p.name, im.mode)  # 256-colour palette
            w, h = im.size
        assert p.stat().st_size < 0.5 * w * h, (p.name, p.stat().st_size)


def test_sections_and_peaks():
    rs = _records()
    # a record's declared section is used; a record without a valid one reads as a
    # case that declares nothing: never one guessed from the name, the doc or the registry
    assert F.section_of({"case": "mygemm", "section": "A2"}) == "A2"
    assert F.section_of({"case": "a10_layout", "section": "A99x"}) == "Other"
    assert F.section_of({"case": "a10_layout"}) == "Other"
    assert F.section_of({"case": "mygemm", "case_doc": "A1: GEMM"}) == "Other"
    assert F.section_of({"case": "a1_nothing"}) == "Other"
    assert F.section_of({"case": "foo"}) == "Other"
    assert list(F.sections(rs))[:3] == ["Q1", "Q3", "Q4"]
    peaks = F.calibrate_peaks(rs)
    assert peaks["gflops"]["float64"][0] == pytest.approx(50.0, rel=0.05)
    assert "a4_add" in peaks["gbs"]["any"][1]
    assert "no calibration cells" in peaks["source"]


def test_calibration_cells_set_the_peak_per_device_class():
    rs = _records()
    n, m = 1024, 2**23
    # calibration GEMM at 100 GFLOP/s (faster than any case cell), stream at 20 GB/s
    rs.append(_rec("calib_gemm", "numpy", n, 2 * n**3 / 100e9, flops=2 * n**3,
                   nbytes=3 * 8 * n * n))
    rs.append(_rec("calib_stream", "numpy", m, 3 * 8 * m / 20e9, flops=m, nbytes=3 * 8 * m))
    # a GPU backend: its own calibration, 20 TFLOP/s, 3000 GB/s
    rs.append(_rec("calib_gemm", "torch-cuda", n, 2 * n**3 / 20e12, flops=2 * n**3))
    rs.append(_rec("calib_stream", "torch-cuda", m, 3 * 8 * m / 3e12, nbytes=3 * 8 * m))
    gpu_gemm = _rec("a1_gemm", "torch-cuda", [2048, 4096, 8192],
                    2 * 2048 * 4096 * 8192 / 10e12, flops=2 * 2048 * 4096 * 8192)
    rs.append(gpu_gemm)
    assert F.section_of(rs[-2]) == "Calibration"
    assert list(F.sections(rs))[-1] == "Calibration"  # after the document sections
    peaks = F.calibrate_peaks(rs)
    assert peaks["source"] == "the calibration cells of this run"
    assert peaks["gflops"]["float64"][0] == pytest.approx(100.0, rel=0.05)
    assert peaks["gbs"]["any"][0] == pytest.approx(20.0, rel=0.05)
    assert peaks["by_class"]["gpu"]["gflops"]["float64"][0] == pytest.approx(20e3, rel=0.05)
    # a CPU GEMM cell at 50 GFLOP/s is half the CPU's peak, not measured against the GPU
    cpu_gemm = next(r for r in rs if r["case"] == "a1_gemm" and r["backend"] == "numpy"
                    and r["size"] == [2048, 4096, 8192])
    unit, rate, frac = F.fraction_of_peak(cpu_gemm, peaks)
    assert unit == "GFLOP/s"
    assert frac == pytest.approx(0.5, rel=0.05)
    unit, rate, frac = F.fraction_of_peak(gpu_gemm, peaks)
    assert frac == pytest.approx(0.5, rel=0.05)
    # A12 casts: a bfloat16 GEMM in a float64 run has no bfloat16 peak here -> no fraction
    bf16 = _rec("a12_precision_bfloat16", "torch-cpu", [512, 1024, 2048], 5.5e-3,
                flops=2 * 512 * 1024 * 2048)
    assert F.compute_dtype(bf16) == "bfloat16"
    assert F.fraction_of_peak(bf16, peaks)[2] is None
    add = next(r for r in rs if r["case"] == "a4_add" and r["backend"] == "numpy")
    unit, rate, frac = F.fraction_of_peak(add, peaks)
    assert unit == "GB/s"
    assert frac == pytest.approx(rate / 20.0, rel=1e-6)


def _with_passes(recs: list[dict]) -> list[dict]:
    """Each record measured in three passes 1 % apart (fresh processes agree)."""
    for r in recs:
        m = (r.get("time") or {}).get("median_s")
        if m:
            r["time"]["passes"] = [{"median_s": m * f} for f in (0.99, 1.0, 1.01)]
    return recs


def test_compare_cli_ratios_and_significance(tmp_path):
    old = _write(tmp_path / "old.jsonl", _with_passes(_records()))
    new_recs = _records(scale=1.5)  # everything 50% slower
    new_recs[0]["time"]["median_s"] /= 3  # and one cell 2x faster
    new_recs[0]["time"]["raw_s"] = [x / 3 for x in new_recs[0]["time"]["raw_s"]]
    new = _write(tmp_path / "new.jsonl", _with_passes(new_recs))
    p = _cli("compare", str(old), str(new))
    assert p.returncode == 0, p.stderr
    assert "ratio" in p.stdout
    assert "interval" in p.stdout
    assert "[1.4" in p.stdout  # the interval of the 1.5x cells
    # a uniform 1.5x is one machine shift, not a regression per cell; the one cell
    # 2x faster than the rest is an improvement against it
    assert "MACHINE SHIFT: all cells moved by x1.500" in p.stdout
    assert "REGRESSION" not in p.stdout
    assert "improvement" in p.stdout
    assert "1.500" in p.stdout
    # without the shift every 1.5x cell is a regression
    new = _write(tmp_path / "new2.jsonl", _with_passes(_records(scale=1.0)[:4] + _records(scale=1.5)[4:8]
                                                      + _records()[8:]))
    p = _cli("compare", str(old), str(new))
    assert "MACHINE SHIFT" not in p.stdout
    assert "cells: 4 REGRESSION," in p.stdout


def test_compare_records_of_one_file_flags_nothing():
    old = {r["key"]: r for r in _records()}
    same = {r["key"]: r for r in _records()}
    rows = compare_records(old, same)
    assert all(r["flag"].startswith("~") or r["flag"].startswith("not comparable")
               for r in rows)


def test_compare_prints_intervals_rounded_outward():
    """A cell not flagged at a 1.10 threshold (its interval starts at 1.0996) must not
    print "[1.100-...]"; ends outside 1e-3..1e6 keep three significant digits."""
    from xlinalg.bench._verdict import fmt_interval

    def _fmt_interval(lo, hi):
        return fmt_interval(lo, hi, 3)

    assert _fmt_interval(1.0996, 1.2004) == "[1.099-1.201]"
    assert _fmt_interval(1.15, 1.25) == "[1.150-1.250]"
    assert _fmt_interval(0.9, 1.1) == "[0.900-1.100]"
    assert _fmt_interval(1e-300, 1e300) == "[1e-300-1e+300]"


def test_environment_names_the_package_that_ships_each_blas():
    from xlinalg.bench._report import _env_lines

    hdr = {"run_id": "r1", "created": "2026-12-05T00:00:00+00:00", "env": {**ENV, "blas": [
        {"user_api": "blas", "internal_api": "openblas", "version": "0.3.30",
         "architecture": "SkylakeX", "num_threads": 2, "owner": "numpy"},
        {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31",
         "architecture": "SkylakeX", "num_threads": 2},
        {"user_api": "openmp", "internal_api": "openmp", "num_threads": 2},
        "not a dict"]}}
    blas = [x for x in _env_lines(hdr) if x.startswith("BLAS:")]
    assert blas == ["BLAS: openblas 0.3.30 (SkylakeX), 2 threads, shipped with numpy",
                    "BLAS: openblas 0.3.31 (SkylakeX), 2 threads"]


def test_bad_files_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not json\n")
    good = _write(tmp_path / "good.jsonl", _records()[:3])
    corrupt = tmp_path / "corrupt.jsonl"
    lines = good.read_text().splitlines()
    corrupt.write_text("\n".join([lines[0], "{broken", lines[1]]) + "\n")
    for args in (("report", str(bad)), ("compare", str(good), str(bad)),
                 ("compare", str(corrupt), str(good)), ("report", str(tmp_path / "none"))):
        p = _cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        err = p.stderr.strip()
        assert len(err.splitlines()) == 1, err
        assert "Traceback" not in err
        assert "error:" in err
    assert ":2:" in _cli("compare", str(corrupt), str(good)).stderr
    assert json.loads(lines[0])["type"] == "header"


def test_claims_use_engine_params_and_give_mixed_verdicts():
    rs = [_rec("a10_layout", "numpy", [512, 0], 1e-3, params={"n": 512, "contiguous": 0}),
          _rec("a10_layout", "numpy", [512, 1], 1e-3, params={"n": 512, "contiguous": 1}),
          _rec("a10_layout", "torch-cpu", [512, 0], 2e-3, params={"n": 512, "contiguous": 0}),
          _rec("a10_layout", "torch-cpu", [512, 1], 1e-3, params={"n": 512, "contiguous": 1})]
    c = {x["claim"]: x for x in S.claims(rs, ENV, F.calibrate_peaks(rs))}
    layout = c["non-contiguous operands cost about 2x in matmul"]
    assert layout["verdict"].startswith("mixed")
    assert "confirmed for torch-cpu" in layout["verdict"]
    gpu = c["on large matrices the GPU is 20-50 times faster"]
    assert gpu["verdict"] == "not measurable on this machine"


def test_out_of_memory_claim_says_why_a_cell_did_not_finish():
    """Next to "NumPy runs out of memory", a bare "failed" reads as out of memory: a cell that
    timed out or was skipped says so, and one that did run out of memory confirms the claim."""
    size = [2048, 4096, 8192]
    ok = _rec("a1_gemm", "numpy", size, 1.3)
    slow = _rec("a12_precision_float16", "numpy", size, None, status="failed",
                error={"kind": "timeout", "type": "timeout", "message": "ran past 120 s"})
    nodt = _rec("a12_precision_bfloat16", "numpy", size, None, status="skipped",
                skip_reason="numpy has no bfloat16 dtype")
    claim = "NumPy runs out of memory at 2048x4096x8192"
    c = {x["claim"]: x for x in S.claims([ok, slow, nodt], ENV, {})}[claim]
    assert c["verdict"] == "refuted"
    assert f"{ok['key']}: ok, peak 1 MiB" in c["evidence"]
    assert f"{slow['key']}: failed (timeout, not out of memory)" in c["evidence"]
    assert f"{nodt['key']}: skipped (numpy has no bfloat16 dtype)" in c["evidence"]
    oom = dict(slow, error={"kind": "oom", "type": "MemoryError", "message": "out of memory"})
    c = {x["claim"]: x for x in S.claims([ok, oom], ENV, {})}[claim]
    assert c["verdict"] == "confirmed"
    assert oom["key"] in c["evidence"]


def _section(md: str, heading: str) -> str:
    """The text of the Markdown section that starts with `heading`, up to the next ## ."""
    start = md.index(heading)
    end = md.find("\n## ", start + len(heading))
    return md[start:end if end >= 0 else len(md)]


def test_report_opens_with_summary_and_contents(report):
    md = (report / "report.md").read_text(encoding="utf-8")
    html = (report / "report.html").read_text(encoding="utf-8")
    # the summary comes first, before any per-section table
    assert md.index("## Summary") < md.index("## Contents") < md.index("## A1: ")
    summ = _section(md, "## Summary")
    assert "test CPU, 2 usable cores" in summ  # the machine it holds for
    # one line per workload of the documents, with the winner and its margin
    for w in ("Many small solves", "One solve, by matrix size", "GEMM", "Elementwise",
              "Broadcasting", "SVD and QR", "Batched matmul", "Memory layout", "Precision",
              "Operator fusion", "Host-device transfer"):
        assert w in summ, w
    gemm = next(line for line in summ.splitlines() if "GEMM" in line)
    assert "numpy: fastest in 2 of 2 cells (3.00x" in gemm  # numpy is 3x faster by design
    assert "strided / contiguous time per backend" in summ
    # the contents link every section heading, and the anchors exist
    toc = _section(md, "## Contents")
    for sec in ("q1", "q3", "q4", "a1", "a10", "a15"):
        assert f"(#sec-{sec})" in toc, sec
        assert f'id="sec-{sec}"' in html, sec
    assert re.search(r'<nav>\s*<ul>\s*<li><a href="#summary">', html)


def test_report_sets_the_article_beside_this_machine(tmp_path):
    f64 = _records()
    f32 = [_rec(r["case"], r["backend"], r["size"], r["time"]["median_s"] / 2, dtype="float32")
           for r in _records() if r.get("time") and r["case"] == "a1_gemm"]
    p64, p32 = _write(tmp_path / "f64.jsonl", f64), _write(tmp_path / "f32.jsonl", f32)
    p = _cli("report", str(p64), str(p32), "--out", str(tmp_path / "rep"), "--no-plots")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    art = _section(md, "## The article side by side")
    row = next(line for line in art.splitlines() if "GEMM 128x256x512" in line)
    assert "NumPy 2.31 / torch-cpu 1.98 / GPU 0.12 ms" in row  # the article's figures
    # article's setup: numpy float64 (1x) against torch-cpu float32 (3x / 2 = 1.5x numpy)
    assert "0.67x" in row
    assert "refuted: numpy faster, 1.50x (article: torch 1.17x)" in row
    # fair float64 (numpy 3x faster) and fair float32 (numpy 3x faster) both refute it
    assert row.count("refuted: numpy faster, 3.00x") == 2
    assert "no GPU here" in row
    # the claim in words is judged in both setups, each with its own verdict
    claim = next(line for line in art.splitlines() if "about 15% faster" in line)
    assert "article's setup (NumPy float64 vs torch float32): refuted (NumPy is faster)" in claim
    assert "fair, float64: refuted (NumPy is faster)" in claim
    assert "fair, float32: refuted (NumPy is faster)" in claim
    big = next(line for line in art.splitlines() if "GEMM 2048x4096x8192" in line)
    assert "out of memory" in big
    one = _cli("report", str(p64), "--out", str(tmp_path / "one"), "--no-plots")
    assert one.returncode == 0, one.stderr
    assert "need a run in the other dtype" in (tmp_path / "one" / "report.md").read_text(
        encoding="utf-8").replace("\n", " ")


def test_pivot_tables_show_first_call_and_verdicts(tmp_path):
    rs = [_rec("a7_svd", "numpy", 512, 0.05, flops=1e9),
          _rec("a7_svd", "torch-cpu", 512, 0.051, flops=1e9, seed=1),
          _rec("a8_qr", "numpy", 512, 0.01, flops=1e9),
          _rec("a8_qr", "torch-cpu", 512, 0.03, flops=1e9, seed=1)]
    for r in rs:
        r["time"]["first_call_s"] = 1.5
    _write(tmp_path / "r.jsonl", rs)
    p = _cli("report", str(tmp_path / "r.jsonl"), "--no-plots")
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "r-report" / "report.md").read_text(encoding="utf-8")
    assert "| size | numpy | torch-cpu | verdict |" in md
    assert "first call 1.5 s" in md
    svd = next(line for line in _section(md, "## A7: ").splitlines() if line.startswith("| 512"))
    # 2% apart, 1% noise each: not a winner; the interval excludes 1, so not "within noise"
    assert "a real difference below the margin" in svd
    qr = next(line for line in _section(md, "## A8: ").splitlines() if line.startswith("| 512"))
    assert "numpy, 3.0" in qr
    assert "over torch-cpu" in qr


def test_verdict_names_a_winner_only_beyond_the_noise():
    a = _rec("a1_gemm", "numpy", 64, 1.0e-3)
    b = _rec("a1_gemm", "torch-cpu", 64, 1.02e-3, seed=1)
    v = F.verdict({"numpy": a, "torch-cpu": b})
    assert v["tie"]
    # 2 % apart, intervals [1.01-1.04]: real, but below the 5 % margin
    assert v["text"].startswith("a real difference below the margin")
    c = _rec("a1_gemm", "torch-cpu", 64, 2.0e-3, seed=1)
    v = F.verdict({"numpy": a, "torch-cpu": c})
    assert not v["tie"]
    assert v["winner"] == "numpy"
    assert v["speedup"]["lo"] > 1.0
    assert v["speedup"]["ratio"] == pytest.approx(2.0, rel=0.05)
    # a noisy loser: its quartiles straddle the winner's: a tie
    d = _rec("a1_gemm", "torch-cpu", 64, 1.3e-3, seed=1)
    d["time"]["q1_s"], d["time"]["q3_s"] = 0.8e-3, 2.0e-3
    assert F.verdict({"numpy": a, "torch-cpu": d})["tie"]
    assert F.fmt_ratio(141.6) == "142x"
    assert "e+" not in F.fmt_ratio(1234.5)


def test_a_winner_clears_the_margin_over_every_backend_by_the_runners_rule():
    """The report's own verdict (cells without a recorded one) uses the runner's rule:
    the interval over every other backend at or above 1.05x, not just over the runner-up."""
    fast = _rec("a1_gemm", "numpy", 64, 1.0e-3)
    second = _rec("a1_gemm", "torch-cpu", 64, 1.2e-3, seed=1)
    wide = _rec("a1_gemm", "jax-cpu", 64, 1.3e-3, seed=2)
    wide["time"]["q1_s"], wide["time"]["q3_s"] = 1.02e-3, 1.6e-3  # a noisy third
    assert not F.verdict({"numpy": fast, "torch-cpu": second})["tie"]
    v = F.verdict({"numpy": fast, "torch-cpu": second, "jax-cpu": wide})
    assert v["tie"]
    assert v["runner_up"] == "torch-cpu"
    # over the runner-up alone: a 1.2x lead whose interval starts at 1.02 is a tie too
    second["time"]["q1_s"], second["time"]["q3_s"] = 1.04e-3, 1.4e-3
    v = F.verdict({"numpy": fast, "torch-cpu": second})
    assert v["speedup"]["ratio"] >= F.MARGIN
    assert 1.0 < v["speedup"]["lo"] < F.MARGIN
    assert v["tie"]


def test_a_tie_is_written_from_the_paired_rounds_faster_side():
    """The faster median can be the slower one in the paired rounds (torch 1.32x
    [1.01-1.40] faster round by round): the tie reads that way, never "numpy 0.76x"."""
    v = {"winner": "numpy", "runner_up": "torch-cpu", "tie": True,
         "speedup": {"over": "torch-cpu", "ratio": 1 / 1.32, "lo": 1 / 1.40, "hi": 1 / 1.01}}
    # the interval excludes 1: a real difference, below the margin (not "within noise")
    assert F.verdict_text(v) == ("a real difference below the margin (torch-cpu 1.32x "
                                 "[1.01-1.40] vs numpy)")
    v.update(speedup={"over": "torch-cpu", "ratio": 1.03, "lo": 0.98, "hi": 1.08})
    assert F.verdict_text(v) == "tie within noise (numpy 1.03x [0.98-1.08] vs torch-cpu)"


def test_summary_says_who_ties_with_whom():
    """"tie within noise in all 3 cells" hides the answer: the summary names the tied
    backends, so a reader still sees which libraries lead a workload and which do not."""
    size = [4096, 4096]
    rs = [_rec("a4_add", "numpy", size, 20e-3), _rec("a4_add", "array-api-strict", size, 20.2e-3),
          _rec("a4_add", "torch-cpu", size, 35e-3),
          _rec("a4_multiply", "numpy", size, 21e-3),
          _rec("a4_multiply", "array-api-strict", size, 21.1e-3), _rec("a4_multiply", "jax-cpu",
                                                                        size, 34e-3),
          _rec("a4_sigmoid", "numpy", size, 100e-3), _rec("a4_sigmoid", "torch-cpu", size, 37e-3),
          _rec("a4_sigmoid", "jax-cpu", size, 37.3e-3)]
    # (two of the three are real differences below the margin: their intervals exclude 1)
    ties = "1 tie(s) within noise (array-api-strict = numpy in 1); 2 real difference(s) below " \
           "the margin (array-api-strict = numpy in 1; jax-cpu = torch-cpu in 1)"
    line = next(w["line"] for w in S.summary(rs) if w["title"] == "Elementwise")
    assert line == f"no fastest in any of 3 cells: {ties}"
    words = {w["case"]: w["text"].split(" (")[0] for w in F.winners(rs)}
    assert sorted(words.values()) == ["a real difference below the margin",
                                      "a real difference below the margin", "tie within noise"]
    # beside a decisive win, the ties are named too
    rs.append(_rec("a4_sigmoid", "dask", [8, 8], 1e-3))
    rs += [_rec("a4_add", "numpy", [8, 8], 1e-3), _rec("a4_add", "torch-cpu", [8, 8], 3e-3)]
    line = next(w["line"] for w in S.summary(rs) if w["title"] == "Elementwise")
    assert line.startswith("numpy: fastest in 1 of 4 cells (3.00x over the runner-up)")
    assert line.endswith(f"; {ties}")


def test_a_failed_cell_in_a_pivot_table_keeps_its_first_clause_whole():
    from xlinalg.bench._report import _pivot_cell
    r = _rec("a14_einsum", "numpy", [2048, 4096, 8192], None, status="failed",
             error={"kind": "timeout", "type": "timeout", "message":
                    "cell ran past the time limit of 120 s; its worker process was killed"})
    assert _pivot_cell(r) == "failed (timeout): cell ran past the time limit of 120 s [...]"
    r["error"]["message"] = "out of memory"
    assert _pivot_cell(r) == "failed (timeout): out of memory"
    r["error"]["message"] = "x" * 10 + " word" * 30 + "; more"
    text = _pivot_cell(r)
    assert len(text) <= 64
    assert text.endswith(" [...]")
    assert "[...] [...]" not in text


def test_duplicate_cases_do_not_name_second_winners():
    extra = {"section": "Extra", "tags": ["gemm"]}  # a case file's repeat of a1_gemm
    rs = [_rec("matmul", "numpy", [64, 64, 64], 1e-5, **extra),
          _rec("matmul", "torch-cpu", [64, 64, 64], 3e-5, **extra),
          _rec("a1_gemm", "numpy", [64, 64, 64], 3e-5), _rec("a1_gemm", "torch-cpu", [64, 64, 64],
                                                               1e-5)]
    assert F.section_of(rs[0]) == "Extra"
    gemm = next(s for s in S.summary(rs) if s["anchor"] == "gemm")
    assert gemm["line"].startswith("torch-cpu: fastest in 1 of 1")


def test_a12_rows_show_the_compute_dtype(tmp_path):
    rs = [_rec("a12_precision_bfloat16", b, [128, 256, 512], t, flops=1e9)
          for b, t in (("torch-cpu", 1e-3), ("jax-cpu", 2e-3))]
    rs += [_rec("a12_precision_float32", b, [128, 256, 512], t, flops=1e9)
           for b, t in (("torch-cpu", 2e-3), ("jax-cpu", 2e-3))]
    _write(tmp_path / "r.jsonl", rs)
    assert _cli("report", str(tmp_path / "r.jsonl")).returncode == 0
    out = tmp_path / "r-report"
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "computes in bfloat16 (run dtype float64)" in md
    assert "| a12\\_precision\\_bfloat16 | jax-cpu | 128x256x512 | bfloat16 |" in md
    # bfloat16 against its own backend's float32, not against NumPy (which has none)
    assert (out / "precision_bfloat16_float64.png").exists()
    assert "float32 / bfloat16 GEMM time on the same backend" in md


def test_no_plot_is_wider_than_the_limit(report):
    import struct

    pngs = sorted(report.glob("*.png"))
    assert pngs
    for p in pngs:
        width = struct.unpack(">I", p.read_bytes()[16:20])[0]  # IHDR width
        assert width <= MAX_WIDTH_PX, (p.name, width)


def test_skips_are_not_doubled_and_are_counted(report):
    md = (report / "report.md").read_text(encoding="utf-8")
    assert "skipped: skipped:" not in md
    assert "1 x no array-API convolution" in md


def test_names_from_the_file_are_escaped(tmp_path):
    evil = "a1_<script>alert(1)</script>|x"
    quote = 'q" onload="alert(1)'
    rs = [_rec("a1_gemm", "numpy", [64, 64, 64], 1e-5),
          _rec("a1_gemm", evil, [64, 64, 64], 2e-5, seed=1),
          _rec("a1_gemm", quote + "\x1b[31m", [64, 64, 64], 3e-5, seed=2),
          _rec(evil, "numpy", 7, 1e-5, doc="<img src=x onerror=alert(1)> [link](http://x)"),
          _rec(quote, "numpy", 7, 1e-5, dtype="$x$<b>")]
    _write(tmp_path / "r.jsonl", rs)
    p = _cli("report", str(tmp_path / "r.jsonl"))
    assert p.returncode == 0, p.stderr
    out = tmp_path / "r-report"
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    for text in (html, md):
        assert "<script>" not in text
        assert "<img src=x" not in text
        assert "<b>" not in text
        assert "\x1b" not in text  # the escape character itself, not its visible form
    assert 'onload="' not in html  # the quote cannot end an attribute
    assert re.search(r"q&(quot|#34); onload=&(quot|#34);alert\(1\)", html)
    assert "\\x1b[31m" in html  # the control character shown, not sent
    assert "[link](http://x)" not in md
    assert all("<" not in p.name and "|" not in p.name and '"' not in p.name
               for p in out.iterdir())


def test_verdicts_and_ratios_recorded_side_by_side_are_used_as_they_are():
    a = _rec("a1_gemm", "numpy", 64, 1.0e-3)
    b = _rec("a1_gemm", "torch-cpu", 64, 1.3e-3, seed=1)
    # the runner paired the rounds: torch-cpu / numpy = 1.30 [1.25-1.36], numpy fastest
    rec_v = {"fastest": "numpy", "tie": [], "margin": 1.05, "effective_cores":
             {"numpy": 2.0, "torch-cpu": 1.0}, "parallelism_note": "numpy used 2 cores, "
             "torch-cpu 1", "speedup": {"over": "torch-cpu", "ratio": 1.3, "lo": 1.25,
                                        "hi": 1.36}}
    for r in (a, b):
        r["verdict"] = rec_v
    b["ratios"] = {"numpy": {"ratio": 1.3, "lo": 1.25, "hi": 1.36}}
    v = F.verdict({"numpy": a, "torch-cpu": b})
    assert v["source"] == "recorded"
    assert (v["speedup"]["lo"], v["speedup"]["hi"]) == (1.25, 1.36)
    assert "numpy used 2 cores" in v["text"]
    assert F.ratio(b, a) == (1.25, 1.3, 1.36)
    # a recorded tie stays a tie
    tie_v = {**rec_v, "fastest": None, "tie": ["numpy", "torch-cpu"]}
    for r in (a, b):
        r["verdict"] = tie_v
    assert F.verdict({"numpy": a, "torch-cpu": b})["tie"]
    # a tie listed in any order never names the runner-up as its own rival
    for r in (a, b):
        r["verdict"] = {**tie_v, "tie": ["torch-cpu", "numpy"]}
    v = F.verdict({"numpy": a, "torch-cpu": b})
    assert v["winner"] == "numpy"
    assert v["runner_up"] == "torch-cpu"
    # a stalled cell is marked
    b["stall"] = {"stalled": True}
    assert F.shaky(b) == "stalled"


def test_article_setup_prefers_one_run_and_warns_when_runs_drift(tmp_path):
    n = 8 * 2**20  # the stream's GB/s: 5x lower in the float32 run
    f64 = [_rec("a1_gemm", "numpy", [128, 256, 512], 1e-3),
           _rec("a12_precision_float32", "torch-cpu", [128, 256, 512], 0.5e-3, seed=1),
           _rec("calib_stream", "numpy", n, 12e-3, nbytes=3 * 8 * n)]
    f32 = [_rec("a1_gemm", "torch-cpu", [128, 256, 512], 5e-3, dtype="float32"),
           _rec("calib_stream", "numpy", n, 30e-3, dtype="float32", nbytes=3 * 4 * n)]
    p64, p32 = _write(tmp_path / "f64.jsonl", f64), _write(tmp_path / "f32.jsonl", f32)
    assert _cli("report", str(p64), str(p32), "--no-plots").returncode == 0
    md = (tmp_path / "f64-report" / "report.md").read_text(encoding="utf-8")
    art = _section(md, "## The article side by side")
    row = next(line for line in art.splitlines() if "GEMM 128x256x512" in line)
    # torch's float32 from the float64 run's A12 cell (2x faster), not the busy float32 run
    assert "one run: torch from a12" in row
    assert "agrees: torch-cpu faster, 1.99x" in row
    assert "differed by up to 5.00x between the runs" in art
    assert "read those ratios as rough" in art


def test_run_drift_reads_the_stream_by_its_rate_not_its_time():
    # float32 moves half the bytes: half the time at the same GB/s is no drift
    n = 8 * 2**20
    f64 = _rec("calib_stream", "numpy", n, 12e-3, nbytes=3 * 8 * n)
    f32 = _rec("calib_stream", "numpy", n, 6e-3, dtype="float32", nbytes=3 * 4 * n)
    x, text = S.cross_dtype_drift([f64, f32])
    assert x == pytest.approx(1.0, rel=0.01)
    assert "GB/s" in text
    slow = _rec("calib_stream", "numpy", n, 12e-3, dtype="float32", nbytes=3 * 4 * n)
    assert S.cross_dtype_drift([f64, slow])[0] == pytest.approx(2.0, rel=0.01)
    # the loop of tiny solves is no measure of drift: NumPy's float32 solve costs
    # about 1.2x its float64 one per call on a quiet machine (both full runs here)
    loops = [_rec("q1_solve_loop", "numpy", [1000, 5], 7e-3),
             _rec("q1_solve_loop", "numpy", [1000, 5], 14e-3, dtype="float32")]
    assert S.cross_dtype_drift(loops) is None


def test_rates_above_the_peak_are_never_the_machines():
    n = 2**23
    stream = _rec("calib_stream", "numpy", n, 3 * 8 * n / 12e9, nbytes=3 * 8 * n)  # 12 GB/s
    gemm = _rec("calib_gemm", "numpy", 1024, 2 * 1024**3 / 20e9, flops=2 * 1024**3)  # 20 GFLOP/s
    ok = _rec("a1_gemm", "numpy", [64, 64, 64], 1e-4, flops=2 * 64**3, nbytes=3 * 8 * 64**2)
    hot = _rec("a5_broadcast", "torch-cpu", [128, 1024, 1], 1e-6, nbytes=2 * 8 * 128 * 1024,
               seed=1)  # 2 TB/s: the data sat in a cache
    # a float64 run's A12 cell computing in float32: no float32 peak bounds it
    low = _rec("a12_precision_float32", "numpy", [64, 64, 64], 2 * 64**3 / 35e9,
               flops=2 * 64**3)
    failed = _rec("calib_gemm", "jax-cpu", 1024, None, status="failed")
    records = [stream, gemm, ok, hot, low, failed]
    peaks = F.calibrate_peaks(records)
    assert [F.rates_above_peak(r, peaks) for r in records] == [[], [], [], ["gbs"], [], []]
    same = dict(low, compute_dtype="float64")  # the same rate in float64: above 20 GFLOP/s
    assert F.rates_above_peak(same, peaks) == ["gflops"]
    c = next(c for c in S.claims(records, {}, peaks) if "bandwidth" in c["claim"])
    assert f"{hot['throughput']['gbs']:.1f} GB/s" not in c["evidence"]
    assert "numpy: best 35.0 GFLOP/s, 12.0 GB/s" in c["evidence"]
    assert "1 rate(s) above this machine's peak left out" in c["evidence"]


def test_calibration_of_a_busier_run_does_not_cap_faster_gemm_cells():
    n = 1024
    slow_calib = _rec("calib_gemm", "numpy", n, 2 * n**3 / 5e9, flops=2 * n**3)  # 5 GFLOP/s
    fast_cell = _rec("a1_gemm", "numpy", [512, 1024, 2048], 2 * 512 * 1024 * 2048 / 80e9,
                     flops=2 * 512 * 1024 * 2048)  # 80 GFLOP/s, from a quiet run
    peaks = F.calibrate_peaks([slow_calib, fast_cell])
    assert peaks["gflops"]["float64"][0] == pytest.approx(80.0, rel=0.05)
    assert "busier run" in peaks["source"]
    assert F.fraction_of_peak(fast_cell, peaks)[2] == pytest.approx(1.0, rel=0.05)


def test_a_later_run_of_a_case_replaces_the_earlier_cells(tmp_path):
    old = [_rec("a15_conv", "numpy", [3, 3, 3], None, status="skipped", skip_reason="stale"),
           _rec("a1_gemm", "numpy", [64, 64, 64], 1e-5)]
    new = [_rec("a15_conv", "numpy", [32, 3, 3, 3], 1e-3)]
    p1, p2 = _write(tmp_path / "old.jsonl", old), _write(tmp_path / "new.jsonl", new)
    assert _cli("report", str(p1), str(p2), "--no-plots").returncode == 0
    md = (tmp_path / "old-report" / "report.md").read_text(encoding="utf-8")
    assert "stale" not in md
    assert "| 32x3x3x3 |" in md
    assert "a1\\_gemm" in md  # cases the later run did not touch stay


def test_a_record_is_read_by_the_fields_it_declares():
    # tests/data/results-sample.jsonl: a header and one cell per case of a run; each
    # record carries its case's fields, and those it declares are what is read
    from xlinalg.bench import get_case, read_results

    recs = read_results(Path(__file__).resolve().parents[1] / "data" / "results-sample.jsonl").records
    assert recs
    for r in recs:
        c = get_case(r["case"])
        assert F.section_of(r) == ("Calibration" if "calibration" in c.tags else c.section)
        assert F.units_of(r) == c.units
        assert F.compute_dtype(r) == (c.compute_dtype or r["dtype"])
    r = dict(recs[0], section="A3", tags=["loop"], units="GB/s", peak="none",
             compute_dtype="float16")
    assert (F.section_of(r), F.units_of(r), F.peak_of(r), F.compute_dtype(r)) == (
        "A3", "GB/s", "none", "float16")
    assert F.has_tag(r, "loop")
    assert F.fraction_of_peak(r, F.calibrate_peaks(recs))[2] is None  # peak "none"


def test_ratio_axis_is_log_only_over_a_wide_span():
    from xlinalg.bench import _plots

    plt = _plots.pyplot()
    for vals, scale in (([(0.9, 1.0, 1.1, ""), (1.1, 1.2, 1.3, "noisy")], "linear"),
                        ([(0.25, 0.29, 0.31, ""), (0.3, 0.4, 0.45, "")], "linear"),
                        ([(0.01, 0.02, 0.03, ""), (4.0, 5.0, 6.0, "")], "log")):
        fig, ax = plt.subplots()
        _plots.ratio_bars(ax, ["512"], {"numpy": vals[:1], "torch-cpu": vals[1:]})
        assert ax.get_yscale() == scale, vals
        # a linear axis still labels more than the 1 line
        labels = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert len(labels) >= 3, labels
        plt.close(fig)


def test_peak_memory_includes_the_gpu_allocator_peak(tmp_path):
    gpu = _rec("a1_gemm", "torch-cuda", [64, 64, 64], 1e-5)
    gpu["memory"] = {"tracemalloc_peak_bytes": 2**20, "cuda_max_allocated_bytes": 3 * 2**30,
                     "measured": ["cuda_max_allocated_bytes", "tracemalloc_peak_bytes"]}
    host = _rec("a1_gemm", "numpy", [64, 64, 64], 2e-5, seed=1)
    host["memory"] = {"tracemalloc_peak_bytes": 5 * 2**20, "rss_peak_delta_bytes": 2**20,
                      "rss_method": "VmHWM (exact)",
                      "measured": ["rss_peak_delta_bytes", "tracemalloc_peak_bytes"]}
    _write(tmp_path / "r.jsonl", [gpu, host])
    assert _cli("report", str(tmp_path / "r.jsonl"), "--no-plots").returncode == 0
    md = (tmp_path / "r-report" / "report.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| a1\\_gemm | torch-cuda"))
    assert "| 3\\.0 GiB |" in row  # (a leading "3." is escaped: no list)
    row = next(line for line in md.splitlines() if line.startswith("| a1\\_gemm | numpy"))
    assert "| 5\\.0 MiB |" in row


def test_small_ratios_keep_their_digits_in_intervals():
    assert F.fmt_interval(0.0081, 0.0097) == "[0.0081-0.0097]"
    assert F.fmt_interval(1.2, 1.456) == "[1.20-1.46]"
    # rounded outward: the printed interval holds the measured one, so a tie whose low
    # end is 1.0496 never reads "[1.05-...]" beside the 1.05x margin it missed
    assert F.fmt_interval(1.0496, 1.1201) == "[1.04-1.13]"
    assert F.fmt_interval(1.15, 1.25) == "[1.15-1.25]"  # exact ends stay (binary 1.1499..)
    assert F.fmt_interval(0.00812, 0.00978) == "[0.0081-0.0098]"
    assert F.fmt_interval(141.6, 1234.5) == "[141-1235]"
    numpy_cell = _rec("a1_gemm", "numpy", [64, 64, 64], 1e-3)
    torch_cell = _rec("a1_gemm", "torch-cpu", [64, 64, 64], 0.12, seed=1)
    nums, _ = S.compare_text(numpy_cell, torch_cell, None)
    assert "0.0083x [0.0082-0.0084]" in nums, nums  # was "[0.01-0.01]"


def test_loop_table_sorted_by_method_dtype_and_size(tmp_path):
    rs = []
    # numpy lacks n = 100 and float32 n = 5: those rows first appear with torch-cpu
    for b, cells in (("numpy", [("float64", 20), ("float64", 5), ("float32", 20)]),
                     ("torch-cpu", [(dt, n) for dt in ("float64", "float32")
                                    for n in (100, 20, 5)])):
        for dt, n in cells:
            for case, t in (("q4_loop", 1e-2), ("q4_batched", 1e-3)):
                rs.append(_rec(case, b, [1000, n], t * n, dtype=dt))
    _write(tmp_path / "r.jsonl", rs)
    assert _cli("report", str(tmp_path / "r.jsonl"), "--no-plots").returncode == 0
    md = (tmp_path / "r-report" / "report.md").read_text(encoding="utf-8")
    q = _section(md, "## The question").split("The memory wall")[0]  # the loop table only
    rows = [line.split(" | ")[1:3] for line in q.splitlines() if line.startswith("| q4")]
    assert rows == [[s, dt] for dt in ("float32", "float64")
                    for s in ("1000x5", "1000x20", "1000x100")], rows


def test_a_long_failure_note_is_cut_at_a_word_in_the_pivot(tmp_path):
    msg = "cell ran past the time limit of 120 s; its worker was stopped and restarted"
    rs = [_rec("a7_svd", "numpy", 512, 0.05),
          _rec("a7_svd", "torch-cpu", 512, None, status="failed",
               error={"kind": "timeout", "type": "CellTimeout", "message": msg})]
    _write(tmp_path / "r.jsonl", rs)
    assert _cli("report", str(tmp_path / "r.jsonl"), "--no-plots").returncode == 0
    md = (tmp_path / "r-report" / "report.md").read_text(encoding="utf-8")
    row = next(line for line in _section(md, "## A7: ").splitlines() if line.startswith("| 512"))
    assert "failed (timeout): cell ran past the time limit of 120 s \\[...\\]" in row, row


def test_eager_against_compiled_has_its_own_plot(tmp_path):
    from xlinalg.study import _plots

    rs = [_rec(case, b, [1024, 1024], t, seed=i)
          for i, (case, b, t) in enumerate((("a13_fusion_eager", "numpy", 2e-3),
                                            ("a13_fusion_eager", "jax-cpu", 3e-3),
                                            ("a13_fusion_compiled", "jax-cpu", 1e-3),
                                            ("a13_fusion_eager", "torch-cpu", 4e-3),
                                            ("a13_fusion_compiled", "torch-cpu", 1e-3)))]
    plots = _plots.plot_pairs(rs, tmp_path)
    assert [p["name"] for p in plots] == [
        "pair_A13_a13_fusion_eager_a13_fusion_compiled_float64"]
    assert plots[0]["section"] == "A13"
    assert Path(plots[0]["png"]).exists()


def test_claims_write_large_ratios_without_exponents():
    rs = [_rec("a2_fc", "numpy", [32, 128, 256], 2.2), _rec("a2_fc", "torch-cpu", [32, 128, 256],
                                                           1e-3, seed=1)]
    text = " ".join(str(c["evidence"]) + str(c["verdict"])
                    for c in S.claims(rs, ENV, F.calibrate_peaks(rs)))
    assert "e+" not in text
    assert "time = 2190x [2176-2207]" in text, text  # the 15 samples, rounded outward


def test_processor_class_is_the_backends_answer():
    # the registry's backend object says where it computes; the name's spelling does not
    assert F.device_class({"backend": "torch-cuda"}) == "gpu"
    assert F.device_class({"backend": "cupy"}) == "gpu"
    assert F.device_class({"backend": "jax-cpu"}) == "cpu"
    assert F.device_class({"backend": "my-gpu-lib"}) == "cpu"  # unknown here: a CPU


def test_plot_colours_follow_the_backend_registry():
    from xlinalg.backends import BACKEND_NAMES
    from xlinalg.bench import _plots

    colours = [_plots.color_of(b) for b in BACKEND_NAMES]
    assert len(set(colours)) == len(colours)  # every known backend its own colour
    # a name the registry does not know: a palette colour from its characters, the
    # same in every process (a colour from hash() would change with PYTHONHASHSEED)
    import os
    import subprocess
    import sys

    mine = _plots.color_of("my-backend")
    assert mine in _plots._PALETTE
    script = "from xlinalg.bench import _plots; print(_plots.color_of('my-backend'))"
    for seed in ("1", "2"):
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}, timeout=120)
        assert r.stdout.strip() == mine, r.stderr


def test_committed_reports_link_every_plot_they_hold():
    import struct

    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    reports = sorted(root.glob("*-report"))
    if not reports:
        pytest.skip("no committed report in benchmarks/results")
    for d in reports:
        html = (d / "report.html").read_text(encoding="utf-8")
        md = (d / "report.md").read_text(encoding="utf-8")
        linked = set(re.findall(r'<img src="([^"]+)"', html))
        assert linked == {p.name for p in d.glob("*.png")}, d.name  # none missing, none stray
        assert linked == set(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)), d.name
        assert not list(d.glob("*.svg")), d.name
        for name in linked:
            width = struct.unpack(">I", (d / name).read_bytes()[16:20])[0]
            assert width <= MAX_WIDTH_PX, (d.name, name, width)


def test_size_labels_sort_whatever_their_characters():
    from xlinalg.study._report import _label_key

    labels = ["1000x20", "²x3", "1000x5", "x", "", "1e5x2", "１２x3"]  # superscript, fullwidth
    assert sorted(labels, key=_label_key)[:2] == ["1000x5", "1000x20"]


def test_quartiles_that_do_not_surround_the_median_still_plot(tmp_path):
    # a shared file's q1/q3 (or raw samples) need not surround its median: the error
    # bars drawn from them were negative and matplotlib refused the whole report
    loop = _rec("q4_loop", "numpy", [100, 5], 0.01)
    above = _rec("q4_batched", "numpy", [100, 5], 1e-3)
    above["time"].update(q1_s=2e-3, q3_s=3e-3, raw_s=[2e-3, 2.5e-3, 3e-3, 3.5e-3])
    below = _rec("q4_batched", "torch-cpu", [100, 5], 1e-3)
    below["time"].update(q1_s=None, q3_s=None, raw_s=[1e-4, 2e-4, 3e-4, 4e-4, 5e-4])
    for r in (above, below):
        q1, med, q3 = F.quartiles(r)
        assert q1 <= med <= q3
    _write(tmp_path / "r.jsonl", [loop, _rec("q4_loop", "torch-cpu", [100, 5], 0.02), above, below])
    p = _cli("report", str(tmp_path / "r.jsonl"))
    assert p.returncode == 0, p.stderr
    assert any(f.name.startswith("loop_vs_q4_batched") for f in (tmp_path / "r-report").iterdir())


def test_plot_names_of_different_cells_never_collide(tmp_path):
    from xlinalg.bench import _plots
    from xlinalg.study import STUDY
    from xlinalg.study._plots import SUMMARY_PLOT

    # "sweep" + "s" + "a_b" and "sweep" + "s_a" + "b" join to one name; "X" and "x"
    # are one file where the file system ignores case
    rs = [_rec(case, "numpy", n, 1e-3 * n, dtype=dt, seed=n)
          for case, dt in (("s", "a_b"), ("s_a", "b"), ("X", "float64"), ("x", "float64"))
          for n in (1, 2)]
    for r in rs:
        r["section"], r["tags"] = "Q3", ["sweep"]
    # (and the summary figure, over all of them)
    plots = [p for p in _plots.make_plots(rs, tmp_path, STUDY)
             if p["name"] != SUMMARY_PLOT]
    names = [p["name"] for p in plots]
    assert len(plots) == 4
    assert len({n.lower() for n in names}) == 4, names
    assert "sweep_s_a_b" in names  # the first keeps its readable name
    assert len(list(tmp_path.glob("*.png"))) == 4 + 1
    again = [p["name"] for p in _plots.make_plots(rs, tmp_path / "again", STUDY)
             if p["name"] != SUMMARY_PLOT]
    assert again == names  # the same file names in every report of the same records


def test_report_warns_about_a_file_measured_otherwise_and_an_unfinished_run(tmp_path):
    def write(path, header_run, records):
        h = {**_header(), "run": header_run}
        path.write_text("\n".join([dumps_record(h)] + [dumps_record(r) for r in records]) + "\n",
                        encoding="utf-8")
        return path

    gemm = _rec("a1_gemm", "numpy", [64, 64, 64], 1e-3)
    once = _rec("a1_gemm", "torch-cpu", [64, 64, 64], 2e-3, dtype="float32",
                side_by_side={"round_s": [2e-3, 2e-3], "backends": ["numpy", "torch-cpu"]})
    twice = _rec("a1_gemm", "numpy", [64, 64, 64], 1e-3, dtype="float32",
                 side_by_side={"round_s": [1e-3], "passes": [{"rounds": 3}]})
    p64 = write(tmp_path / "f64.jsonl", {"scale": "full", "dtype": "float64"}, [gemm])
    # the same scale, another dtype: what a second file is for, no warning
    p32 = write(tmp_path / "f32.jsonl", {"scale": "full", "dtype": "float32"}, [twice])
    assert _cli("report", str(p64), str(p32), "--no-plots").returncode == 0
    md = (tmp_path / "f64-report" / "report.md").read_text(encoding="utf-8")
    assert "was not measured as" not in md
    assert "have only their first pass" not in md
    # another scale, and a cell that owes its second pass
    q32 = write(tmp_path / "q32.jsonl", {"scale": "default", "dtype": "float32"}, [once, twice])
    assert _cli("report", str(p64), str(q32), "--no-plots").returncode == 0
    md = (tmp_path / "f64-report" / "report.md").read_text(encoding="utf-8")
    assert "q32.jsonl was not measured as" in md
    assert re.search(r"scale: 'full' (->|-&gt;) 'default'", md)
    assert "1 of 2 side-by-side cells have only their first pass" in md
    # a run without the recheck (--no-recheck) has one pass by design: nothing owed
    n32 = write(tmp_path / "n32.jsonl", {"scale": "full", "dtype": "float32", "recheck": False}, [once])
    assert _cli("report", str(p64), str(n32), "--no-plots").returncode == 0
    md = (tmp_path / "f64-report" / "report.md").read_text(encoding="utf-8")
    assert "have only their first pass" not in md


def test_summary_answers_each_dtype_and_labels_a12_by_its_run():
    # beside a float32 run the many-small-solves line gave the float64 answer only
    # (both tied for "the question's size", and the first won)
    rs = [_rec("q4_batched", b, [1000, 5], 1e-4 if b == fast else 3e-4, dtype=dt,
               params={"n": 5, "count": 1000})
          for dt, fast in (("float64", "numpy"), ("float32", "torch-cpu")) for b in ("numpy", "torch-cpu")]
    line = next(w["line"] for w in S.summary(rs) if w["anchor"] == "many-small-solves")
    assert line.startswith("at count x n = 1000x5 float64: q4_batched on numpy, 3.00x")
    assert "; and at count x n = 1000x5 float32: q4_batched on torch-cpu, 3.00x" in line
    # A12's cases compute in their own dtypes: a record's dtype is its run's
    size = [256, 256, 256]
    rs = [_rec(f"a12_precision_{t}", "numpy", size, m, dtype=run)
          for run in ("float64", "float32") for t, m in (("float32", 1e-3), ("float16", 4e-3))]
    line = next(w["line"] for w in S.summary(rs) if w["anchor"] == "precision")
    assert "numpy (float64 run)" in line
    assert "numpy (float32 run)" in line
    assert "numpy float64" not in line
