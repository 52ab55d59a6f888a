"""A group's verdict, and one record per backend from several passes over the run.

:func:`merge_passes` makes the record that stands from a group's passes (each a
side-by-side measurement in fresh worker processes): all rounds, ratios whose
interval spans the passes (:func:`._stats.combine_passes`) and the verdict drawn
from those; why passes: docs/benchmark.md, "Side by side", step 7. Pure: records
in, records out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._findings._fields import rates_at, raw_times
from ._schema import SideBySide, TimeStats, conforms
from ._stats import all_pairs, as_reading, combine_passes, effective_cores, starved, verdict
from ._timer import NOISE_THRESHOLD, Stats
from ._verdict import verdict_text

__all__ = ["PARALLELISM_FACTOR", "group_verdict", "merge_passes", "parallelism_note", "pass_pairs",
           "usable_first_pass"]

#: Effective cores differing by more than this factor between backends: the
#: verdict says the libraries did not use the same parallelism.
PARALLELISM_FACTOR = 1.4

_GOOD = ("ok", "unchecked")


def parallelism_note(cores: Mapping[str, float | None]) -> str | None:
    """A sentence when the backends kept different numbers of cores busy, else None."""
    known = {b: c for b, c in cores.items() if c is not None and c > 0}
    if len(known) < 2:
        return None
    lo, hi = min(known.values()), max(known.values())
    if hi / lo <= PARALLELISM_FACTOR:
        return None
    parts = ", ".join(f"{b} {c:.1f}" for b, c in known.items())
    return (f"not the same parallelism: effective cores {parts} (a library using more cores "
            "wins by parallelism, and loses more when the machine is loaded)")


def group_verdict(good: Mapping[str, Sequence[float | None]],
                  cores: Mapping[str, float | None], excluded: Mapping[str, Any], *,
                  margin: float, level: float, seed: int,
                  pairs: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                  ) -> dict[str, Any]:
    """The verdict of a group: :func:`._stats.verdict` over the rounds of the
    backends whose result is good, with their effective cores, the parallelism
    note, no verdict at all when a CPU worker was starved, and the excluded
    backends with their status."""
    v = verdict(good, margin=margin, level=level, seed=seed, pairs=pairs)
    note = parallelism_note({b: cores.get(b) for b in good})
    v["effective_cores"] = {b: cores.get(b) for b in good}
    starving = {b: c for b, c in v["effective_cores"].items() if starved(b, c)}
    if starving and len(good) > 1:
        # The process waited for a CPU most of the time: the times measure the
        # scheduler, and no verdict drawn from them would hold in the next run.
        v["starved"] = starving
        v["fastest"] = None
        v["tie"] = []  # not a tie: nothing was concluded
        worst = min(starving, key=lambda b: starving[b])
        v["no_verdict"] = (f"{worst} ran only {100 * starving[worst]:.0f}% of the wall "
                           "time (the machine is oversubscribed; the times measure the scheduler)")
        v["text"] = verdict_text(as_reading(v, None))
        note = "; ".join(x for x in (note, v["text"]) if x)
    v["parallelism_note"] = note
    if excluded:
        v["excluded"] = dict(excluded)
    return v


def _merged_time(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first pass's ``time`` with its statistics over the rounds of every pass,
    and each pass's median in ``passes``."""
    base = dict(recs[0].get("time") or {})
    raw = [x for r in recs for x in raw_times(r)]
    if not raw:
        return base
    s = Stats.from_samples(raw)
    base.update(s.to_dict(), noisy=s.relative_iqr > NOISE_THRESHOLD, samples=s.n, raw_s=raw)
    meds = [(r.get("time") or {}).get("median_s") for r in recs]
    base["passes"] = [{"median_s": m, "samples": len(raw_times(r))} for m, r in zip(meds, recs)]
    good = [m for m in meds if isinstance(m, (int, float)) and m > 0]
    if len(good) > 1:
        base["passes_spread"] = max(good) / min(good)  # 1: the passes agree
    return base


def _number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _load_reading(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("samples"), int) and not isinstance(x["samples"], bool)
            and x["samples"] > 0 and all(_number(x.get(k)) for k in ("min", "max", "mean")))


def usable_first_pass(rec: Mapping[str, Any]) -> bool:
    """Whether a first-pass record read back from a results file (an edited or
    foreign one) can be merged with a second pass: it has rounds, and its
    ``side_by_side`` and ``time`` are of the record's types (:mod:`._schema`). A
    resumed run measures a group with an unusable record again, whole, instead of
    failing on it at the end."""
    sbs = rec.get("side_by_side")
    return (isinstance(sbs, Mapping) and bool(sbs.get("round_s")) and conforms(sbs, SideBySide)
            and conforms(rec.get("time") or {}, TimeStats))


def _merged_load(loads: Sequence[Any]) -> dict[str, Any] | None:
    """``{min, max, mean, samples}`` over the passes' load readings."""
    got = [x for x in loads if _load_reading(x)]
    if not got:
        return None
    n = sum(int(x["samples"]) for x in got)
    return {"min": min(float(x["min"]) for x in got), "max": max(float(x["max"]) for x in got),
            "mean": sum(float(x["mean"]) * int(x["samples"]) for x in got) / n, "samples": n}


def pass_pairs(passes: Sequence[Mapping[str, Mapping[str, Any]]], *, level: float,
               seed: int) -> tuple[list[str], list[dict[tuple[str, str], dict[str, Any]]]]:
    """The backends good in every pass of a group, and each pass's paired ratios of
    them (:func:`._stats.all_pairs` of its rounds)."""
    good = [b for b in passes[0] if all(
        b in p and p[b].get("status") in _GOOD and isinstance(sbs := p[b].get("side_by_side"),
                                                                Mapping) and sbs for p in passes)]
    return good, [all_pairs({b: p[b]["side_by_side"].get("round_s") or [] for b in good},
                            level=level, seed=seed) for p in passes]


def merge_passes(passes: Sequence[Mapping[str, dict[str, Any]]], *, margin: float,
                 level: float, seed: int) -> dict[str, dict[str, Any]]:
    """One record per backend of a group from its passes (each: backend -> record,
    as :func:`._sidebyside.measure_group` annotated them), in the first pass's order.

    A backend whose result is not good in every pass keeps its first non-good
    record (a failure or a wrong result is never averaged away). The others get
    their rounds and blocks of every pass in one ``side_by_side`` (with
    ``passes``: each pass's rounds, stop, cores, load), their ``time`` over all
    rounds, ``ratios`` spanning the passes and the verdict drawn from those.
    """
    first = passes[0]
    names = list(first)
    good, per_pass_pairs = pass_pairs(passes, level=level, seed=seed)
    out = {b: dict(next((p[b] for p in passes if b in p and p[b].get("status") not in _GOOD),
                        first[b])) for b in names if b not in good}
    pairs = combine_passes(per_pass_pairs, level=level)
    rounds: dict[str, list[float | None]] = {}
    cores: dict[str, float | None] = {}
    for b in good:
        recs = [p[b] for p in passes]
        sbs = [r["side_by_side"] for r in recs]
        merged = dict(recs[0])
        wall = sum(float(x.get("wall_s") or 0.0) for x in sbs)
        cpu = sum(float(x.get("cpu_s") or 0.0) for x in sbs)
        rounds[b] = [v for x in sbs for v in x.get("round_s") or []]
        cores[b] = effective_cores(cpu, wall)
        merged["side_by_side"] = {
            **sbs[0],
            "rounds": sum(int(x.get("rounds") or 0) for x in sbs),
            "order": [o for x in sbs for o in x.get("order") or []],
            "round_s": rounds[b],
            "block_s": [blk for x in sbs for blk in x.get("block_s") or []],
            "stop": "; ".join(f"pass {i + 1}: {x.get('stop')}" for i, x in enumerate(sbs)),
            "group_elapsed_s": sum(float(x.get("group_elapsed_s") or 0.0) for x in sbs),
            "wall_s": wall,
            "cpu_s": cpu,
            "effective_cores": cores[b],
            "settle_s": sum(float(x.get("settle_s") or 0.0) for x in sbs),
            "load_avg_1min": _merged_load([x.get("load_avg_1min") for x in sbs]),
            "passes": [{k: x.get(k) for k in ("rounds", "stop", "effective_cores",
                                              "load_avg_1min", "group_elapsed_s")}
                       for x in sbs],
        }
        merged["time"] = _merged_time(recs)
        if isinstance(merged.get("throughput"), Mapping):  # the rates at the merged time
            merged["throughput"] = rates_at(merged["throughput"], merged["time"])
        merged["ratios"] = {o: pairs[(b, o)] for o in good if (b, o) in pairs}
        out[b] = merged
    excluded = {b: out[b].get("status") for b in names if b not in good}
    v = group_verdict({b: rounds[b] for b in good}, cores, excluded, margin=margin,
                      level=level, seed=seed, pairs=pairs)
    v["passes"] = len(passes)  # a verdict over every pass (a resume looks for it)
    for b in names:
        out[b]["verdict"] = v
    return {b: out[b] for b in names}
