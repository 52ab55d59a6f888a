"""One-line errors, never a traceback, on every subcommand; usage and environment
errors exit 2, exit 1 stays for "some cell failed". Subprocesses run under timeouts."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xlinalg.bench import cell_key, read_results
from xlinalg.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
QUICK = ["bench", "--quick", "--backends", "numpy", "--cases", "q3_solve_sweep", "--no-calibrate",
         "--no-progress", "--sizes", "4"]


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def xl(*argv: str, env: dict | None = None, timeout: float = 180,
       stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, PYTHONPATH=SRC)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "xlinalg", *argv], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=e, timeout=timeout)


def one_line(err: str, *needles: str) -> None:
    """One error line (warnings, e.g. about the machine's load, may come before it)."""
    assert "Traceback" not in err, err
    assert len([ln for ln in err.strip().splitlines() if ": warning: " not in ln]) == 1, err
    for n in needles:
        assert n in err, err


# ---------------------------------------------------------------------- option values
@pytest.mark.parametrize(("opt", "value", "needle"), [
    ("--time-limit", "inf", "--time-limit"),
    ("--time-limit", "nan", "--time-limit"),
    ("--time-limit", "1e300", "at most"),
    ("--time-limit", "0", "--time-limit"),
    ("--memory-limit", "1e30", "--memory-limit"),
    ("--memory-limit", "inf", "--memory-limit"),
    ("--memory-limit", "nan", "--memory-limit"),
    ("--memory-limit", "1", "--memory-limit"),
    ("--memory-limit", "-5G", "--memory-limit"),
    ("--threads", "0", "--threads"),
    ("--threads", "100000000000000000000", "--threads"),  # overflowed the libraries' C int
    ("--seed", "1" + "0" * 50, "--seed"),  # a header no reader takes (over 40 digits)
    ("--sizes", "1" + "0" * 50, "out of range"),
    ("--sizes", "4x4x4x4x4x4x4x4x4", "out of range"),
    ("--margin", "inf", "--margin"),
    ("--stall-factor", "nan", "--stall-factor"),
    ("--stall-factor", "1", "--stall-factor"),  # parsed, refused by the run's checks
    ("--seed", "-1", "--seed"),  # NumPy's generators take no negative seed: it failed after measuring
])
def test_option_values_out_of_range_are_usage_errors(tmp_path, opt, value, needle):
    argv = [a for a in QUICK if opt != "--sizes" or a not in ("--sizes", "4")]
    code, _, err = run_cli(*argv, "--out", str(tmp_path / "r.jsonl"), f"{opt}={value}")
    assert code == 2, err
    one_line(err, needle, repr(value)[:30] if opt != "--stall-factor" or value != "1" else "got 1")
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(("extra", "needle"), [
    (["--backends", ","], "--backends: an empty list"),
    (["--cases", " "], "--cases: an empty list"),
    (["--sizes", ",,"], "--sizes: an empty list"),
    (["--out", ""], "--out: an empty file name"),
    (["--memory-limit", "1G", "--no-isolate"], "--memory-limit limits each worker process"),
    (["--dask-workers", "2", "--backends", "numpy"], "--dask-workers runs the dask backend"),
    (["--scheduler", "tcp://127.0.0.1:1", "--backends", "numpy"], "--scheduler runs the dask backend"),
])
def test_option_combinations_that_make_no_sense_are_refused_up_front(tmp_path, monkeypatch, extra, needle):
    from xlinalg.backends import _dask_cluster as _dask

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started before the options were checked")

    monkeypatch.setattr(_dask, "local_cluster", no_cluster)
    monkeypatch.chdir(tmp_path)
    argv = [a for a in QUICK if a not in ("--backends", "numpy") or "--backends" not in extra]
    if "--out" not in extra:
        argv += ["--out", str(tmp_path / "r.jsonl")]
    code, _, err = run_cli(*argv, *extra)
    assert code == 2, err
    one_line(err, needle)
    assert list(tmp_path.iterdir()) == []  # nothing written, no default-named file


def test_out_naming_the_case_file_is_refused_before_it_is_overwritten(tmp_path):
    cases = tmp_path / "cases.py"
    text = ("from xlinalg.bench import Case, register_case\n"
            "register_case(Case(name='t_keep', sizes={'quick': [4]}, setup=lambda rng, n: (rng.standard_normal(n),),"
            " op=lambda ctx, x: x + 1), replace=True)\n")
    cases.write_text(text)
    for also in (str(cases), str(tmp_path / "." / "cases.py")):
        code, _, err = run_cli("bench", "--quick", "--backends", "numpy", "--cases", "t_keep", "--no-calibrate",
                               "--no-progress", "--no-report", "--no-isolate", "--case-file", str(cases),
                               "--out", also, "--overwrite")
        assert code == 2, err
        one_line(err, "is the --case-file itself")
        assert cases.read_text() == text


# ---------------------------------------------------------------------- --out
@pytest.mark.parametrize("kind", ["dev_full", "directory", "under_a_file"])
def test_out_that_cannot_be_written_is_an_environment_error(tmp_path, kind):
    (tmp_path / "f").write_text("x")
    out = {"dev_full": "/dev/full", "directory": str(tmp_path),
           "under_a_file": str(tmp_path / "f" / "r.jsonl")}[kind]
    code, _, err = run_cli(*QUICK, "--out", out, "--overwrite")
    assert code == 2, err
    one_line(err, "xlinalg bench: error:", out)


def test_read_only_file_system_is_an_environment_error(tmp_path, monkeypatch):
    real_open = os.open
    target = str(tmp_path / "r.jsonl")

    def ro(path, flags, *a, **k):
        if str(path) == target and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", ro)
    code, _, err = run_cli(*QUICK, "--out", target)
    assert code == 2, err
    one_line(err, "Read-only file system")


def test_disk_full_mid_run_keeps_what_was_written(tmp_path, monkeypatch):
    from xlinalg.bench import _store

    out = tmp_path / "r.jsonl"
    calls = {"n": 0}
    real = os.fsync

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] >= 3:  # the header and the first cell are synced, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(_store.os, "fsync", fsync)
    code, _, err = run_cli("bench", "--quick", "--backends", "numpy", "--cases", "q3_solve_sweep",
                           "--no-calibrate", "--no-progress", "--no-isolate", "--out", str(out))
    assert code == 2, err
    one_line(err, "No space left on device", "1 cell(s) finished before are in it")
    assert len(read_results(out).records) >= 1  # readable, the synced cell in it


def test_stdout_on_a_full_device_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        p = xl("info", stdout=full)
    assert p.returncode == 2, p.stderr
    one_line(p.stderr, "No space left on device")


# ---------------------------------------------------------------------- case files
@pytest.mark.parametrize(("body", "needle"), [
    ("import sys\nsys.exit(3)\n", "called sys.exit(3)"),
    ("raise SystemExit('bye')\n", "called sys.exit('bye')"),
    ("raise RuntimeError('broken\\nsecond line')\n", "RuntimeError: broken"),
    ("def f(:\n", "SyntaxError"),
    ("while True:\n    pass\n", "did not finish importing within 2 s"),
])
@pytest.mark.parametrize("listing", [False, True])
def test_case_file_that_exits_raises_or_loops_is_a_usage_error(tmp_path, body, needle,
                                                               listing):
    cf = tmp_path / "cases.py"
    cf.write_text(body)
    argv = [*QUICK, "--out", str(tmp_path / "r.jsonl"), "--case-file", str(cf),
            "--time-limit", "2"]
    if listing:
        argv.append("--list-cases")
    p = xl(*argv, timeout=120)  # the loop must be stopped by the bound, not by this timeout
    assert p.returncode == 2, p.stderr
    one_line(p.stderr, needle)


CASE_EXIT = """
from xlinalg.bench import Case, register_case
import sys
register_case(Case(name="t_exit", sizes={"quick": [4]},
                   setup=lambda rng, n: (rng.standard_normal(n),),
                   op=lambda ctx, x: sys.exit(5)), replace=True)
"""


@pytest.mark.parametrize("isolate", [True, False])
def test_a_case_that_calls_sys_exit_is_a_failed_cell(tmp_path, isolate):
    cf = tmp_path / "cases.py"
    cf.write_text(CASE_EXIT)
    out = tmp_path / "r.jsonl"
    argv = ["bench", "--quick", "--backends", "numpy", "--cases", "t_exit", "--no-calibrate",
            "--no-progress", "--case-file", str(cf), "--out", str(out)]
    p = xl(*argv, *([] if isolate else ["--no-isolate"]), timeout=180)
    assert p.returncode == 1, p.stderr  # a failed cell, recorded; the run finished
    assert "Traceback" not in p.stderr
    rec = read_results(out).records[0]
    assert rec["status"] == "failed"
    assert "sys.exit(5)" in rec["error"]["message"]


# ---------------------------------------------------------------------- locale
def _results(path: Path) -> Path:
    hdr = {"type": "header", "schema_version": 1, "run_id": "r", "created": "now", "env": {}}
    rec = {"type": "result", "schema_version": 1, "run_id": "r",
           "key": cell_key("solve", "numpy", "float64", "5"), "case": "solve",
           "backend": "numpy", "dtype": "float64", "size": 5, "size_label": "5",
           "status": "ok", "time": {"median_s": 2e-6, "raw_s": [2e-6] * 3}}
    path.write_text(json.dumps(hdr) + "\n" + json.dumps(rec) + "\n")
    return path


def test_ascii_only_locale_prints_without_error(tmp_path):
    env = {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii", "PYTHONUTF8": "0"}
    res = _results(tmp_path / "µ-r.jsonl")
    runs = [
        xl(*QUICK, "--out", str(tmp_path / "b.jsonl"), env=env),  # µs and ± in the table
        xl("info", env=env),
        xl("compare", str(res), str(res), env=env),
        xl("report", str(res), "--out", str(tmp_path / "rep"), "--no-plots", env=env),
        xl("bench", "--time-limit", "inf", env=env),
    ]
    for p in runs:
        assert "Traceback" not in p.stderr, p.stderr
        assert "UnicodeEncodeError" not in p.stderr, p.stderr
    assert [p.returncode for p in runs] == [0, 0, 0, 0, 2], [p.stderr for p in runs]
    assert "\\xb5s" in runs[0].stdout or "\\u" in runs[0].stdout or "us" in runs[0].stdout


# ---------------------------------------------------------------------- report/compare
def test_report_out_that_cannot_be_written_is_one_line(tmp_path):
    res = _results(tmp_path / "r.jsonl")
    (tmp_path / "f").write_text("x")
    for out in (str(tmp_path / "f"), str(tmp_path / "f" / "sub"), "/dev/full"):
        code, _, err = run_cli("report", str(res), "--out", out, "--no-plots")
        assert code == 2, err
        one_line(err, "xlinalg report: error:")


@pytest.mark.parametrize(("opt", "value"), [
    ("--alpha", "nan"), ("--alpha", "0"), ("--alpha", "1"), ("--alpha", "-0.5"),
    ("--threshold", "-1"), ("--threshold", "inf"), ("--threshold", "nan"),
    ("--min-samples", "0"), ("--min-samples", "1e3"),
])
def test_compare_option_values_out_of_range_are_usage_errors(tmp_path, opt, value):
    res = _results(tmp_path / "r.jsonl")
    code, out, err = run_cli("compare", str(res), str(res), f"{opt}={value}")
    assert code == 2, (out, err)
    one_line(err, opt, repr(value))


def test_missing_and_directory_results_files_are_one_line(tmp_path):
    for argv in (["report", str(tmp_path / "nope.jsonl")], ["report", str(tmp_path)],
                 ["compare", str(tmp_path), str(tmp_path / "nope.jsonl")]):
        code, _, err = run_cli(*argv)
        assert code == 2, err
        one_line(err)
