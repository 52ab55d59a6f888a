"""One line per workload of the documents: what this file shows, in reading order."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...bench._findings._fields import (
    good,
    has_tag,
    is_gpu,
    median,
    median_or_inf,
    section_of,
    size_key,
)
from ...bench._findings._verdicts import ratio, verdict, winners
from ...bench._verdict import (
    BELOW_MARGIN,
    WITHIN_NOISE,
    fmt_interval,
    fmt_ratio,
    reading,
    tie_reading,
    verdict_text,
)
from ._solves import side, sweep_records

__all__ = ["WORKLOADS", "machine_line", "summary"]


#: The documents' workloads, in reading order: (anchor, title, sections).
WORKLOADS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("many-small-solves", "Many small solves", ("Q1", "Q2", "Q4")),
    ("solve-by-size", "One solve, by matrix size", ("Q3",)),
    ("gemm", "GEMM (and fully-connected shapes)", ("A1", "A2")),
    ("attention", "Attention heads", ("A3",)),
    ("elementwise", "Elementwise", ("A4",)),
    ("broadcasting", "Broadcasting", ("A5", "A6")),
    ("svd-qr", "SVD and QR", ("A7", "A8")),
    ("batched-matmul", "Batched matmul", ("A9",)),
    ("layout", "Memory layout", ("A10",)),
    ("transfer", "Host-device transfer", ("A11",)),
    ("precision", "Precision", ("A12",)),
    ("fusion", "Operator fusion", ("A13",)),
    ("einsum", "einsum", ("A14",)),
    ("convolution", "Convolution", ("A15",)),
)


def machine_line(env: dict[str, Any] | None, records: list[dict[str, Any]]) -> str:
    """The machine and setup a summary holds for, in one line."""
    env = env or {}
    cpu = env.get("cpu") or {}
    gpus = env.get("gpus") or []
    mem = env.get("memory_bytes")
    dts = sorted({str(r.get("dtype")) for r in records if good(r)})
    bes = sorted({str(r.get("backend")) for r in records})
    gpu = ", ".join(str(g.get("name")) for g in gpus) if gpus else "no GPU"
    memt = f", {mem / 2**30:.0f} GiB" if isinstance(mem, (int, float)) else ""
    return (f"{cpu.get('model', 'unknown CPU')}, {cpu.get('usable_cores', '?')} usable cores"
            f"{memt}, {gpu}; dtypes {', '.join(dts) or '-'}; backends {', '.join(bes)}")


def _pair_line(pairs: dict[str, tuple[dict[str, Any], dict[str, Any]]], what: str) -> str:
    """"numpy 1.8x [1.6-2.0], torch-cpu tie (1.02x)": slow/fast per backend."""
    parts = []
    for b, (slow, fast) in sorted(pairs.items()):
        rr = ratio(slow, fast)
        if rr is None:
            continue
        lo, x, hi = rr
        read = reading(lo, hi)
        parts.append(f"{b} {fmt_ratio(x)} {fmt_interval(lo, hi)}"
                     + (f" ({read.removeprefix('a ')})" if read != "beyond the margin" else ""))
    return f"{what}: " + ("; ".join(parts) if parts else "no pair measured")


def _generic_line(rows: list[dict[str, Any]]) -> str:
    multi = [w for w in rows if w["n_backends"] > 1]
    if not multi:
        return "no cell ran on two backends"
    nov = [w for w in multi if w.get("no_verdict")]
    ties = [w for w in multi if w.get("tie") and not w.get("no_verdict")]
    wins: dict[str, list[float]] = defaultdict(list)
    for w in multi:
        if not w.get("tie") and not w.get("no_verdict"):
            wins[w["winner"]].append(w["speedup"]["ratio"])
    groups = _tie_groups(ties)
    fdr = [w for w in ties if w.get("fdr")]
    within = [w for w in ties if tie_reading(w) == WITHIN_NOISE and w not in fdr]
    below = [w for w in ties if w not in within]
    ties_txt = "; ".join(x for x in (
        f"{len(within)} tie(s) {WITHIN_NOISE} ({_tie_groups(within)})" if within else "",
        f"{len(below) - len(fdr)} real difference(s) below the margin "
        f"({_tie_groups([w for w in below if w not in fdr])})" if len(below) > len(fdr) else "",
        f"{len(fdr)} not beyond the run's false-discovery rate ({_tie_groups(fdr)})"
        if fdr else "") if x)
    none = (f"no verdict in {len(nov)} of {len(multi)} cells ({nov[0]['no_verdict']})"
            if nov else "")
    if not wins and not ties:
        return none
    if not wins:
        head = (f"tie {WITHIN_NOISE} in all {len(multi) - len(nov)} cells ({groups})" if not below
                else f"no fastest in any of {len(multi) - len(nov)} cells: {ties_txt}")
        return head + (f"; {none}" if none else "")
    order = sorted(wins.items(), key=lambda kv: -len(kv[1]))
    b, ms = order[0]
    lead = (f"{b}: fastest in {len(ms)} of {len(multi)} cells "
            f"({fmt_ratio(min(ms))}-{fmt_ratio(max(ms))} over the runner-up)"
            if len(ms) > 1 else
            f"{b}: fastest in {len(ms)} of {len(multi)} cells ({fmt_ratio(ms[0])} over the "
            "runner-up)")
    rest = [f"{o} in {len(m)}" for o, m in order[1:]]
    if rest:
        lead += "; also fastest: " + ", ".join(rest)
    if ties:
        lead += f"; {ties_txt}"
    if none:
        lead += f"; {none}"
    return lead


def _tie_groups(ties: list[dict[str, Any]]) -> str:
    """"array-api-strict = numpy in 2; jax-cpu = torch-cpu in 1": who ties with whom, so a
    tie still says which libraries lead (and which do not), most frequent first."""
    count: dict[tuple[str, ...], int] = defaultdict(int)
    for w in ties:
        count[tuple(sorted(w.get("tied") or (w["winner"], w["runner_up"])))] += 1
    return "; ".join(f"{' = '.join(g)} in {n}"
                     for g, n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])))


def _small_solves_line(records: list[dict[str, Any]]) -> str:
    """The fastest way here to solve COUNT tiny systems (the question), any case and backend."""
    cand = [r for r in records if section_of(r) in ("Q1", "Q2", "Q4") and good(r)]
    by_size: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in cand:
        by_size[f"{r['size_label']} {r['dtype']}"][f"{r['case']} on {r['backend']}"] = r
    if not by_size:
        return "not measured"
    # the question's own size: n = 5 (else the smallest n), most systems
    def rank(k: str) -> tuple[int, int]:
        any_r = next(iter(by_size[k].values()))
        p = any_r.get("params") or {}
        n, count = p.get("n"), p.get("count", 0)
        return (0 if n == 5 else 1, -int(count or 0))

    parts = []
    for dt in sorted({k.rsplit(" ", 1)[1] for k in by_size}, key=lambda d: d != "float64"):
        key = min((k for k in by_size if k.rsplit(" ", 1)[1] == dt), key=rank)  # (each dtype's)
        v = verdict(by_size[key])
        loops = {lbl: r for lbl, r in by_size[key].items() if has_tag(r, "loop")}
        fastest_loop = min(loops.items(), key=lambda kv: median_or_inf(kv[1]))[0] if loops else None
        txt = f"at count x n = {key}: " + verdict_text(v)
        if v and fastest_loop:
            txt += (f"; {fmt_ratio(median(loops[fastest_loop]) / v['median_s'])} faster than the "
                    f"fastest Python loop ({fastest_loop})")
        parts.append(txt)
    return "; and ".join(parts)


def _crossover_line(records: list[dict[str, Any]]) -> str:
    """Per dtype of the sweep: where each backend wins beyond the noise, and the ties."""
    sw = [r for r in sweep_records(records) if side(r) is not None]
    parts = []
    for dtype in sorted({str(r["dtype"]) for r in sw}):
        by_n: dict[float, dict[str, dict[str, Any]]] = defaultdict(dict)
        for r in sw:
            if str(r["dtype"]) == dtype:
                by_n[side(r)][r["backend"]] = r  # type: ignore[index]
        wins: dict[str, list[float]] = defaultdict(list)
        ties = below = total = nov = 0
        for n, by in sorted(by_n.items()):
            v = verdict(by)
            if v is None or v["n"] < 2:
                continue
            if v.get("no_verdict"):
                nov += 1
                continue
            total += 1
            if v["tie"] and tie_reading(v) == BELOW_MARGIN:
                below += 1
            elif v["tie"]:
                ties += 1
            else:
                wins[v["winner"]].append(n)
        if not total:
            if nov:
                parts.append(f"{dtype}: no verdict at {nov} size(s)")
            continue
        order = sorted(wins.items(), key=lambda kv: min(kv[1]))
        txt = ", ".join(f"{b} at {len(ns)} size(s) (n = {min(ns):g}-{max(ns):g})"
                        if len(ns) > 1 else f"{b} at n = {ns[0]:g}" for b, ns in order)
        none_named = "; ".join(x for x in (
            f"tie {WITHIN_NOISE} at {ties} of {total} sizes" if ties or not below else "",
            f"{BELOW_MARGIN} at {below} of {total} sizes" if below else "") if x)
        parts.append(f"{dtype}: fastest beyond the noise: {txt or 'none'}; {none_named}"
                     + (f"; no verdict at {nov} size(s)" if nov else ""))
    return "; ".join(parts) or "not measured"


def summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per workload: ``{"anchor", "title", "sections", "line"}``."""
    rows = winners(records)
    out = []
    for anchor, title, secs in WORKLOADS:
        rs = [r for r in records if section_of(r) in secs]
        if not rs:
            out.append({"anchor": anchor, "title": title, "sections": secs,
                        "line": "not in this file"})
            continue
        if not any(good(r) for r in rs):
            reasons = sorted({str(r.get("skip_reason") or (r.get("error") or {}).get("kind")
                                  or r.get("status")) for r in rs})
            out.append({"anchor": anchor, "title": title, "sections": secs,
                        "line": "no time: " + "; ".join(reasons)[:300]})
            continue
        line = _generic_line([w for w in rows if w["section"] in secs])
        if anchor == "many-small-solves":
            line = _small_solves_line(records)
        elif anchor == "solve-by-size":
            line = _crossover_line(records)
        elif anchor == "layout":
            line = _pair_line(_layout_pairs(rs), "strided / contiguous time per backend "
                                                 "(>1: the strided operand costs more)")
        elif anchor == "fusion":
            line = _pair_line(_pairs(rs, "a13_fusion_eager", "a13_fusion_compiled"),
                              "eager / compiled time per backend (>1: compiling pays)")
        elif anchor == "precision":
            line = "; ".join(
                _pair_line(_pairs(rs, "a12_precision_float32", f"a12_precision_{t}", by_run=True),
                           f"float32 / {t} GEMM time on the same backend (>1: {t} faster)")
                for t in ("float16", "bfloat16"))
        elif anchor == "transfer" and not any(is_gpu(str(r.get("backend"))) for r in rs):
            line = "no device transfer on this machine (CPU backends only); " + line
        out.append({"anchor": anchor, "title": title, "sections": secs, "line": line})
    return out


def _largest(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells of the largest size present in `rs`."""
    if not rs:
        return []
    top = max(size_key(r) for r in rs)
    return [r for r in rs if size_key(r) == top]


def _pairs(rs: list[dict[str, Any]], slow_case: str, fast_case: str, by_run: bool = False,
           ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """backend -> (slow cell, fast cell) of two cases at the largest common size and dtype.

    `by_run`: the cases compute in dtypes of their own (A12), so a record's dtype names
    the run it came from, not what it computed: labelled "(float64 run)".
    """
    out = {}
    for b in sorted({r["backend"] for r in rs}):
        for r in sorted(_largest([x for x in rs if x["backend"] == b and x["case"] == fast_case
                                  and good(x)]), key=lambda x: str(x["dtype"])):
            slow = next((x for x in rs if x["backend"] == b and x["case"] == slow_case
                         and x["dtype"] == r["dtype"] and x["size_label"] == r["size_label"]
                         and good(x)), None)
            if slow is not None:
                if len({x["dtype"] for x in rs}) == 1:
                    label = b
                else:
                    label = f"{b} ({r['dtype']} run)" if by_run else f"{b} {r['dtype']}"
                out[label] = (slow, r)
    return out


def _layout_pairs(rs: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    out = {}
    for r in rs:
        p = r.get("params") or {}
        if section_of(r) != "A10" or p.get("contiguous") != 0 or not good(r):
            continue
        c = next((x for x in rs if x["backend"] == r["backend"] and x["dtype"] == r["dtype"]
                  and (x.get("params") or {}).get("contiguous") == 1
                  and (x.get("params") or {}).get("n") == p.get("n") and good(x)), None)
        if c is not None:
            multi = len({x["dtype"] for x in rs}) > 1
            out[r["backend"] + (f" {r['dtype']}" if multi else "")] = (r, c)
    return out

