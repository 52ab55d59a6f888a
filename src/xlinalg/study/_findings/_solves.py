"""The question's comparisons: the Python loop against batched solves (Q1, Q4) and the
solve sweep's crossovers (Q3)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...bench._findings._fields import device_class, good, has_tag, median, section_of, size_key
from ...bench._findings._verdicts import quartiles

__all__ = ["bandwidth_shares", "crossovers", "loop_vs_batched", "side", "sweep_records"]


def loop_vs_batched(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Loop vs batched solves per backend, dtype and size: speedup = loop / other.

    Loop cells: Q1/Q4 cases tagged ``loop``; every other Q4 case
    (batched, solve_many, unrolled, ...) is compared against the loop cell of
    the same backend, dtype and size label (a Q4 loop first, else Q1's).
    """
    q = [r for r in records if section_of(r) in ("Q1", "Q4") and good(r)]
    loops: dict[tuple[str, str, str], dict[str, Any]] = {}
    by_params: dict[tuple[str, str, str], dict[str, Any]] = {}

    def pkey(r: dict[str, Any]) -> tuple[str, str, str]:
        return (r["backend"], str(r["dtype"]), repr(sorted((r.get("params") or {}).items())))

    for r in sorted(q, key=lambda r: section_of(r) == "Q4"):  # Q4 loops override Q1
        if has_tag(r, "loop"):
            loops[(r["backend"], str(r["dtype"]), str(r["size_label"]))] = r
            if r.get("params"):
                by_params[pkey(r)] = r
    out = []
    for r in q:
        if section_of(r) != "Q4" or has_tag(r, "loop"):
            continue
        lp = loops.get((r["backend"], str(r["dtype"]), str(r["size_label"])))
        if lp is None and r.get("params"):  # same parameters, another size label
            lp = by_params.get(pkey(r))
        if lp is None:
            continue
        out.append({"backend": r["backend"], "dtype": str(r["dtype"]),
                    "size": str(r["size_label"]), "size_key": size_key(r),
                    "method": r["case"], "loop_case": lp["case"],
                    "loop_s": median(lp), "method_s": median(r),
                    "loop_q": quartiles(lp), "method_q": quartiles(r),
                    "speedup": median(lp) / median(r)})  # type: ignore[operator]
    out.sort(key=lambda d: (d["method"], d["backend"], d["dtype"], d["size_key"]))
    return out


def bandwidth_shares(records: list[dict[str, Any]], peaks: dict[str, Any]) -> list[dict[str, Any]]:
    """Every batched small-solve cell of Q4 (each case but the Python loops, tagged
    ``loop``) against the memory wall: the bytes a solve must move (read `a` and `b`,
    write `x`: the case's ``bytes``) over the cell's median time, and that rate's
    share of the machine's streaming peak for the cell's processor class (the
    calibration's add into a preallocated output, :func:`calibrate_peaks`). A cell
    that ran but whose rate or peak is unknown has ``share`` None; cells that did not
    run are left out."""
    out = []
    for r in records:
        if section_of(r) != "Q4" or has_tag(r, "loop") or not good(r):
            continue
        tp = r.get("throughput") or {}
        gbs = tp.get("gbs")
        pc = (peaks.get("by_class") or {}).get(device_class(r), peaks)
        peak = ((pc.get("gbs") or {}).get("any") or (None, ""))[0]
        rate = float(gbs) if isinstance(gbs, (int, float)) and not isinstance(gbs, bool) else None
        share = rate / peak if rate is not None and isinstance(peak, (int, float)) and peak > 0 else None
        out.append({"case": r["case"], "backend": r["backend"], "dtype": str(r["dtype"]),
                    "size": str(r["size_label"]), "size_key": size_key(r),
                    "median_s": median(r), "bytes": tp.get("bytes"), "gbs": rate,
                    "peak_gbs": peak, "share": share})
    out.sort(key=lambda d: (d["case"], d["dtype"], d["size_key"], d["backend"]))
    return out


# ---------------------------------------------------------------------- crossover
def side(r: dict[str, Any]) -> float | None:
    """The matrix side n of a cell (its ``size`` if an int, else ``params['n']``)."""
    s = r.get("size")
    if isinstance(s, (int, float)) and not isinstance(s, bool):
        return float(s)
    p = r.get("params") or {}
    n = p.get("n")
    if isinstance(n, (int, float)) and not isinstance(n, bool):
        return float(n)
    return None


def sweep_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells of the solve sweep: Q3 cases, else cases tagged ``sweep`` with a side n."""
    q3 = [r for r in records if section_of(r) == "Q3"]
    if q3:
        return q3
    return [r for r in records if has_tag(r, "sweep") and side(r) is not None
            and section_of(r) != "Q4"]


def crossovers(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per sweep case and dtype: the fastest backend at each n, and the n where it changes."""
    out = []
    sw = [r for r in sweep_records(records) if good(r) and side(r) is not None]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sw:
        groups[(r["case"], str(r["dtype"]))].append(r)
    for (case, dtype), rs in groups.items():
        by_n: dict[float, dict[str, float]] = defaultdict(dict)
        for r in rs:
            n, tm = side(r), median(r)
            if n is not None and tm is not None:  # always: `sw` holds good cells with a side
                by_n[n][r["backend"]] = tm
        backends = sorted({r["backend"] for r in rs})
        if len(backends) < 2:
            continue
        seq = []
        for n in sorted(by_n):
            t = by_n[n]
            if len(t) < 2:
                continue
            w = min(t, key=t.__getitem__)
            seq.append((n, w))
        if not seq:
            continue
        ranges: list[dict[str, Any]] = []
        for n, w in seq:
            if ranges and ranges[-1]["winner"] == w:
                ranges[-1]["to"] = n
            else:
                ranges.append({"winner": w, "from": n, "to": n})
        first_win: dict[str, float] = {}
        for n, w in seq:
            first_win.setdefault(w, n)
        out.append({"case": case, "dtype": dtype, "ranges": ranges,
                    "first_win": first_win, "backends": backends,
                    "never_wins": [b for b in backends if b not in first_win]})
    return out

