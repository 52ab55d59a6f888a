"""One writer per results file: an OS-level lock, released on any exit.

Every subprocess here runs under a timeout: the tests stop by themselves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import solve_record
from xlinalg.bench import (
    ResultsFileBusyError,
    ResultStore,
    ResultsWriteError,
    read_results,
)

ENV = {"python": {"version": "3.x"}, "cpu": {"model": "test"}}
SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_a_second_store_on_the_same_file_is_refused_and_the_file_kept(tmp_path):
    p = tmp_path / "r.jsonl"
    with ResultStore(p) as first:
        first.write_header(ENV, {})
        first.append(solve_record(5))
        for kw in ({"resume": True}, {"overwrite": True}):
            with pytest.raises(ResultsFileBusyError, match="another xlinalg bench run"):
                ResultStore(p, **kw)
        first.append(solve_record(6))
    res = read_results(p)  # intact: the refused stores touched nothing
    assert [r["size"] for r in res.records] == [5, 6]
    # released on close: the next writer gets it
    with ResultStore(p, resume=True) as again:
        again.write_header(ENV, {})
    assert len(read_results(p).headers) == 2


def test_an_empty_file_is_not_a_missing_one(tmp_path):
    p = tmp_path / "r.jsonl"
    p.touch()
    with pytest.raises(FileExistsError, match=r"already exists \(empty\)"):
        ResultStore(p)
    with ResultStore(p, resume=True) as s:  # nothing done yet: resumed from the start
        assert s.previous is None
        s.write_header(ENV, {})
    assert len(read_results(p).headers) == 1


@pytest.mark.parametrize("kind", ["directory", "under_a_file", "device"])
def test_out_that_cannot_be_a_results_file_is_one_line_error(tmp_path, kind):
    target = {
        "directory": tmp_path,
        "under_a_file": tmp_path / "f" / "r.jsonl",
        "device": Path("/dev/null"),
    }[kind]
    (tmp_path / "f").write_text("x")
    with pytest.raises(ResultsWriteError) as info:
        ResultStore(target, overwrite=True)
    assert "\n" not in str(info.value)
    assert (tmp_path / "f").read_text() == "x"


def test_write_errors_are_results_write_errors(tmp_path, monkeypatch):
    p = tmp_path / "r.jsonl"
    store = ResultStore(p)
    store.write_header(ENV, {})

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ResultsWriteError, match="cannot write: No space left on device"):
        store.append(solve_record())
    store.close()


_HOLDER = textwrap.dedent("""
    import sys, time
    from xlinalg.bench import ResultStore
    s = ResultStore(sys.argv[1])
    s.write_header({}, {})
    print("locked", flush=True)
    time.sleep(60)
""")


def _holder(path: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_is_released_when_the_writer_is_killed(tmp_path):
    p = tmp_path / "r.jsonl"
    proc = _holder(p)
    try:
        with pytest.raises(ResultsFileBusyError):
            ResultStore(p, resume=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while True:  # released by the kernel with the process
            try:
                with ResultStore(p, resume=True):
                    break
            except ResultsFileBusyError:
                assert time.monotonic() < deadline, "lock not released after SIGKILL"
                time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def _bench(out: Path, *extra: str, env_extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    return subprocess.Popen(
        [sys.executable, "-m", "xlinalg", "bench", "--quick", "--backends", "numpy",
         "--cases", "q3_solve_sweep", "--no-calibrate", "--no-progress", "--out", str(out),
         "--no-recheck",  # a cell remeasured after a stall (a loaded machine) adds a record
         *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_cli_resume_while_another_run_writes_says_so_and_exits_2(tmp_path):
    p = tmp_path / "r.jsonl"
    holder = _holder(p)
    try:
        proc = _bench(p, "--resume")
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 2, err
        assert "Traceback" not in err
        assert len([ln for ln in err.strip().splitlines() if ": warning: " not in ln]) == 1, err
        assert "another xlinalg bench run is writing this file" in err
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert len(read_results(p).headers) == 1  # the holder's header only, intact


GATED_CASE = textwrap.dedent('''
    """A case that waits for a file the test creates: the run holding the results
    file cannot finish (and release it) before the test says so."""
    import os
    import time

    from xlinalg.bench import Case, register_case


    def _vec(rng, n):
        return (rng.standard_normal(n),)


    def _gated(ctx, x):
        gate = os.environ["XL_TEST_GATE"]
        deadline = time.monotonic() + 600  # a stop of its own, should the test die
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.005)
        return x * 2.0


    register_case(Case(name="t_gated", sizes={"quick": [10, 50]}, setup=_vec, op=_gated,
                       reference=lambda x: 2.0 * x), replace=True)
''')


def test_cli_two_runs_started_together_one_wins_the_file_stays_valid(tmp_path):
    # Overlap by construction: whichever run takes the file first waits in its
    # cells for a gate the test opens only after the other run has exited, so
    # the loser always meets a held lock, however loaded the machine is.
    p = tmp_path / "r.jsonl"
    cases = tmp_path / "gated_cases.py"
    cases.write_text(GATED_CASE)
    gate = tmp_path / "gate"
    gated = ("--cases", "t_gated", "--case-file", str(cases))
    env = {"XL_TEST_GATE": str(gate)}
    procs = [_bench(p, *gated, env_extra=env), _bench(p, *gated, "--overwrite", env_extra=env)]
    try:
        deadline = time.monotonic() + 300  # a hang stops the test (not a timing bound)
        while all(pr.poll() is None for pr in procs):
            assert time.monotonic() < deadline, "neither run exited: no loser"
            time.sleep(0.02)
        first = next(pr for pr in procs if pr.poll() is not None)
        # the loser exited with the winner still inside its run, held at the gate
        assert sum(pr.poll() is None for pr in procs) == 1
    finally:
        gate.touch()
    outs = [pr.communicate(timeout=300) for pr in procs]
    errs = "".join(e for _, e in outs)
    assert "Traceback" not in errs
    # exactly one run wrote the file; the other said why in one line and exited 2
    assert first.returncode == 2, errs
    assert sorted(pr.returncode for pr in procs) == [0, 2], errs
    loser_err = outs[procs.index(first)][1]
    assert len([ln for ln in loser_err.strip().splitlines() if ": warning: " not in ln]) == 1, loser_err
    res = read_results(p)
    assert len(res.headers) == 1
    assert sorted(r["size_label"] for r in res.records) == ["10", "50"]
