"""The timer: calibration and statistics on synthetic functions and a fake clock,
and the fence self-check on every CPU backend (the only timing assertions)."""

from __future__ import annotations

import gc
import json
import time

import numpy as np
import pytest

from conftest import CPU_BACKENDS, require_backend
from xlinalg.bench import Measurement, Stats, Timer, TimerConfig, fence_selfcheck


class FakeClock:
    """Time advances only when the timed function (or the fence) says so."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


def make_stmt(clock: FakeClock, costs):
    """A statement whose i-th call costs costs(i) seconds of fake time."""
    calls = {"n": 0}

    def stmt():
        clock.advance(costs(calls["n"]))
        calls["n"] += 1
        return calls["n"]

    return stmt, calls


CFG = TimerConfig(warmup_time=0.05, min_warmup_calls=1, min_sample_time=0.01,
                  min_run_time=0.2, min_samples=7, max_samples=100, max_run_time=10.0)


# ---------------------------------------------------------------------- calibration
def test_calibration_reaches_min_sample_time():
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: 1e-4)
    m = Timer(stmt, config=CFG, clock=clock).run()
    # 1e-4 s per call: 100 calls make the 10 ms sample
    assert m.number * 1e-4 >= CFG.min_sample_time
    assert m.number <= 2 * 110
    assert m.stats.median == pytest.approx(1e-4)
    assert m.stats.iqr == pytest.approx(0.0, abs=1e-15)
    assert m.stats.n >= CFG.min_samples
    assert sum(m.times) * m.number >= CFG.min_run_time - 1e-12


def test_calibration_grows_from_a_bad_estimate():
    # the warm-up calls look slow (1 ms), the steady state is 1 µs: calibration must grow
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: 1e-3 if i < 60 else 1e-6)
    m = Timer(stmt, config=CFG, clock=clock).run()
    assert m.calibration_blocks >= 2
    assert m.number * 1e-6 >= CFG.min_sample_time
    assert m.stats.median == pytest.approx(1e-6)


def test_first_call_is_recorded_apart():
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: 2.0 if i == 0 else 1e-3)  # "compilation"
    m = Timer(stmt, config=CFG, clock=clock).run()
    assert m.first_call_s == pytest.approx(2.0)
    assert m.stats.median == pytest.approx(1e-3)
    assert max(m.times) == pytest.approx(1e-3)
    assert m.warmup_calls >= CFG.min_warmup_calls


def test_slow_operation_stops_at_max_run_time():
    clock = FakeClock()
    stmt, calls = make_stmt(clock, lambda i: 3.0)
    cfg = TimerConfig(warmup_time=0.0, min_sample_time=0.01, min_run_time=100.0,
                      min_samples=50, max_run_time=5.0, hard_min_samples=3)
    m = Timer(stmt, config=cfg, clock=clock).run()
    assert m.number == 1
    assert m.stats.n == 3
    assert calls["n"] == 1 + 1 + 3  # first, one warm-up, three samples


def test_max_samples_and_fixed_number():
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: 1e-5)
    cfg = TimerConfig(number=7, min_samples=3, max_samples=4, min_run_time=1e9)
    m = Timer(stmt, config=cfg, clock=clock).run()
    assert m.number == 7
    assert m.stats.n == 4
    assert m.calibration_blocks == 0
    assert m.total_calls == 28


def test_fence_is_inside_the_timed_block():
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: 1e-3)
    seen = []

    def fence(*outs):
        seen.append(len(outs))
        clock.advance(5e-3)  # the device finishing the queued work

    cfg = TimerConfig(number=4, min_samples=3, max_samples=3)
    m = Timer(stmt, fence=fence, config=cfg, clock=clock).run()
    # per call: (4 * 1 ms + 5 ms) / 4
    assert m.stats.median == pytest.approx((4e-3 + 5e-3) / 4)
    assert set(seen) == {1}  # only the last result, unless fence_all

    seen.clear()
    Timer(stmt, fence=fence, fence_all=True, config=cfg, clock=clock).run()
    assert 4 in seen  # every result of a 4-call block reaches the fence


def test_last_result_is_kept_for_the_check():
    clock = FakeClock()
    stmt, calls = make_stmt(clock, lambda i: 1e-3)
    t = Timer(stmt, config=TimerConfig(number=2, min_samples=2, max_samples=2), clock=clock)
    t.run()
    assert t.last_result == calls["n"]


def test_gc_is_disabled_inside_blocks():
    states = []

    def stmt():
        states.append(gc.isenabled())

    was = gc.isenabled()
    Timer(stmt, config=TimerConfig(number=3, min_samples=2, max_samples=2)).run()
    assert not any(states)
    assert gc.isenabled() == was


def test_real_clock_sleep_is_measured():
    # a sanity check of the default clock path, not a performance assertion
    m = Timer(lambda: time.sleep(0.002),
              config=TimerConfig(min_samples=3, max_samples=3, min_sample_time=0.001)).run()
    assert m.stats.min >= 0.002


# ---------------------------------------------------------------------- statistics
def test_stats_known_values():
    s = Stats.from_samples([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.q1, s.q3, s.iqr, s.min, s.max) == (3.0, 2.0, 4.0, 2.0, 1.0, 5.0)
    assert s.mean == 3.0
    assert s.relative_iqr == pytest.approx(2 / 3)
    assert Stats.from_samples([7.0]).iqr == 0.0


def test_stats_match_numpy_percentiles():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 51):
        x = rng.lognormal(size=n)
        s = Stats.from_samples(x)
        q1, med, q3 = np.percentile(x, [25, 50, 75])
        assert (s.q1, s.median, s.q3) == pytest.approx((q1, med, q3))
        assert s.stdev == pytest.approx(np.std(x, ddof=1))


def test_stats_rejects_empty():
    with pytest.raises(ValueError, match="no samples"):
        Stats.from_samples([])


def test_noisy_measurement_is_flagged():
    costs = [1e-3, 1e-3, 3e-3, 1e-3, 4e-3, 1e-3, 2e-3, 5e-3]
    clock = FakeClock()
    stmt, _ = make_stmt(clock, lambda i: costs[i % len(costs)])
    m = Timer(stmt, config=TimerConfig(number=1, min_samples=8, max_samples=8),
              clock=clock).run()
    assert m.noisy
    assert any("IQR" in w for w in m.warnings)
    quiet = Measurement(times=[1.0, 1.01, 0.99, 1.0], number=1, first_call_s=1.0,
                        warmup_calls=1, warmup_s=1.0, calibration_blocks=0, total_s=5.0)
    assert not quiet.noisy
    assert quiet.warnings == []


def test_measurement_to_dict_is_json():
    m = Measurement(times=[1e-3, 2e-3, 3e-3], number=10, first_call_s=0.5, warmup_calls=2,
                    warmup_s=0.1, calibration_blocks=1, total_s=1.0)
    d = json.loads(json.dumps(m.to_dict()))
    assert d["median_s"] == 2e-3
    assert d["number"] == 10
    assert d["total_calls"] == 30
    assert d["samples"] == 3
    assert d["first_call_s"] == 0.5
    assert d["raw_s"] == [1e-3, 2e-3, 3e-3]
    for key in ("iqr_s", "min_s", "q1_s", "q3_s", "noisy", "iqr_over_median", "warnings"):
        assert key in d


def test_scale_presets():
    q, d, f = (TimerConfig.for_scale(s) for s in ("quick", "default", "full"))
    assert q.min_run_time < d.min_run_time
    # full times a cell as the default run does (its rounds and budget), with a longer
    # warm-up and blocks for its larger sizes, later passes of pass_rounds rounds and
    # room for more passes where they disagree (docs/benchmark.md, "What a full run costs")
    assert (f.min_run_time, f.min_samples, f.max_samples, f.max_run_time) == (
        d.min_run_time, d.min_samples, d.max_samples, d.max_run_time)
    assert f.warmup_time > d.warmup_time
    assert f.min_sample_time > d.min_sample_time
    assert d.pass_rounds is None
    assert f.later_pass().max_samples == f.pass_rounds == 4
    assert f.max_passes > d.max_passes


def test_no_device_clock_on_cpu_backends():
    from xlinalg.backends import get_backend

    for name in CPU_BACKENDS:
        assert get_backend(name).bench.device_clock() is None


@pytest.mark.parametrize("backend", ["torch-cuda", "cupy"])
def test_cuda_event_clock_times_the_device_work(backend):
    """The event clock brackets the work on the stream: 512x the flops reads longer.
    Runs where the backend has a CUDA device; skipped with the registry's reason elsewhere."""
    b = require_backend(backend)
    xp = b.namespace()
    clock = b.bench.device_clock()
    assert clock is not None

    def timed(n: int) -> float:
        a = b.from_numpy(np.ones((n, n), dtype=np.float32))
        b.synchronize(a)
        clock.start()
        for _ in range(3):
            xp.matmul(a, a)
        return clock.stop()

    timed(256)  # warm up the library's kernels
    small, big = timed(256), timed(2048)
    assert 0 <= small < big, (small, big)


# ---------------------------------------------------------------------- fences (real time)
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_fence_selfcheck_time_grows_with_work(backend):
    """Timing a matmul at n=32 and n=1024 (32768x the work) must show the growth:
    a fence that does not wait would time only the dispatch at both sizes."""
    require_backend(backend)  # skip with the registry's reason (fail, in CI)
    res = fence_selfcheck(backend, sizes=(32, 1024))
    assert res["ok"], res
    assert res["min_s"][1] > 3 * res["min_s"][0], res
    assert res["attempts"][-1]["min_s"] == res["min_s"]


def test_fence_selfcheck_fails_a_fence_that_does_not_wait(monkeypatch):
    """Dask's fence is the evaluation of the graph: with it gone, the timed call
    only builds the graph, at any size. Both attempts must see it (the retry with
    the large size doubled cannot rescue a fence that does not wait).

    The real pipeline (case, cell, Dask's threaded scheduler) on a virtual clock, so
    a busy machine cannot blur the verdict: a call costs 10 us of dispatch, and each
    Dask task the work of its result (``size ** 1.5`` ns), counted by a Dask callback
    wherever the task runs, inside the timed block or not."""
    require_backend("dask")
    from dask.callbacks import Callback

    from xlinalg.bench import _cell

    now = [0.0]
    tasks = [0]

    def clock():
        return now[0]

    def posttask(key, result, dsk, state, worker_id):
        tasks[0] += 1
        now[0] += 1e-9 * float(getattr(result, "size", 0)) ** 1.5

    real_timer = _cell.Timer

    def timer(stmt, **kwargs):
        def call():
            now[0] += 1e-5  # the dispatch, the same at every size
            return stmt()
        return real_timer(call, **{**kwargs, "clock": clock})

    monkeypatch.setattr(_cell, "Timer", timer)
    with Callback(posttask=posttask):
        control = fence_selfcheck("dask", sizes=(32, 1024))  # the real fence: the work shows
        assert control["ok"] is True, control
        assert control["attempts"][0]["ratio"] > 1000, control  # (1024/32)**3 of work, less dispatch
        monkeypatch.setattr(_cell, "_materialize", lambda backend, out: out)
        before = tasks[0]
        res = fence_selfcheck("dask", sizes=(32, 1024))
    assert tasks[0] > before  # the cells' result checks still compute (outside the timed blocks)
    assert res["attempts"][0]["ratio"] == pytest.approx(1.0)  # the dispatch alone, at both sizes
    assert res["ok"] is False, res
    assert [a["sizes"] for a in res["attempts"]] == [[32, 1024], [32, 2048]]
    assert not any(a["ok"] for a in res["attempts"])


@pytest.mark.parametrize(
    ("name", "times", "ok", "sizes_tried"),
    [
        # a quiet machine: the work shows at once
        ("quiet", lambda n: 1e-5 * (n / 32) ** 3, True, [[32, 1024]]),
        # loaded: every small call waits ~30 ms for the thread pool's workers, as
        # long as the large matmul; 8x the work in the retry shows the growth
        ("loaded", lambda n: 0.03 + 0.04 * (n / 1024) ** 3, True,
         [[32, 1024], [32, 2048]]),
        # a fence that does not wait: a dispatch at every size, both attempts
        ("broken", lambda n: 2e-5, False, [[32, 1024], [32, 2048]]),
        # a broken fence under load: the dispatch's noise must not pass either
        ("broken-noisy", lambda n: 2e-5 * (1.5 if n > 32 else 1.0), False,
         [[32, 1024], [32, 2048]]),
    ],
)
def test_fence_selfcheck_verdict_survives_load(monkeypatch, name, times, ok, sizes_tried):
    """The verdict on the fastest samples, retried once with 8x the work: a
    fixed per-call delay (the scheduler) cannot fail it, a dispatch cannot pass it."""
    from xlinalg.bench import _selfcheck

    def fake(backend, n, dtype, cfg, state):  # the fastest sample of size n
        return {"min_s": times(n), "median_s": 2 * times(n)}

    monkeypatch.setattr(_selfcheck, "_time_matmul", fake)
    res = fence_selfcheck("numpy", sizes=(32, 1024))
    assert res["ok"] is ok, (name, res)
    assert [a["sizes"] for a in res["attempts"]] == sizes_tried
    assert res["ratio"] == pytest.approx(res["min_s"][1] / res["min_s"][0])


def test_jax_without_its_fence_times_only_the_dispatch():
    """JAX dispatches asynchronously on the CPU: without block_until_ready the
    timer sees the dispatch, not the work."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from xlinalg.backends import get_backend

    backend = get_backend("jax-cpu")
    x = jax.device_put(np.random.default_rng(0).standard_normal((700, 700)).astype(np.float32))
    chain = jax.jit(lambda a: ((a @ a) @ a) @ a)
    chain(x).block_until_ready()  # compile outside the comparison
    cfg = TimerConfig(number=1, min_samples=5, max_samples=5, warmup_time=0.0)

    with_fence = Timer(lambda: chain(x), fence=backend.synchronize, fence_all=True,
                       config=cfg).run()
    t = Timer(lambda: chain(x), fence=None, config=cfg)
    without = t.run()
    jnp.asarray(t.last_result).block_until_ready()  # drain the queue
    assert without.stats.median < 0.5 * with_fence.stats.median, (without.stats.median, with_fence.stats.median)
