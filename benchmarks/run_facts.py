"""What a results file says about the run that wrote it: the facts a page may quote.

    python benchmarks/run_facts.py RESULTS [MORE ...] [--json]

For each file: its runs (one header per run or resumed run: when it started, the load
average at its start and whether the machine was oversubscribed then), the load
average the side-by-side groups recorded while they ran (the range over every timed
group, which is what "load average A-B" on a page must cover), the cells by status
(the last record of each cell), the cells flagged noisy, the verdict of each
(case, size) group, and, pass by pass, why each group stopped measuring.

``docs/question.md`` quotes these facts for the committed runs;
``tests/architecture/test_question_facts.py`` checks the quotes against this
script's reading of the files, so a page cannot understate a load range or call an
oversubscribed run quiet.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from typing import Any

from xlinalg.bench import read_results
from xlinalg.bench._verdict import WITHIN_NOISE, tie_reading

_PASS = re.compile(r"pass (\d+): ([^;]+)")


def _loads(value: Any) -> list[float]:
    """The load figures one record's group recorded (a summary dict or one number)."""
    if isinstance(value, dict):
        out = [value.get("min"), value.get("max")]
    else:
        out = [value]
    return [float(x) for x in out if isinstance(x, (int, float)) and math.isfinite(x)]


def _verdict_kind(verdict: dict[str, Any] | None) -> str:
    """What a recorded group verdict says, in the harness's own words (its one rule,
    ``xlinalg.bench._verdict``): a fastest named, one backend, a tie read as the
    harness reads it (within noise, or a real difference below the margin), none."""
    if not verdict:
        return "no verdict"
    if verdict.get("fastest"):
        return "fastest named"
    text = str(verdict.get("text", ""))
    if text.startswith("only "):
        return "one backend ran"
    if text.startswith("no verdict"):
        return "no verdict"
    if verdict.get("tie"):
        reading = tie_reading(verdict)
        return f"tie {reading}" if reading == WITHIN_NOISE else reading
    return "no verdict"


def facts(path: str) -> dict[str, Any]:
    """The run facts of one results file (see the module docstring)."""
    rf = read_results(path, warn=False)
    runs = []
    for h in rf.headers:
        header: dict[str, Any] = dict(h)
        start = (header.get("run") or {}).get("load_at_start") or {}
        runs.append({
            "created": header.get("created"),
            "resumed": bool(header.get("resumed")),
            "load_at_start": start.get("load_avg_1min"),
            "oversubscribed": bool(start.get("oversubscribed")),
        })
    group_loads: list[float] = []
    stops: dict[int, Counter[str]] = {}
    seen: Counter[str] = Counter()
    for r in rf.records:
        seen[r["key"]] += 1
        sbs = r.get("side_by_side") or {}
        if r.get("status") != "ok" or not sbs:
            continue
        group_loads += _loads(sbs.get("load_avg_1min"))
        stop = str(sbs.get("stop") or "")
        parts = {int(k): v.strip() for k, v in _PASS.findall(stop)}
        if not parts and stop:
            parts = {seen[r["key"]]: stop}
        for p, why in parts.items():
            if p == max(parts):  # each pass's record names its own pass last
                stops.setdefault(p, Counter())[why] += 1
    latest = rf.latest()
    status = Counter(str(r.get("status")) for r in latest.values())
    ok = [r for r in latest.values() if r.get("status") == "ok"]
    noisy = sum(1 for r in ok if (r.get("time") or {}).get("noisy"))
    groups: dict[tuple[str, str], Any] = {}
    for r in ok:
        groups.setdefault((r["case"], r["size_label"]), r.get("verdict"))
    verdicts = Counter(_verdict_kind(v) for v in groups.values())
    starts = [x["load_at_start"] for x in runs if isinstance(x["load_at_start"], (int, float))]
    every = group_loads + [float(x) for x in starts]
    return {
        "file": path,
        "runs": runs,
        "load_range": [min(every), max(every)] if every else None,
        "group_load_range": [min(group_loads), max(group_loads)] if group_loads else None,
        "oversubscribed_at_a_start": any(x["oversubscribed"] for x in runs),
        "cells": len(latest),
        "status": dict(status),
        "noisy": noisy,
        "timed": len(ok),
        "groups": len(groups),
        "verdicts": dict(verdicts),
        "stops_by_pass": {p: dict(c) for p, c in sorted(stops.items())},
        "records_per_cell": dict(Counter(seen.values())),
    }


def _print(f: dict[str, Any]) -> None:
    print(f["file"])
    for r in f["runs"]:
        over = ", oversubscribed" if r["oversubscribed"] else ""
        kind = "resumed" if r["resumed"] else "started"
        print(f"  {kind} {r['created']}: load average {r['load_at_start']:.2f} at its start{over}")
    if f["load_range"]:
        lo, hi = f["load_range"]
        print(f"  load average over the run: {lo:.2f}-{hi:.2f}")
    print(f"  {f['cells']} cells: " + ", ".join(f"{n} {s}" for s, n in sorted(f["status"].items())))
    print(f"  {f['noisy']} of {f['timed']} timed cells flagged noisy")
    print(f"  {f['groups']} (case, size) groups: "
          + ", ".join(f"{n} {k}" for k, n in sorted(f["verdicts"].items())))
    for p, c in f["stops_by_pass"].items():
        print(f"  pass {p} stopped: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items(), key=lambda kv: -kv[1])))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="RESULTS")
    ap.add_argument("--json", action="store_true", help="one JSON object per file")
    args = ap.parse_args(argv)
    for path in args.files:
        f = facts(path)
        if args.json:
            print(json.dumps(f))
        else:
            _print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
