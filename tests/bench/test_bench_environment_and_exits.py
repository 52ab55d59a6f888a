"""What the benchmark's processes read from the environment is checked before any
cell runs (issue 34, point 12), and a case that ends its process without reporting
is a failed cell with a reason (point 15)."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import require_backend
from xlinalg.bench import BenchUsageError, RunConfig, read_results, run_benchmark
from xlinalg.bench._runner import validate_options
from xlinalg.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def _bench(out: Path, backends: str, *extra: str) -> list[str]:
    return ["bench", "--quick", "--backends", backends, "--cases", "a4_add", "--sizes", "8",
            "--no-progress", "--no-calibrate", "--no-report", "--out", str(out), *extra]


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ": warning: " not in ln]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------- point 12
@pytest.mark.parametrize("value", ["garbage", "http://x y", "tcp://", "\x1b[31mtcp://h:1"])
# (a run that names no backends leaves Dask out: it is opt-in, Backend.bench.opt_in)
@pytest.mark.parametrize("backends", ["dask", "numpy,dask", "torch-cpu,dask"])
def test_a_garbage_scheduler_address_stops_the_run_before_any_cell(
        tmp_path, monkeypatch, capsys, value, backends):
    require_backend("dask")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", value)
    out = tmp_path / "r.jsonl"
    argv = _bench(out, backends)
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("xlinalg bench: error: environment variable DASK_SCHEDULER_ADDRESS"), line
    assert "tcp://HOST:PORT" in line
    assert "\x1b" not in line
    assert not out.exists()  # nothing ran, nothing was written


def test_the_scheduler_address_is_not_read_without_the_dask_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "garbage")
    out = tmp_path / "r.jsonl"
    assert main(_bench(out, "numpy", "--no-isolate")) == 0
    assert [r["status"] for r in read_results(out).records] == ["ok"]


def test_the_options_that_set_the_address_replace_the_variable(monkeypatch):
    """--scheduler / --dask-workers set DASK_SCHEDULER_ADDRESS for the run: the command
    line does not check the variable they replace (run_benchmark checks the new one)."""
    require_backend("dask")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "garbage")
    cfg = RunConfig(backends=["dask"], out="unused.jsonl")
    validate_options(cfg, environment=False)
    with pytest.raises(BenchUsageError, match="DASK_SCHEDULER_ADDRESS"):
        validate_options(cfg)


def test_the_python_api_checks_the_environment_too(tmp_path, monkeypatch):
    require_backend("dask")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "garbage")
    out = tmp_path / "r.jsonl"
    with pytest.raises(BenchUsageError, match=r"^environment variable DASK_SCHEDULER_ADDRESS"):
        run_benchmark(RunConfig(backends=["dask"], cases=["a4_add"], sizes=["8"], out=out,
                                calibrate=False))
    assert not out.exists()


@pytest.mark.parametrize("backend", ["torch-cpu", None])
def test_a_garbage_torch_compile_flag_stops_the_run_before_any_cell(
        tmp_path, monkeypatch, capsys, backend):
    require_backend("torch-cpu")
    monkeypatch.setenv("XLINALG_TORCH_COMPILE", "maybe")
    out = tmp_path / "r.jsonl"
    argv = _bench(out, backend or "numpy")
    if backend is None:
        i = argv.index("--backends")
        del argv[i:i + 2]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "environment variable XLINALG_TORCH_COMPILE='maybe' is not a boolean" in line
    assert not out.exists()


# ---------------------------------------------------------------------- point 15
EXITING = textwrap.dedent('''
    import ctypes
    import os

    from xlinalg.bench import Case, register_case


    def _vec(rng, n):
        return (rng.standard_normal(n),)


    def _os_exit(ctx, x):
        os._exit(0)


    def _os_exit_3(ctx, x):
        os._exit(3)


    def _c_exit(ctx, x):
        ctypes.CDLL(None)._exit(0)  # no Python code sees this one


    for name, op in [("t_os_exit", _os_exit), ("t_os_exit_3", _os_exit_3),
                     ("t_c_exit", _c_exit)]:
        register_case(Case(name=name, sizes={"quick": [4]}, setup=_vec, op=op,
                           reference=lambda x: x), replace=True)
''')


@pytest.fixture
def exiting(tmp_path: Path) -> Path:
    p = tmp_path / "exiting_cases.py"
    p.write_text(EXITING)
    return p


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
def test_a_case_calling_os_exit_is_a_failed_cell_with_the_reason(tmp_path, exiting, capsys,
                                                                 isolate):
    out = tmp_path / "r.jsonl"
    real_exit = os._exit
    argv = ["bench", "--quick", "--backends", "numpy", "--cases", "t_os_exit,t_os_exit_3,a4_add",
            "--sizes", "4", "--case-file", str(exiting), "--out", str(out), "--no-progress",
            "--no-calibrate", "--no-report", *([] if isolate else ["--no-isolate"])]
    assert main(argv) == 1  # a failed cell: the run's status says so
    assert os._exit is real_exit  # the guard is gone after the cells
    got = {r["case"]: r for r in read_results(out).latest().values()}
    assert sorted(got) == ["a4_add", "t_os_exit", "t_os_exit_3"]
    for name, code in (("t_os_exit", 0), ("t_os_exit_3", 3)):
        assert got[name]["status"] == "failed"
        assert f"the case called os._exit({code})" in got[name]["error"]["message"]
    assert got["a4_add"]["status"] == "ok"  # the run went on
    assert "1 ok" in capsys.readouterr().out


def test_a_worker_that_vanishes_without_reporting_is_a_failed_cell(tmp_path, exiting):
    """A C-level _exit(0) in the worker: nothing in Python sees it; the runner sees
    its worker gone with status 0 and records the cell as failed, saying so."""
    out = tmp_path / "r.jsonl"
    argv = ["bench", "--quick", "--backends", "numpy", "--cases", "t_c_exit,a4_add",
            "--sizes", "4", "--case-file", str(exiting), "--out", str(out), "--no-progress",
            "--no-calibrate", "--no-report"]
    assert main(argv) == 1
    got = {r["case"]: r for r in read_results(out).latest().values()}
    bad = got["t_c_exit"]
    assert bad["status"] == "failed"
    assert bad["error"]["kind"] == "crash"
    assert "exited with status 0 without reporting the cell" in bad["error"]["message"]
    assert got["a4_add"]["status"] == "ok"


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
@pytest.mark.parametrize("call", ["os._exit(0)", "os._exit(5)"])
def test_a_case_file_calling_os_exit_on_import_is_a_usage_error(tmp_path, capsys, isolate,
                                                                call):
    cf = tmp_path / "exits.py"
    cf.write_text(f"import os\n{call}\n")
    out = tmp_path / "r.jsonl"
    argv = ["bench", "--quick", "--backends", "numpy", "--cases", "a4_add", "--sizes", "4",
            "--case-file", str(cf), "--out", str(out), "--no-progress", "--no-report",
            *([] if isolate else ["--no-isolate"])]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"case file {str(cf)!r} called {call} while being imported" in line, line
    assert not out.exists()


def test_a_case_file_exiting_only_in_the_worker_fails_its_cells_with_the_reason(tmp_path):
    """The worker imports the case file too: os._exit there is its fatal reason."""
    cf = tmp_path / "worker_exit.py"
    cf.write_text(textwrap.dedent('''
        import os
        import sys

        from xlinalg.bench import Case, register_case

        spec = getattr(sys.modules["__main__"], "__spec__", None)
        if spec is not None and spec.name == "xlinalg.bench._worker":
            os._exit(0)
        register_case(Case(name="t_fine", sizes={"quick": [4]},
                           setup=lambda rng, n: (rng.standard_normal(n),),
                           op=lambda ctx, x: x, reference=lambda x: x), replace=True)
    '''))
    out = tmp_path / "r.jsonl"
    argv = ["bench", "--quick", "--backends", "numpy", "--cases", "t_fine", "--sizes", "4",
            "--case-file", str(cf), "--out", str(out), "--no-progress", "--no-calibrate",
            "--no-report"]
    assert main(argv) == 1
    [rec] = read_results(out).records
    assert rec["status"] == "failed"
    assert "called os._exit(0)" in rec["error"]["message"], rec["error"]
