"""Cases, cells and runs: declaration, identical inputs, correctness check, fairness
record, memory, worker processes and resume."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import CPU_BACKENDS, require_backend
from xlinalg._machine import collect_env
from xlinalg.bench import (
    BenchUsageError,
    Case,
    RunConfig,
    TimerConfig,
    case_names,
    check_result,
    execute_cell,
    get_case,
    make_cell,
    plan_cells,
    read_results,
    register_case,
    run_benchmark,
)
from xlinalg.bench._fairness import backend_state, configure_backend

FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                   min_samples=3, max_samples=5, max_run_time=1.0)
CPU = list(CPU_BACKENDS)  # the registry's CPU backends


def run_cell(case, backend, size, **kw):
    require_backend(backend)  # skip with the registry's reason (fail, in CI)
    restore = configure_backend(backend)
    try:
        kw.setdefault("timer", FAST)
        return execute_cell(make_cell(case, backend, size, **kw),
                            backend_state=backend_state(backend))
    finally:
        restore()


# ---------------------------------------------------------------------- cases
def test_builtin_cases():
    assert {"q3_solve_sweep", "a1_gemm", "a4_sigmoid"} <= set(case_names())
    mm = get_case("a1_gemm")
    assert mm.parse("64") == (64, 64, 64)
    assert mm.parse("2x3x4") == (2, 3, 4)
    assert mm.params((2, 3, 4)) == {"m": 2, "k": 3, "n": 4}
    sweep = get_case("q3_solve_sweep")
    assert sweep.sizes_for("full")[0] == 5
    assert len(sweep.sizes_for("full")) > len(sweep.sizes_for("quick"))
    with pytest.raises(ValueError, match="valid cases: calib_gemm, calib_stream, q1_solve_loop"):
        get_case("nope")
    with pytest.raises(ValueError, match="not an integer"):
        mm.parse("abc")


def test_a_case_may_parse_its_own_sizes():
    # a case whose --sizes items are not "64" or "2x3x4": its parser, then normalize_size
    case = dataclasses.replace(get_case("a1_gemm"), parse_size=lambda t: int(t.split("=")[1]))
    assert case.parse("n=7") == (7, 7, 7)
    assert get_case("a1_gemm").parse_size is None
    with pytest.raises(ValueError, match="not an integer"):
        get_case("a1_gemm").parse("n=7")


def _setup_one(rng, n):
    return (rng.standard_normal(n),)


@pytest.fixture
def temp_cases():
    """Cases registered by a test are removed after it."""
    from xlinalg.bench import unregister_case

    names = []
    yield names
    for n in names:
        unregister_case(n)


def test_declaring_a_case_is_one_call(temp_cases):
    temp_cases.append("t_double")
    c = register_case(Case(
        name="t_double",
        doc="2x",
        sizes={"quick": [3]},  # default and full fall back to quick
        setup=_setup_one,
        op=lambda ctx, x: x * 2,
        reference=lambda x: 2 * x,
        flops=lambda n: float(n),
        bytes=lambda n, itemsize: 2.0 * n * itemsize,
        skip={"dask": "not meaningful on dask"},
        skip_if=lambda b, d, s: "too big" if s > 100 else None,
    ), replace=True)
    assert c.sizes_for("full") == [3]
    assert c.skip_reason("dask", "float64", 3) == "not meaningful on dask"
    assert c.skip_reason("numpy", "float64", 1000) == "too big"
    assert "supports dtypes" in c.skip_reason("numpy", "float16", 3)
    assert c.skip_reason("numpy", "float64", 3) is None
    r = run_cell("t_double", "numpy", 3)
    assert r["status"] == "ok"
    assert r["throughput"]["flops"] == 3.0
    assert r["throughput"]["gflops"] > 0
    skipped = run_cell("t_double", "dask", 3)
    assert skipped["status"] == "skipped"
    assert skipped["skip_reason"] == "not meaningful on dask"


def test_case_validation():
    with pytest.raises(ValueError, match="non-empty word"):
        Case(name="a b", sizes={"quick": [1]}, setup=_setup_one, op=lambda c, x: x)
    with pytest.raises(ValueError, match="op"):
        Case(name="x", sizes={"quick": [1]}, setup=_setup_one)
    with pytest.raises(ValueError, match="unknown scales"):
        Case(name="x", sizes={"huge": [1]}, setup=_setup_one, op=lambda c, x: x)


# ---------------------------------------------------------------------- cells
@pytest.mark.parametrize("backend", CPU)
def test_solve_cell_on_every_cpu_backend(backend):
    r = run_cell("q3_solve_sweep", backend, 8)
    assert r["status"] == "ok", r.get("error")
    assert r["check"]["verdict"] == "ok"
    assert r["check"]["max_rel_err"] <= r["check"]["rtol"]
    t = r["time"]
    assert t["median_s"] > 0
    assert t["samples"] >= 3
    assert t["number"] >= 1
    assert t["first_call_s"] > 0
    f = r["fairness"]
    assert f["dtype"] == "float64"
    assert f["layout"][0]["shape"] == [8, 8]
    assert f["inputs_sha256"] == run_cell("q3_solve_sweep", "numpy", 8)["fairness"]["inputs_sha256"]
    assert r["backend_info"]["version"]
    assert r["memory"]["measured"]


def test_identical_inputs_across_dtypes_and_backends():
    a = run_cell("a1_gemm", "numpy", 16, memory=False)
    b = run_cell("a1_gemm", "torch-cpu", 16, memory=False)
    c = run_cell("a1_gemm", "numpy", 16, dtype="float32", memory=False)
    assert a["seed"] == b["seed"] == c["seed"]
    assert a["fairness"]["inputs_sha256"] == b["fairness"]["inputs_sha256"]
    assert a["fairness"]["inputs_sha256"] != c["fairness"]["inputs_sha256"]  # cast once


def test_fairness_record_jax_and_torch():
    j = run_cell("a1_gemm", "jax-cpu", 16, dtype="float32", memory=False)
    assert j["status"] == "ok"
    assert j["fairness"]["x64"] is True
    assert j["fairness"]["matmul_precision"] == {"default": "highest"}
    assert "block_until_ready" in j["fairness"]["fence"]
    t = run_cell("a1_gemm", "torch-cpu", 16, dtype="float32", memory=False)
    assert t["fairness"]["matmul_precision"]["float32"] == "highest"
    assert t["fairness"]["threads"]["torch"] >= 1
    assert any(lib.get("user_api") == "blas" for lib in t["fairness"]["threads"]["blas"])
    d = run_cell("q3_solve_sweep", "dask", 8, memory=False)
    assert "compute" in d["fairness"]["fence"]


def test_configure_backend_restores_settings():
    import jax
    import torch

    before = (jax.config.jax_default_matmul_precision, torch.get_num_threads(),
              torch.get_float32_matmul_precision())
    restore = configure_backend("torch-cpu", threads=1, allow_tf32=True)
    assert torch.get_num_threads() == 1
    assert torch.get_float32_matmul_precision() == "high"
    restore()
    restore = configure_backend("jax-cpu", allow_tf32=False)
    assert jax.config.jax_default_matmul_precision == "highest"
    restore()
    after = (jax.config.jax_default_matmul_precision, torch.get_num_threads(),
             torch.get_float32_matmul_precision())
    assert before == after


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_matmul_is_checked_at_its_tolerance(dtype):
    r = run_cell("a1_gemm", "torch-cpu", 32, dtype=dtype, memory=False)
    assert r["status"] == "ok", r.get("check")
    assert r["check"]["rtol"] > 1e-6
    if dtype == "bfloat16":
        assert run_cell("a1_gemm", "numpy", 32, dtype=dtype)["status"] == "skipped"


def test_sigmoid_cell_is_stable_in_float32():
    r = run_cell("a4_sigmoid", "numpy", 64, dtype="float32")
    assert r["status"] == "ok", r.get("check")


# ---------------------------------------------------------------------- correctness
def _wrong_kernel(ctx, a, b):
    out = ctx.xp.matmul(a, b)
    return out + 1e-3 * out[0, 0]  # a "fast" kernel that is slightly wrong


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "jax-cpu"])
def test_correctness_check_catches_a_wrong_kernel(backend, temp_cases):
    temp_cases.append("t_wrong_matmul")
    register_case(Case(
        name="t_wrong_matmul",
        sizes={"quick": [16]},
        setup=lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
        op=_wrong_kernel,
        reference=np.matmul,
    ), replace=True)
    r = run_cell("t_wrong_matmul", backend, 16, memory=False)
    assert r["status"] == "wrong"
    assert r["check"]["verdict"] == "wrong"
    assert r["check"]["max_rel_err"] > r["check"]["rtol"]
    assert "tolerance" in r["check"]["message"]
    assert r["time"]["median_s"] > 0  # it was timed, and reported as wrong


def test_check_result_edge_cases():
    ref = np.array([1.0, 2.0, 4.0])
    assert check_result(ref.astype(np.float32), ref, 1e-6)["verdict"] == "ok"
    assert check_result(ref + 1e-3, ref, 1e-6)["verdict"] == "wrong"
    nan = check_result(np.array([1.0, np.nan, 4.0]), ref, 1.0)
    assert nan["verdict"] == "wrong"
    assert "non-finite" in nan["message"]
    shape = check_result(ref[:2], ref, 1.0)
    assert shape["verdict"] == "wrong"
    assert "shape" in shape["message"]
    assert check_result(np.zeros(0), np.zeros(0), 1e-9)["verdict"] == "ok"


# ---------------------------------------------------------------------- memory
def test_memory_of_a_numpy_cell_is_named_and_plausible():
    r = run_cell("a1_gemm", "numpy", 256)
    mem = r["memory"]
    assert "tracemalloc_peak_bytes" in mem["measured"]
    assert mem["tracemalloc_peak_bytes"] >= 256 * 256 * 8  # at least the output
    assert "rss_peak_delta_bytes" in mem
    assert mem["rss_method"]


# ---------------------------------------------------------------------- planning
def test_plan_and_validation(tmp_path):
    cfg = RunConfig(backends=["numpy", "torch-cpu"], cases=["q3_solve_sweep", "a1_gemm"],
                    scale="quick", out=tmp_path / "x.jsonl")
    cells = plan_cells(cfg)
    # side by side: every backend of a (case, size) in turn
    assert [c["backend"] for c in cells][:4] == ["numpy", "torch-cpu"] * 2
    # the calibration cells first, then the cases asked for
    assert [c["case"] for c in cells][::2] == ["calib_gemm", "calib_stream", "q3_solve_sweep",
                                               "q3_solve_sweep", "a1_gemm"]
    assert len(cells) == 2 * (2 + 2 + 1)
    assert all(c["timer"] == TimerConfig.for_scale("quick").to_dict() for c in cells)
    cfg = RunConfig(backends=["numpy"], cases=["a1_gemm"], sizes=["8", "4x5x6"], out="x")
    # --sizes apply to the named cases, not to the calibration (scale's sizes)
    assert [(c["case"], c["size_label"]) for c in plan_cells(cfg)] == [
        ("calib_gemm", "1024"), ("calib_stream", "8388608"),
        ("a1_gemm", "8x8x8"), ("a1_gemm", "4x5x6")]
    cfg = RunConfig(backends=["numpy"], cases=["a1_gemm"], sizes=["8"], out="x", calibrate=False)
    assert [c["case"] for c in plan_cells(cfg)] == ["a1_gemm"]
    # every case, no calibration: the calibration cases are not among "every case"
    every = plan_cells(RunConfig(backends=["numpy"], out="x", calibrate=False))
    assert not any(c["case"].startswith("calib") for c in every)
    every = plan_cells(RunConfig(backends=["numpy"], out="x", scale="quick"))
    assert [c["case"] for c in every][:2] == ["calib_gemm", "calib_stream"]
    assert sum(c["case"].startswith("calib") for c in every) == 2
    with pytest.raises(BenchUsageError, match="valid backends: numpy"):
        plan_cells(RunConfig(backends=["numpyy"]))
    with pytest.raises(BenchUsageError, match=r"not available.*install: pip install"):
        plan_cells(RunConfig(backends=["cupy"]))
    with pytest.raises(BenchUsageError, match="valid cases"):
        plan_cells(RunConfig(backends=["numpy"], cases=["nope"]))
    with pytest.raises(BenchUsageError, match="unknown case 'matmul'"):  # a removed case
        plan_cells(RunConfig(backends=["numpy"], cases=["matmul"]))
    with pytest.raises(BenchUsageError, match="valid dtypes"):
        plan_cells(RunConfig(backends=["numpy"], dtype="int8"))
    with pytest.raises(BenchUsageError, match="sizes"):
        plan_cells(RunConfig(backends=["numpy"], cases=["q3_solve_sweep"], sizes=["big"]))


def test_collect_env_has_what_a_report_needs():
    env = collect_env()
    for key in ("python", "os", "cpu", "memory_bytes", "gpus", "packages", "blas", "env_vars"):
        assert key in env
    assert env["packages"]["numpy"]
    json.dumps(env)


# ---------------------------------------------------------------------- runs
def test_run_in_worker_processes_and_resume(tmp_path):
    out = tmp_path / "r.jsonl"
    cfg = dict(backends=["numpy", "jax-cpu"], cases=["q3_solve_sweep"], sizes=["4", "6"], scale="quick",
               out=out, timer=FAST, time_limit=120, calibrate=False,
               recheck=False)  # a remeasured stall would add records: not what this counts
    events = []
    summary = run_benchmark(RunConfig(**cfg), progress=lambda e, p, i, n: events.append(e))
    assert summary.counts == {"ok": 4}
    assert events.count("result") == 4
    assert events[0] == "plan"
    res = read_results(out)
    assert len(res.headers) == 1
    assert len(res.records) == 4
    hdr = res.headers[0]
    assert hdr["run"]["isolation"] == "a worker process per backend"
    assert hdr["env"]["cpu"]["logical_cores"]
    jx = [r for r in res.records if r["backend"] == "jax-cpu"]
    assert jx[0]["fairness"]["x64"] is True  # set in the worker, not in this process

    # resume: nothing left to do, then one more size
    again = run_benchmark(RunConfig(**cfg, resume=True))
    assert again.records == []
    assert again.already_done == 4
    more = run_benchmark(RunConfig(**{**cfg, "sizes": ["4", "6", "3"]}, resume=True))
    assert {r["size_label"] for r in more.records} == {"3"}
    assert len(more.records) == 2
    res = read_results(out)
    assert len(res.headers) == 3
    assert len(res.latest()) == 6


def test_resume_between_the_passes_gives_every_cell_its_second_pass(tmp_path):
    """A side-by-side run stopped after its first pass (and inside a group): the
    resumed run measures the broken group whole and runs the second pass of the
    groups whose first pass is in the file, as one uninterrupted run would."""
    require_backend("array-api-strict")
    out = tmp_path / "r.jsonl"
    # three passes whatever they say (no extra pass for disagreeing ones): counts stay fixed
    cfg = dict(backends=["numpy", "array-api-strict"], cases=["q3_solve_sweep"],
               sizes=["4", "6"], scale="quick", out=out,
               timer=dataclasses.replace(FAST, min_passes=3, max_passes=3), time_limit=120,
               calibrate=False, stall_factor=1e9)
    run_benchmark(RunConfig(**cfg))
    whole = read_results(out)
    assert len(whole.records) == 8  # 4 first-pass records, then the 4 merged ones
    first = whole.records[:4]
    assert all("passes" not in r["side_by_side"] for r in first)
    # stopped after the first pass of size 4 and the numpy cell of size 6
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:4]) + "\n")
    events = []
    again = run_benchmark(RunConfig(**cfg, resume=True),
                          progress=lambda e, p, i, n: events.append((e, p, n)))
    plan = events[0]
    assert plan[0] == "plan"
    assert plan[1]["second_pass"] == 2
    assert plan[1]["cells"] == 2
    assert plan[2] == 2 + 2 * 2
    new = [(r["size_label"], r["backend"], "passes" in r["side_by_side"]) for r in again.records]
    assert sorted(new) == sorted([("4", "numpy", True), ("4", "array-api-strict", True),
                                  ("6", "numpy", False), ("6", "array-api-strict", False),
                                  ("6", "numpy", True), ("6", "array-api-strict", True)])
    latest = read_results(out).latest()
    assert len(latest) == 4
    for r in latest.values():
        sbs = r["side_by_side"]
        assert len(sbs["passes"]) == 3, r["key"]
        assert r["verdict"]["passes"] == 3  # drawn from every pass, the resumed ones too
    kept = {r["key"]: r for r in first[:2]}  # size 4: its first pass is the one in the file
    for key, r in kept.items():
        n1 = r["side_by_side"]["rounds"]
        assert latest[key]["side_by_side"]["round_s"][:n1] == r["side_by_side"]["round_s"]
        assert latest[key]["side_by_side"]["passes"][0]["rounds"] == n1
    # nothing left: a third resume runs nothing
    third = run_benchmark(RunConfig(**cfg, resume=True))
    assert third.records == []
    assert third.already_done == 4


def test_side_by_side_resume_plan():
    from xlinalg.bench._runner import _side_by_side_resume

    def cell(size, backend):
        return {"key": f"c|{backend}|float64|{size}", "case": "c", "dtype": "float64",
                "size_label": size, "backend": backend}

    def rec(status="ok", passes=False):
        sbs = {"round_s": [1.0], **({"passes": [{}, {}]} if passes else {})}
        return {"status": status, "side_by_side": sbs}

    cells = [cell(s, b) for s in ("1", "2", "3") for b in ("a", "b")]
    latest = {cells[0]["key"]: rec(passes=True), cells[1]["key"]: rec("failed"),
              cells[2]["key"]: rec(), cells[3]["key"]: rec("skipped"),
              cells[4]["key"]: rec()}  # size 3, backend b: never recorded
    todo = [cells[1], cells[5]]  # --retry-failed left the failed one out of the finished
    got, second = _side_by_side_resume(cells, todo, latest, recheck=True)
    # the failed cell alone (as asked); size 3 whole (its b cell was never recorded)
    assert [c["key"] for c in got] == [cells[1]["key"], cells[4]["key"], cells[5]["key"]]
    # size 2, backend a: first pass only; the skipped one rides along (no pass of its
    # own): its record gets the verdict drawn from every pass, not keep the first's
    assert [c["key"] for c, _ in second] == [cells[2]["key"], cells[3]["key"]]
    assert _side_by_side_resume(cells, todo, latest, recheck=False)[1] == []


def test_run_in_process(tmp_path):
    out = tmp_path / "r.jsonl"
    s = run_benchmark(RunConfig(backends=["numpy"], cases=["a1_gemm"], sizes=["8"], out=out,
                                timer=FAST, isolate=False, threads=1))
    r = s.records[0]
    assert r["status"] == "ok"
    assert r["fairness"]["threads"]["requested"] == 1
    assert all(lib["num_threads"] == 1 for lib in r["fairness"]["threads"]["blas"]
               if lib.get("user_api") == "blas")


def test_importing_the_bench_imports_no_array_library():
    code = (
        "import sys, xlinalg, xlinalg.bench, xlinalg.cli\n"
        "bad = [m for m in ('torch', 'jax', 'cupy', 'dask', 'array_api_strict', 'rich', "
        "'threadpoolctl', 'psutil', 'pytest') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "dask"])
def test_a_case_with_several_outputs(backend, temp_cases):
    """e.g. SVD: the result is brought to the host member by member and mapped to
    what the reference returns."""
    temp_cases.append("t_svd")
    register_case(Case(
        name="t_svd",
        sizes={"quick": [6]},
        setup=lambda rng, n: (rng.standard_normal((n, n)),),
        op=lambda ctx, a: ctx.xp.linalg.svd(a),
        reference=lambda a: (np.linalg.svd(a)[1], a),
        result_for_check=lambda r: (r[1], (r[0] * r[1]) @ r[2]),
    ), replace=True)
    r = run_cell("t_svd", backend, 6, memory=False)
    assert r["status"] == "ok", r.get("error") or r.get("check")
    assert len(r["check"]["members"]) == 2
    assert check_result((np.ones(2),), (np.ones(2), np.ones(2)), 1e-9)["verdict"] == "wrong"


def test_bench_public_surface():
    import importlib

    import xlinalg.bench as bench

    assert bench.__all__ == sorted(bench.__all__)
    for mod in ("bench._cases", "bench._cell", "bench._fairness", "_machine", "bench._memory", "bench._runner",
                "bench._selfcheck", "bench._store", "bench._resultsfile", "bench._calibration",
                "bench._study", "study.cases", "bench._timer", "bench._worker", "bench._stats",
                "bench._sidebyside", "bench._compare", "bench._workerproc"):
        m = importlib.import_module(f"xlinalg.{mod}")
        assert isinstance(m.__all__, list), mod
        for name in m.__all__:
            assert hasattr(m, name), f"{mod}.__all__ names missing {name}"
    for name in bench.__all__:
        assert hasattr(bench, name)
