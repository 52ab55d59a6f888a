"""What a full run costs with today's runner, estimated from the committed runs.

    python benchmarks/full_run_cost.py [--full FILE] [--default FILE ...] [--before] [--json]

A run's wall time is the sum of its groups' passes (each (case, size) on every
backend side by side, docs/benchmark.md "Side by side") and a little outside them.
A pass of a group costs

    fixed + rounds x (sum over its backends of wall + settle per round)

and the records hold every term: ``side_by_side.passes`` (each pass's
``group_elapsed_s`` and rounds), each backend's ``wall_s`` and ``settle_s``, and each
round's blocks (``block_s`` x ``time.number``: the seconds a backend sampled, which
decide when a pass stops). The fixed part is what is left of a pass: inputs, first
call, calibration, check and memory in the first pass (and cells cut by the time
limit), fresh workers, inputs and first call in a later one. So:

1. from ``--full`` (a run at the full sizes: the committed one is the earlier
   runner's, with other round rules, but a round costs what a round costs), each
   group's wall and settle per round and backend, the seconds each backend sampled
   per round, and the fixed cost of its first and of its later passes;
2. today's plan of ``xlinalg bench --full`` on the file's backends and dtype
   (``plan_cells``: each case's timer at the full scale, its skips) replays the
   runner's stop rule (``_sidebyside.measure_group``) on those figures: the rounds of
   the first pass and of each later pass, on the backends each group still times,
   and the group's cost at ``min_passes`` and at ``max_passes``. The expected count
   uses the share of groups whose four passes disagree in ``--default`` (runs of
   today's runner; the runner's own test, ``disagreeing``); a group that disagrees
   is counted at ``max_passes``.

``--before`` replays the full scale as it was before its timer and the sweep's
policy changed (10 rounds and 1 s sampled per backend in every pass, every backend
at every point). Groups of today's plan that the file lacks get their case's mean
(noted). The time outside the groups (the fence self-check, workers started for
each pass) is measured on an uninterrupted ``--default`` run and added once.

Checked against a run (2026-12-07, under ``/work/tools/cpu-quiet``, load 1.4-2.3):
``xlinalg bench --full --cases q3_solve_sweep --sizes 100,305 --backends
numpy,torch-cpu,jax-cpu,dask,array-api-strict --no-calibrate`` took 154.5 s in its
groups before the change (estimated 153 s at the 6 passes it took) and 35.0 s after
(estimated 37 s). docs/benchmark.md, "What a full run costs", quotes this output.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import xlinalg.study  # noqa: F401  (registers the documents' cases: the full plan)
from xlinalg._machine import cpu_model
from xlinalg.bench import RunConfig, TimerConfig, read_results
from xlinalg.bench._resultsfile import get_path
from xlinalg.bench._runner import plan_cells
from xlinalg.bench._sidebyside import disagreeing, first_pass_only, group_key

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
#: Runs of today's runner (the share of groups whose passes disagree, the time outside groups).
DEFAULTS = (RESULTS / "cpu-default.jsonl.xz", RESULTS / "cpu-default-float32.jsonl.xz")

#: The full scale's timer before this change (d60702c): every pass of every group.
BEFORE = TimerConfig(warmup_time=0.2, min_sample_time=0.02, min_run_time=1.0, min_samples=10,
                     max_samples=200, max_run_time=30.0)

Key = tuple[str, str, str]


@dataclass
class Pass:
    """One pass of a group as its records tell it."""

    elapsed: float
    rounds: int
    wall: dict[str, float]       # backend -> its worker's wall seconds over its samples
    settle: dict[str, float]     # backend -> seconds waited before its visits
    sampled: dict[str, list[float]]  # backend -> seconds sampled in each round


@dataclass
class Group:
    key: Key
    passes: list[Pass] = field(default_factory=list)

    @property
    def backends(self) -> list[str]:
        return list(self.passes[0].wall)


def _split(rec: Mapping[str, Any], rounds: Sequence[int]) -> list[list[float]]:
    """A merged record's per-round sampled seconds, cut into its passes."""
    number = int((rec.get("time") or {}).get("number") or 1)
    blocks = (rec.get("side_by_side") or {}).get("block_s") or []
    out, i = [], 0
    for r in rounds:
        out.append([sum(b) * number for b in blocks[i:i + r]])
        i += r
    return out


def _per_pass(merged: Mapping[str, Any], first: Mapping[str, Any], name: str, i: int,
              later: int) -> float:
    """A backend's `name` (``wall_s``, ``settle_s``) in pass `i`: the first pass's own
    record, the mean of the later ones (the merged record sums every pass)."""
    total = float(merged["side_by_side"].get(name) or 0.0)
    one = float(first["side_by_side"].get(name) or 0.0)
    return one if i == 0 else (total - one) / later


def groups_of(records: Iterable[Mapping[str, Any]]) -> dict[Key, Group]:
    """Every group with its passes (the newest merged record of each backend, and
    its first-pass record for the first pass's own wall and settle)."""
    first: dict[Key, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    merged: dict[Key, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in records:
        sbs = r.get("side_by_side")
        if not isinstance(sbs, Mapping) or not sbs.get("round_s"):
            continue
        k = (str(r["case"]), str(r["dtype"]), str(r["size_label"]))
        (merged if sbs.get("passes") else first)[k][str(r["backend"])] = r
    out: dict[Key, Group] = {}
    for k, recs in merged.items():
        meta = next(iter(recs.values()))["side_by_side"]["passes"]
        rounds = [int(p["rounds"]) for p in meta]
        if len(rounds) < 2 or not all(b in first[k] for b in recs):
            continue
        g = Group(k)
        split = {b: _split(r, rounds) for b, r in recs.items()}
        later = len(rounds) - 1
        for i, p in enumerate(meta):
            g.passes.append(Pass(float(p["group_elapsed_s"]), rounds[i],
                                 {b: _per_pass(recs[b], first[k][b], "wall_s", i, later) for b in recs},
                                 {b: _per_pass(recs[b], first[k][b], "settle_s", i, later) for b in recs},
                                 {b: split[b][i] for b in recs}))
        out[k] = g
    return out


def _rest(p: Pass) -> float:
    return p.elapsed - sum(p.wall.values()) - sum(p.settle.values())


def stop_after(timer: TimerConfig, sampled: Mapping[str, float], wall: float, n: int) -> int:
    """Rounds a pass takes under `timer` (``measure_group``'s stop rule) when each
    backend samples `sampled[b]` seconds a round and the rounds cost `wall` a round."""
    for r in range(1, timer.max_samples + 1):
        if r >= timer.max_samples:
            return r
        if r >= timer.min_samples and all(s * r >= timer.min_run_time for s in sampled.values()):
            return r
        if r >= timer.hard_min_samples and wall * r >= timer.max_run_time * max(1, n):
            return r
    return timer.max_samples


@dataclass
class Estimate:
    key: Key
    cells: int
    backends: list[str]
    first: float          # the first pass, seconds
    later: float          # one later pass, seconds
    min_passes: int
    max_passes: int
    share: dict[str, float]   # backend -> its share of the group's time
    measured: bool = True

    def seconds(self, passes: float) -> float:
        return self.first + (passes - 1) * self.later


def estimate(g: Group, timer: TimerConfig, active: Sequence[str], cells: int) -> Estimate:
    """`g`'s cost under `timer` on the backends `active` (a subset of those it ran)."""
    act = [b for b in g.backends if b in active] or g.backends
    rounds = sum(p.rounds for p in g.passes)
    per_round = {b: (sum(p.wall[b] for p in g.passes) + sum(p.settle[b] for p in g.passes))
                 / rounds for b in act}
    wall_round = sum(sum(p.wall[b] for p in g.passes) / rounds for b in act)
    sampled = {b: statistics.fmean([x for p in g.passes for x in p.sampled[b]] or [0.0]) for b in act}
    frac = len(act) / len(g.backends)
    fixed1 = max(0.0, _rest(g.passes[0])) * frac
    fixed_l = statistics.fmean(max(0.0, _rest(p)) for p in g.passes[1:]) * frac
    c = sum(per_round.values())
    r1 = stop_after(timer, sampled, wall_round, len(act))
    rl = stop_after(timer.later_pass(), sampled, wall_round, len(act))
    first, later = fixed1 + r1 * c, fixed_l + rl * c
    total = first + later
    share = {b: (fixed1 + fixed_l) / len(act) / total + (r1 + rl) * per_round[b] / total for b in act}
    return Estimate(g.key, cells, act, first, later, timer.min_passes, timer.max_passes, share)


def disagreeing_share(records: Iterable[Mapping[str, Any]]) -> float:
    """The share of groups whose passes disagree (``_sidebyside.disagreeing``), each
    pass rebuilt from a merged record's rounds."""
    merged: dict[Key, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in records:
        sbs = r.get("side_by_side")
        if isinstance(sbs, Mapping) and sbs.get("passes") and r.get("status") in ("ok", "unchecked"):
            merged[(str(r["case"]), str(r["dtype"]), str(r["size_label"]))][str(r["backend"])] = r
    hits = n = 0
    for recs in merged.values():
        if len(recs) < 2:
            continue
        rounds = [int(p["rounds"]) for p in next(iter(recs.values()))["side_by_side"]["passes"]]
        passes: list[dict[str, dict[str, Any]]] = [{} for _ in rounds]
        for b, r in recs.items():
            i = 0
            for j, k in enumerate(rounds):
                rs = r["side_by_side"]["round_s"][i:i + k]
                i += k
                med = statistics.median([x for x in rs if x]) if any(rs) else None
                passes[j][b] = {"status": "ok", "side_by_side": {"round_s": rs},
                                "time": {"median_s": med}}
        n += 1
        hits += disagreeing(passes, stall=2.0)
    return hits / n if n else 1.0


def outside_groups(records: Sequence[Mapping[str, Any]], headers: Sequence[Mapping[str, Any]]) -> float:
    """Seconds of an uninterrupted run outside its groups (one header only)."""
    if len(headers) != 1:
        return 0.0
    start = datetime.fromisoformat(str(headers[0]["created"]))
    ends = [datetime.fromisoformat(str(r["finished"])) for r in records if r.get("finished")]
    groups = groups_of(records)
    inside = sum(p.elapsed for g in groups.values() for p in g.passes)
    return max(0.0, (max(ends) - start).total_seconds() - inside) if ends else 0.0


def full_plan(header: Mapping[str, Any], before: bool = False) -> list[dict[str, Any]]:
    """The cells of ``xlinalg bench --full`` on the file's backends and dtype, in plan order."""
    run = header.get("run") or {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(scale="full", backends=list(run.get("backends") or []),
                        dtype=str(run.get("dtype") or "float64"), out=str(Path(tmp) / "x.jsonl"),
                        timer=BEFORE if before else None)
        return plan_cells(cfg)


def plan(header: Mapping[str, Any], before: bool) -> dict[Key, tuple[TimerConfig, list[str], int]]:
    """Today's full-scale plan on the file's backends and dtype: group -> (timer of
    its cells, backends timed, cells)."""
    out: dict[Key, tuple[TimerConfig, list[str], int]] = {}
    for c in full_plan(header, before):
        k = group_key(c)
        k = (k[0], k[1], k[2])
        timer = TimerConfig(**c["timer"])
        t, active, n = out.get(k, (timer, [], 0))
        if before or not c.get("skip_reason"):
            active.append(c["backend"])
        out[k] = (t, active, n + 1)
    return out


def run(full: Path, defaults: Sequence[Path], before: bool) -> dict[str, Any]:
    fres = read_results(full, warn=False)
    dres = [read_results(d, warn=False) for d in defaults]
    measured = groups_of(fres.records)
    share = disagreeing_share([r for d in dres for r in d.records])
    todo = plan(fres.headers[0], before)
    ests: list[Estimate] = []
    missing: list[tuple[Key, TimerConfig, list[str], int]] = []
    for k, (timer, active, cells) in todo.items():
        if k in measured:
            ests.append(estimate(measured[k], timer, active, cells))
        else:
            missing.append((k, timer, active, cells))
    for k, timer, active, cells in missing:  # a size the file lacks: its case's mean
        same = [e for e in ests if e.key[0] == k[0]] or ests
        ests.append(Estimate(k, cells, active, statistics.fmean(e.first for e in same),
                             statistics.fmean(e.later for e in same), timer.min_passes,
                             timer.max_passes, {b: 1.0 / max(1, len(active)) for b in active},
                             measured=False))
    overhead = max(outside_groups(d.records, d.headers) for d in dres)
    return summarize(ests, share, overhead)


def summarize(ests: Sequence[Estimate], share: float, overhead: float) -> dict[str, Any]:
    def at(e: Estimate, which: str) -> float:
        p = {"low": e.min_passes, "high": e.max_passes,
             "expected": e.min_passes + share * (e.max_passes - e.min_passes)}[which]
        return e.seconds(p)

    cases: dict[str, dict[str, Any]] = {}
    backends: dict[str, float] = defaultdict(float)
    for e in ests:
        c = cases.setdefault(e.key[0], {"cells": 0, "groups": 0, "low": 0.0, "expected": 0.0,
                                        "high": 0.0, "estimated_from_case_mean": 0})
        c["cells"] += e.cells
        c["groups"] += 1
        c["estimated_from_case_mean"] += not e.measured
        for w in ("low", "expected", "high"):
            c[w] += at(e, w)
        for b, s in e.share.items():
            backends[b] += s * at(e, "expected")
    total = {w: sum(c[w] for c in cases.values()) + overhead for w in ("low", "expected", "high")}
    for c in cases.values():
        c["share"] = c["expected"] / total["expected"]
    return {"disagreeing_share": share, "outside_groups_s": overhead,
            "total_s": total, "total_h": {w: v / 3600 for w, v in total.items()},
            "cases": dict(sorted(cases.items(), key=lambda kv: -kv[1]["expected"])),
            "backends": {b: {"s": s, "share": s / total["expected"]}
                         for b, s in sorted(backends.items(), key=lambda kv: -kv[1])}}


def cut(cases: Iterable[tuple[str, float]], minutes: float) -> list[tuple[float, list[str]]]:
    """(case, expected seconds) pairs in plan order, cut into calls of about `minutes`:
    consecutive cases join a call while its total stays within `minutes`; a case
    longer than that is a call of its own, never split."""
    out: list[tuple[float, list[str]]] = []
    for case, seconds in cases:
        if out and out[-1][0] + seconds <= minutes * 60:
            out[-1] = (out[-1][0] + seconds, [*out[-1][1], case])
        else:
            out.append((seconds, [case]))
    return out


def chunks(full: Path, minutes: float, partial: Path | None = None,
           defaults: Sequence[Path] = DEFAULTS) -> list[tuple[float, list[str]]]:
    """The full run's cases cut into calls of about `minutes` each (:func:`cut`, on
    the expected cost from `full`), in plan order. Cases whose every cell `partial`
    holds over all its passes (or as skipped or failed) are left out: a resumed
    run has nothing left to do for them.

    ``benchmarks/remeasure_full.sh`` runs one ``--resume --cases`` call per chunk,
    so a call measures every pass of its groups before it ends: a stop loses at
    most the chunk under way, where one call for the whole run would lose every
    later pass (they run after every group's first pass).
    """
    latest: Mapping[str, Any] = {}
    if partial and partial.exists():
        pres = read_results(partial, warn=False)
        theirs = get_path(pres.headers[0] if pres.headers else {}, "env", "cpu", "model")
        if theirs and theirs != cpu_model():
            # --resume refuses it too; say so before a chunk is cut
            raise SystemExit(f"full_run_cost.py: {partial} was measured on {theirs!r}, this "
                             f"machine is {cpu_model()!r}: resume it on that processor")
        latest = pres.latest()
    fres = read_results(full, warn=False)
    cost = run(full, defaults, False)["cases"]
    order: dict[str, list[str]] = {}
    for c in full_plan(fres.headers[0]):
        order.setdefault(c["case"], []).append(c["key"])
    left = [(case, float(cost.get(case, {}).get("expected", 0.0))) for case, keys in order.items()
            if not all(k in latest and not first_pass_only(latest[k]) for k in keys)]
    return cut(left, minutes)


def _print(out: Mapping[str, Any]) -> None:
    t = out["total_s"]
    print(f"groups whose passes "
          f"disagree (extra passes): {100 * out['disagreeing_share']:.0f} %; outside the "
          f"groups {out['outside_groups_s']:.0f} s")
    print(f"total: {t['low']:.0f} s (min passes) / {t['expected']:.0f} s (expected) / "
          f"{t['high']:.0f} s (max passes) = {t['low'] / 3600:.2f} / {t['expected'] / 3600:.2f} / "
          f"{t['high'] / 3600:.2f} h")
    print(f"{'case':28s} {'cells':>5s} {'groups':>6s} {'min passes':>10s} {'expected':>9s} "
          f"{'max passes':>10s} {'share':>6s}")
    for name, c in out["cases"].items():
        note = f"  ({c['estimated_from_case_mean']} from the case's mean)" if c["estimated_from_case_mean"] else ""
        print(f"{name:28s} {c['cells']:5d} {c['groups']:6d} {c['low']:10.0f} {c['expected']:9.0f} "
              f"{c['high']:10.0f} {100 * c['share']:5.1f}%{note}")
    print("per backend (expected):", ", ".join(f"{b} {v['s']:.0f} s ({100 * v['share']:.0f}%)"
                                               for b, v in out["backends"].items()))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", type=Path, default=RESULTS / "cpu-full.jsonl.xz")
    ap.add_argument("--default", type=Path, nargs="+",
                    default=list(DEFAULTS),
                    help="runs of today's runner (of an uninterrupted one, the time outside "
                         "its groups is measured too)")
    ap.add_argument("--before", action="store_true",
                    help="the full scale before its timer and the sweep's policy changed")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--chunks", type=float, metavar="MINUTES",
                    help="print the run cut into calls of about MINUTES (expected seconds, "
                         "then the comma-separated cases, one call per line), for "
                         "benchmarks/remeasure_full.sh")
    ap.add_argument("--partial", type=Path,
                    help="with --chunks: leave out the cases this resumed run has finished")
    args = ap.parse_args(argv)
    if args.chunks is not None:
        if not (args.chunks > 0):
            ap.error(f"--chunks needs a positive number of minutes, got {args.chunks}")
        for seconds, cases in chunks(args.full, args.chunks, args.partial, args.default):
            print(f"{seconds:.0f} {','.join(cases)}")
        return 0
    out = run(args.full, args.default, args.before)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        _print(out)
    return 0 if all(math.isfinite(v) for v in out["total_s"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
