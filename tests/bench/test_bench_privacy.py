"""Results files are shared: no absolute path, no user name, no host name in them,
and the report and compare never show those of older files that still carry them."""

from __future__ import annotations

import contextlib
import io
import json
import platform
import re
import socket
import sys
from pathlib import Path

import pytest

from xlinalg._machine import collect_env, machine_id, shareable, shareable_argv
from xlinalg.bench import SCHEMA_VERSION, RunConfig, TimerConfig, cell_key, run_benchmark
from xlinalg.bench._compare import header_differences
from xlinalg.bench._store import dumps_record
from xlinalg.cli import main

USER = "usr-q7k2w"
HOST = "hst-z9p4v"
HOME = f"/home/{USER}"
#: an absolute path inside a JSON string: "/a/b" after a quote, a space, "=" or ":"
ABS_PATH = re.compile(r"(?:^|[\"\s=:,(\[])/[\w.+-]+/")
FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                   min_samples=3, max_samples=5, max_run_time=1.0)


def _assert_private(text: str) -> None:
    assert USER not in text
    assert HOST not in text
    found = ABS_PATH.findall(text)
    assert not found, f"absolute path(s) in a shared file: {found[:3]}"


@pytest.fixture
def someone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user and a host whose names must not reach a results file."""
    monkeypatch.setenv("HOME", HOME)
    monkeypatch.setenv("USER", USER)
    monkeypatch.setenv("LOGNAME", USER)
    monkeypatch.setattr(platform, "node", lambda: HOST)
    monkeypatch.setattr(socket, "gethostname", lambda: HOST)
    monkeypatch.setattr(sys, "executable", f"{HOME}/venv/bin/python")
    monkeypatch.setattr(sys, "argv", [f"/opt/{USER}/site-packages/xlinalg/__main__.py", "bench",
                                      "--out", f"/srv/{USER}/runs/r.jsonl",
                                      "--case-file", f"{HOME}/cases/mine.py"])
    # a path inside a recorded environment variable (read, never applied, here)
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to={HOME}/dump --xla_cpu_x=/var/{USER}/y")


def test_a_results_file_names_no_path_user_or_host(someone, tmp_path):
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["a1_gemm"], sizes=["8"], out=out,
                            timer=FAST, isolate=False, calibrate=False, recheck=False))
    text = out.read_text(encoding="utf-8")
    _assert_private(text)
    header = json.loads(text.splitlines()[0])
    assert "executable" not in header["env"]["python"]
    assert "host" not in header["env"]
    assert header["env"]["machine_id"] == machine_id()  # what tells machines apart
    assert header["run"]["argv"] == ["xlinalg", "bench", "--out", ".../r.jsonl",
                                     "--case-file", "~/cases/mine.py"]
    assert header["env"]["env_vars"]["XLA_FLAGS"] == "--xla_dump_to=~/dump --xla_cpu_x=.../y"


def test_an_error_message_keeps_its_file_name_not_its_path(someone):
    rec = {"error": {"message": f'File "{HOME}/x/y.py", line 3; see /data/{USER}/z.txt',
                     "kind": "error"}, "time": {"raw_s": [1e-3]}}
    assert shareable(rec) == {"error": {"message": 'File "~/x/y.py", line 3; see .../z.txt',
                                        "kind": "error"}, "time": {"raw_s": [1e-3]}}
    # what only looks like a path stays: units, URLs, ratios, relative paths
    for keep in ("GB/s", "https://github.com/a/b", "(m, k)/(k, n)", "a/b.py", "1 / 2", "~/a"):
        assert shareable(keep) == keep
    assert shareable(r"C:\Users\bob\r.jsonl") == ".../r.jsonl"
    assert shareable_argv(["/usr/bin/xlinalg", "report"]) == ["xlinalg", "report"]


def test_collect_env_is_private(someone):
    _assert_private(json.dumps(collect_env()))


def test_blas_libraries_name_their_package_not_their_path(someone, monkeypatch):
    """NumPy and SciPy each load their own OpenBLAS: the header says which package
    ships each one, and never the path (it holds the home directory)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from xlinalg import _machine as _env

    libs = [{"user_api": "blas", "internal_api": "openblas", "version": "0.3.30",
             "num_threads": 2, "prefix": "libscipy_openblas",
             "filepath": f"{HOME}/venv/lib/python3.11/site-packages/numpy.libs/libo.so"},
            {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31",
             "num_threads": 2, "prefix": "libscipy_openblas",
             "filepath": f"C:\\Users\\{USER}\\v\\Lib\\site-packages\\scipy.libs\\o.dll"},
            {"user_api": "openmp", "internal_api": "openmp", "num_threads": 2,
             "filepath": "/usr/lib/x86_64-linux-gnu/libgomp.so.1"},
            {"user_api": "blas", "internal_api": "mkl", "num_threads": 2,
             "filepath": f"{HOME}/site-packages/<b>{USER}</b>/libmkl.so"}]
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: libs)
    got = _env.blas_info()
    assert [x.get("owner") for x in got] == ["numpy", "scipy", None, None]
    _assert_private(json.dumps(got))
    assert "filepath" not in json.dumps(got)


def test_machine_id_is_opaque_and_stable(tmp_path):
    mid = machine_id()
    if mid is None:
        pytest.skip("no /etc/machine-id on this machine: machines are told apart by CPU")
    assert mid == machine_id()
    assert re.fullmatch(r"[0-9a-f]{16}", mid)
    raw = Path("/etc/machine-id").read_text(encoding="utf-8").strip()
    assert mid not in raw
    assert raw[:16] != mid


def _old_file(path: Path, host: str, ms: float) -> Path:
    """A foreign file that names its host, interpreter path and absolute argv."""
    env = {"xlinalg": "0.1.0", "python": {"version": "3.11", "executable": f"{HOME}/v/bin/python"},
           "host": host, "cpu": {"model": "test CPU", "logical_cores": 2, "usable_cores": 2},
           "memory_bytes": 2**34, "gpus": [], "packages": {"numpy": "2.0"}, "blas": []}
    header = {"type": "header", "schema_version": SCHEMA_VERSION, "run_id": "r1",
              "created": "2026-01-01T00:00:00+00:00", "env": env,
              "run": {"argv": [f"{HOME}/xlinalg/__main__.py", "bench"]}}
    raw = [ms * 1e-3 * (1 + 0.001 * i) for i in range(7)]
    rec = {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": "r1",
           "key": cell_key("matmul", "numpy", "float64", "8"), "case": "matmul",
           "backend": "numpy", "dtype": "float64", "size": 8, "size_label": "8",
           "status": "ok", "case_doc": "matmul: test",
           "time": {"median_s": raw[3], "iqr_s": 1e-6, "min_s": raw[0], "raw_s": raw,
                    "noisy": False}}
    path.write_text(dumps_record(header) + "\n" + dumps_record(rec) + "\n", encoding="utf-8")
    return path


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue() + err.getvalue()


def test_files_with_host_and_paths_are_read_but_never_shown(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)  # the commands name the files given, relative here
    _old_file(tmp_path / "a.jsonl", HOST, 1.0)
    _old_file(tmp_path / "b.jsonl", "other-" + HOST, 1.0)
    rc, text = _run("compare", "a.jsonl", "b.jsonl")
    assert rc == 0, text
    assert HOST not in text  # (machines are told apart by machine_id: the test above)
    assert USER not in text
    rc, text = _run("report", "a.jsonl", "--out", "rep")
    assert rc == 0, text
    assert USER not in text
    assert HOST not in text
    for f in (tmp_path / "rep").rglob("*"):
        if f.suffix in (".md", ".html", ".svg", ".json"):
            body = f.read_text(encoding="utf-8", errors="replace")
            assert HOST not in body, f.name
            assert USER not in body, f.name


def test_compare_tells_machines_apart_without_naming_them():
    a = {"env": {"machine_id": "0123456789abcdef", "cpu": {"model": "X"}}}
    b = {"env": {"machine_id": "fedcba9876543210", "cpu": {"model": "X"}}}
    assert header_differences(a, b) == ["machine: the two files come from different machines"]
    assert header_differences(a, a) == []
    # a file without a machine id (unreadable /etc/machine-id): not claimed either way
    assert header_differences({"env": {"cpu": {"model": "X"}}}, a) == []
