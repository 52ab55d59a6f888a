"""``benchmarks/migrate_results.py``: a results file of the old schema, migrated once."""

from __future__ import annotations

import importlib.util
import json
import lzma
from pathlib import Path

import pytest

import xlinalg.study  # noqa: F401  (registers the documents' cases)
from xlinalg.bench import SCHEMA_VERSION, cell_key, get_case, read_results
from xlinalg.bench import _findings as F

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("migrate_results", ROOT / "benchmarks" / "migrate_results.py")
assert _spec is not None
assert _spec.loader is not None
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)

HEADER = {"type": "header", "schema_version": SCHEMA_VERSION, "run_id": "r" * 32,
          "created": "2026-12-04T20:03:55+00:00", "resumed": False,
          "env": {"xlinalg": "0.1.0", "cpu": {"model": "x", "usable_cores": 2}},
          "run": {"scale": "quick", "dtype": "float64"}}


def _cell(case: str, size: int | list[int], **extra: object) -> dict:
    label = "x".join(map(str, size)) if isinstance(size, list) else str(size)
    return {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": "r" * 32,
            "key": cell_key(case, "numpy", "float64", label), "case": case, "backend": "numpy",
            "dtype": "float64", "size": size, "size_label": label, "status": "ok",
            "time": {"median_s": 1e-3, "raw_s": [1e-3] * 5}, **extra}


#: A file of the old schema: records without their case's fields, and a retired case.
LEGACY = [HEADER, _cell("a10_layout", [64, 0]), _cell("a4_sigmoid", [64, 64]),
          _cell("matmul", [8, 8, 8]), _cell("a_case_of_a_case_file", 3),
          _cell("a1_gemm", [8, 8, 8], section="A1", tags=["gemm"], units="GFLOP/s",
                peak="arithmetic", compute_dtype="float64", case_doc="declared")]


def _write(path: Path, objs: list[dict], *, xz: bool = False) -> Path:
    data = "".join(json.dumps(o) + "\n" for o in objs).encode()
    path.write_bytes(lzma.compress(data) if xz else data)
    return path


@pytest.mark.parametrize("xz", [False, True])
def test_a_legacy_file_is_migrated_once(tmp_path: Path, xz: bool, capsys) -> None:
    p = _write(tmp_path / ("old.jsonl.xz" if xz else "old.jsonl"), LEGACY, xz=xz)
    assert M.main(["--check", str(p)]) == 1  # would change; --check writes nothing
    assert "section" not in read_results(p).records[0]
    assert M.main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "dropped 1 record(s) of matmul (it repeated a1_gemm's square GEMMs; measure a1_gemm" in out
    assert "filled 1 record(s) of a10_layout" in out
    assert p.read_bytes().startswith(b"\xfd7zXZ\x00") == xz  # compressed stays compressed
    recs = {r["case"]: r for r in read_results(p).records}
    assert "matmul" not in recs
    for case in ("a10_layout", "a4_sigmoid"):
        c, r = get_case(case), recs[case]
        assert (r["section"], r["tags"], r["units"], r["peak"]) == (c.section, list(c.tags), c.units,
                                                                    c.peak)
        assert r["case_doc"] == c.doc
        assert F.section_of(r) == c.section  # what the report reads, from the record alone
    assert recs["a_case_of_a_case_file"]["section"] == "Other"  # nothing registered: declares nothing
    assert recs["a1_gemm"]["case_doc"] == "declared"  # a field the record holds is kept
    # migrating a migrated file changes no byte
    before = p.read_bytes()
    assert M.main([str(p)]) == 0
    assert "already today's schema" in capsys.readouterr().out
    assert p.read_bytes() == before
    assert M.main(["--check", str(p)]) == 0


def test_a_file_that_cannot_be_read_is_an_error(tmp_path: Path, capsys) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text("{not json\n")
    assert M.main([str(p)]) == 2
    assert f"migrate_results: error: {p}:" in capsys.readouterr().err


def test_stale_rates_are_made_again_from_the_records_time(tmp_path: Path, capsys) -> None:
    # a record merged from passes by an older runner kept its first pass's rates
    # beside a median over every pass, and marks against its own peak (dropped)
    fields = {"section": "A1", "tags": ["gemm"], "units": "GFLOP/s", "peak": "arithmetic",
              "compute_dtype": "float64", "case_doc": "d"}
    calib = _cell("calib_gemm", 64, **{**fields, "section": "Calibration", "tags": ["calibration"]},
                  throughput={"rate_of": "best sample", "flops": 4e9, "gflops": 1.0})
    calib["time"] = {"median_s": 2.0, "min_s": 1.0, "raw_s": [1.0, 2.0, 3.0]}
    stale = _cell("a1_gemm", [8, 8, 8], **fields,
                  throughput={"flops": 6e9, "gflops": 9.0, "above_peak": {"gflops": {}}})
    stale["time"] = {"median_s": 2.0, "min_s": 1.0, "raw_s": [1.0, 2.0, 3.0]}
    fast = _cell("a2_fc", [8, 8, 8], **fields, throughput={"flops": 10e9, "gflops": 5.0})
    fast["time"] = {"median_s": 2.0, "min_s": 2.0, "raw_s": [2.0]}
    p = _write(tmp_path / "r.jsonl", [HEADER, calib, stale, fast])
    assert M.main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "re-rated 1 record(s) of calib_gemm" in out
    recs = {r["case"]: r for r in read_results(p).records}
    assert recs["calib_gemm"]["throughput"]["gflops"] == pytest.approx(4.0)  # its best sample
    assert recs["a1_gemm"]["throughput"] == {"flops": 6e9, "gflops": pytest.approx(3.0)}
    assert recs["a2_fc"]["throughput"] == {"flops": 10e9, "gflops": pytest.approx(5.0)}
    before = p.read_bytes()
    assert M.main([str(p)]) == 0  # once
    assert p.read_bytes() == before
