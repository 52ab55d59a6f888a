"""The ``xlinalg`` command end to end (subprocesses) and its error handling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from xlinalg import BACKEND_NAMES, __version__
from xlinalg.bench import read_results
from xlinalg.cli import main


def xl(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xlinalg", *args], capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(proc_or_err: str, *needles: str) -> None:
    err = proc_or_err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


# ---------------------------------------------------------------------- progress
def test_progress_line_names_the_dtype_a_cell_computes_in(capsys):
    """An A12 cell of a float64 run computes in float32: its progress line says so, and
    says the run's dtype beside it; a plain cell shows the run's dtype alone."""
    from xlinalg._cli._table import _Progress

    now = iter([0.0, 100.0, 190.0, 3800.0])  # a clock: construction, plan, each result
    progress = _Progress(enabled=True, clock=lambda: next(now))
    base = {"type": "result", "backend": "numpy", "dtype": "float64", "size_label": "64",
            "status": "ok", "time": {"median_s": 1e-3, "iqr_over_median": 0.02}}
    progress("plan", {"cells": 2}, 0, 2)
    progress("result", {**base, "case": "a12_precision_float32", "compute_dtype": "float32"},
             0, 2)
    progress("result", {**base, "case": "q4_batched", "compute_dtype": "float64"}, 1, 2)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == ("[1/2] a12_precision_float32 numpy computes in float32 (run dtype float64) "
                        "64: 1 ms ±1% (elapsed 1:30, about 1:30 left)")
    # the last cell: nothing left to estimate; an hour or more reads h:mm:ss
    assert lines[1] == "[2/2] q4_batched numpy float64 64: 1 ms ±1% (elapsed 1:01:40)"


# ---------------------------------------------------------------------- end to end
def test_bench_end_to_end(tmp_path):
    out = tmp_path / "r.jsonl"
    # --no-recheck: a cell remeasured after a stall (this machine is loaded) would add a record
    p = xl("bench", "--quick", "--backends", "numpy", "--cases", "q3_solve_sweep", "--out",
           str(out), "--no-recheck")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    res = read_results(out)
    # each backend starts with the calibration cells (the report's peak), then the cases
    assert [(r["case"], r["size_label"]) for r in res.records] == [
        ("calib_gemm", "256"), ("calib_stream", "2097152"), ("q3_solve_sweep", "10"),
        ("q3_solve_sweep", "50")]
    assert res.records[0]["throughput"]["gflops"] > 0
    assert res.records[1]["throughput"]["gbs"] > 0
    assert all(r["status"] == "ok" and r["check"]["verdict"] == "ok" for r in res.records)
    assert res.headers[0]["run"]["scale"] == "quick"
    assert "q3_solve_sweep" in p.stdout
    assert "numpy" in p.stdout
    assert "4 cells" in p.stdout
    assert str(out) in p.stdout
    assert "[3/4] q3_solve_sweep numpy float64 10" in p.stderr  # progress, one line per cell off a TTY
    # the run ends with something a person looks at: the report beside the results
    rep = tmp_path / "r-report"
    assert (rep / "report.html").is_file()
    assert (rep / "report.md").is_file()
    assert f"Report: {rep / 'report.html'}" in p.stdout

    # the same command again refuses to clobber the file
    again = xl("bench", "--quick", "--backends", "numpy", "--cases", "q3_solve_sweep", "--out",
               str(out))
    assert again.returncode == 2
    assert_one_line_error(again.stderr, "--resume", "--overwrite")
    # --resume has nothing left to do
    resumed = xl("bench", "--quick", "--backends", "numpy", "--cases", "q3_solve_sweep", "--out",
                 str(out), "--resume", "--no-recheck")
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_results(out).records) == 4


def test_bench_float32_threads_and_sizes(tmp_path):
    out = tmp_path / "r.jsonl"
    p = xl("bench", "--backends", "numpy,torch-cpu", "--cases", "a1_gemm", "--sizes", "8,4x5x6",
           "--dtype", "float32", "--threads", "1", "--out", str(out), "--quick", "--no-calibrate",
           "--no-report")
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "r-report").exists()
    assert "Report:" not in p.stdout
    recs = read_results(out).records
    assert {(r["backend"], r["size_label"]) for r in recs} == {
        (b, s) for b in ("numpy", "torch-cpu") for s in ("8x8x8", "4x5x6")}
    for r in recs:
        assert r["dtype"] == "float32"
        assert r["fairness"]["threads"]["requested"] == 1
    torch_rec = next(r for r in recs if r["backend"] == "torch-cpu")
    assert torch_rec["fairness"]["threads"]["torch"] == 1


def test_failed_cells_give_exit_status_1(tmp_path):
    out = tmp_path / "r.jsonl"
    p = xl("bench", "--backends", "numpy", "--cases", "a1_gemm", "--sizes", "300000,4",
           "--memory-limit", "3G", "--out", str(out), "--quick", "--no-calibrate",
           "--no-recheck")  # a remeasured cell would add a record
    assert p.returncode == 1, p.stderr
    assert "OOM" in p.stdout
    statuses = [r["status"] for r in read_results(out).records]
    assert statuses == ["failed", "ok"]


def test_version_and_help():
    p = xl("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"xlinalg {__version__}"
    h = xl("bench", "--help")
    assert h.returncode == 0
    for opt in ("--backends", "--cases", "--sizes", "--dtype", "--quick", "--full",
                "--threads", "--out", "--resume", "--time-limit", "exit status"):
        assert opt in h.stdout
    top = xl("--help")
    for cmd in ("info", "bench", "report", "compare"):
        assert cmd in top.stdout


def test_info(capsys):
    p = xl("info")
    assert p.returncode == 0, p.stderr
    for name in BACKEND_NAMES:
        assert name in p.stdout
    assert "unavailable" in p.stdout  # e.g. cupy here
    assert "pip install" in p.stdout  # and how to install it
    assert "BLAS" in p.stdout
    assert "threads" in p.stdout
    assert main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by = {b["backend"]: b for b in data["backends"]}
    assert by["numpy"]["available"]
    assert by["numpy"]["version"]
    assert not by["cupy"]["available"] or by["cupy"]["version"]
    assert data["env"]["blas"]


def test_list_cases(capsys):
    assert main(["bench", "--list-cases"]) == 0
    out = capsys.readouterr().out
    for c in ("q3_solve_sweep", "a1_gemm", "a4_sigmoid", "quick", "full"):
        assert c in out
    # the retired duplicates are gone from the list
    listed = {line.split()[0] for line in out.splitlines() if line and not line[0].isspace()}
    assert not listed & {"solve", "matmul", "sigmoid"}


# ---------------------------------------------------------------------- usage errors
@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["bench", "--backends", "numpyy"], ["unknown backend 'numpyy'", "valid backends: numpy"]),
        (["bench", "--backends", "cupy"], ["'cupy' is not available", "install: pip install cupy",
                                           "available here: numpy"]),
        (["bench", "--backends", "torch-cuda"], ["not available", "install:"]),
        (["bench", "--cases", "solv"], ["unknown case 'solv'",
                                        "valid cases: calib_gemm, calib_stream, q1_solve_loop"]),
        (["bench", "--cases", "a4_add,sigmoid"], ["unknown case 'sigmoid'", "valid cases:"]),
        (["bench", "--frobnicate"], ["unrecognized arguments: --frobnicate",
                                     "valid options:", "--backends"]),
        (["bench", "--dtype", "int8"], ["invalid choice: 'int8'", "float32"]),
        (["bench", "--threads", "0"], ["positive integer"]),
        (["bench", "--quick", "--full"], ["not allowed with"]),
        (["bench", "--resume"], ["--resume needs --out"]),
        (["bench", "--backends", "numpy", "--sizes", "big"], ["invalid --sizes item 'big'"]),
        (["bench", "--memory-limit", "lots"], ["512M"]),
        (["bench", "--case-file", "/nonexistent/cases.py"], ["does not exist"]),
        (["frob"], ["invalid choice: 'frob'", "bench"]),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) and v and v[0] in ("bench", "frob") else "",
)
def test_usage_errors_are_one_line_with_status_2(capsys, argv, needles):
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert_one_line_error(cap.err, *needles)


def test_usage_error_in_a_subprocess():
    p = xl("bench", "--backends", "numpy,nope")
    assert p.returncode == 2
    assert_one_line_error(p.stderr, "unknown backend 'nope'", "valid backends")
    assert p.stdout == ""


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "bench" in capsys.readouterr().out


# ---------------------------------------------------------------------- report/compare inputs
def _good_file(path):
    from xlinalg.bench import ResultStore

    with ResultStore(path) as s:
        s.write_header({"cpu": {}}, {})
        s.append({"key": "solve|numpy|float64|5", "case": "solve", "backend": "numpy",
                  "dtype": "float64", "size": 5, "size_label": "5", "status": "ok"})


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"not json at all\n", ":1: not an xlinalg results file"),
        (b'{"type": "header", "schema_version": 99, "run_id": "x", "created": "", "env": {}}\n',
         ":1: schema_version 99 is newer"),
    ],
    ids=["not-json", "newer-schema"],
)
def test_unreadable_results_file_is_one_line_error(tmp_path, capsys, command, content, needle):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    args = [command, str(bad)] if command == "report" else [command, str(bad), str(bad)]
    assert main(args) == 2
    assert_one_line_error(capsys.readouterr().err, str(bad) + needle)


def test_corrupt_line_is_named(tmp_path, capsys):
    f = tmp_path / "r.jsonl"
    _good_file(f)
    with open(f, "a") as fh:
        fh.write('{"type": "result", "schema_ver\n{"x": 1}\n')
    assert main(["report", str(f)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"{f}:3: corrupt line")


def _timed(case, backend, median, spread=0.01, status="ok", reason=None):
    r = {"key": f"{case}|{backend}|float64|5", "case": case, "backend": backend,
         "dtype": "float64", "size_label": "5", "status": status}
    if status == "ok":
        r["time"] = {"median_s": median, "q1_s": median * (1 - spread),
                     "q3_s": median * (1 + spread), "iqr_over_median": 2 * spread}
    else:
        r["skip_reason"] = reason
    return r


def test_end_table_marks_the_fastest_beyond_noise_and_counts_skips(capsys):
    from types import SimpleNamespace

    from xlinalg.cli import print_table

    recs = [_timed("a1", "numpy", 1e-3), _timed("a1", "torch-cpu", 3e-3),
            _timed("a2", "numpy", 1e-3), _timed("a2", "torch-cpu", 1.01e-3),
            _timed("a3", "numpy", 0, status="skipped", reason="no bfloat16"),
            _timed("a4", "numpy", 0, status="skipped", reason="no bfloat16")]
    print_table(recs, SimpleNamespace(dtype="float64"))
    out = capsys.readouterr().out
    a1 = next(line for line in out.splitlines() if "a1" in line)
    a2 = next(line for line in out.splitlines() if "a2" in line)
    assert "*1 ms" in a1  # numpy 3x faster: marked
    assert "*" not in a2  # 1% apart: a tie, nobody marked
    assert "2 skipped cell(s), by reason:" in out
    assert "2 x no bfloat16" in out
