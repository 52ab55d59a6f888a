"""Who is faster, read from the records: the runner's verdict where it recorded one,
else the one rule (:func:`.._verdict.decide`) over the cells' quartiles."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from .._verdict import MARGIN, decide, fmt_interval, fmt_ratio, positive, verdict_text
from ._fields import good, median, median_or_inf, section_of, section_order, size_key

__all__ = ["MARGIN", "cells", "fmt_interval", "fmt_ratio", "quartiles", "ratio", "shaky",
           "verdict", "verdict_text", "winners"]


def cells(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(case, dtype, size_label) -> {backend: record}."""
    out: dict[tuple[str, str, str], dict[str, Any]] = defaultdict(dict)
    for r in records:
        out[(r["case"], str(r["dtype"]), str(r["size_label"]))][r["backend"]] = r
    return out


def quartiles(r: dict[str, Any]) -> tuple[float, float, float] | None:
    """(q1, median, q3) of a cell's time per call, from whatever the record holds;
    always q1 <= median <= q3 (error bars drawn from them are never negative, even
    where a shared file's quartiles do not surround its median)."""
    med = median(r)
    if med is None:
        return None
    t = r.get("time") or {}
    q1, q3 = t.get("q1_s"), t.get("q3_s")
    if positive(q1) and positive(q3) and q1 <= med <= q3:
        return float(q1), med, float(q3)
    raw = t.get("raw_s")
    raw = sorted(float(x) for x in (raw if isinstance(raw, list) else []) if positive(x))
    if len(raw) >= 4:
        n = len(raw) - 1
        return min(raw[round(0.25 * n)], med), med, max(raw[round(0.75 * n)], med)
    iqr = t.get("iqr_s")
    if not positive(iqr) and positive(t.get("iqr_over_median")):  # (a progress line's record)
        iqr = float(t["iqr_over_median"]) * med
    h = float(iqr) / 2 if positive(iqr) else 0.0
    return max(med - h, med * 1e-3), med, med + h


def shaky(r: dict[str, Any]) -> str:
    """``"stalled"``, ``"noisy"`` or ``""``: how far a cell's own time can be trusted."""
    st = r.get("stall")
    if isinstance(st, dict) and st.get("stalled"):
        return "stalled"
    return "noisy" if (r.get("time") or {}).get("noisy") else ""


def paired_of(slow: dict[str, Any], fast: dict[str, Any]) -> tuple[float, float, float] | None:
    """The runner's paired ratio of two backends' cells of one group (low, ratio,
    high), or None when the records carry none."""
    paired = (slow.get("ratios") or {}).get(fast.get("backend"))
    same_cell = all(slow.get(k) == fast.get(k) for k in ("case", "dtype", "size_label"))
    if isinstance(paired, dict) and same_cell and all(
            positive(paired.get(k)) for k in ("lo", "ratio", "hi")):
        return float(paired["lo"]), float(paired["ratio"]), float(paired["hi"])
    return None


def ratio(slow: dict[str, Any], fast: dict[str, Any]) -> tuple[float, float, float] | None:
    """time(slow) / time(fast) with an interval: (low, ratio, high), or None.

    Cells measured side by side carry the runner's paired-round ratio with its
    bootstrap interval (``record["ratios"][other backend]``), used as it is.
    Otherwise (cells measured apart, e.g. in two runs) the interval spans the
    two cells' quartiles (slow q1 / fast q3 .. slow q3 / fast q1).
    """
    paired = paired_of(slow, fast)
    if paired is not None:
        return paired
    a, b = quartiles(slow), quartiles(fast)
    if a is None or b is None:
        return None
    # times from a file may be 1e308 or subnormal: a quotient that overflows to
    # inf or underflows to 0 (a subnormal's q1 is 0) is no ratio
    lo, mid, hi = (x / y if y > 0 else math.inf
                   for x, y in ((a[0], b[2]), (a[1], b[1]), (a[2], b[0])))
    return (lo, mid, hi) if positive(lo) and positive(mid) and positive(hi) else None


def verdict(by: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The verdict among `by` (label -> record of one cell), as the records give it.

    Returns ``{"winner", "runner_up", "median_s", "speedup", "tie", "tied", "n",
    "shaky", "text"}`` (``speedup``: ``{"over", "ratio", "lo", "hi"}``, the record's
    shape; ``tied``: the backends of a tie, the winner first) or None when no
    label has a time. A verdict the runner recorded with the cells
    (``record["verdict"]``, from paired rounds) is used as it is when it speaks of
    the same backends; else the one rule (:func:`.._verdict.decide`) is drawn over
    the intervals of :func:`ratio`, so a file's verdicts read the same whether the
    runner recorded them or they are drawn here.
    """
    ok = sorted(((median_or_inf(r), b) for b, r in by.items() if good(r)), key=lambda t: t[0])
    if not ok:
        return None
    recorded = next((r.get("verdict") for r in by.values()
                     if isinstance(r.get("verdict"), dict)), None)
    win = ok[0][1]
    out: dict[str, Any] = {"winner": win, "runner_up": None, "median_s": ok[0][0],
                           "speedup": None, "tie": False, "n": len(ok),
                           "shaky": sorted({b for b, r in by.items() if good(r) and shaky(r)})}
    names = {b for b, r in by.items() if good(r)}
    reason = no_verdict_reason(recorded)
    if reason is not None and len(ok) > 1:
        # the runner concluded nothing (a starved worker...): not a tie, not a winner
        out.update(no_verdict=reason, runner_up=ok[1][1], winner=None)
        out["text"] = verdict_text(out)
        return out
    sp = recorded.get("speedup") if isinstance(recorded, dict) else None
    if (isinstance(recorded, dict) and isinstance(sp, dict) and sp.get("over") in names
            and all(positive(sp.get(k)) for k in ("ratio", "lo", "hi"))
            and (recorded.get("fastest") in names or set(recorded.get("tie") or ()) & names)
            and set(recorded.get("effective_cores") or dict.fromkeys(names, 0)) == names):
        # the runner's verdict over exactly these backends (side by side, paired rounds)
        tied = [b for b in (recorded.get("tie") or []) if b != sp["over"]]
        out["winner"] = recorded.get("fastest") or (tied or [win])[0]
        out["runner_up"] = sp["over"]
        out["speedup"] = {k: sp[k] for k in ("over", "ratio", "lo", "hi")}
        out["tie"] = recorded.get("fastest") is None
        if out["tie"]:
            out["tied"] = [out["winner"], *(b for b in recorded.get("tie") or []
                                            if b in names and b != out["winner"])]
        out["note"] = recorded.get("parallelism_note") or ""
        out["source"] = "recorded"
        if isinstance(recorded.get("p_margin"), (int, float)):
            out["p_margin"] = float(recorded["p_margin"])
    elif len(ok) > 1:
        d = decide({b: m for m, b in ok}, lambda s, f: ratio(by[s], by[f]), MARGIN)
        out["runner_up"] = ok[1][1]
        out["speedup"] = d["speedup"]
        out["tie"] = bool(d["tie"])
        if d["tie"]:
            out["tied"] = d["tie"]
    out["text"] = verdict_text(out)
    return out


def no_verdict_reason(recorded: Any) -> str | None:
    """Why the runner drew no verdict for a group (``verdict.no_verdict``), else None."""
    why = recorded.get("no_verdict") if isinstance(recorded, dict) else None
    return why if isinstance(why, str) and why else None


#: False-discovery rate of the winners a run names (Benjamini-Hochberg over its groups).
FDR = 0.05


def control_fdr(rows: list[dict[str, Any]]) -> None:
    """Benjamini-Hochberg over the groups' claims, in place: a group named by the
    runner (``p_margin``: the p-value of "the fastest clears every other by the
    margin") keeps its winner only when its p-value is under the BH line of all
    groups with two or more backends (a tie counts with p = 1); otherwise it
    becomes "a real difference below the margin" with ``fdr`` saying why. Rows
    without a p-value (files from before, verdicts drawn here) are left alone."""
    from scipy.stats import false_discovery_control

    judged = [w for w in rows if w.get("runner_up") is not None and not w.get("no_verdict")]
    ps = [min(1.0, max(0.0, w["p_margin"])) if not w.get("tie") and isinstance(
        w.get("p_margin"), float) else 1.0 for w in judged]
    for w, adjusted in zip(judged, false_discovery_control(ps) if judged else []):
        p = w.get("p_margin")
        if w.get("tie") or not isinstance(p, float) or adjusted <= FDR:
            continue
        w["tie"] = True
        w["tied"] = [w["winner"], w["runner_up"]]
        w["fdr"] = (f"not beyond the run's false-discovery rate (Benjamini-Hochberg, "
                    f"{100 * FDR:g}% over {len(judged)} groups; p = {p:.2g})")
        w["text"] = verdict_text(w)


def winners(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell (case, dtype, size) with a time: :func:`verdict` plus where it is;
    the run's winners under false-discovery-rate control (:func:`control_fdr`)."""
    rows = []
    for (case, dtype, label), by in sorted(
        cells(records).items(),
        key=lambda kv: (section_order(section_of(next(iter(kv[1].values())))), kv[0][0],
                        kv[0][1], size_key(next(iter(kv[1].values()))))):
        v = verdict(by)
        if v is None:
            continue
        rows.append({"section": section_of(next(iter(by.values()))), "case": case,
                     "dtype": dtype, "size": label, "n_backends": v["n"], **v})
    control_fdr(rows)
    return rows
