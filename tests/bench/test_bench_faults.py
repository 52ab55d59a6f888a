"""Real faults: a cell that raises, runs out of memory, runs past its time limit or
kills its worker is recorded and the run goes on; SIGINT/SIGTERM leave a valid file
that --resume completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from xlinalg.bench import RunConfig, TimerConfig, read_results, run_benchmark

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and rlimits")

#: The time limit of the fault tests: ample for a real cell at size 4 on a busy
#: machine; t_sleepy waits for a file nobody creates, so only the limit ends it.
LIMIT = 10.0

FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                   min_samples=3, max_samples=5, max_run_time=1.0)

CASES = textwrap.dedent('''
    """Fault cases for the tests (imported by the runner and by each worker)."""
    import os
    import signal
    import time

    import numpy as np

    from xlinalg.bench import Case, register_case


    def _vec(rng, n):
        return (rng.standard_normal(n),)


    def _boom(ctx, x):
        raise ValueError("deliberate failure in the kernel")


    def _sleepy(ctx, x):
        # far past any time limit of the tests: it waits for a file nobody creates
        never = os.environ.get("XL_TEST_NEVER", "/nonexistent/xlinalg-test-gate")
        deadline = time.monotonic() + 900
        while not os.path.exists(never) and time.monotonic() < deadline:
            time.sleep(0.01)
        return x


    def _hog(ctx, x):
        # 4 GiB, touched: refused under the worker's address-space limit
        return np.ones(2**29) + x[0]


    def _die(ctx, x):
        os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does


    def _slow(ctx, x):
        # sizes above 3 wait for the gate the test opens after its signal: the run
        # cannot finish before the signal, however fast or loaded the machine
        gate = os.environ.get("XL_TEST_GATE")
        if gate and x.shape[0] > 3:
            while not os.path.exists(gate):
                time.sleep(0.005)
        return x * 2.0


    for name, op in [("t_boom", _boom), ("t_sleepy", _sleepy), ("t_hog", _hog),
                     ("t_die", _die)]:
        register_case(Case(name=name, sizes={"quick": [4]}, setup=_vec, op=op), replace=True)
    register_case(Case(name="t_slow", sizes={"quick": list(range(1, 13))}, setup=_vec,
                       op=_slow, reference=lambda x: 2.0 * x), replace=True)
''')


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    p = tmp_path / "fault_cases.py"
    p.write_text(CASES)
    return p


def _by_case(records):
    return {r["case"]: r for r in records}


def test_faults_are_recorded_and_the_run_goes_on(tmp_path, case_file):
    out = tmp_path / "r.jsonl"
    cfg = RunConfig(
        backends=["numpy"],
        cases=["t_boom", "q3_solve_sweep", "t_sleepy", "t_hog", "t_die", "a1_gemm"],
        sizes=["4"], out=out, case_files=[case_file], timer=FAST,
        # a limit real cells at size 4 meet on a loaded machine; t_sleepy never returns
        time_limit=LIMIT, memory_limit=3 * 2**30, calibrate=False,
    )
    summary = run_benchmark(cfg)
    got = _by_case(read_results(out).records)
    assert list(got) == cfg.cases  # every cell recorded, in order

    boom = got["t_boom"]
    assert boom["status"] == "failed"
    assert boom["error"]["kind"] == "error"
    assert boom["error"]["type"] == "ValueError"
    assert "deliberate failure" in boom["error"]["message"]

    sleepy = got["t_sleepy"]
    assert sleepy["error"]["kind"] == "timeout"  # (it would never return otherwise)
    assert f"{LIMIT:g} s" in sleepy["error"]["message"]
    assert sleepy["cell_wall_s"] >= LIMIT  # killed at the limit, not before

    hog = got["t_hog"]
    assert hog["error"]["kind"] == "oom", hog["error"]
    assert "MemoryError" in hog["error"]["type"]

    die = got["t_die"]
    assert die["error"]["kind"] == "crash"
    assert "SIGKILL" in die["error"]["message"]

    # the cells after each fault ran normally (a new worker after the timeout and the crash)
    assert got["q3_solve_sweep"]["status"] == "ok"
    assert got["a1_gemm"]["status"] == "ok"
    assert len(summary.failed) == 4


def test_a_size_too_big_for_memory_is_recorded_as_oom(tmp_path):
    """The real matmul case at n=300000 (720 GB per operand in float64)."""
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["a1_gemm", "q3_solve_sweep"],
                            sizes=["300000", "4"], out=out, timer=FAST,
                            memory_limit=3 * 2**30))
    recs = {(r["case"], r["size_label"]): r for r in read_results(out).records}
    big = recs[("a1_gemm", "300000x300000x300000")]
    assert big["status"] == "failed"
    assert big["error"]["kind"] == "oom"
    assert recs[("a1_gemm", "4x4x4")]["status"] == "ok"
    # the solve at n=300000 fails the same way; the small one after it runs
    assert recs[("q3_solve_sweep", "300000")]["error"]["kind"] == "oom"
    assert recs[("q3_solve_sweep", "4")]["status"] == "ok"


def test_in_process_time_limit_and_errors(tmp_path, case_file):
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["t_sleepy", "t_boom", "q3_solve_sweep"],
                            sizes=["4"], out=out, case_files=[case_file], timer=FAST,
                            time_limit=LIMIT, isolate=False))
    got = _by_case(read_results(out).records)
    assert got["t_sleepy"]["error"]["kind"] == "timeout"
    assert got["t_boom"]["error"]["kind"] == "error"
    assert got["q3_solve_sweep"]["status"] == "ok"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["SIGINT", "SIGTERM"])
def test_signal_mid_run_leaves_a_valid_file_and_resume_completes_it(tmp_path, case_file,
                                                                     sig, code):
    out = tmp_path / "r.jsonl"
    gate = tmp_path / "gate"
    env = {**os.environ, "XL_TEST_GATE": str(gate)}
    cmd = [sys.executable, "-m", "xlinalg", "bench", "--quick", "--backends", "numpy",
           "--cases", "t_slow", "--case-file", str(case_file), "--out", str(out),
           "--no-progress", "--no-calibrate", "--no-recheck"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        # generous bounds: only a broken run reaches them, and a loaded machine is slow
        deadline = time.monotonic() + 900
        while not (out.exists() and out.read_text().count('"type":"result"') >= 3):
            assert proc.poll() is None, proc.communicate()  # it cannot finish: size 4 waits
            assert time.monotonic() < deadline, "the first three cells never finished"
            time.sleep(0.02)
        assert proc.poll() is None  # mid-run, by construction: the fourth cell waits at the gate
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == code, stderr
        assert "Traceback" not in stderr
        assert "--resume" in stderr
        first = read_results(out)  # valid: no warning, no error
        assert first.warnings == []
        n_first = len(first.records)
        assert n_first == 3  # the cells before the gate, nothing after
        assert all(r["status"] == "ok" for r in first.records)
    finally:  # a failed assertion leaves no runner waiting at the gate
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    gate.touch()
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=900,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert f"resuming: {n_first} cell(s) already in the file" in done.stderr
    final = read_results(out)
    assert len(final.headers) == 2
    assert len(final.records) == 12  # nothing measured twice
    assert {r["size_label"] for r in final.records} == {str(i) for i in range(1, 13)}
    # no worker left behind
    assert "t_slow" in done.stdout


def test_worker_does_not_outlive_a_killed_runner(tmp_path, case_file):
    """SIGKILL of the runner (no cleanup possible): the worker dies with it and the
    file still holds every finished cell."""
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signal is Linux-only")
    out = tmp_path / "r.jsonl"
    script = textwrap.dedent(f"""
        import xlinalg.study  # the documents' cases (q3_solve_sweep)
        from xlinalg.bench import RunConfig, TimerConfig, run_benchmark
        run_benchmark(RunConfig(backends=["numpy"], cases=["q3_solve_sweep", "t_sleepy"], sizes=["4"],
                                out={str(out)!r}, case_files=[{str(case_file)!r}],
                                time_limit=120, timer=TimerConfig(min_run_time=0.01),
                                calibrate=False))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        # generous bounds: only a broken run reaches them, and a loaded machine is slow
        deadline = time.monotonic() + 900
        while not (out.exists() and '"type":"result"' in out.read_text()):
            assert proc.poll() is None, "the runner ended before its first cell"
            assert time.monotonic() < deadline, "the first cell never finished"
            time.sleep(0.05)
        time.sleep(0.5)  # the worker is now in t_sleepy (which never returns) or on its way
        children = _children(proc.pid)
        assert children, "no worker process found"
        proc.kill()
        proc.wait(timeout=60)
        deadline = time.monotonic() + 120
        while any(_alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(c) for c in children)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [r["case"] for r in read_results(out).records] == ["q3_solve_sweep"]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
