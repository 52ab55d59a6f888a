"""benchmarks/remeasure_full.sh: resumes a full run, stops at its time limit, keeps
each processor model's checkpoints apart, and replaces the committed pair only with
two finished runs of one model (a fake ``xlinalg`` stands in)."""

from __future__ import annotations

import lzma
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "remeasure_full.sh"

FAKE = """#!/usr/bin/env bash
echo "$@" >> "$FAKE_LOG"
out=""
while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
echo '{"type": "header"}' >> "$out"
if [ -n "${FAKE_READ_STDIN:-}" ]; then cat > /dev/null; fi
if [ -n "${FAKE_SLEEP:-}" ]; then trap 'exit 143' TERM; sleep "$FAKE_SLEEP" & wait; fi
exit "${FAKE_RC:-0}"
"""

pytestmark = pytest.mark.skipif(not (shutil.which("bash") and shutil.which("timeout")
                                     and shutil.which("xz")),
                                reason="needs bash, coreutils timeout and xz")


#: benchmarks/full_run_cost.py --chunks: the lines of $FAKE_CHUNKS on its first call,
#: nothing after (every chunk finished); a failure where FAKE_CHUNKS is unset.
FAKE_COST = """#!/usr/bin/env bash
echo "cost $*" >> "$FAKE_LOG"
[ -n "${FAKE_CHUNKS:-}" ] || exit 1
if [ ! -e "$FAKE_CHUNKS.done" ]; then cat "$FAKE_CHUNKS"; touch "$FAKE_CHUNKS.done"; fi
"""


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "fake-xlinalg"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    cost = tmp_path / "fake-cost"
    cost.write_text(FAKE_COST)
    cost.chmod(0o755)
    env.setdefault("XL_COST", str(cost))
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    env.setdefault("XL_CPU", "Test CPU (R) 1")
    full_env = {**os.environ, "XLINALG": str(fake), "XL_RESULTS": str(results),
                "FAKE_LOG": str(tmp_path / "log"), **env}
    return subprocess.run(["bash", str(SCRIPT), *args], env=full_env, capture_output=True,
                          text=True, timeout=120)


MODEL = "test-cpu-r-1"  # XL_CPU's slug


def _headers(path: Path) -> int:
    return lzma.decompress(path.read_bytes()).decode().count("header")


def test_a_stopped_run_is_kept_and_resumed_and_a_finished_pair_replaces(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    final = results / "cpu-full.jsonl.xz"
    final.write_bytes(b"committed")
    final32 = results / "cpu-full-float32.jsonl.xz"
    final32.write_bytes(b"committed too")
    stopped = _run(tmp_path, FAKE_RC="143")
    assert stopped.returncode == 75, stopped.stderr
    assert final.read_bytes() == b"committed"  # not replaced by an unfinished run
    partial = results / f"cpu-full.{MODEL}.partial.jsonl"
    assert partial.read_text().count("header") == 1
    done = _run(tmp_path, FAKE_RC="1")  # finished, some cells failed (recorded)
    assert done.returncode == 0, done.stderr
    assert not partial.exists()
    held = results / "in-progress" / MODEL
    assert final.read_bytes() == b"committed"  # its float32 twin is not measured yet
    assert "waits" in done.stderr
    assert "cpu-full-float32" in done.stderr
    assert (held / "cpu-full.finished").exists()
    assert _headers(held / "cpu-full.partial.jsonl.xz") == 2  # both calls
    again = _run(tmp_path, FAKE_RC="0")  # finished: nothing to measure, it still waits
    assert again.returncode == 0, again.stderr
    assert "--dtype float32" in again.stderr
    assert "resuming from the checkpoint" not in again.stderr
    assert not partial.exists()  # the finished checkpoint is not unpacked again
    assert final.read_bytes() == b"committed"
    twin = _run(tmp_path, "--dtype", "float32", FAKE_RC="0")
    assert twin.returncode == 0, twin.stderr
    assert "is in place" in twin.stderr
    assert _headers(final) == 2
    assert _headers(final32) == 1
    assert not (results / "in-progress").exists()
    calls = [c for c in (tmp_path / "log").read_text().splitlines() if not c.startswith("cost ")]
    calls = [c for c in calls if "--dtype" not in c.split()]
    assert len(calls) == 2
    for call in calls:
        words = call.split()
        assert words[:2] == ["bench", "--full"]
        assert "--resume" in words
        assert "--dtype" not in words
        assert words[words.index("--out") + 1] == str(partial)
        assert words[words.index("--time-limit") + 1] == "120"
        assert words[words.index("--backends") + 1] == "numpy,torch-cpu,jax-cpu,dask,array-api-strict"


def test_the_time_limit_stops_the_run_cleanly(tmp_path):
    r = _run(tmp_path, "--dtype", "float32", "--hours", "0.0005", FAKE_SLEEP="60")
    assert r.returncode == 75, r.stderr
    assert (tmp_path / "results" / f"cpu-full-float32.{MODEL}.partial.jsonl").exists()
    assert not (tmp_path / "results" / "cpu-full-float32.jsonl.xz").exists()
    assert "--dtype float32" in (tmp_path / "log").read_text()


@pytest.mark.parametrize("args", [("--dtype", "float16"), ("--hours", "-1"), ("--hours", "soon"),
                                  ("--fast",)])
def test_bad_arguments_are_refused(tmp_path, args):
    r = _run(tmp_path, *args)
    assert r.returncode == 2
    assert "remeasure_full.sh" in r.stderr
    assert not (tmp_path / "log").exists()


def test_a_bench_error_is_passed_on(tmp_path):
    r = _run(tmp_path, FAKE_RC="2")
    assert r.returncode == 2
    assert (tmp_path / "results" / f"cpu-full.{MODEL}.partial.jsonl").exists()


def test_a_stopped_run_leaves_a_checkpoint_that_a_fresh_clone_resumes(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    checkpoint = results / "in-progress" / MODEL / "cpu-full-float32.partial.jsonl.xz"
    partial = results / f"cpu-full-float32.{MODEL}.partial.jsonl"
    stopped = _run(tmp_path, "--dtype", "float32", FAKE_RC="143")
    assert stopped.returncode == 75, stopped.stderr
    assert lzma.decompress(checkpoint.read_bytes()) == partial.read_bytes()
    partial.unlink()  # a fresh clone: the git-ignored partial file is not there
    again = _run(tmp_path, "--dtype", "float32", FAKE_RC="143")
    assert again.returncode == 75, again.stderr
    assert "resuming from the checkpoint" in again.stderr
    assert partial.read_text().count("header") == 2  # the checkpoint's call, then this one
    assert lzma.decompress(checkpoint.read_bytes()).decode().count("header") == 2
    # a partial file that holds more than the checkpoint (this clone went on) is kept
    partial.write_text(partial.read_text() + '{"type": "header"}\n')
    third = _run(tmp_path, "--dtype", "float32", FAKE_RC="0")
    assert third.returncode == 0, third.stderr
    assert "resuming from the checkpoint" not in third.stderr
    assert _headers(checkpoint) == 4  # finished: kept for its twin, the partial file gone
    assert not partial.exists()
    assert not (results / "cpu-full-float32.jsonl.xz").exists()


def _calls(tmp_path: Path) -> list[list[str]]:
    return [c.split() for c in (tmp_path / "log").read_text().splitlines()]


def test_the_run_goes_chunk_by_chunk_and_ends_when_none_is_left(tmp_path):
    chunks = tmp_path / "chunks"
    chunks.write_text("30 calib_gemm,q1_solve_loop\n40 q3_solve_sweep\n")
    # a bench that reads its stdin must not eat the list of chunks
    r = _run(tmp_path, FAKE_CHUNKS=str(chunks), FAKE_READ_STDIN="1")
    assert r.returncode == 0, r.stderr
    calls = _calls(tmp_path)
    benches = [c for c in calls if c[0] == "bench"]
    assert [c[c.index("--cases") + 1] for c in benches] == ["calib_gemm,q1_solve_loop",
                                                             "q3_solve_sweep"]
    cost = [c for c in calls if c[0] == "cost"]
    assert len(cost) == 2  # the chunks, then the check that none is left (no catch-all call)
    partial = tmp_path / "results" / f"cpu-full.{MODEL}.partial.jsonl"
    assert cost[0][cost[0].index("--partial") + 1] == str(partial)
    assert cost[0][cost[0].index("--full") + 1] == str(tmp_path / "results" / "cpu-full.jsonl.xz")
    assert _headers(tmp_path / "results" / "in-progress" / MODEL / "cpu-full.partial.jsonl.xz") == 2


def test_a_chunk_the_time_left_cannot_hold_is_not_started(tmp_path):
    chunks = tmp_path / "chunks"
    chunks.write_text("5 q1_solve_loop\n3600 q3_solve_sweep\n")
    r = _run(tmp_path, "--hours", "0.5", FAKE_CHUNKS=str(chunks))
    assert r.returncode == 75, r.stderr
    benches = [c for c in _calls(tmp_path) if c[0] == "bench"]
    assert [c[c.index("--cases") + 1] for c in benches] == ["q1_solve_loop"]
    assert "not enough for q3_solve_sweep" in r.stderr
    checkpoint = tmp_path / "results" / "in-progress" / MODEL / "cpu-full.partial.jsonl.xz"
    assert _headers(checkpoint) == 1
    assert not (tmp_path / "results" / "cpu-full.jsonl.xz").exists()


def test_a_chunk_stopped_by_the_time_limit_stops_the_run(tmp_path):
    chunks = tmp_path / "chunks"
    chunks.write_text("1 q1_solve_loop\n1 q3_solve_sweep\n")
    r = _run(tmp_path, FAKE_CHUNKS=str(chunks), FAKE_RC="143")
    assert r.returncode == 75, r.stderr
    assert len([c for c in _calls(tmp_path) if c[0] == "bench"]) == 1


def test_the_cost_estimate_cuts_the_run_into_calls_in_plan_order():
    from conftest import benchmark_script

    cost = benchmark_script("full_run_cost.py")
    calls = cost.cut([("calib", 100.0), ("q1", 500.0), ("q3", 1500.0), ("q4", 600.0),
                      ("a1", 500.0), ("a2", 200.0)], 20)
    assert calls == [(600.0, ["calib", "q1"]), (1500.0, ["q3"]), (1100.0, ["q4", "a1"]),
                     (200.0, ["a2"])]
    assert cost.cut([], 20) == []


def test_without_an_estimate_the_run_is_one_call(tmp_path):
    # the default estimate (benchmarks/full_run_cost.py) cannot read a committed run
    # that is not there: one call for the whole run, as before the chunks
    r = _run(tmp_path, XL_COST="", FAKE_RC="0")
    assert r.returncode == 0, r.stderr
    assert "could not cut the run into chunks" in r.stderr
    benches = [c for c in _calls(tmp_path) if c[0] == "bench"]
    assert len(benches) == 1
    assert "--cases" not in benches[0]


def test_a_partial_run_of_another_processor_is_not_cut_into_chunks(tmp_path):
    import json

    from conftest import benchmark_script

    cost = benchmark_script("full_run_cost.py")
    partial = tmp_path / "p.jsonl"
    committed = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "cpu-default.jsonl.xz"
    header = json.loads(lzma.decompress(committed.read_bytes()).decode().splitlines()[0])
    header["env"]["cpu"]["model"] = "Some Other CPU 9000"
    partial.write_text(json.dumps(header) + "\n")
    with pytest.raises(SystemExit, match="measured on 'Some Other CPU 9000'"):
        cost.chunks(tmp_path / "no-such-run.jsonl.xz", 20, partial)


def test_each_processor_model_keeps_its_own_checkpoints(tmp_path):
    results = tmp_path / "results"
    first = _run(tmp_path, FAKE_RC="143", XL_CPU="AMD EPYC")
    assert first.returncode == 75, first.stderr
    other = _run(tmp_path, FAKE_RC="143", XL_CPU="Intel(R) Xeon(R) Processor")
    assert other.returncode == 75, other.stderr
    assert "resuming from the checkpoint" not in other.stderr  # not the AMD run's
    amd = results / "in-progress" / "amd-epyc" / "cpu-full.partial.jsonl.xz"
    intel = results / "in-progress" / "intel-r-xeon-r-processor" / "cpu-full.partial.jsonl.xz"
    assert _headers(amd) == 1
    assert _headers(intel) == 1
    (results / "cpu-full.amd-epyc.partial.jsonl").unlink()  # a fresh clone on AMD
    again = _run(tmp_path, FAKE_RC="143", XL_CPU="AMD EPYC")
    assert "resuming from the checkpoint" in again.stderr
    assert _headers(amd) == 2
    assert _headers(intel) == 1
    # a pair finished on one model replaces the committed pair; every checkpoint goes
    _run(tmp_path, FAKE_RC="0", XL_CPU="AMD EPYC")
    done = _run(tmp_path, "--dtype", "float32", FAKE_RC="0", XL_CPU="AMD EPYC")
    assert done.returncode == 0, done.stderr
    assert _headers(results / "cpu-full.jsonl.xz") == 3
    assert not (results / "in-progress").exists()


@pytest.mark.parametrize("cpu", ["()", " ", "---"])
def test_a_processor_model_without_a_name_is_refused(tmp_path, cpu):
    r = _run(tmp_path, XL_CPU=cpu)
    assert r.returncode == 2
    assert "XL_CPU" in r.stderr
    assert not (tmp_path / "log").exists()


def test_a_checkpoint_over_the_results_limit_is_warned_of_with_each_checkpoint(tmp_path):
    """The checkpoints count in the committed results' 15 MiB: a call whose checkpoint
    takes them over says so, with every checkpoint's size, before anyone commits."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "cpu-full.jsonl.xz").write_bytes(b"x" * 1000)
    (results / f"cpu-full.{MODEL}.partial.jsonl").write_text("not committed\n" * 500)
    under = _run(tmp_path, FAKE_RC="143", XL_CPU="Intel(R) Xeon(R) Processor",
                 XL_RESULTS_LIMIT="2000")
    assert under.returncode == 75, under.stderr
    assert "warning" not in under.stderr  # the git-ignored partial files do not count
    over = _run(tmp_path, FAKE_RC="0", XL_RESULTS_LIMIT="1000")
    assert over.returncode == 0, over.stderr
    warning = over.stderr[over.stderr.index("warning"):]
    total = sum(p.stat().st_size for p in results.rglob("*")
                if p.is_file() and not p.name.endswith(".partial.jsonl"))
    assert f"hold {total} bytes, {total - 1000} over the 1000 allowed" in warning
    intel = results / "in-progress" / "intel-r-xeon-r-processor" / "cpu-full.partial.jsonl.xz"
    ours = results / "in-progress" / MODEL / "cpu-full.partial.jsonl.xz"
    assert f"in-progress/intel-r-xeon-r-processor/cpu-full.partial.jsonl.xz {intel.stat().st_size} bytes\n" in warning
    assert f"in-progress/{MODEL}/cpu-full.partial.jsonl.xz {ours.stat().st_size} bytes, finished" in warning
    assert "waits" in over.stderr  # the run itself goes on as before


def test_help_prints_the_whole_header_and_nothing_else():
    r = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    header = []
    for line in SCRIPT.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line)
    assert r.stdout.splitlines() == header
    assert "XL_RESULTS_LIMIT" in r.stdout
