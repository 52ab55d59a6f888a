"""Hostile or inconsistent results files and output paths (issue 34, points 8-10).

- Every file the commands write (the results file; report.md, report.html and each
  plot of ``report`` and of ``bench``'s own report) is refused when its name is a
  symbolic link, and the file the link points to stays as it was.
- ``bench --overwrite`` replaces only a results file (its first line is a header).
- A record whose ``key`` (or ``size_label``) disagrees with its own fields is refused
  with ``file:line`` by the one loader every command reads through.
- ``report A B`` with cells in both says which run each shown cell comes from and
  warns about the superseded ones; records whose run_id has no header are warned about.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from xlinalg.bench import ResultsFileError, ResultsFileWarning, ResultStore, read_results
from xlinalg.bench._outfile import OutputFileError, write_output
from xlinalg.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "results-sample.jsonl"
BENCH = ["bench", "--quick", "--backends", "numpy", "--cases", "a4_add", "--sizes", "8",
         "--no-progress", "--no-calibrate", "--no-isolate"]
PRECIOUS = "precious: not a results file\n"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, objs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


@pytest.fixture(scope="module")
def plotted(tmp_path_factory) -> Path:
    """A small results file whose report has plots (the Q3 and Q4 cells of the
    committed CPU run)."""
    src = read_results(ROOT / "benchmarks" / "results" / "cpu-default.jsonl.xz")
    keep = [*src.headers, *(r for r in src.records if r["case"] in ("q3_solve_sweep", "q4_loop", "q4_batched"))]
    return _write(tmp_path_factory.mktemp("plotted") / "run.jsonl", keep)


@pytest.fixture(scope="module")
def report_outputs(plotted, tmp_path_factory) -> list[str]:
    """The names of every file ``report`` writes for `plotted`."""
    out = tmp_path_factory.mktemp("clean") / "rep"
    assert main(["report", str(plotted), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert {"report.md", "report.html"} <= set(names)
    assert any(n.endswith(".png") for n in names), names  # the plots are among them
    return names


# ---------------------------------------------------------------------- point 8: links
def test_report_refuses_a_link_in_place_of_any_output(plotted, report_outputs, tmp_path,
                                                      capsys):
    capsys.readouterr()
    for name in report_outputs:
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        victim = tmp_path / f"victim-{name}"
        victim.write_text(PRECIOUS)
        (out / name).symlink_to(victim)
        assert main(["report", str(plotted), "--out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert f"{out / name}: is a symbolic link" in err, err
        assert "Traceback" not in err
        assert victim.read_text() == PRECIOUS, name  # never written through
        assert (out / name).is_symlink()
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temp left


def test_report_refuses_a_dangling_link_and_a_directory_in_place_of_an_output(
        tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    target = tmp_path / "created-through-the-link.md"
    (out / "report.md").symlink_to(target)
    assert main(["report", str(SAMPLE), "--out", str(out), "--no-plots"]) == 2
    assert not target.exists()
    (out / "report.md").unlink()
    (out / "report.html").mkdir()
    assert main(["report", str(SAMPLE), "--out", str(out), "--no-plots"]) == 2
    assert "report.html: exists and is not a regular file" in capsys.readouterr().err


def test_report_replaces_its_own_files_whole(tmp_path):
    out = tmp_path / "rep"
    assert main(["report", str(SAMPLE), "--out", str(out), "--no-plots"]) == 0
    old = (out / "report.md").stat().st_ino
    hard = tmp_path / "hard-link-to-the-old-report.md"
    os.link(out / "report.md", hard)
    before = hard.read_text()
    assert main(["report", str(SAMPLE), "--out", str(out), "--no-plots"]) == 0
    # a new file renamed over the name: another name of the old file keeps the old text
    assert (out / "report.md").stat().st_ino != old
    assert hard.read_text() == before
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md"]


def test_write_output_refuses_links_and_leaves_no_temporary(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text(PRECIOUS)
    link = tmp_path / "out.png"
    link.symlink_to(victim)
    with pytest.raises(OutputFileError, match=r"out\.png: is a symbolic link") as info:
        write_output(link, b"png")
    assert isinstance(info.value, OSError)
    assert info.value.filename == str(link)
    assert victim.read_text() == PRECIOUS
    write_output(tmp_path / "new.md", "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.md", "out.png", "victim"]


@pytest.mark.parametrize("mode", ["--overwrite", "--resume", "new"])
def test_bench_refuses_a_link_named_out(tmp_path, capsys, mode):
    victim = tmp_path / "victim.jsonl"
    if mode == "--resume":
        victim.write_text(SAMPLE.read_text())  # even a results file: not through a link
    else:
        victim.write_text(PRECIOUS)
    before = victim.read_text()
    link = tmp_path / "out.jsonl"
    link.symlink_to(victim)
    argv = [*BENCH, "--out", str(link), *([mode] if mode != "new" else [])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{link}: is a symbolic link" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert victim.read_text() == before
    assert link.is_symlink()


def test_bench_does_not_create_a_file_through_a_dangling_link(tmp_path, capsys):
    target = tmp_path / "elsewhere.jsonl"
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    assert main([*BENCH, "--out", str(link)]) == 2
    assert not target.exists()
    assert "is a symbolic link" in capsys.readouterr().err


def test_bench_overwrite_replaces_only_a_results_file(tmp_path, capsys):
    other = tmp_path / "notes.jsonl"
    for text in (PRECIOUS, '{"type": "result"}\n', "[1, 2]\n", '{"type": "header"}\n'):
        other.write_text(text)
        assert main([*BENCH, "--out", str(other), "--overwrite", "--no-report"]) == 2, text
        err = capsys.readouterr().err
        assert "is not an xlinalg results file" in err, err
        assert "--overwrite replaces only results files" in err, err
        assert other.read_text() == text
    # a results file, and an empty file, are replaced
    res = tmp_path / "r.jsonl"
    res.write_text(SAMPLE.read_text())
    assert main([*BENCH, "--out", str(res), "--overwrite", "--no-report"]) == 0
    assert [r["case"] for r in read_results(res).records] == ["a4_add"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main([*BENCH, "--out", str(empty), "--overwrite", "--no-report"]) == 0
    assert len(read_results(empty).records) == 1


def test_bench_report_beside_the_results_refuses_a_link(tmp_path, capsys):
    """bench writes its report into RESULTS-report/: a link there is refused (a
    warning; the run itself is fine) and its target kept."""
    out = tmp_path / "r.jsonl"
    rep = tmp_path / "r-report"
    rep.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text(PRECIOUS)
    (rep / "report.html").symlink_to(victim)
    assert main([*BENCH, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no report written" in err, err
    assert "is a symbolic link" in err, err
    assert victim.read_text() == PRECIOUS
    assert len(read_results(out).records) == 1


# ---------------------------------------------------------------------- point 9: keys
def _sample_with(tmp_path: Path, line: int, **changes) -> Path:
    objs = _lines(SAMPLE)
    objs[line - 1].update(changes)
    return _write(tmp_path / "edited.jsonl", objs)


def test_a_record_whose_key_names_another_cell_is_refused(tmp_path):
    # the case: a q3 time filed under another cell's key
    objs = _lines(SAMPLE)
    rec = dict(objs[1], case="q3_solve_sweep", backend="torch-cpu", size=5, size_label="5",
               key="a4_add|numpy|float64|1024")
    p = _write(tmp_path / "spliced.jsonl", [*objs, rec])
    with pytest.raises(ResultsFileError) as info:
        read_results(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}:{len(objs) + 1}: ")
    assert "'a4_add|numpy|float64|1024'" in msg
    assert "'q3_solve_sweep|torch-cpu|float64|5'" in msg


@pytest.mark.parametrize("field", ["key", "case", "backend", "dtype", "size_label", "size"])
def test_every_part_of_a_key_is_checked(tmp_path, field):
    value = {"key": "calib_gemm|numpy|float64|2048", "case": "a1_gemm", "backend": "jax-cpu",
             "dtype": "float32", "size_label": "2048", "size": 2048}[field]
    p = _sample_with(tmp_path, 2, **{field: value})
    with pytest.raises(ResultsFileError, match=rf"^{p}:2: the record's (key|size_label)"):
        read_results(p)


def test_every_command_refuses_a_wrong_key(tmp_path, capsys):
    p = _sample_with(tmp_path, 3, key="calib_gemm|numpy|float64|1024")
    good = tmp_path / "good.jsonl"
    good.write_text(SAMPLE.read_text())
    for argv in (["report", str(p), "--no-plots"], ["compare", str(good), str(p)],
                 ["compare", str(p), str(good)],
                 [*BENCH, "--out", str(p), "--resume", "--no-report"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{p}:3: the record's key 'calib_gemm|numpy|float64|1024' disagrees" in err, argv
        assert "Traceback" not in err


def test_the_store_does_not_write_a_record_a_reader_would_refuse(tmp_path):
    with ResultStore(tmp_path / "r.jsonl") as store:
        store.write_header({}, {})
        with pytest.raises(ValueError, match=r"key 'a\|numpy\|float64\|5' disagrees"):
            store.append({"key": "a|numpy|float64|5", "case": "b", "backend": "numpy",
                          "dtype": "float64", "size": 5, "size_label": "5", "status": "ok"})
    assert read_results(tmp_path / "r.jsonl").records == []


# ---------------------------------------------------------------------- point 10
def test_report_of_two_files_names_the_run_of_each_cell_and_warns_on_superseded(
        tmp_path, capsys):
    a = tmp_path / "a.jsonl"
    a.write_text(SAMPLE.read_text())
    objs = _lines(SAMPLE)
    # b re-runs calib_gemm only (another run id): its cell supersedes a's
    b_objs = [dict(objs[0], run_id="b" * 32)] + [dict(o, run_id="b" * 32) for o in objs[1:2]]
    b = _write(tmp_path / "b.jsonl", b_objs)
    out = tmp_path / "rep"
    assert main(["report", str(a), str(b), "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert (f"warning: 1 cell(s) of {a} (run 1) are superseded by {b} (run 2), which ran "
            "the same case and dtype again (calib_gemm float64)") in err, err
    md = (out / "report.md").read_text()
    assert "superseded by" in md
    assert f"run 1: {a}" in md.replace("\\", "")
    assert f"run 2: {b}" in md.replace("\\", "")
    assert "6 shown in this report (1 superseded by a later file)" in md
    # each cell table names the run of each cell: calib_gemm from run 2, the rest run 1
    tables = [ln for ln in md.splitlines() if ln.startswith("| case | backend | size |")]
    assert tables
    assert all(t.endswith("| from |") for t in tables)
    width = tables[0].count("|")
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and ln.count("|") == width
            and "| numpy |" in ln]
    assert len(rows) == 7
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[-1] == ("run 2" if cells[0].replace("\\", "") == "calib_gemm"
                             else "run 1"), row
    assert sum(1 for r in rows if r.endswith("| run 2 |")) == 1


def test_report_says_when_each_resume_of_a_file_began(tmp_path):
    # cells a --resume measured are of that later time: the run's line says when
    objs = _lines(SAMPLE)
    later = dict(objs[0], created="2026-12-07T08:53:30+00:00", resumed=True)
    f = _write(tmp_path / "r.jsonl", [objs[0], *objs[1:3], later, *objs[3:]])
    other = _write(tmp_path / "o.jsonl", [dict(o, run_id="b" * 32) for o in objs[:2]])
    out = tmp_path / "rep"
    assert main(["report", str(f), str(other), "--out", str(out), "--no-plots"]) == 0
    lines = [ln for ln in (out / "report.md").read_text().splitlines() if ln.startswith("- run ")]
    assert f"created {objs[0]['created']}, resumed at 2026-12-07T08:53:30+00:00, " in lines[0]
    assert "resumed at" not in lines[1]  # a file without a resume


def test_report_of_one_file_has_no_run_column(tmp_path):
    out = tmp_path / "rep"
    assert main(["report", str(SAMPLE), "--out", str(out), "--no-plots"]) == 0
    md = (out / "report.md").read_text()
    assert "| from |" not in md
    assert "superseded" not in md


def test_records_whose_run_has_no_header_are_warned_about(tmp_path, capsys):
    p = _sample_with(tmp_path, 4, run_id="f" * 32)
    with pytest.warns(ResultsFileWarning, match=rf"{p}:4: 1 result record\(s\).*no header"):
        res = read_results(p)
    assert len(res.records) == 7  # read all the same
    assert len(res.warnings) == 1
    out = tmp_path / "rep"
    assert main(["report", str(p), "--out", str(out), "--no-plots"]) == 0
    assert "run_id that no header of the file has" in capsys.readouterr().err
    assert "run\\_id that no header" in (out / "report.md").read_text()
    assert main(["compare", str(SAMPLE), str(p)]) in (0, 1)
    assert "no header" in capsys.readouterr().err
    # an intact file: no warning
    assert read_results(SAMPLE).warnings == []
