"""Side-by-side measurement: rotation, paired intervals, the tie rule, the stopping
rule, stall detection and compare's threshold, on synthetic clocks and data; one
real run for the worker protocol, the recheck and equal thread footing."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from xlinalg.bench import RunConfig, TimerConfig, read_results, run_benchmark
from xlinalg.bench._compare import compare_records, header_differences
from xlinalg.bench._passes import merge_passes, parallelism_note
from xlinalg.bench._sidebyside import Settle, measure_group, process_cpu_ns
from xlinalg.bench._stats import (
    classify_stall,
    combine_passes,
    paired_ratio,
    passes_disagree,
    ratio_interval,
    rotation,
    stall_factor,
    verdict,
)
from xlinalg.bench._workerproc import ClientFailure


# ---------------------------------------------------------------------- rotation
def test_rotation_puts_every_backend_in_every_position_equally():
    names = ["a", "b", "c"]
    assert rotation(names, 0) == ["a", "b", "c"]
    assert rotation(names, 1) == ["b", "c", "a"]
    assert rotation(names, 2) == ["c", "a", "b"]
    assert rotation(names, 3) == names
    positions = Counter((b, rotation(names, r).index(b)) for r in range(9) for b in names)
    assert set(positions.values()) == {3}  # each backend 3 times first, middle and last
    assert rotation([], 4) == []


# ---------------------------------------------------------------------- intervals
def test_paired_ratio_cancels_drift_shared_by_the_round():
    rng = np.random.default_rng(1)
    load = np.exp(rng.uniform(0, math.log(10), 30))  # the machine slows up to 10x, per round
    b = 1e-3 * load * (1 + 0.01 * rng.standard_normal(30))
    a = 2e-3 * load * (1 + 0.01 * rng.standard_normal(30))
    r = paired_ratio(list(a), list(b))
    assert r is not None
    assert r["lo"] <= 2.0 <= r["hi"]
    assert math.sqrt(r["hi"] / r["lo"]) - 1 < 0.02  # paired: the 10x drift cancels
    # the same values unpaired: the drift dominates the interval
    u = ratio_interval(list(b), list(a))
    assert u is not None
    assert u["hi"] / u["lo"] > 1.5
    # seeded: the same data, the same interval; a/b is exactly the inverse of b/a
    assert paired_ratio(list(a), list(b)) == r
    inv = paired_ratio(list(b), list(a))
    assert inv["ratio"] == pytest.approx(1 / r["ratio"])
    assert inv["lo"] == pytest.approx(1 / r["hi"])
    assert inv["hi"] == pytest.approx(1 / r["lo"])


def test_paired_ratio_skips_missing_rounds():
    assert paired_ratio([1.0, None, 2.0], [1.0, 1.0, None]) is None  # one shared round
    r = paired_ratio([2.0, None, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0])
    assert r["rounds"] == 3
    assert r["ratio"] == pytest.approx(2.0)
    assert paired_ratio([1.0, float("nan"), -1.0, 1.0], [1.0, 1.0, 1.0, 1.0])["rounds"] == 2


# ---------------------------------------------------------------------- tie rule
def _noisy(rng, t, n=25, rel=0.02):
    return list(t * (1 + rel * rng.standard_normal(n)))


def test_verdict_names_the_fastest_only_beyond_the_margin():
    rng = np.random.default_rng(2)
    clear = verdict({"numpy": _noisy(rng, 1.0), "torch": _noisy(rng, 1.5),
                     "jax": _noisy(rng, 2.0)}, margin=1.05)
    assert clear["fastest"] == "numpy"
    assert clear["speedup"]["over"] == "torch"
    assert clear["speedup"]["lo"] > 1.05
    assert clear["text"].startswith("numpy, ")
    assert clear["text"].endswith(" over torch")
    # 3 % apart: inside the 5 % margin -> a tie, however many rounds
    close = verdict({"numpy": _noisy(rng, 1.0, 200, 0.001), "torch": _noisy(rng, 1.03, 200, 0.001),
                     "jax": _noisy(rng, 2.0)}, margin=1.05)
    assert close["fastest"] is None
    assert close["tie"] == ["numpy", "torch"]
    # tightly measured 3 % apart: a real difference, below the margin (not "within noise")
    assert close["text"].startswith("a real difference below the margin (numpy 1.03x [1.02-1.04] vs torch")
    assert close["below_margin"] == ["torch"]
    same = verdict({"numpy": _noisy(rng, 1.0, 50, 0.02), "torch": _noisy(rng, 1.0, 50, 0.02)})
    assert same["text"].startswith("tie within noise")  # the interval holds 1
    assert same["below_margin"] == []
    # 20 % apart but very noisy: the interval reaches below the margin -> a tie
    wide = verdict({"a": _noisy(rng, 1.0, 5, 0.5), "b": _noisy(rng, 1.2, 5, 0.5)}, margin=1.05)
    assert wide["fastest"] is None
    # a larger margin turns a clear verdict into a tie
    assert verdict({"a": _noisy(rng, 1.0), "b": _noisy(rng, 1.3)}, margin=1.5)["fastest"] is None
    assert verdict({"a": [1.0, 1.0]})["text"] == "only a ran"


def test_passes_disagree_when_their_intervals_do_not_overlap():
    p1 = {("a", "b"): {"ratio": 1.0, "lo": 0.99, "hi": 1.01},
          ("b", "a"): {"ratio": 1.0, "lo": 0.99, "hi": 1.01}}
    p2 = {("a", "b"): {"ratio": 1.005, "lo": 1.0, "hi": 1.02},
          ("b", "a"): {"ratio": 0.995, "lo": 0.98, "hi": 1.0}}
    assert passes_disagree([p1, p2]) == []  # overlapping: the same process state
    p3 = {("a", "b"): {"ratio": 2.0, "lo": 1.9, "hi": 2.1}}  # another state
    assert passes_disagree([p1, p2, p3]) == [("a", "b")]
    assert passes_disagree([p3]) == []  # one pass: nothing to disagree with
    # the number of rounds is never chosen from the width of an interval
    from xlinalg.bench import _stats
    assert not hasattr(_stats, "precise_enough")


# ---------------------------------------------------------------------- measure_group
class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeClient:
    """A backend whose samples cost `cost(round)` seconds of synthetic time."""

    def __init__(self, name, clock, cost, *, cores=1.0, fail_at=None, skip=False, log=None):
        self.name, self.clock, self.cost, self.cores = name, clock, cost, cores
        self.fail_at, self.skip, self.log = fail_at, skip, log if log is not None else []
        self.n = 0
        self.times: list[float] = []

    def _rec(self, status="ok"):
        med = float(np.median(self.times)) if self.times else 1.0
        return {"key": self.name, "backend": self.name, "status": status,
                "time": {"median_s": med, "raw_s": list(self.times)}}

    def begin(self, cell, timeout):
        self.clock.t += 0.01
        if self.skip:
            return {"event": "result", "record": self._rec("skipped")}
        return {"event": "ready", "number": 1}

    def sample(self, timeout):
        self.log.append(self.name)
        if self.fail_at is not None and self.n == self.fail_at:
            raise ClientFailure("crash", f"{self.name} died")
        t = self.cost(self.n)
        self.times.append(t)
        self.n += 1
        self.clock.t += t
        return {"event": "samples", "times": [t], "number": 1, "wall_s": t,
                "cpu_s": t * self.cores}

    def finish(self, timeout):
        return {"event": "result", "record": self._rec()}


def _failed(cell, kind, message, wall):
    return {"key": cell["key"], "backend": cell["backend"], "status": "failed",
            "error": {"kind": kind, "message": message}}


def _group(specs, timer, **kw):
    clock = Clock()
    log: list[str] = []
    clients = {n: FakeClient(n, clock, log=log, **s) for n, s in specs.items()}
    cells = {n: {"key": n, "backend": n} for n in specs}
    loads = iter(range(1000))
    res = measure_group(cells, clients, timer=timer, failed_record=_failed, clock=clock,
                        loadavg=lambda: float(next(loads)), **kw)
    return res, log


T = TimerConfig(min_samples=5, max_samples=40, min_run_time=0.0, max_run_time=100.0,
                hard_min_samples=3)


def test_group_rounds_are_rotated_and_recorded():
    res, log = _group({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0},
                       "c": {"cost": lambda i: 4.0, "cores": 2.0}}, T)
    assert res.stop == "rounds done"  # min_samples rounds, whatever the intervals say
    assert len(res.orders) == 5
    assert res.orders[:3] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert log[:6] == ["a", "b", "c", "b", "c", "a"]
    rec = res.records["a"]
    sbs = rec["side_by_side"]
    assert sbs["rounds"] == 5
    assert sbs["order"] == res.orders
    assert sbs["round_s"] == [1.0] * 5
    assert sbs["effective_cores"] == pytest.approx(1.0)
    assert sbs["load_avg_1min"]["samples"] == 6  # before each round and at the end
    assert rec["ratios"]["b"]["ratio"] == pytest.approx(0.5)
    assert rec["verdict"]["fastest"] == "a"
    assert res.records["c"]["verdict"] is rec["verdict"]
    # c kept two cores busy, a and b one: the verdict says so
    assert "not the same parallelism" in rec["verdict"]["parallelism_note"]
    assert rec["verdict"]["effective_cores"]["c"] == pytest.approx(2.0)


def test_group_stops_at_max_rounds_or_budget_when_noisy():
    rng = np.random.default_rng(3)
    noisy = {"a": {"cost": lambda i: float(rng.uniform(1, 3))},
             "b": {"cost": lambda i: float(rng.uniform(1, 3))}}
    # noise does not buy rounds: a pass has min_samples of them, noisy or not
    res, _ = _group(noisy, T)
    assert res.stop == "rounds done"
    assert len(res.orders) == T.min_samples
    # min_run_time asks for more (short calls), up to max_samples or the budget
    long = TimerConfig(min_samples=5, max_samples=40, min_run_time=1e9, max_run_time=1e9,
                       hard_min_samples=3)
    res, _ = _group(noisy, long)
    assert res.stop == "max rounds"
    assert len(res.orders) == 40
    budget = TimerConfig(min_samples=5, max_samples=1000, min_run_time=1e9, max_run_time=20.0,
                         hard_min_samples=3)
    res, _ = _group(noisy, budget)
    assert res.stop == "time budget spent"
    assert 20 <= sum(r for r in res.rounds["a"] if r) + sum(r for r in res.rounds["b"] if r) < 50


def test_a_failing_backend_leaves_the_rounds_and_the_others_go_on():
    res, _ = _group({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 1.0, "fail_at": 2},
                     "c": {"cost": lambda i: 3.0, "skip": True}}, T)
    assert res.records["b"]["status"] == "failed"
    assert res.records["b"]["error"]["kind"] == "crash"
    assert res.records["c"]["status"] == "skipped"
    assert "c" not in res.rounds  # skipped at begin: never sampled
    assert res.rounds["b"][:2] == [1.0, 1.0]
    assert res.rounds["b"][2:] == [None] * (
        len(res.orders) - 2)
    assert res.records["a"]["status"] == "ok"
    assert res.records["a"]["verdict"]["text"] == "only a ran"
    assert res.records["a"]["verdict"]["excluded"] == {"b": "failed"}


def test_time_limit_is_per_backend_over_the_whole_cell():
    res, _ = _group({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 10.0}}, T,
                    time_limit=25.0)
    assert res.records["b"]["status"] == "failed"
    assert res.records["b"]["error"]["kind"] == "timeout"
    assert res.records["a"]["status"] == "ok"


def test_no_verdict_when_a_worker_waited_for_the_cpu_most_of_the_time():
    # a is 3x faster, but b's worker ran only 20 % of the wall time: the times
    # measure the scheduler, and the verdict says so instead of naming a
    res, _ = _group({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 3.0, "cores": 0.2}},
                    T)
    v = res.records["a"]["verdict"]
    assert v["fastest"] is None
    assert v["tie"] == []  # nothing concluded: not a tie
    assert v["no_verdict"].startswith("b ran only 20%")
    assert v["starved"] == {"b": pytest.approx(0.2)}
    assert v["text"].startswith("no verdict: b ran only 20%")
    assert "oversubscribed" in v["parallelism_note"]
    assert res.records["a"]["ratios"]["b"]["ratio"] == pytest.approx(1 / 3)  # still recorded
    # no verdict can come from more rounds: they stop at the minimum, not at the budget
    assert res.stop == "starved: b below 0.5 cores"
    assert len(res.orders) == T.min_samples


class SpinWorld:
    """Backends on a 2-core machine where one library's threads keep spinning for
    `tail` seconds after each visit: a 2-thread backend that starts while they spin
    gets one core and takes twice as long (OpenBLAS's threads do this for ~0.1 s)."""

    def __init__(self, clock: Clock, tail: float) -> None:
        self.clock, self.tail = clock, tail
        self.spin_until = dict[str, float]()

    def cost(self, name: str, base: float, spinner: bool):
        def f(i: int) -> float:
            others = [t for b, t in self.spin_until.items() if b != name]
            slowed = any(self.clock.t < t for t in others)
            return base * (2.0 if slowed else 1.0)
        return f

    def ended(self, name: str) -> None:
        self.spin_until[name] = self.clock.t + self.tail

    def cpu_ns(self, name: str) -> int:
        # one core busy while spinning: CPU time grows with the clock until the tail ends
        end = self.spin_until.get(name, 0.0)
        return int(1e9 * (min(self.clock.t, end) + 10.0))


class SpinClient(FakeClient):
    def __init__(self, name, clock, world, base, *, spinner=False, log=None):
        super().__init__(name, clock, world.cost(name, base, spinner), log=log)
        self.world, self.spinner = world, spinner

    def sample(self, timeout):
        out = super().sample(timeout)
        if self.spinner:
            self.world.ended(self.name)
        return out


def _spin_group(settle: bool):
    clock = Clock()
    world = SpinWorld(clock, tail=0.1)
    clients = {"np": SpinClient("np", clock, world, 0.01, spinner=True),
               "tc": SpinClient("tc", clock, world, 0.02),
               "jx": SpinClient("jx", clock, world, 0.03)}
    cells = {n: {"key": n, "backend": n} for n in clients}

    def sleep(dt: float) -> None:
        clock.t += dt

    st = Settle(world.cpu_ns, clock=clock, sleep=sleep) if settle else None
    return measure_group(cells, clients, timer=T, failed_record=_failed, clock=clock,
                         loadavg=lambda: None, settle=st)


def test_settle_waits_for_the_previous_backends_spinning_threads():
    # without settling, a backend visited right after "np" runs on one core: its
    # rounds depend on the rotation and the ratios on who came before whom
    raw = _spin_group(settle=False)
    tc = raw.records["tc"]
    assert max(r for r in tc["side_by_side"]["round_s"] if r) == pytest.approx(0.04)
    assert tc["side_by_side"]["settle_s"] == 0.0
    # settled: every visit starts with the other workers idle; exact ratios
    res = _spin_group(settle=True)
    tc, jx = res.records["tc"], res.records["jx"]
    assert tc["side_by_side"]["round_s"] == pytest.approx([0.02] * len(res.orders))
    assert jx["side_by_side"]["round_s"] == pytest.approx([0.03] * len(res.orders))
    assert tc["ratios"]["np"]["ratio"] == pytest.approx(2.0)
    assert jx["ratios"]["tc"]["ratio"] == pytest.approx(1.5)
    assert tc["side_by_side"]["settle_s"] > 0.05  # it waited for np's tail
    assert res.records["np"]["side_by_side"]["settle_s"] < 0.05  # nobody spins before np


def test_settle_gives_up_after_its_limit_and_without_readings():
    clock = Clock()

    def sleep(dt: float) -> None:
        clock.t += dt

    busy = Settle(lambda b: int(clock.t * 1e9), clock=clock, sleep=sleep, max_wait=0.2)
    assert busy(["x"]) == pytest.approx(0.2, abs=0.01)  # never idle: bounded wait
    idle = Settle(lambda b: 5, clock=clock, sleep=sleep)
    assert idle(["x"]) == pytest.approx(0.005)  # one window
    assert Settle(lambda b: None, clock=clock, sleep=sleep)(["x"]) == 0.0
    # a real process: this one, reading its threads' CPU time
    import os

    assert process_cpu_ns(os.getpid()) > 0
    assert process_cpu_ns(2**31 - 3) is None  # no such process: None, no error


def test_parallelism_note():
    assert parallelism_note({"numpy": 1.0, "torch": 1.2}) is None
    assert "numpy 1.0" in parallelism_note({"numpy": 1.0, "torch": 1.9})
    assert parallelism_note({"numpy": 1.0, "torch": None}) is None


# ---------------------------------------------------------------------- stalls
def test_stall_classification():
    assert stall_factor(1.0, 4.0) == 4.0 == stall_factor(4.0, 1.0)
    assert stall_factor(None, 1.0) is None
    ok = classify_stall(1.0, 1.3, None, threshold=2.0)
    assert not ok["stalled"]
    assert ok["how"] == "agrees with its recheck"
    healed = classify_stall(10.0, 1.0, 1.1, threshold=2.0)  # the first was the stall
    assert not healed["stalled"]
    assert healed["how"].startswith("healed")
    off = classify_stall(1.0, 10.0, 1.1, threshold=2.0)  # the recheck was the stall
    assert not off["stalled"]
    assert off["how"].startswith("recheck was off")
    still = classify_stall(10.0, 1.0, 40.0, threshold=2.0)
    assert still["stalled"]
    assert still["factor"] == 10.0


STALL_CASES = textwrap.dedent('''
    """A case slow in some measurements of a worker: a stall on demand, on a virtual
    clock (a call costs what the test says, however busy the machine is)."""
    import os

    from xlinalg.bench import Case, _cell, register_case

    BEGINS = {"n": 0}
    # "measurement number:seconds per call,...": the others take 4 ms a call
    SLOW = {int(k): float(v) for k, v in (x.split(":") for x in
            os.environ.get("XL_TEST_SLOW_BEGINS", "").split(",") if x)}
    COUNTER = os.environ["XL_TEST_BEGIN_FILE"]  # counted over the run's worker processes
    NOW = [0.0]  # the virtual clock: only the op moves it
    TIMER = {"real": None, "next": False}


    def _virtual_clock():
        return NOW[0]


    def _timer(*args, **kwargs):
        # the Timer of the cell set up just before (not the fence self-check's)
        if TIMER["next"]:
            TIMER["next"] = False
            kwargs["clock"] = _virtual_clock
        return TIMER["real"](*args, **kwargs)


    def _setup(rng, n):
        # in a worker process only: the test's own process keeps its Timer
        assert os.getpid() != int(os.environ["XL_TEST_PID"]), "t_stall must run in a worker"
        if TIMER["real"] is None:
            TIMER["real"] = _cell.Timer
            _cell.Timer = _timer
        TIMER["next"] = True
        with open(COUNTER, "a") as f:  # once per measurement of the cell
            f.write("x")
        BEGINS["n"] = os.path.getsize(COUNTER)
        return (rng.standard_normal(n),)


    def _op(ctx, x):
        NOW[0] += SLOW.get(BEGINS["n"], 0.004)
        return x * 2.0


    register_case(Case(name="t_stall", sizes={"quick": [4]}, setup=_setup, op=_op,
                       reference=lambda x: 2.0 * x), replace=True)
''')

FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                   min_samples=3, max_samples=5, max_run_time=1.0)


@pytest.mark.parametrize(("slow", "stalled", "how"), [
    ("1:0.1", False, "healed"),                 # the first measurement stalled
    ("2:0.1", False, "recheck was off"),        # the recheck stalled
    ("1:0.1,3:0.6", True, "still stalled"),     # no two measurements agree
    ("", None, None),                           # nothing stalled
])
def test_recheck_remeasures_and_flags_a_stall(tmp_path, monkeypatch, slow, stalled, how):
    cases = tmp_path / "stall_cases.py"
    cases.write_text(STALL_CASES)
    monkeypatch.setenv("XL_TEST_SLOW_BEGINS", slow)  # 1: first pass, 2: second, 3: remeasure
    monkeypatch.setenv("XL_TEST_BEGIN_FILE", str(tmp_path / "begins"))
    monkeypatch.setenv("XL_TEST_PID", str(os.getpid()))
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=["numpy"], cases=["t_stall"], scale="quick", out=out,
                            timer=FAST, calibrate=False, case_files=[cases], memory=False,
                            time_limit=60, threads=1,
                            stall_factor=4.0))  # 25x stalls on the virtual clock: exact
    res = read_results(out)
    recs = res.records
    assert len(recs) == 2  # the first pass, then the record over the passes (newest wins)
    assert res.latest()["t_stall|numpy|float64|4"] is recs[1]
    passes = recs[1]["time"]["passes"]
    assert recs[1]["side_by_side"]["rounds"] == sum(p["samples"] for p in passes)
    assert recs[1]["verdict"]["passes"] == len(passes)
    if stalled is None:  # nothing off: min_passes passes, no stall field
        assert "stall" not in recs[1]
        assert [round(p["median_s"], 9) for p in passes] == [0.004] * len(passes)  # the virtual clock
        assert len(passes) == FAST.min_passes == 4
        return
    st = recs[1]["stall"]
    assert st["stalled"] is stalled
    assert st["how"].startswith(how)
    assert st["factor"] > 4.0
    # the virtual clock: every pass's median is what the case said, to the rounding
    slow_at = {int(k): float(v) for k, v in (x.split(":") for x in slow.split(","))}
    assert {round(m, 9) for m in st["pass_medians_s"]} <= {0.004, *slow_at.values()}
    # passes that disagree get more passes, up to the cap; every pass stays (a
    # process's state is the noise it is: the interval is built from all of them)
    assert len(passes) == FAST.max_passes == 6
    assert st["pass_medians_s"] == [p["median_s"] for p in passes]
    assert recs[1]["time"]["median_s"] < 0.05  # the median: most passes ran at 4 ms
    # the run's header has the fence self-check of every backend
    assert res.headers[0]["run"]["fence_selfcheck"]["numpy"]["ok"] is True


# ---------------------------------------------------------------------- passes
def _pair(ratio, half=0.01, rounds=7):
    return {("a", "b"): {"ratio": ratio, "lo": ratio * (1 - half), "hi": ratio * (1 + half),
                         "rounds": rounds, "level": 0.95}}


def test_combine_passes_is_a_t_interval_over_the_passes():
    agree = [{("a", "b"): {"ratio": 2.0, "lo": 1.9, "hi": 2.1, "rounds": 20, "level": 0.95}},
             {("a", "b"): {"ratio": 2.0, "lo": 1.95, "hi": 2.2, "rounds": 7, "level": 0.95}}]
    c = combine_passes(agree)[("a", "b")]
    assert c["ratio"] == pytest.approx(2.0)
    assert c["method"] == "t over passes"
    assert c["rounds"] == 27
    assert c["passes"] == [2.0, 2.0]
    # passes that agree exactly: the within-pass noise is the floor, never a point
    assert 1.0 < c["lo"] < 1.95
    assert 2.1 < c["hi"] < 4.0
    # two processes, two states: each pass is tight, the truth is not
    split = [_pair(0.5), _pair(1.0)]
    c = combine_passes(split)[("a", "b")]
    assert c["ratio"] == pytest.approx(math.sqrt(0.5))  # each pass weighs the same
    assert c["lo"] < 0.5
    assert c["hi"] > 1.0
    assert c["between_sd_log"] == pytest.approx(math.log(2) / math.sqrt(2))
    # a pair only one pass has (a backend that failed in the other) keeps that pass
    one = combine_passes([split[0], {}])[("a", "b")]
    assert (one["ratio"], one["method"]) == (0.5, "one pass")
    # ratios of hostile times reach 0 and inf (exp_or_limit): numbers, not a math error
    zero = {("a", "b"): {"ratio": 0.0, "lo": 0.0, "hi": 0.0, "rounds": 4}}
    inf = {("a", "b"): {"ratio": math.inf, "lo": math.inf, "hi": math.inf, "rounds": 4}}
    assert combine_passes([zero, agree[0]])[("a", "b")]["ratio"] == 0.0
    assert combine_passes([inf, agree[0]])[("a", "b")]["ratio"] == math.inf
    both = combine_passes([zero, inf, agree[0]])[("a", "b")]
    assert both["ratio"] == 2.0  # the median of the passes
    assert (both["lo"], both["hi"], both["method"]) == (0.0, math.inf, "span")


def test_intervals_over_passes_hold_their_level_where_one_process_is_one_state():
    # Each pass (process) draws its own state: log ratio = truth + N(0, 0.1); its
    # rounds agree within +-1 %. The interval over 3 passes covers the truth ~95 %
    # of the time; the union of the passes' own intervals (the old rule) far less.
    rng = np.random.default_rng(11)
    hits = union_hits = 0
    trials = 1000
    for _ in range(trials):
        ratios = np.exp(rng.normal(0.0, 0.1, 3))
        c = combine_passes([_pair(float(r)) for r in ratios])[("a", "b")]
        hits += c["lo"] <= 1.0 <= c["hi"]
        union_hits += min(ratios) * 0.99 <= 1.0 <= max(ratios) * 1.01
    # a prediction interval: it covers the truth more often than 95 %, and the next
    # run's ratio (3 passes of its own) 95 % of the time
    assert hits / trials >= 0.97
    nxt = 0
    for _ in range(trials):
        ratios = np.exp(rng.normal(0.0, 0.1, 3))
        c = combine_passes([_pair(float(r)) for r in ratios])[("a", "b")]
        again = math.exp(float(np.mean(rng.normal(0.0, 0.1, 3))))
        nxt += c["lo"] <= again <= c["hi"]
    assert 0.93 <= nxt / trials <= 0.97
    assert union_hits / trials < 0.85


def _pass(specs, **kw):
    res, _ = _group(specs, T, **kw)
    return res.records


def test_merge_passes_names_a_winner_only_when_every_pass_agrees():
    p1 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0}})
    p2 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.1}})
    m = merge_passes([p1, p2], margin=1.05, level=0.95, seed=0)
    assert m["b"]["verdict"]["fastest"] == "a"
    assert m["a"]["ratios"]["b"]["ratio"] == pytest.approx(1 / math.sqrt(2.0 * 2.1))
    sbs = m["a"]["side_by_side"]
    n1, n2 = p1["a"]["side_by_side"]["rounds"], p2["a"]["side_by_side"]["rounds"]
    assert sbs["rounds"] == n1 + n2 == len(sbs["round_s"]) == len(sbs["order"])
    assert [p["rounds"] for p in sbs["passes"]] == [n1, n2]
    assert sbs["stop"] == "pass 1: rounds done; pass 2: rounds done"
    assert m["a"]["verdict"]["passes"] == 2
    # b in the second pass's processes ran at 0.9: a bimodal library, a tie
    p3 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 0.9}})
    m = merge_passes([p1, p3], margin=1.05, level=0.95, seed=0)
    v = m["a"]["verdict"]
    assert v["fastest"] is None
    assert v["text"].startswith("tie within noise")
    r = m["b"]["ratios"]["a"]
    assert r["lo"] <= 0.9
    assert r["hi"] >= 2.0
    t = m["b"]["time"]
    assert t["raw_s"] == p1["b"]["time"]["raw_s"] + p3["b"]["time"]["raw_s"]
    assert [p["median_s"] for p in t["passes"]] == [2.0, 0.9]
    assert t["passes_spread"] == pytest.approx(2.0 / 0.9)
    assert t["samples"] == len(t["raw_s"])


def test_a_long_series_is_bootstrapped_in_bounded_memory(monkeypatch):
    from xlinalg.bench import _stats

    v = np.log(np.random.default_rng(1).uniform(1.0, 2.0, 500))
    one = _stats._boot_median(v, seed=3, n_boot=2000)
    monkeypatch.setattr(_stats, "_BOOT_BLOCK", 7 * 500)  # blocks of 7 resamples
    blocks = _stats._boot_median(v, seed=3, n_boot=2000)
    np.testing.assert_array_equal(blocks, one)  # the same draws, in blocks


@pytest.mark.parametrize("rate_of", [None, "best sample"])
def test_merged_rates_are_those_of_the_merged_time(rate_of):
    # a record merged from passes gets its GFLOP/s and GB/s from its own time over
    # every pass's rounds (the best sample for a calibration's peak), not the first
    # pass's rates: the report prints both side by side and they must divide
    p1 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0}})
    p2 = _pass({"a": {"cost": lambda i: 0.5}, "b": {"cost": lambda i: 2.0}})
    for p in (p1, p2):
        med = p["a"]["time"]["median_s"]
        p["a"]["throughput"] = {"flops": 3e9, "gflops": 3.0 / med, "bytes": 4e9, "gbs": 4.0 / med,
                                "above_peak": {"gbs": {"rate": 9.0, "peak": 1.0}},
                                "cache_resident": True}
        if rate_of:
            p["a"]["throughput"]["rate_of"] = rate_of
    m = merge_passes([p1, p2], margin=1.05, level=0.95, seed=0)
    t, thr = m["a"]["time"], m["a"]["throughput"]
    at = t["min_s"] if rate_of else t["median_s"]
    assert at != p1["a"]["time"]["median_s"]  # the merge moved the time...
    assert thr["gflops"] == pytest.approx(3.0 / at)  # ... and the rates with it
    assert thr["gbs"] == pytest.approx(4.0 / at)
    assert "above_peak" not in thr  # the marks judged the old rate
    assert "cache_resident" not in thr
    assert thr.get("rate_of") == rate_of
    assert "throughput" not in m["b"] or m["b"]["throughput"] == p1["b"].get("throughput")



def test_a_first_pass_read_back_from_a_file_is_merged_only_when_usable():
    from xlinalg.bench._passes import usable_first_pass

    p1 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0}})
    p2 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0}})
    assert all(usable_first_pass(r) for r in p1.values())
    bad = [("load_avg_1min", {"samples": 3, "min": None, "max": 1.0, "mean": 1.0}),
           ("load_avg_1min", {"samples": "3", "min": 1.0, "max": 1.0, "mean": 1.0}),
           ("round_s", ["0.1", 0.2]), ("round_s", []), ("round_s", None), ("wall_s", "1"),
           ("rounds", 2.5), ("order", "ab"), ("block_s", 3)]
    for field, value in bad:
        rec = {**p1["a"], "side_by_side": {**p1["a"]["side_by_side"], field: value}}
        assert not usable_first_pass(rec), (field, value)
    assert not usable_first_pass({**p1["a"], "side_by_side": "x"})
    assert not usable_first_pass({**p1["a"], "time": {"raw_s": [True, 1.0]}})
    # no load reading at all is fine, and so merges
    quiet = {**p1["a"], "side_by_side": {**p1["a"]["side_by_side"], "load_avg_1min": {"samples": 0}}}
    assert usable_first_pass(quiet)
    m = merge_passes([{"a": quiet, "b": p1["b"]}, p2], margin=1.05, level=0.95, seed=0)
    assert m["b"]["verdict"]["fastest"] == "a"


def test_a_resume_measures_again_a_group_whose_first_pass_is_unusable():
    from xlinalg.bench._runner import _side_by_side_resume

    good = {"status": "ok", "side_by_side": {"round_s": [1.0, 1.1]}}
    broken = {"status": "ok", "side_by_side": {"round_s": [1.0, "1.1"]}}
    cells = [{"key": f"c|{b}|float64|{n}", "case": "c", "dtype": "float64", "size_label": n, "backend": b}
             for n in ("1", "2") for b in ("a", "b")]
    latest = {cells[0]["key"]: good, cells[1]["key"]: good, cells[2]["key"]: good, cells[3]["key"]: broken}
    todo, second = _side_by_side_resume(cells, [], latest, recheck=True)
    assert [c["key"] for c in todo] == [cells[2]["key"], cells[3]["key"]]  # size 2, whole
    assert [c["key"] for c, _ in second] == [cells[0]["key"], cells[1]["key"]]


def test_merge_passes_keeps_a_failure_and_a_wrong_result():
    p1 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0},
                "c": {"cost": lambda i: 3.0}})
    p2 = _pass({"a": {"cost": lambda i: 1.0}, "b": {"cost": lambda i: 2.0, "fail_at": 1},
                "c": {"cost": lambda i: 3.0}})
    p1["c"]["status"] = "wrong"
    m = merge_passes([p1, p2], margin=1.05, level=0.95, seed=0)
    assert m["b"]["status"] == "failed"  # the second pass's failure is not averaged away
    assert m["c"]["status"] == "wrong"
    assert m["a"]["verdict"]["excluded"] == {"b": "failed", "c": "wrong"}
    assert m["a"]["verdict"]["text"] == "only a ran"
    assert list(m) == ["a", "b", "c"]


# ---------------------------------------------------------------------- equal footing
def test_threads_give_every_backend_the_same_cores(tmp_path, monkeypatch):
    from xlinalg.bench import _workerproc

    closed: list[str] = []  # every worker is asked to exit, with the recheck off too
    monkeypatch.setattr(_workerproc.Worker, "close", lambda self, _c=_workerproc.Worker.close: (
        closed.append(self.backend), _c(self))[1])
    out = tmp_path / "r.jsonl"
    s = run_benchmark(RunConfig(backends=["numpy", "torch-cpu", "jax-cpu"], cases=["a1_gemm"],
                                sizes=["8"], out=out, timer=FAST, threads=1, calibrate=False,
                                recheck=False, memory=False, time_limit=120))
    recs = {r["backend"]: r for r in s.records}
    assert set(recs) == {"numpy", "torch-cpu", "jax-cpu"}
    for b, r in recs.items():
        assert r["status"] == "ok", r
        assert r["fairness"]["threads"]["affinity"] == 1, b
        assert r["side_by_side"]["rounds"] >= FAST.min_samples
        assert r["side_by_side"]["backends"] == ["numpy", "torch-cpu", "jax-cpu"]
        assert r["time"]["samples"] == r["side_by_side"]["rounds"]
        assert set(r["ratios"]) == set(recs) - {b}
    assert recs["torch-cpu"]["fairness"]["threads"]["torch"] == 1
    hdr = read_results(out).headers[0]
    assert set(hdr["run"]["fence_selfcheck"]) == set(recs)
    assert all(v["ok"] for v in hdr["run"]["fence_selfcheck"].values())
    assert sorted(closed) == ["jax-cpu", "numpy", "torch-cpu"]


# ---------------------------------------------------------------------- compare
def _file(rng, changes=None, *, n=15, pass_noise=0.02, cells=12, rel=0.02, passes=3):
    """Records of `cells` cells measured in `passes` passes; `changes` multiplies
    some cells' times. Each pass (a set of processes) draws its own state:
    the cell's time times exp(N(0, pass_noise)); its samples scatter by `rel`."""
    changes = changes or {}
    out = {}
    for i in range(cells):
        key = f"c{i}|numpy|float64|4"
        t = 1e-3 * (i + 1) * changes.get(i, 1.0)
        per = [t * math.exp(pass_noise * rng.standard_normal()) for _ in range(passes)]
        chunks = [list(p * (1 + rel * rng.standard_normal(max(1, n // passes)))) for p in per]
        raw = [x for c in chunks for x in c]
        out[key] = {"key": key, "status": "ok", "backend": "numpy",
                    "time": {"median_s": float(np.median(raw)), "raw_s": raw,
                             "passes": [{"median_s": float(np.median(c)), "samples": len(c)}
                                        for c in chunks]}}
    return out


def _flags(rows):
    return Counter(r["flag"] for r in rows)


def test_compare_needs_the_interval_beyond_the_threshold():
    rng = np.random.default_rng(4)
    old = _file(rng)
    # 3 % slower, tightly measured: real, but below the 5 % threshold
    assert _flags(compare_records(old, _file(rng, {0: 1.03}, rel=0.002)))["REGRESSION"] == 0
    # 30 % slower in one cell: flagged, with its interval
    rows = compare_records(old, _file(rng, {0: 1.3}))
    assert _flags(rows)["REGRESSION"] == 1
    r0 = rows[0]
    assert r0["flag"] == "REGRESSION"
    assert r0["lo"] > 1.05
    assert r0["lo"] < r0["ratio"] < r0["hi"]
    # a threshold of 40 % no longer flags it
    assert _flags(compare_records(old, _file(rng, {0: 1.3}), threshold=0.4))["REGRESSION"] == 0
    # the same change from 3 samples: too few to flag
    few = compare_records(_file(rng, n=3), _file(rng, {0: 1.3}, n=3))
    assert _flags(few)["REGRESSION"] == 0
    assert few[0]["flag"].startswith("~ (too few samples")
    # twice as fast: an improvement
    assert compare_records(old, _file(rng, {1: 0.5}))[1]["flag"] == "improvement"


def test_compare_does_not_cry_wolf_on_run_to_run_noise():
    rng = np.random.default_rng(5)
    # every cell moves by ~10 % (1 sigma) between two runs of the same code
    for seed in range(5):
        r = np.random.default_rng(seed)
        rows = compare_records(_file(r, pass_noise=0.1, cells=40),
                               _file(r, pass_noise=0.1, cells=40))
        assert _flags(rows)["REGRESSION"] == 0, seed
    # ... and a real 3x regression in one cell still stands out
    rows = compare_records(_file(rng, pass_noise=0.1, cells=40),
                           _file(rng, {7: 3.0}, pass_noise=0.1, cells=40))
    assert [r["key"] for r in rows if r["flag"] == "REGRESSION"] == ["c7|numpy|float64|4"]


def test_compare_counts_the_passes_a_cell_disagreed_between():
    rng = np.random.default_rng(7)
    old, new = _file(rng), _file(rng, {3: 2.0})  # cell 3: twice as slow in the new run
    assert compare_records(old, new)[3]["flag"] == "REGRESSION"
    # ... but in the old run its second pass, in fresh processes, already took 2x:
    # the library's time depends on its process, and the new run drew the slow one
    m = old["c3|numpy|float64|4"]["time"]["median_s"]
    old["c3|numpy|float64|4"]["time"]["passes"] = [{"median_s": m}, {"median_s": 2 * m},
                                                   {"median_s": m}]
    row = compare_records(old, new)[3]
    assert row["se_passes"] >= math.sqrt(statistics.variance([0, math.log(2), 0]) / 3)
    assert row["flag"] == "~"
    assert row["lo"] < 1.0 < 2.0 < row["hi"]
    # passes that agree add nothing: a real change still stands out
    old["c3|numpy|float64|4"]["time"]["passes"] = [{"median_s": m}] * 3
    assert compare_records(old, new)[3]["flag"] == "REGRESSION"
    # the noise is the files' own: the same regression in a different pair of
    # files with more cells that moved does not widen this cell's interval
    lone = compare_records(old, new)[3]
    many = compare_records(old, _file(np.random.default_rng(7), {3: 2.0, 4: 3.0, 5: 0.3}))[3]
    assert many["se_passes"] == pytest.approx(lone["se_passes"], rel=0.5)
    assert many["flag"] == "REGRESSION"


def test_compare_flags_nothing_measured_by_a_starved_worker():
    rng = np.random.default_rng(6)
    old, new = _file(rng), _file(rng, {0: 1.3})
    for recs, cores in ((old, 1.0), (new, 1.0)):
        for r in recs.values():
            r["backend"] = "numpy"
            r["side_by_side"] = {"effective_cores": cores}
    assert compare_records(old, new)[0]["flag"] == "REGRESSION"
    new["c0|numpy|float64|4"]["side_by_side"]["effective_cores"] = 0.15
    flag = compare_records(old, new)[0]["flag"]
    assert flag.startswith("~ (starved: the process ran 15%")


def test_compare_says_when_the_runs_used_different_parallelism():
    # two runs of a two-threaded library: in the second a neighbour took a core
    # (effective cores 1.9 -> 1.0) and the cell is 1.3x slower; the code did not change
    rng = np.random.default_rng(6)
    old, new = _file(rng), _file(rng, {0: 1.3, 1: 1 / 1.3})
    for recs in (old, new):
        for r in recs.values():
            r["backend"] = "torch-cpu"
            r["side_by_side"] = {"effective_cores": 1.9}
    rows = compare_records(old, new)
    assert (rows[0]["flag"], rows[1]["flag"]) == ("REGRESSION", "improvement")
    new["c0|numpy|float64|4"]["side_by_side"]["effective_cores"] = 1.0
    old["c1|numpy|float64|4"]["side_by_side"]["effective_cores"] = 1.0
    rows = compare_records(old, new)
    assert rows[0]["flag"].startswith("~ (not like for like: effective cores 1.9 -> 1.0; "
                                      "the REGRESSION"), rows[0]["flag"]
    assert rows[1]["flag"].startswith("~ (not like for like: effective cores 1.0 -> 1.9; "
                                      "the improvement"), rows[1]["flag"]
    # within the factor the parallelism counts as the same: the regression stands
    new["c0|numpy|float64|4"]["side_by_side"]["effective_cores"] = 1.5
    assert compare_records(old, new)[0]["flag"] == "REGRESSION"


def test_compare_warns_about_different_runs():
    a = {"env": {"machine_id": "m1", "cpu": {"model": "X"}, "packages": {"torch": "2.1"}},
         "run": {"scale": "quick", "threads": None}}
    b = {"env": {"machine_id": "m2", "cpu": {"model": "X"}, "packages": {"torch": "2.2"}},
         "run": {"scale": "default", "threads": 1}}
    diffs = header_differences(a, b)
    assert any(d.startswith("machine") for d in diffs)
    assert any(d.startswith("scale") for d in diffs)
    assert any(d.startswith("threads") for d in diffs)
    assert any(d.startswith("torch version") for d in diffs)
    assert not any(d.startswith("CPU") for d in diffs)
    assert header_differences(a, a) == []


def test_plan_is_side_by_side_order(tmp_path):
    from xlinalg.bench import plan_cells

    cells = plan_cells(RunConfig(backends=["numpy", "torch-cpu"], cases=["q3_solve_sweep"], sizes=["4"],
                                 out=Path(tmp_path) / "x", calibrate=False))
    assert [c["backend"] for c in cells] == ["numpy", "torch-cpu"]


@pytest.mark.parametrize(("per_call", "number", "blocks"), [(0.001, 5, 3), (0.02, 3, 1), (0.6, 1, 1), (0.049, 1, 3)])
def test_a_long_block_is_the_rounds_only_block(monkeypatch, per_call, number, blocks):
    # best of blocks_per_round guards a short block against one scheduler
    # interruption; a block of 50 ms or more is its round's only block (the
    # 4096x4096 cells of the default run spent 3x their time on it)
    import io
    import types

    from xlinalg.bench import _worker

    class FakeTimer:
        config = types.SimpleNamespace(blocks_per_round=3)
        calls = 0

        def prepare(self):
            return types.SimpleNamespace(number=number, first_call_s=per_call)

        def sample(self, n):
            FakeTimer.calls += 1
            return per_call, None

        def measurement(self, prep, times, dev):
            return times

    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"op": "sample"}\n{"op": "sample"}\n{"op": "finish"}\n'))
    times = _worker._remote_sampler(w)(FakeTimer())
    os.close(w)
    with os.fdopen(r) as f:
        replies = [json.loads(line) for line in f]
    samples = [m for m in replies if m["event"] == "samples"]
    assert [len(m["times"]) for m in samples] == [blocks, blocks]
    assert FakeTimer.calls == 2 * blocks
    assert times == [per_call, per_call]
