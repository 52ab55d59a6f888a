"""Compressed results files (the committed runs are xz): every reader takes xz and
gzip by content, bounded; ``--resume`` refuses them with the command to run."""

from __future__ import annotations

import gzip
import lzma
import shutil
from pathlib import Path

import pytest

from test_bench_schema import result, run_cli, write
from xlinalg.bench import ResultsFileError, ResultStore, _resultsfile, read_results

ROOT = Path(__file__).resolve().parents[2]


def _plain(tmp_path: Path) -> Path:
    return write(tmp_path / "run.jsonl", [result(case="a", median=1e-4), result(case="b", median=2e-4)])


@pytest.mark.parametrize("kind", ["xz", "gzip"])
def test_a_compressed_file_reads_as_its_content(tmp_path, kind):
    plain = _plain(tmp_path)
    data = plain.read_bytes()
    packed = tmp_path / "run.jsonl.data"  # the name says nothing: read by content
    packed.write_bytes(lzma.compress(data) if kind == "xz" else gzip.compress(data))
    a, b = read_results(plain), read_results(packed)
    assert b.compressed == kind
    assert a.compressed is None
    assert b.records == a.records
    assert b.headers == a.headers
    # two streams one after the other (cat a.xz b.xz) read as one file
    twice = tmp_path / "twice.xz"
    one = lzma.compress(data) if kind == "xz" else gzip.compress(data)
    more = write(tmp_path / "more.jsonl", [result(case="c", median=3e-4)]).read_bytes()
    more_lines = b"".join(more.splitlines(keepends=True)[1:])  # its records, not a second header
    twice.write_bytes(one + (lzma.compress(more_lines) if kind == "xz" else gzip.compress(more_lines)))
    assert [r["case"] for r in read_results(twice).records] == ["a", "b", "c"]


@pytest.mark.parametrize("kind", ["xz", "gzip"])
def test_report_and_compare_read_compressed_files(tmp_path, kind):
    plain = _plain(tmp_path)
    ext = ".xz" if kind == "xz" else ".gz"
    packed = tmp_path / f"run.jsonl{ext}"
    packed.write_bytes((lzma.compress if kind == "xz" else gzip.compress)(plain.read_bytes()))
    code, out, err = run_cli("compare", str(plain), str(packed))
    assert code == 0, err
    assert "2 cells" in out
    code, out, err = run_cli("report", str(packed), "--out", str(tmp_path / "rep"))
    assert code == 0, err
    assert (tmp_path / "rep" / "report.md").read_text().count("run.jsonl") >= 1


@pytest.mark.parametrize("kind", ["xz", "gzip"])
def test_corrupt_truncated_and_oversized_archives_are_one_line_errors(tmp_path, kind, monkeypatch):
    data = _plain(tmp_path).read_bytes()
    packed = (lzma.compress if kind == "xz" else gzip.compress)(data)
    bad = tmp_path / "bad"
    bad.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(ResultsFileError, match=rf"is a (truncated|corrupt) {kind} file"):
        read_results(bad)
    bad.write_bytes(packed[:12] + bytes(b ^ 0xFF for b in packed[12:40]) + packed[40:])
    with pytest.raises(ResultsFileError, match=rf"is a (truncated|corrupt) {kind} file"):
        read_results(bad)
    # a bomb: a few KiB that inflate past the bound are refused, never inflated whole
    bomb = tmp_path / "bomb"
    bomb.write_bytes((lzma.compress if kind == "xz" else gzip.compress)(b"\n" * (2 * 2**20)))
    monkeypatch.setattr(_resultsfile, "MAX_FILE_BYTES", 2**20)
    with pytest.raises(ResultsFileError, match=r"holds over the 1 MiB a results file may have, compressed"):
        read_results(bomb)
    code, _, err = run_cli("compare", str(bomb), str(bomb))
    assert code == 2
    assert "holds over the 1 MiB" in err


def test_resume_refuses_a_compressed_file_and_leaves_it_alone(tmp_path):
    plain = _plain(tmp_path)
    packed = tmp_path / "run.jsonl.xz"
    packed.write_bytes(lzma.compress(plain.read_bytes()))
    before = packed.read_bytes()
    with pytest.raises(ResultsFileError, match=r"is xz-compressed; --resume appends .*xz -dk FILE"):
        ResultStore(packed, resume=True)
    assert packed.read_bytes() == before


def test_the_committed_runs_are_compressed_and_read(tmp_path):
    results = ROOT / "benchmarks" / "results"
    runs = sorted(results.glob("*.jsonl.xz"))
    assert {p.name for p in runs} >= {"cpu-default.jsonl.xz", "cpu-default-float32.jsonl.xz",
                                      "cpu-full.jsonl.xz", "cpu-full-float32.jsonl.xz"}
    assert not list(results.glob("*.jsonl")), "a committed run left uncompressed"
    f = read_results(results / "cpu-default.jsonl.xz")
    assert f.compressed == "xz"
    assert len(f.records) > 300
    # what is committed stays small (issue 37: at most 15 MiB of results in all)
    total = sum(p.stat().st_size for p in results.rglob("*") if p.is_file())
    assert total <= 15 * 2**20, total
    shutil.copy(results / "cpu-default.jsonl.xz", tmp_path / "copy.xz")
    assert read_results(tmp_path / "copy.xz").records == f.records
