"""The documents' parts of the report: the summary (one line per workload), the
article's tables and claims beside this machine's, and the question's answer
(Q1-Q4). The harness's report (:mod:`xlinalg.bench._report`) places them
(:class:`xlinalg.bench.Study`'s ``report`` hook)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._lib._units import format_time as _fmt_time
from ..bench._report import Block, anchor, cell_note, first_call
from ..bench._study import ReportPart
from . import _findings as F

__all__ = ["report_parts"]


def _loop_blocks(records: list[dict[str, Any]]) -> list[Block]:
    """Q1-Q4 together: the question's answer from the data, then what is explanation."""
    out: list[Block] = []
    lb = F.loop_vs_batched(records)
    if lb:
        backends = sorted({d["backend"] for d in lb})
        piv: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
        for d in lb:
            piv.setdefault((d["method"], d["size"], d["dtype"]), {})[d["backend"]] = d
        rows = [[m, size, dt] + [(f"{F.fmt_ratio(by[b]['speedup'])}\n"
                                  f"{_fmt_time(by[b]['method_s'])} vs {_fmt_time(by[b]['loop_s'])}"
                                  if b in by else "-") for b in backends]
                for (m, size, dt), by in sorted(piv.items(), key=lambda kv: (
                    kv[0][0], kv[0][2], _label_key(kv[0][1])))]
        out.append(("p", "Each method against the Python loop of the same backend, dtype and "
                         "size: speed-up = loop time / method time (below: method time vs "
                         "loop time)."))
        out.append(("table", ["method", "count x n", "dtype", *backends], rows))
        best = max(lb, key=lambda d: d["speedup"])
        out.append(("p", f"The largest gain: {best['method']} on {best['backend']} "
                         f"({best['size']}, {best['dtype']}) is {F.fmt_ratio(best['speedup'])} "
                         "faster than the Python loop."))
    q1 = [r for r in records if F.section_of(r) == "Q1" and F.good(r)]
    if q1:
        per = "; ".join(f"{r['backend']} {r['dtype']} {r['size_label']}: "
                        f"{_fmt_time(F.median(r))} (first call {_fmt_time(first_call(r))})"
                        for r in sorted(q1, key=lambda r: F.median(r) or 0.0))
        out.append(("p", f"Q1, the question's Python loop (medians, fastest first): {per}."))
    q2 = [r for r in records if F.section_of(r) == "Q2"]
    q2ok = [r for r in q2 if F.good(r)]
    if q2ok:
        per = "; ".join(f"{r['backend']} {r['dtype']} {r['size_label']}: "
                        f"{_fmt_time(F.median(r))} per loop, first call (numba compiles) "
                        f"{_fmt_time(first_call(r))}" for r in q2ok)
        out.append(("p", f"Q2, the loop under numba @njit: {per}. The question's puzzle, "
                         "from its code: solve_numpy_njit_a only builds a dispatcher "
                         "(njit(f, dim=dim) is never called), so its 0.16 ms timed nothing; "
                         "solve_numpy_njit_b's 1.27 s is the first call, which includes "
                         "numba's compilation, the cost measured here as the first call."))
    elif q2:
        out.append(("p", "Q2 (numba): " + "; ".join(sorted({cell_note(r) or str(r.get("status"))
                                                           for r in q2}))))
    gpu_here = any(F.is_gpu(r["backend"]) for r in records)
    firsts = [(r, f) for r in records if F.section_of(r) in ("Q1", "Q4") and (f := first_call(r))]
    slow = max(firsts, key=lambda t: t[1]) if firsts else None
    out.append(("p", "Measured here: the per-call cost of a loop (Q1 against Q4) and each "
                     "cell's first call (library start-up, compilation, and for GPU cells "
                     "device start-up), shown in every table below"
                + (f"; the slowest first call among Q1/Q4 cells is {slow[0]['case']} on "
                   f"{slow[0]['backend']}, {_fmt_time(slow[1])}" if slow else "") + "."))
    out.append(("p", "Explanation, to be checked on a GPU"
                + (" (GPU cells are in this file: compare them with the CPU rows)"
                   if gpu_here else " (no GPU cell in this file)")
                + ": the question's 5.2 s for 1000 GPU solves (5.2 ms a solve) is what one "
                  "would expect from a per-call cost (a kernel launch and a device "
                  "synchronisation per torch.solve) plus CUDA start-up inside its single "
                  "timeit call; its data was created once, before the loop, so data "
                  "creation is not the cause. Batching the 1000 systems into one (batch, n, n) "
                  "solve pays the per-call cost once."))
    co = F.crossovers(records)
    if co:
        items = []
        for c in co:
            ranges = ", ".join(f"{r['winner']} for n = {r['from']:g}-{r['to']:g}"
                               if r["from"] != r["to"] else f"{r['winner']} at n = {r['from']:g}"
                               for r in c["ranges"])
            firsts_t = ", ".join(f"{b} first wins at n = {n:g}"
                                 for b, n in c["first_win"].items())
            never = (f"; never fastest: {', '.join(c['never_wins'])}" if c["never_wins"] else "")
            items.append(f"{c['case']} ({c['dtype']}): fastest {ranges}. {firsts_t}{never}.")
        out.append(("p", "Crossover in the solve sweep (Q3), fastest median at each n "
                         "(the Q3 table says where no backend is named):"))
        out.append(("ul", items))
    return out


def _bandwidth_blocks(records: list[dict[str, Any]], peaks: dict[str, Any]) -> list[Block]:
    """Q4's batched small solves against the memory wall: every such cell's share of
    the machine's streaming bandwidth (:func:`._findings.bandwidth_shares`)."""
    shares = F.bandwidth_shares(records, peaks)
    if not shares:
        return []
    backends = sorted({d["backend"] for d in shares})
    piv: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    keys: dict[tuple[str, str, str], Any] = {}
    for d in shares:
        k = (d["case"], d["size"], d["dtype"])
        piv.setdefault(k, {})[d["backend"]] = d
        keys[k] = d["size_key"]

    def cell(d: dict[str, Any] | None) -> str:
        if d is None:
            return "-"
        rate = f"{d['gbs']:.3g} GB/s" if d["gbs"] is not None else "rate unknown"
        if d["share"] is None:
            return f"{rate} (no streaming peak measured)"
        return f"{100 * d['share']:.1f}%\n{rate}, {_fmt_time(d['median_s'])}"

    rows = [[case, size, dt] + [cell(by.get(b)) for b in backends]
            for (case, size, dt), by in sorted(piv.items(), key=lambda kv: (kv[0][0], kv[0][2], keys[kv[0]]))]
    return [
        ("p", "The memory wall: each batched small-solve cell (Q4, not the Python loops) "
              "as a share of this machine's memory bandwidth: the bytes a solve must move "
              "(read a and b, write x) over the cell's median time, against the run's "
              "streaming peak (an add into a preallocated output; \"Environment and this "
              "machine's peaks\"). 100% would be a solve as fast as streaming its data once."),
        ("table", ["case", "count x n", "dtype", *backends], rows),
    ]


def _label_key(label: str) -> list[tuple[float, str]]:
    """A size label as it sorts for a reader: "1000x5" before "1000x20"."""
    return [(int(p), "") if p.isascii() and p.isdigit() and len(p) < 40 else (float("inf"), p)
            for p in str(label).split("x")]


def _summary_blocks(records: list[dict[str, Any]], env: dict[str, Any],
                    figures: Sequence[dict[str, Any]] = ()) -> list[Block]:
    """The summary: the figure first (the answer at a glance), then a sentence per workload."""
    secs = {F.section_of(r) for r in records}
    rows = []
    for w in F.summary(records):
        link = next((s for s in w["sections"] if s in secs), None)
        rows.append([("link", w["title"], anchor(link)) if link else w["title"],
                     ", ".join(w["sections"]), w["line"]])
    return [
        ("h", 2, "Summary: which library for which workload", "summary"),
        *(("img", p) for p in figures),
        ("p", "Measured on: " + F.machine_line(env, records) + ". Each line is this "
              "machine's answer, not a general one. A backend is named only when the "
              "interval of its speed-up over every other backend lies at or above "
              f"{F.MARGIN:.2f}x; otherwise none is: a tie within noise where the interval "
              "holds 1, else a real difference below the margin. The interval is the runner's "
              "95% interval over the paired rounds where the backends were measured side "
              "by side, else the span of the two cells' quartiles. "
              "Numbers in brackets are that interval, against the runner-up."),
        ("table", ["workload", "sections", "recommendation (margin over the runner-up)"], rows),
    ]


def _article_blocks(records: list[dict[str, Any]], env: dict[str, Any],
                    peaks: dict[str, Any]) -> list[Block]:
    have = {str(r.get("dtype")) for r in records if F.good(r)}
    rows = [[a["section"], a["item"], a["article"], *a["own"], *a["float64"], *a["float32"],
             a["gpu"]] for a in F.article_rows(records)]
    out: list[Block] = [
        ("h", 2, "The article side by side", "article"),
        ("p", "Each table row of the article (its figures are per-call milliseconds, "
              f"setup: {F.ARTICLE_SETUP}) next to the same operation here, measured three "
              "ways: in the article's own setup (NumPy float64 against torch-cpu float32), "
              "and in fair ones (both in float64, both in float32; every backend with the "
              "run's threads). Ratios are NumPy time / torch-cpu time (>1: torch faster), "
              "with the interval from the paired rounds where both cells were measured side "
              "by side (the fair columns), else from the two cells' quartiles; the verdict "
              "compares the direction with the article's."
              + ("" if {"float64", "float32"} <= have else
                 " This report has one dtype only: the article's setup and the other fair "
                 "column need a run in the other dtype (xlinalg report f64.jsonl f32.jsonl).")),
        ("table", ["sec", "article item", "article (its setup)",
                   "here, article's setup: NumPy f64 / torch f32", "verdict",
                   "here, fair float64: NumPy / torch", "verdict",
                   "here, fair float32: NumPy / torch", "verdict", "GPU"], rows),
        ("p", "The claims the article makes in words (listed in xlinalg's documentation, "
              "\"The two source documents\"):"),
    ]
    drift = F.cross_dtype_drift(records)
    if drift is not None:
        x, txt = drift
        out.insert(2, ("p", (
            "Caution: the float64 and float32 cells come from separate runs, so the "
            "article's-setup column compares cells measured at different times. The "
            f"machine's speed, read from cells that do not depend on the dtype (the "
            f"streaming calibration's GB/s), differed by "
            f"up to {x:.2f}x between the runs ({txt})"
            + (": the machine was much busier in one run, so read those ratios as rough and "
               "prefer the fair columns, measured within one run." if x > 1.25 else
               ": the machine ran at a similar speed in both."))))
    rows = [[c["claim"], c["verdict"], c["evidence"]] for c in F.claims(records, env, peaks)]
    out.append(("table", ["claim", "verdict", "numbers"], rows))
    return out



def report_parts(records: list[dict[str, Any]], env: dict[str, Any], peaks: dict[str, Any],
                 plots: Mapping[str, list[dict[str, Any]]]) -> list[ReportPart]:
    """The study's parts of the report, in reading order: the summary (before the
    contents), the article side by side, the question."""
    question: list[Block] = [("h", 2, "The question: many small systems (Q1-Q4)", "question")]
    question += _loop_blocks(records)
    question += _bandwidth_blocks(records, peaks)
    question += [("img", p) for p in plots.get("question", [])]
    return [
        ReportPart(("Summary", "summary"),
                   _summary_blocks(records, env, plots.get("summary", [])), lead=True),
        ReportPart(("The article side by side", "article"), _article_blocks(records, env, peaks)),
        ReportPart(("The question: many small systems (Q1-Q4)", "question"), question),
    ]
