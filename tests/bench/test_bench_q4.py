"""The question's Q4 cases at the memory wall (issue 39): ``q4_unrolled`` times what
``xl.solve(a, b, method="unrolled")`` gives a user, its first call a load from numba's
warm disk cache; the report's memory-wall table shows every batched small-solve cell
(not the Python loops) with its share of the run's streaming bandwidth (synthesized
results)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_backend
from xlinalg._lib._escape import markdown as _md_text
from xlinalg.bench import SCHEMA_VERSION, TimerConfig, cell_key, execute_cell, get_case, make_cell
from xlinalg.bench import _findings as F
from xlinalg.bench._store import dumps_record
from xlinalg.study import _findings as S

pytest.importorskip("matplotlib")

#: tiny timing: this tests the case, not the timer
FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.0, min_run_time=0.0,
                   min_samples=2, max_samples=2, max_run_time=1.0)


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "jax-cpu"])
def test_q4_unrolled_runs_numbas_kernel_loaded_from_the_warm_disk_cache(backend: str) -> None:
    """On NumPy arrays and torch/JAX CPU arrays the cell runs numba's kernel (what
    ``method="unrolled"`` takes there), and its first call loads it from numba's disk
    cache whatever this process did before (numba's counters: a hit, no miss); the
    wall-sized cell is in the full scale."""
    pytest.importorskip("numba")
    require_backend(backend)
    from xlinalg._kernels import _numba

    c = get_case("q4_unrolled")
    assert (100_000, 5) in c.sizes_for("full")
    assert (100_000, 5) in get_case("q4_batched").sizes_for("full")
    _numba._dispatcher(5, np.dtype("float64"))  # in this process already: the cell drops it
    rec = execute_cell(make_cell(c, backend, (100, 5), timer=FAST, memory=False))
    assert rec["status"] == "ok", rec.get("error") or rec.get("check")
    d = _numba._DISPATCHERS[(5, "float64")]
    assert (sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())) == (1, 0)
    assert "warm disk cache" in rec["case_doc"]


ENV = {"xlinalg": "0.1.0", "python": {"version": "3.11"}, "cpu": {"model": "test CPU",
       "logical_cores": 2, "usable_cores": 2}, "memory_bytes": 16 * 2**30, "gpus": [],
       "packages": {"numpy": np.__version__}, "blas": []}

#: the streaming peak of the synthesized run, GB/s
PEAK = 20.0


def _rec(case: str, backend: str, size: object, median: float | None, *, status: str = "ok",
         dtype: str = "float64", nbytes: float | None = None) -> dict:
    label = "x".join(map(str, size)) if isinstance(size, (list, tuple)) else str(size)
    rec = {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": "r1",
           "key": cell_key(case, backend, dtype, label), "case": case, "backend": backend,
           "dtype": dtype, "size": size, "size_label": label, "status": status,
           **get_case(case).describe(dtype), "case_doc": f"{case}: test case"}
    if status == "ok":
        assert median is not None
        rec["time"] = {"median_s": median, "iqr_s": median * 0.01, "min_s": median * 0.99,
                       "raw_s": [median] * 5, "noisy": False, "first_call_s": 2 * median}
        if nbytes is None:  # what the case says a solve moves
            nbytes = get_case(case).bytes(tuple(size), np.dtype(dtype).itemsize)  # type: ignore[arg-type, misc]
        rec["throughput"] = {"bytes": nbytes, "gbs": nbytes / median / 1e9}
        rec["check"] = {"verdict": "ok"}
    else:
        rec["skip_reason"] = "test: not run"
    return rec


def _records() -> list[dict]:
    m = 2**24
    rs = [_rec("calib_stream", "numpy", m, 3 * 8 * m / (PEAK * 1e9), nbytes=3 * 8 * m)]
    wall = 8 * 100_000 * (25 + 2 * 5) / (PEAK * 1e9)  # 100,000 5x5 systems at the peak
    for backend, f in (("numpy", 1.0), ("torch-cpu", 2.0)):
        for count in (1000, 100_000):
            rs.append(_rec("q4_batched", backend, [count, 5], 40 * wall * f * count / 100_000))
            rs.append(_rec("q4_loop", backend, [count, 5], 400 * wall * f * count / 100_000))
        rs.append(_rec("q4_unrolled", backend, [100_000, 5], 4 * wall * f))
        rs.append(_rec("q4_unrolled", backend, [1000, 5], 20 * wall * f / 100))
        rs.append(_rec("q4_solve_many", backend, [1000, 5], 200 * wall * f / 100))
    rs.append(_rec("q4_unrolled", "array-api-strict", [100_000, 5], None, status="skipped"))
    return rs


def test_every_batched_cell_has_its_share_of_the_streaming_peak() -> None:
    rs = _records()
    shares = S.bandwidth_shares(rs, F.calibrate_peaks(rs))
    got = {(d["case"], d["backend"], d["size"]): d for d in shares}
    # every Q4 cell that ran and is not a Python loop, nothing else
    want = {(r["case"], r["backend"], r["size_label"]) for r in rs
            if r["case"].startswith("q4_") and r["case"] != "q4_loop" and r["status"] == "ok"}
    assert set(got) == want
    assert ("q4_unrolled", "numpy", "100000x5") in got
    assert ("q4_batched", "torch-cpu", "100000x5") in got
    for d in shares:
        assert d["peak_gbs"] == pytest.approx(PEAK)
        assert d["share"] == pytest.approx(d["gbs"] / PEAK)
    assert got[("q4_unrolled", "numpy", "100000x5")]["share"] == pytest.approx(1 / 4)
    assert got[("q4_batched", "torch-cpu", "100000x5")]["share"] == pytest.approx(1 / 80)
    assert got[("q4_unrolled", "torch-cpu", "1000x5")]["share"] == pytest.approx(1 / 40)


def test_without_a_streaming_peak_the_share_is_unknown_not_invented() -> None:
    rs = [r for r in _records() if r["case"] != "calib_stream"]
    peaks = F.calibrate_peaks(rs)
    for d in S.bandwidth_shares(rs, peaks):
        if d["peak_gbs"] is None:
            assert d["share"] is None


def test_the_report_shows_the_share_for_every_batched_cell(tmp_path: Path) -> None:
    rs = _records()
    res = tmp_path / "results.jsonl"
    header = {"type": "header", "schema_version": SCHEMA_VERSION, "run_id": "r1",
              "created": "2026-01-01T00:00:00+00:00", "env": ENV, "run": {}}
    res.write_text("\n".join(dumps_record(r) for r in [header, *rs]) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "xlinalg", "report", str(res), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    md = (out / "report.md").read_text(encoding="utf-8")
    head = "| case | count x n | dtype | numpy | torch-cpu |"
    assert head in md
    table = md[md.index(head):].split("\n\n")[0].splitlines()[2:]
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:3]): line for line in table}
    assert rows, md
    for r in rs:
        if r["case"] in ("q4_batched", "q4_unrolled", "q4_solve_many") and r["status"] == "ok":
            line = rows[(_md_text(r["case"]), _md_text(r["size_label"]), "float64")]
            share = 100 * r["throughput"]["gbs"] / PEAK
            assert _md_text(f"{share:.1f}%") in line, (r["key"], line)
    assert not any(k[0] == _md_text("q4_loop") for k in rows)
    wall = rows[(_md_text("q4_unrolled"), "100000x5", "float64")].split("|")
    assert _md_text("25.0%") in wall[4]
    assert _md_text("12.5%") in wall[5]
