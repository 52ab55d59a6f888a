"""compare's noise model, its labels and exit codes; verdicts that never count a
wrong result (issue 35; issue 34 points 13, 18, 19, 20)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CPU_BACKENDS, require_backend
from test_bench_schema import result, run_cli, write
from test_bench_sidebyside import Clock, FakeClient, T, _failed, _file, _pass
from xlinalg.bench._compare import compare_records, noise_from_pair
from xlinalg.bench._passes import merge_passes
from xlinalg.bench._sidebyside import measure_group


def _flagged(rows, flag="REGRESSION"):
    return sorted(r["key"] for r in rows if r["flag"] == flag)


# ---------------------------------------------------------------------- noise from the files
def test_a_regression_does_not_widen_its_own_interval():
    # the case: 6 of 16 cells 1.5x slower, each file's passes within ~3 %.
    # Noise estimated from the pair itself (the old rule) made the spread +-23 %
    # and flagged 0 of 6; the files' own passes flag exactly the 6
    slowed = dict.fromkeys(range(0, 16, 3), 1.5)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        rows = compare_records(_file(rng, cells=16, pass_noise=0.03),
                               _file(rng, slowed, cells=16, pass_noise=0.03))
        assert _flagged(rows) == sorted(f"c{i}|numpy|float64|4" for i in slowed), seed
        # ... and the same code twice flags nothing
        same = compare_records(_file(rng, cells=16, pass_noise=0.03),
                               _file(rng, cells=16, pass_noise=0.03))
        assert not [r for r in same if not r["flag"].startswith("~")], seed


def test_a_uniform_slowdown_is_one_machine_shift():
    rng = np.random.default_rng(3)
    old = _file(rng, cells=16, pass_noise=0.03)
    rows = compare_records(old, _file(rng, dict.fromkeys(range(16), 1.3), cells=16,
                                      pass_noise=0.03))
    r0 = rows[0]
    assert r0["shift_removed"] is True
    assert 1.2 < r0["shift_lo"] <= r0["shift"] <= r0["shift_hi"] < 1.4
    assert _flagged(rows) == []  # not 16 regressions
    # a cell slower on top of the shift is still found, judged against the shift
    rows = compare_records(old, _file(rng, {**dict.fromkeys(range(16), 1.3), 5: 2.6},
                                      cells=16, pass_noise=0.03))
    assert _flagged(rows) == ["c5|numpy|float64|4"]
    assert rows[5]["judged_ratio"] == pytest.approx(rows[5]["ratio"] / rows[5]["shift"])
    # no shift beyond the threshold: nothing removed
    rows = compare_records(old, _file(rng, cells=16, pass_noise=0.03))
    assert rows[0]["shift_removed"] is False


def test_noise_from_an_aa_pair():
    rng = np.random.default_rng(8)
    old, new = _file(rng, pass_noise=0.01), _file(rng, {2: 1.3}, pass_noise=0.01)
    assert _flagged(compare_records(old, new)) == ["c2|numpy|float64|4"]
    # an A/A pair on this machine moved every cell by ~30 %: 1.3x is within that
    a, b = _file(rng, pass_noise=0.01), _file(rng, pass_noise=0.01)
    for i, k in enumerate(b):
        for rec in (b[k],):
            f = 1.35 if i % 2 else 1 / 1.35
            rec["time"]["median_s"] *= f
    noise = noise_from_pair(a, b)
    assert set(noise) == set(a)
    rows = compare_records(old, new, noise=noise)
    assert _flagged(rows) == []
    assert rows[2]["se_passes"] == pytest.approx(math.sqrt(noise[rows[2]["key"]]))


def test_one_pass_files_flag_nothing_without_a_noise_estimate():
    rng = np.random.default_rng(9)
    old, new = _file(rng, passes=1), _file(rng, {0: 3.0}, passes=1)
    for recs in (old, new):
        for r in recs.values():
            del r["time"]["passes"]
    rows = compare_records(old, new)
    assert rows[0]["flag"].startswith("~ (one pass: no noise between processes")


# ---------------------------------------------------------------------- labels (34: 13, 19, 20)
def test_the_threshold_decides_the_label_too():
    rng = np.random.default_rng(4)
    old = _file(rng, pass_noise=0.005, rel=0.002)
    new = _file(rng, {0: 1.3, 1: 2.0, 2: 0.4, 3: 1 / 1.3}, pass_noise=0.005, rel=0.002)
    rows = compare_records(old, new, threshold=0.4)
    # 1.3x slower and 1.3x faster at a 40 % threshold: real, below it (not "improvement")
    assert rows[0]["flag"] == "~ (a real difference below the threshold)"
    assert rows[3]["flag"] == "~ (a real difference below the threshold)"
    assert rows[1]["flag"] == "REGRESSION"
    assert rows[2]["flag"] == "improvement"
    # every label agrees with its interval and the threshold
    for r in rows:
        if r["flag"] == "REGRESSION":
            assert r["lo"] > 1.4
        elif r["flag"] == "improvement":
            assert r["hi"] < 1 / 1.4
        elif r["flag"] == "~":
            assert r["lo"] <= 1.0 <= r["hi"]
    # the default 5 % flags all four
    assert [r["flag"] for r in compare_records(old, new)[:4]] == [
        "REGRESSION", "REGRESSION", "improvement", "improvement"]


def test_not_comparable_says_why():
    rng = np.random.default_rng(5)
    old, new = _file(rng), _file(rng)
    k0, k1, k2 = list(old)[:3]
    old[k0]["time"]["median_s"] = 0.0
    new[k1]["time"]["median_s"] = -1.0
    new[k2]["status"] = "failed"
    new[k2]["error"] = {"kind": "oom", "message": "worker ran out of memory"}
    rows = compare_records(old, new)
    assert rows[0]["flag"] == ("not comparable (ok -> ok: old has no positive finite median "
                               "time (got 0.0))")
    assert "new has no positive finite median time (got -1.0)" in rows[1]["flag"]
    assert rows[2]["flag"] == "not comparable (ok -> failed: new failed: worker ran out of memory)"


def test_a_result_that_became_wrong_is_noted():
    rng = np.random.default_rng(6)
    old, new = _file(rng), _file(rng, {1: 2.0})
    k0, k1, k2 = list(old)[:3]
    new[k0]["status"] = "wrong"
    new[k1]["status"] = "wrong"
    old[k2]["status"] = new[k2]["status"] = "wrong"
    rows = compare_records(old, new)
    assert rows[0]["flag"] == "~ (now WRONG)"
    assert rows[1]["flag"] == "REGRESSION (now WRONG)"
    assert "WRONG" not in rows[2]["flag"]  # wrong before too: not news


# ---------------------------------------------------------------------- the CI gate
def _records(recs: dict) -> list:
    out = []
    for i, r in enumerate(recs.values()):
        rec = result(size=i + 1, median=r["time"]["median_s"])
        rec["time"].update(raw_s=r["time"]["raw_s"], passes=r["time"]["passes"])
        out.append(rec)
    return out


def test_fail_on_regression_exit_codes(tmp_path):
    rng = np.random.default_rng(7)
    base = write(tmp_path / "a.jsonl", _records(_file(rng)))
    same = write(tmp_path / "b.jsonl", _records(_file(rng)))
    slow = write(tmp_path / "c.jsonl", _records(_file(rng, {0: 1.5, 4: 1.5})))
    shifted = write(tmp_path / "d.jsonl", _records(_file(rng, dict.fromkeys(range(12), 1.3))))
    code, out, err = run_cli("compare", str(base), str(same), "--fail-on", "regression")
    assert code == 0, out + err
    code, out, err = run_cli("compare", str(base), str(slow), "--fail-on", "regression")
    assert code == 1, out
    assert "2 REGRESSION" in out
    assert "--fail-on regression: 2 REGRESSION(s): exit 1" in err
    assert run_cli("compare", str(base), str(slow))[0] == 0  # no gate asked: 0
    # a uniform slowdown: one line, no cell flagged; a gate on shifts fails on it
    code, out, err = run_cli("compare", str(base), str(shifted), "--fail-on", "regression")
    assert code == 0, out
    assert out.count("MACHINE SHIFT: all cells moved by x1.") == 1
    assert "REGRESSION" not in out
    assert run_cli("compare", str(base), str(shifted), "--fail-on", "shift")[0] == 1
    assert run_cli("compare", str(base), str(same), "--fail-on", "shift")[0] == 0
    # the A/A pair as the noise: read from files
    code, out, _ = run_cli("compare", str(base), str(slow), "--noise", str(base), str(same))
    assert code == 0
    assert "noise from the A/A pair" in out
    assert run_cli("compare", str(base), str(slow), "--fail-on", "nothing")[0] == 2


# ---------------------------------------------------------------------- wrong results (34: 18)
class WrongClient(FakeClient):
    def finish(self, timeout):
        return {"event": "result", "record": self._rec("wrong")}


def test_a_fast_wrong_backend_is_never_named_fastest():
    clock = Clock()
    clients = {"fast_wrong": WrongClient("fast_wrong", clock, lambda i: 0.1),
               "a": FakeClient("a", clock, lambda i: 1.0),
               "b": FakeClient("b", clock, lambda i: 2.0)}
    cells = {n: {"key": n, "backend": n} for n in clients}
    res = measure_group(cells, clients, timer=T, failed_record=_failed, clock=clock,
                        loadavg=lambda: None)
    v = res.records["a"]["verdict"]
    assert v["fastest"] == "a"  # not fast_wrong, 10x faster but wrong
    assert v["excluded"] == {"fast_wrong": "wrong"}
    assert "fast_wrong" not in res.records["a"]["ratios"]
    assert res.records["fast_wrong"]["verdict"] is v
    # alone with it: no verdict at all
    clock = Clock()
    clients = {"fast_wrong": WrongClient("fast_wrong", clock, lambda i: 0.1),
               "a": FakeClient("a", clock, lambda i: 1.0)}
    res = measure_group({n: {"key": n, "backend": n} for n in clients}, clients, timer=T,
                        failed_record=_failed, clock=clock, loadavg=lambda: None)
    assert res.records["a"]["verdict"]["fastest"] is None
    assert res.records["a"]["verdict"]["text"] == "only a ran"


def test_merged_passes_never_count_a_wrong_result():
    specs = {"w": {"cost": lambda i: 0.1}, "a": {"cost": lambda i: 1.0},
             "b": {"cost": lambda i: 2.0}}
    p1, p2, p3 = _pass(specs), _pass(specs), _pass(specs)
    p2["w"]["status"] = "wrong"  # wrong in one pass only: wrong
    m = merge_passes([p1, p2, p3], margin=1.05, level=0.95, seed=0)
    assert m["w"]["status"] == "wrong"
    assert m["a"]["verdict"]["fastest"] == "a"
    assert m["a"]["verdict"]["excluded"] == {"w": "wrong"}
    assert "w" not in m["a"]["ratios"]


# ---------------------------------------------------------------------- peaks (35)
@pytest.mark.parametrize("name", CPU_BACKENDS)
def test_calib_stream_writes_into_a_preallocated_output_where_it_can(name):
    require_backend(name)
    from xlinalg.backends import get_backend
    from xlinalg.bench._cases import Ctx, get_case

    b = get_backend(name)
    xp = b.bench.native_namespace()
    ctx = Ctx(backend=name, xp=xp, xl=None, dtype="float64",
              native_dtype=b.bench.native_dtype("float64"), size=64)
    add = get_case("calib_stream").build(ctx)
    a, c = b.from_numpy(np.arange(64.0)), b.from_numpy(np.ones(64))
    first, second = add(a, c), add(a, c)
    for r in (first, second):
        np.testing.assert_array_equal(np.asarray(b.to_numpy(r)), np.arange(64.0) + 1)
    note = get_case("calib_stream").notes.get(name, "")
    if b.lazy:  # a graph: the case says it allocates
        assert "lazy" in note, (name, note)
    else:  # with out= (NumPy, PyTorch) the same buffer every call (STREAM); where a
        # library has none, the case says so beside its cells, and only there
        assert (first is second) != ("no out=" in note), (name, note)


def test_calibration_rates_are_from_the_best_sample(tmp_path):
    from xlinalg.bench import RunConfig, read_results, run_benchmark

    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["calib_stream", "a4_add"], sizes=["4096"],
                            scale="quick", out=out, isolate=False, memory=False, calibrate=False))
    recs = {r["case"]: r for r in read_results(out).records}
    st, add = recs["calib_stream"], recs["a4_add"]
    assert st["throughput"]["rate_of"] == "best sample"
    assert st["throughput"]["gbs"] == pytest.approx(
        st["throughput"]["bytes"] / st["time"]["min_s"] / 1e9)
    assert "rate_of" not in add["throughput"]  # an ordinary cell: its median
    assert add["throughput"]["gbs"] == pytest.approx(
        add["throughput"]["bytes"] / add["time"]["median_s"] / 1e9)


# ---------------------------------------------------------------------- words (35)
def _starved_group():
    """A group measured side by side whose torch-cpu worker was starved: no verdict."""
    from xlinalg.bench._passes import group_verdict

    v = group_verdict({"numpy": [1.0] * 5, "torch-cpu": [3.0] * 5},
                      {"numpy": 1.0, "torch-cpu": 0.2}, {}, margin=1.05, level=0.95, seed=0)
    out = {}
    for b, t in (("numpy", 1e-3), ("torch-cpu", 3e-3)):
        r = result(case="a1_gemm", backend=b, size=[128, 256, 512], median=t)
        r["verdict"] = v
        r["ratios"] = {o: {"ratio": t / u, "lo": 0.9 * t / u, "hi": 1.1 * t / u}
                       for o, u in (("numpy", 1e-3), ("torch-cpu", 3e-3)) if o != b}
        out[b] = r
    return out


def test_a_cell_without_a_verdict_says_so_everywhere():
    from xlinalg._cli._table import conclusion_line, verdicts
    from xlinalg.bench import _findings as F
    from xlinalg.study._findings._article import compare_text
    from xlinalg.study._findings._summary import _generic_line

    by = _starved_group()
    texts = {
        "terminal table": next(iter(verdicts(list(by.values()))[1].values())),
        "findings": F.verdict(by)["text"],
        "overview rows": _generic_line(F.winners(list(by.values()))),
        "article claims": compare_text(by["numpy"], by["torch-cpu"], 2.0)[1],
        "last lines": conclusion_line(list(by.values())),
    }
    for where, text in texts.items():
        assert "no verdict" in text, (where, text)
        assert "torch-cpu ran only 20%" in text, (where, text)
        assert "tie" not in text, (where, text)
        assert "refuted" not in text, (where, text)
        assert "agrees" not in text, (where, text)
    assert texts["last lines"].startswith("concluded nothing: no group of 1")
    assert F.verdict(by)["winner"] is None


def test_article_figures_divide_to_the_ratio_printed_beside_them():
    import re

    from xlinalg.study._findings._article import compare_text

    rng = np.random.default_rng(12)
    for _ in range(50):
        ta, tb = 10 ** rng.uniform(-5, -1), 10 ** rng.uniform(-5, -1)
        a = result(case="a1_gemm", backend="numpy", size=[128, 256, 512], median=ta)
        b = result(case="a1_gemm", backend="torch-cpu", size=[128, 256, 512], median=tb)
        # a side-by-side ratio that is another statistic (paired rounds): printed apart
        p = ta / tb * rng.uniform(0.7, 1.4)
        a["ratios"] = {"torch-cpu": {"ratio": p, "lo": 0.95 * p, "hi": 1.05 * p}}
        nums, _ = compare_text(a, b, 2.0)
        m = re.match(r"([\d.,]+) ms / ([\d.,]+) ms = ([\d.]+)x", nums)
        assert m, nums
        x, y, q = (float(g.replace(",", "")) for g in m.groups())
        # equal up to the printing: half a unit of q's last digit, and the figures' 3 digits
        unit = 10.0 ** -len(m.group(3).partition(".")[2])
        assert abs(q - x / y) <= unit / 2 + 0.01 * x / y, nums
        assert "paired rounds" in nums


def test_the_runs_winners_are_under_false_discovery_rate_control():
    from xlinalg.bench._findings._verdicts import control_fdr
    from xlinalg.bench._stats import p_beyond

    # a pair clearly beyond the margin has a small p, one at the margin about 1/2
    far = {"ratio": 2.0, "lo": 1.8, "hi": 2.2, "level": 0.95}
    near = {"ratio": 1.05, "lo": 0.95, "hi": 1.16, "level": 0.95}
    assert p_beyond(far, 1.05) < 1e-6
    assert 0.4 < p_beyond(near, 1.05) < 0.6
    t = {"ratio": 1.3, "lo": 1.1, "hi": 1.5, "method": "t over passes", "se_log": 0.05,
         "passes": [1.25, 1.3, 1.35, 1.3]}
    assert 0.005 < p_beyond(t, 1.05) < 0.02  # Student t with 3 df, not the normal (1e-5)
    # 20 groups: one named with p = 0.004, 19 ties: BH at 5 % keeps it (0.004 <= 0.05/20);
    # named with p = 0.02 among 19 ties it does not stand (0.02 > 0.0025)
    def rows(p):
        named = {"winner": "a", "runner_up": "b", "tie": False, "p_margin": p, "text": "a"}
        return [named] + [{"winner": "a", "runner_up": "b", "tie": True, "text": "t"}
                          for _ in range(19)]
    kept = rows(0.002)
    control_fdr(kept)
    assert kept[0]["tie"] is False
    dropped = rows(0.02)
    control_fdr(dropped)
    assert dropped[0]["tie"] is True
    assert dropped[0]["text"].startswith("no winner: not beyond the run's false-discovery rate")
    # a verdict with no p-value (an older file) is left as it is
    old = [{"winner": "a", "runner_up": "b", "tie": False, "text": "a"}]
    control_fdr(old)
    assert old[0]["tie"] is False


# ---------------------------------------------------------------------- the slowdown fixture
SLOW_NUMPY = Path(__file__).resolve().parents[1] / "fixtures" / "slow_numpy"


@pytest.mark.parametrize(("backend", "slowed"), [("numpy", True), ("torch-cpu", False)])
def test_the_slowdown_fixture_touches_one_backends_worker_only(backend, slowed):
    """The A/A self-test's injected regression (docs/benchmark.md): NumPy's solve
    and matmul busy-wait in the worker of XL_SLOW_BACKEND only."""
    code = ("import numpy as np; from numpy.linalg import _umath_linalg as L; "
            "print(hasattr(np.matmul, 'xl_slowed'), hasattr(np.linalg.solve, 'xl_slowed'), "
            "hasattr(L.solve, 'xl_slowed'))")
    env = dict(os.environ, PYTHONPATH=str(SLOW_NUMPY), XL_SLOW_FACTOR="1.5",
               XL_SLOW_BACKEND="numpy")
    out = subprocess.run([sys.executable, "-c", code, "--backend", backend], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split() == [str(slowed)] * 3
    env["XL_SLOW_FACTOR"] = "1"  # no slowdown asked: nothing installed
    out = subprocess.run([sys.executable, "-c", code, "--backend", "numpy"], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split() == ["False"] * 3


def test_the_slowdown_fixture_waits_in_proportion():
    import importlib.util
    import time

    spec = importlib.util.spec_from_file_location("slow_fixture", SLOW_NUMPY / "sitecustomize.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # installs nothing here (no --backend in this argv)
    inner = []

    def work():
        t0 = time.perf_counter()
        time.sleep(0.01)
        inner.append(time.perf_counter() - t0)
        return 7

    slow = mod._slowed(work, 1.5)
    t0 = time.perf_counter()
    assert slow() == 7
    # at least 1.5x the call's own time, whatever the load (a lower bound by construction)
    assert time.perf_counter() - t0 >= 1.5 * inner[0]
    assert slow.__wrapped__ is work


# ---------------------------------------------------------------------- the A/A self-test's figures
def _pair_run(pass_ratios: dict[str, list[float]]) -> dict[str, dict]:
    """A run whose groups have one numpy/torch-cpu pair each, with these per-pass ratios."""
    from xlinalg.bench._stats import combine_passes

    run = {}
    for case, ratios in pass_ratios.items():
        passes = [{("numpy", "torch-cpu"): {"ratio": r, "lo": r * 0.99, "hi": r * 1.01, "rounds": 10}}
                  for r in ratios]
        pair = combine_passes(passes)[("numpy", "torch-cpu")]
        run[f"{case}|numpy|float64|4"] = {"backend": "numpy", "ratios": {"torch-cpu": pair}}
        run[f"{case}|torch-cpu|float64|4"] = {"backend": "torch-cpu", "ratios": {}}
    return run


def test_the_aa_selftest_counts_cross_run_and_pass_to_pass_coverage():
    from xlinalg.bench._compare import aa_selftest

    rng = np.random.default_rng(4)
    steady = {f"c{i}": list(np.exp(rng.normal(0.3, 0.02, 5))) for i in range(20)}
    a = _pair_run(steady)
    b = _pair_run({k: list(np.exp(rng.normal(0.3, 0.02, 5))) for k in steady})
    t = aa_selftest(a, b, [])
    assert t["pairs"] == 20
    assert t["second_in_first"] >= 17
    assert t["first_in_second"] >= 17
    assert t["pass_checks"] == 2 * 20 * 5  # every pass of every pair of both runs, left out once
    assert t["pass_inside"] >= 0.85 * t["pass_checks"]
    # a process with a slow state in one pass of each pair: that pass falls outside
    # the interval of the other four, the others stay inside
    jumpy = _pair_run({k: [1.35, 1.35 * 1.001, 1.35 * 0.999, 1.35 * 1.002, 2.7] for k in steady})
    t = aa_selftest(jumpy, jumpy, [])
    assert t["pass_checks"] == 2 * 20 * 5
    assert t["pass_inside"] == 2 * 20 * 4
    # fewer than 4 passes: nothing to check, never a vacuous 100 %
    t = aa_selftest(_pair_run({"c0": [1.0, 1.1, 1.2]}), _pair_run({"c0": [1.0, 1.1, 1.2]}), [])
    assert t["pass_checks"] == 0


def test_compare_aa_prints_both_coverage_figures(tmp_path):
    rng = np.random.default_rng(5)
    steady = {f"c{i}": list(np.exp(rng.normal(0.3, 0.02, 5))) for i in range(6)}
    paths = []
    for name in ("a", "b"):
        recs = [result(case=k.split("|")[0], backend=k.split("|")[1], ratios=r["ratios"])
                for k, r in _pair_run(steady).items()]
        paths.append(write(tmp_path / f"{name}.jsonl", recs))
    code, out, err = run_cli("compare", *map(str, paths), "--aa")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if ln.startswith("A/A self-test"))
    assert "the second run's ratio inside the first run's 95% interval: 6 of 6 (100%)" in line
    assert "within each run, a pass's ratio inside the interval its other passes predict: 60 of 60 (100%)" in line
