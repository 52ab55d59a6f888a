"""The full scale's cost knobs: a case's timer and skips at one scale (``Case.timing``,
``Case.skip_at``), later passes of ``pass_rounds`` rounds, and the Q3 sweep's policy
at the full scale (docs/benchmark.md, "What a full run costs")."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

import xlinalg.study  # noqa: F401  (the documents' cases)
from conftest import require_backend
from xlinalg.backends import available_backends, get_backend
from xlinalg.bench import (
    Case,
    RunConfig,
    TimerConfig,
    execute_cell,
    make_cell,
    read_results,
    run_benchmark,
)
from xlinalg.bench._runner import plan_cells
from xlinalg.bench._sidebyside import _later_pass_cell, group_timer

SWEEP = "q3_solve_sweep"
#: the sweep's points where every backend is timed at the full scale
ANCHORS = {5, 10, *range(50, 501, 50)}


def _setup(rng, n):
    return (rng.standard_normal(n),)


def _case(**kw):
    return Case(name="t_scale_rules", sizes={"quick": [4]}, setup=_setup, op=lambda ctx, x: x, **kw)


def _plan(scale, backends, **kw):
    return plan_cells(RunConfig(scale=scale, backends=backends, out="unused.jsonl", **kw))


# ---------------------------------------------------------------------- the knobs
def test_a_case_scale_rule_names_known_scales_and_timer_fields():
    with pytest.raises(ValueError, match="timing names unknown scales"):
        _case(timing={"huge": {"min_samples": 3}})
    with pytest.raises(ValueError, match=r"timing\['full'\] is not a set of timer fields"):
        _case(timing={"full": {"rounds": 3}})
    with pytest.raises(ValueError, match="skip_at names unknown scales"):
        _case(skip_at={"medium": lambda b, d, s: None})
    with pytest.raises(ValueError, match=r"skip_at\['quick'\] must be a callable"):
        _case(skip_at={"quick": "numpy"})
    c = _case(timing={"full": {"min_samples": 3, "pass_rounds": 2}},
              skip_at={"quick": lambda b, d, s: "no" if b == "numpy" else None})
    full = TimerConfig.for_scale("full")
    assert c.timer_at("full", full) == dataclasses.replace(full, min_samples=3, pass_rounds=2)
    assert c.timer_at("default", full) is full  # another scale: the timer as given
    assert c.skip_reason_at("quick", "numpy", "float64", 4) == "no"
    assert c.skip_reason_at("quick", "jax-cpu", "float64", 4) is None
    assert c.skip_reason_at("full", "numpy", "float64", 4) is None


def test_later_pass_rounds():
    """pass_rounds None: a later pass takes the first pass's round rules (what the
    default run has always done); a number: exactly that many rounds, the budget
    still able to stop a pass after hard_min_samples."""
    t = TimerConfig(warmup_time=0.2, min_samples=7, max_samples=40, min_run_time=0.2)
    later = t.later_pass()
    assert (later.min_samples, later.max_samples, later.min_run_time) == (7, 40, 0.2)
    assert later.warmup_time == 0.02
    for n in (1, 2, 3, 4, 9):
        lp = dataclasses.replace(t, pass_rounds=n).later_pass()
        assert (lp.min_samples, lp.max_samples, lp.min_run_time) == (n, n, 0.0)
        assert lp.hard_min_samples == min(n, t.hard_min_samples)
        assert lp.max_run_time == t.max_run_time
    cell = {"case": "x", "timer": dataclasses.replace(t, pass_rounds=3).to_dict()}
    rec = {"time": {"number": 17}}
    lp = _later_pass_cell(cell, rec, TimerConfig())
    assert lp["timer"]["number"] == 17
    assert lp["timer"]["max_samples"] == 3
    assert lp["check"] is False
    assert lp["memory"] is False
    assert group_timer({"a": lp}, TimerConfig()).max_samples == 3
    assert group_timer({"a": {"case": "x"}}, t) is t  # a cell without a timer: the run's


def test_the_default_and_quick_runs_are_unchanged():
    """The default run's timer is the one its committed run was measured with, and
    no case changes it at the default or quick scale (issue 35 bounds its time)."""
    d = TimerConfig.for_scale("default")
    assert (d.min_samples, d.max_samples, d.min_run_time, d.max_run_time, d.min_passes,
            d.max_passes, d.pass_rounds, d.warmup_time, d.min_sample_time) == (
        7, 40, 0.2, 3.0, 4, 4, None, 0.05, 0.01)
    backends = available_backends()
    for scale in ("default", "quick"):
        cells = _plan(scale, backends)
        own = TimerConfig.for_scale(scale).to_dict()
        assert all(c["timer"] == own for c in cells)
        assert not [c for c in cells if c.get("skip_reason")]


def test_the_full_scale_measures_a_cell_as_the_default_run_does():
    full, default = TimerConfig.for_scale("full"), TimerConfig.for_scale("default")
    for f in ("min_samples", "max_samples", "min_run_time", "max_run_time", "min_passes"):
        assert getattr(full, f) == getattr(default, f), f
    assert full.max_passes == 6  # passes that disagree get more, up to 6
    assert full.later_pass().max_samples == 4


# ---------------------------------------------------------------------- the sweep
def test_the_sweep_points_have_their_own_budget_at_the_full_scale():
    cells = _plan("full", ["numpy"])
    full = TimerConfig.for_scale("full")
    sweep = [c for c in cells if c["case"] == SWEEP]
    assert len(sweep) == 100
    t = TimerConfig(**sweep[0]["timer"])
    assert (t.min_samples, t.min_run_time, t.pass_rounds) == (5, 0.1, 3)
    assert (t.min_passes, t.max_passes) == (full.min_passes, full.min_passes)  # no extra passes
    assert t.max_run_time == full.max_run_time
    others = [c for c in cells if c["case"] != SWEEP]
    assert others
    assert all(c["timer"] == full.to_dict() for c in others)
    # a timer given to the run is used as it is, for the sweep too
    fast = TimerConfig(min_samples=2, max_samples=2)
    given = _plan("full", ["numpy"], cases=[SWEEP], timer=fast)
    assert all(c["timer"] == fast.to_dict() for c in given)


def test_backends_outside_the_documents_choice_are_timed_at_the_sweeps_anchors():
    """Every installed backend: one that declares itself outside the documents' choice
    (``bench.opt_in``) is skipped, with the reason, at the full sweep's points but
    its ends and every 50; every other backend is timed at every point."""
    backends = available_backends()
    cells = [c for c in _plan("full", backends, cases=[SWEEP]) if c["case"] == SWEEP]
    assert {c["size"] for c in cells} == set(range(5, 501, 5))
    for c in cells:
        opt_in = get_backend(c["backend"]).bench.opt_in
        skipped = bool(opt_in) and c["size"] not in ANCHORS
        assert bool(c.get("skip_reason")) == skipped, (c["backend"], c["size"])
        if skipped:
            assert "n = 5, 10 and every 50" in c["skip_reason"]
            assert opt_in in c["skip_reason"]
    # the earlier default's points and today's quick and default points are anchors
    assert {10, 50, 100, 200, 500} <= ANCHORS
    # asked for explicitly at the full scale, a size off the anchors is skipped too
    named = _plan("full", backends, cases=[SWEEP], sizes=["37", "250"])
    for c in named:
        assert bool(c.get("skip_reason")) == (bool(get_backend(c["backend"]).bench.opt_in)
                                              and c["size"] == 37)


def test_a_planned_skip_is_recorded_by_the_cell():
    require_backend("numpy")
    cell = make_cell(SWEEP, "numpy", 5, timer=TimerConfig(min_samples=1, max_samples=1))
    cell["skip_reason"] = "planned: not this point"
    rec = execute_cell(cell)
    assert rec["status"] == "skipped"
    assert rec["skip_reason"] == "planned: not this point"
    assert rec["case"] == SWEEP
    assert rec["size"] == 5


# ---------------------------------------------------------------------- end to end
CASE_FILE = """
import numpy as np
from xlinalg.bench import Case, register_case

register_case(Case(
    name="t_scale_budget", sizes={{"quick": [4, 6]}},
    setup=lambda rng, n: (rng.standard_normal((n, n)) + n * np.eye(n), rng.standard_normal(n)),
    op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b), reference=np.linalg.solve,
    timing={{"quick": dict(warmup_time=0.0, min_sample_time=0.001, min_samples=3,
                          max_samples=3, min_run_time=0.0, pass_rounds=2,
                          min_passes=4, max_passes=4)}},
    skip_at={{"quick": lambda backend, dtype, n: "not here" if backend == {skipped!r} and n == 6
              else None}},
))
"""


def test_a_case_timer_and_skip_at_a_scale_in_a_run(tmp_path):
    """Through the worker processes: the case's rounds in the first pass and in each
    later pass, its pass count, and its skip at that scale recorded with the reason."""
    pair = ["numpy", "jax-cpu"]
    for b in pair:
        require_backend(b)
    path = tmp_path / "cases.py"
    path.write_text(textwrap.dedent(CASE_FILE.format(skipped="jax-cpu")))
    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(backends=pair, cases=["t_scale_budget"], scale="quick", out=out,
                            case_files=[path], calibrate=False, time_limit=120))
    latest = read_results(out).latest()
    four = [r for r in latest.values() if r["size_label"] == "4"]
    assert len(four) == 2
    for r in four:
        assert r["status"] == "ok"
        assert [p["rounds"] for p in r["side_by_side"]["passes"]] == [3, 2, 2, 2]
        assert r["verdict"]["passes"] == 4
    six = {r["backend"]: r for r in latest.values() if r["size_label"] == "6"}
    assert six["jax-cpu"]["status"] == "skipped"
    assert six["jax-cpu"]["skip_reason"] == "not here"
    assert six["numpy"]["status"] == "ok"
