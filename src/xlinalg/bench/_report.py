"""``xlinalg report results.jsonl [more.jsonl ...] [--out DIR]``: report.md, report.html, plots.

The reader sees the answer first: a summary (one line per workload of the
documents, with its margin or "tie within noise"), a table of contents, the
article's tables side by side with this machine's (in the article's own setup
and in fair ones), the question's answer, then one section per document
section with size x backend tables (median, first call, verdict) and plots
(:mod:`._plots`). Analysis is in :mod:`._findings`. The HTML comes from the
Jinja2 template ``templates/report.html`` (autoescape on); it and the
Markdown link the plots' PNG files beside them.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import _findings as F
from ._env import blas_text
from ._escape import markdown, terminal
from ._units import format_bytes as _fmt_bytes
from ._units import format_time as _fmt_time

if TYPE_CHECKING:
    from ._schema import HeaderRecord, ResultRecord
    from ._store import ResultsFile

__all__ = ["add_arguments", "build_report", "run", "write_report"]

EXIT_OK, EXIT_USAGE = 0, 2

#: ("h", level, text[, anchor]) | ("p", text) | ("ul", [text]) | ("toc", [(text, anchor)])
#: | ("table", header, rows) | ("details", summary, [blocks]) | ("img", plot);
#: a table cell is text ("\n" breaks the line) or ("link", text, anchor).
Block = tuple


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a results file (JSON Lines)")
    parser.add_argument("more", metavar="MORE", nargs="*",
                        help="more results files of the same machine (e.g. the float32 run "
                             "beside a float64 one): one report over all of them")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="output directory (default: <results name>-report beside it)")
    parser.add_argument("--no-plots", action="store_true", help="tables and findings only")


def _peak_mem(r: dict[str, Any]) -> str:
    """The largest peak the cell measured: each name in ``memory.measured`` is a byte
    count the memory probe wrote (host tracemalloc and RSS, and a GPU library's own
    allocator peak such as ``cuda_max_allocated_bytes``)."""
    m = r.get("memory") or {}
    names = [k for k in m.get("measured") or [] if isinstance(k, str) and k.endswith("_bytes")]
    nums = [v for v in (m.get(k) for k in names)
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return _fmt_bytes(max(nums)) if nums else "-"


def _note(r: dict[str, Any]) -> str:
    st = r.get("status")
    if st == "skipped":
        return f"skipped: {r.get('skip_reason') or 'no reason recorded'}"
    if st == "failed":
        e = r.get("error") or {}
        return f"failed ({e.get('kind', 'error')}): {str(e.get('message', ''))[:160]}"
    if st == "wrong":
        return f"WRONG: {str((r.get('check') or {}).get('message', ''))[:160]}"
    return f"{st}, {F.shaky(r)}" if F.shaky(r) else ""


def _section_table(rs: list[dict[str, Any]], peaks: dict[str, Any],
                   origin: dict[int, str] | None = None) -> tuple[list[str], list]:
    """The table of every cell of a section; `origin` (a report over several files):
    ``id(record)`` -> the run it comes from, shown in a last column."""
    hdr = ["case", "backend", "size", "compute dtype", "median", "IQR", "first call", "rate",
           "% of peak", "check", "peak memory", "status / note"]
    if origin:
        hdr.append("from")
    rows = []
    for r in sorted(rs, key=lambda r: (r["case"], str(r["dtype"]), F.size_key(r),
                                       r["backend"])):
        t = r.get("time") or {}
        unit, rate, frac = F.fraction_of_peak(r, peaks)
        ran = r.get("status") not in ("skipped", "failed")
        rows.append([
            r["case"], r["backend"], str(r["size_label"]), F.compute_dtype(r),
            _fmt_time(t.get("median_s")) if ran else "-",
            _fmt_time(t.get("iqr_s")) if ran else "-",
            _fmt_time(_first(r)) if ran else "-",
            f"{rate:.3g} {unit}" if rate is not None else "-",
            f"{100 * frac:.1f}%" if frac is not None else "-",
            str((r.get("check") or {}).get("verdict", "-")),
            _peak_mem(r) if ran else "-",
            _note(r) or str(r.get("status")),
            *([origin.get(id(r), "?")] if origin else []),
        ])
    return hdr, rows


def _env_lines(hdr: HeaderRecord | None) -> list[str]:
    if not hdr:
        return []
    env = hdr.get("env") or {}
    cpu = env.get("cpu") or {}
    gpus = env.get("gpus") or []
    pk = env.get("packages") or {}
    lines = [
        f"run {hdr.get('run_id', '?')} created {hdr.get('created', '?')}",
        f"CPU: {cpu.get('model', '?')} ({cpu.get('logical_cores', '?')} logical cores, "
        f"{cpu.get('usable_cores', '?')} usable); memory {_fmt_bytes(env.get('memory_bytes'))}",
        "GPU: " + (", ".join(f"{g.get('name')} ({g.get('memory_mib')} MiB)" for g in gpus)
                   if gpus else "none"),
        "packages: " + ", ".join(f"{k} {v}" for k, v in pk.items() if v),
    ]
    lines.extend(f"BLAS: {blas_text(lib)}" for lib in env.get("blas") or []
                 if isinstance(lib, dict) and lib.get("user_api") == "blas")
    return lines


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
                        f"{_fmt_time(F.median(r))} (first call {_fmt_time(_first(r))})"
                        for r in sorted(q1, key=lambda r: F.median(r) or 0.0))
        out.append(("p", f"Q1, the question's Python loop (medians, fastest first): {per}."))
    q2 = [r for r in records if F.section_of(r) == "Q2"]
    q2ok = [r for r in q2 if F.good(r)]
    if q2ok:
        per = "; ".join(f"{r['backend']} {r['dtype']} {r['size_label']}: "
                        f"{_fmt_time(F.median(r))} per loop, first call (numba compiles) "
                        f"{_fmt_time(_first(r))}" for r in q2ok)
        out.append(("p", f"Q2, the loop under numba @njit: {per}. The question's puzzle, "
                         "from its code: solve_numpy_njit_a only builds a dispatcher "
                         "(njit(f, dim=dim) is never called), so its 0.16 ms timed nothing; "
                         "solve_numpy_njit_b's 1.27 s is the first call, which includes "
                         "numba's compilation, the cost measured here as the first call."))
    elif q2:
        out.append(("p", "Q2 (numba): " + "; ".join(sorted({_note(r) or str(r.get("status"))
                                                           for r in q2}))))
    gpu_here = any(F.is_gpu(r["backend"]) for r in records)
    firsts = [(r, f) for r in records if F.section_of(r) in ("Q1", "Q4") and (f := _first(r))]
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
                         "(the Q3 table marks the sizes where it is a tie within noise):"))
        out.append(("ul", items))
    return out


def _label_key(label: str) -> list[tuple[float, str]]:
    """A size label as it sorts for a reader: "1000x5" before "1000x20"."""
    return [(int(p), "") if p.isascii() and p.isdigit() and len(p) < 40 else (float("inf"), p)
            for p in str(label).split("x")]


def _first(r: dict[str, Any]) -> float | None:
    v = (r.get("time") or {}).get("first_call_s")
    return float(v) if isinstance(v, (int, float)) and v >= 0 else None


def _pivot_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return ""
    if not F.good(r):
        st = r.get("status")
        if st == "skipped":
            return "skipped"
        # the first clause in whole words, and a mark where text was left out (the
        # full note is in the section's every-cell table): "failed (timeout): cell ran
        # past the time limit of 120 s [...]", never "... limit of 120 [...]"
        head, more, _ = _note(r).partition("; ")
        text = textwrap.shorten(head, width=64, placeholder=" [...]")
        if more and text and not text.endswith("[...]"):
            text += " [...]"
        return text or str(st)
    q = F.quartiles(r)
    med = F.median(r)
    rel = f" ±{50 * (q[2] - q[0]) / med:.0f}%" if q and med else ""
    mark = {"noisy": " (noisy)", "stalled": " (STALLED)"}.get(F.shaky(r), "")
    first = _first(r)
    return (f"{_fmt_time(med)}{rel}{mark}"
            + (f"\nfirst call {_fmt_time(first)}" if first is not None else ""))


_FOLD_ROWS = 25


def _pivots(rs: list[dict[str, Any]]) -> list[Block]:
    """Per case and dtype: size x backend (median ±half IQR, first call) and the verdict."""
    out: list[Block] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sorted(rs, key=lambda r: (r["case"], str(r["dtype"]))):
        groups.setdefault((r["case"], str(r["dtype"])), []).append(r)
    for (case, dtype), g in groups.items():
        backends = list(dict.fromkeys(r["backend"] for r in sorted(g, key=lambda r: r["backend"])))
        sizes = sorted({str(r["size_label"]) for r in g},
                       key=lambda lab: F.size_key(next(r for r in g if str(r["size_label"]) == lab)))
        dt_txt = F.dtype_text(dtype, (F.compute_dtype(r) for r in g))
        rows = []
        for lab in sizes:
            by = {r["backend"]: r for r in g if str(r["size_label"]) == lab}
            v = F.verdict(by)
            rows.append([lab] + [_pivot_cell(by.get(b)) for b in backends]
                        + [F.verdict_text(v) if v and v["n"] > 1 else "-"])
        table = ("table", ["size"] + backends + ["verdict"], rows)
        what = (f"{case}, {dt_txt}: median time per call, ± half the IQR, first call below; "
                "last column: the verdict")
        if len(rows) > _FOLD_ROWS:  # a sweep: the plot shows it, the table unfolds
            out.append(("details", f"{what} ({len(rows)} sizes)", [table]))
        else:
            out += [("p", what + "."), table]
        skips = sorted({f"{r['backend']}: {r.get('skip_reason')}" for r in g
                        if r.get("status") == "skipped"})
        if skips:
            out.append(("ul", [f"skipped on {x}" for x in skips]))
    return out


def _summary_blocks(records: list[dict[str, Any]], env: dict[str, Any],
                    figures: Sequence[dict[str, Any]] = ()) -> list[Block]:
    """The summary: the figure first (the answer at a glance), then a sentence per workload."""
    secs = {F.section_of(r) for r in records}
    rows = []
    for w in F.summary(records):
        link = next((s for s in w["sections"] if s in secs), None)
        rows.append([("link", w["title"], _anchor(link)) if link else w["title"],
                     ", ".join(w["sections"]), w["line"]])
    return [
        ("h", 2, "Summary: which library for which workload", "summary"),
        *(("img", p) for p in figures),
        ("p", "Measured on: " + F.machine_line(env, records) + ". Each line is this "
              "machine's answer, not a general one. A backend is named only when the "
              "interval of its speed-up over every other backend lies at or above "
              f"{F.MIN_MARGIN:.2f}x; otherwise: tie within noise. The interval is the runner's "
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


def _mixing_warnings(res: ResultsFile, extra: list[ResultsFile],
                     records: list[dict[str, Any]]) -> list[str]:
    """What makes the cells of this report less comparable than they look: an extra
    file measured otherwise than the first (another machine, scale, threads,
    versions: the dtype is what a second file is for), and cells of a run that is not
    finished (one pass of two: their verdicts may still change)."""
    from ._compare import header_differences
    from ._sidebyside import first_pass_only

    out = []
    base = res.headers[-1] if res.headers else None
    for f in extra:
        diffs = [d for d in header_differences(base, f.headers[-1] if f.headers else None)
                 if not d.startswith("dtype:")]
        if diffs:
            out.append(f"{f.path} was not measured as {res.path} was ({'; '.join(diffs)}); "
                       "this report sets their cells side by side all the same: compare "
                       "them with care")
    # (a run without the recheck, --no-recheck, has one pass by design)
    rechecked = all((f.headers[-1].get("run") or {}).get("recheck", True) is not False
                    for f in (res, *extra) if f.headers)
    once = sum(1 for r in records if first_pass_only(r)) if rechecked else 0
    if once:
        timed = sum(1 for r in records if isinstance(r.get("side_by_side"), dict))
        out.append(f"{once} of {timed} side-by-side cells have only their first pass: the run is "
                   "not finished (`xlinalg bench --resume --out FILE`, with its options, "
                   "completes it), and their verdicts rest on one pass of two")
    return out


def _run_label(i: int) -> str:
    """How the report names the `i`-th results file (0-based) in its "from" column."""
    return f"run {i + 1}"


def _run_line(f: ResultsFile, i: int, shown: int) -> str:
    """One results file: its label and name, dtype, date, calibration GEMM rate, noisy
    share, and how many of its cells the report shows (`shown`; the rest superseded)."""
    rs = _plain(f.latest().values())
    hdr = f.headers[0] if f.headers else None
    dts = sorted({str(r.get("dtype")) for r in rs})
    gemm = [f"{r['backend']} {r['throughput']['gflops']:.3g} GFLOP/s" for r in rs
            if str(r.get("case")) == "calib_gemm" and F.good(r)
            and isinstance((r.get("throughput") or {}).get("gflops"), (int, float))]
    timed = [r for r in rs if F.good(r)]
    noisy = sum(1 for r in timed if F.shaky(r))
    gone = f" ({len(rs) - shown} superseded by a later file)" if shown < len(rs) else ""
    return (f"{_run_label(i)}: {f.path}: {', '.join(dts)}, created "
            f"{hdr['created'] if hdr else '?'}, {len(rs)} cells, {shown} shown in this "
            f"report{gone}, {noisy} of {len(timed)} timed cells noisy or stalled; "
            f"calibration GEMM: {', '.join(gemm) if gemm else 'not in this run'}")


def _anchor(section: str | None) -> str:
    return "sec-" + "".join(c for c in str(section).lower() if c.isalnum())


def _skip_counts(records: list[dict[str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for r in records:
        if r.get("status") == "skipped":
            k = str(r.get("skip_reason") or "no reason recorded")
            counts[k] = counts.get(k, 0) + 1
    return [f"{n} x {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def _plain(records: Iterable[ResultRecord]) -> list[dict[str, Any]]:
    """Records as the findings read them (plain dicts: their functions take
    ``dict[str, Any]``); the same objects, no copy."""
    return cast("list[dict[str, Any]]", list(records))


def build_report(res: ResultsFile, outdir: Path, plots: bool = True,
                 extra: list[ResultsFile] | None = None) -> tuple[list[Block], list[dict]]:
    """The document blocks and plot list for a :class:`ResultsFile` (and `extra` files
    of the same machine, e.g. the float32 run next to the float64 one)."""
    files = [res, *(extra or [])]
    latest, source, superseded = _merge_files(files)
    records = _plain(latest.values())
    origin = ({id(r): _run_label(source[k]) for k, r in latest.items()}
              if len(files) > 1 else None)
    header = res.headers[-1] if res.headers else None
    env: dict[str, Any] = dict(header["env"]) if header else {}
    peaks = F.calibrate_peaks(records)
    plot_list: list[dict] = []
    if plots and records:
        from ._plots import make_plots

        plot_list = make_plots(records, outdir)
    by_sec_plots: dict[str, list[dict]] = {}
    for p in plot_list:
        by_sec_plots.setdefault(str(p.get("section", "")), []).append(p)
    secs = F.sections(records)
    blocks: list[Block] = [("h", 1, "xlinalg benchmark report")]
    counts: dict[str, int] = {}
    for r in records:
        counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
    blocks.append(("p", "Results: " + ", ".join(str(f.path) for f in files)
                   + f"; {len(records)} cells ("
                   + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")."))
    blocks.extend(("p", f"Warning: {w}") for f in files for w in f.warnings)
    blocks.extend(("p", f"Warning: {w}") for w in _mixing_warnings(res, files[1:], records))
    blocks.extend(("p", f"Warning: {w}") for w in _superseded_warnings(files, superseded))
    if len(files) > 1:
        blocks.append(("p", "The runs in this report, and how fast the machine was in each "
                            "(the calibration GEMM and the share of noisy cells: numbers from "
                            "different runs compare only as far as these agree); the "
                            "\"from\" column of each section's cell table names the run a "
                            "cell comes from:"))
        n_shown = [sum(1 for i in source.values() if i == j) for j in range(len(files))]
        blocks.append(("ul", [_run_line(f, i, n_shown[i]) for i, f in enumerate(files)]))
    blocks += _summary_blocks(records, env, by_sec_plots.get("summary", []))
    toc: list[tuple[str, str]] = [("Summary", "summary"),
                                  ("The article side by side", "article"),
                                  ("The question: many small systems (Q1-Q4)", "question")]
    toc += [(f"{sec}: {F.SECTION_TITLES.get(sec, '')}", _anchor(sec)) for sec in secs]
    toc += [("Environment and this machine's peaks", "environment")]
    blocks += [("h", 2, "Contents", "contents"), ("toc", toc)]
    blocks += _article_blocks(records, env, peaks)
    blocks.append(("h", 2, "The question: many small systems (Q1-Q4)", "question"))
    blocks += _loop_blocks(records)
    for p in by_sec_plots.get("question", []):
        blocks.append(("img", p))
    for sec, rs in secs.items():
        blocks.append(("h", 2, f"{sec}: {F.SECTION_TITLES.get(sec, '')}", _anchor(sec)))
        docs = sorted({str(r.get("case_doc")) for r in rs if r.get("case_doc")})
        if docs:
            blocks.append(("ul", docs))
        by_note: dict[str, set[str]] = {}
        for c in {r["case"] for r in rs}:
            for b, t in F.case_notes(c).items():
                if any(r["backend"] == b for r in rs):
                    by_note.setdefault(t, set()).add(b)
        if by_note:
            blocks.append(("ul", [f"{', '.join(sorted(bs))}: {t}"
                                  for t, bs in sorted(by_note.items())]))
        blocks += _pivots(rs)
        for p in by_sec_plots.get(sec, []):
            blocks.append(("img", p))
        hdr, rows = _section_table(rs, peaks, origin)
        blocks.append(("details", f"every {sec} cell: rate, % of peak, check, memory, status",
                       [("table", hdr, rows)]))
    shown = {b[1]["name"] for b in blocks if b[0] == "img"}
    rest = [p for p in plot_list if p["name"] not in shown]
    if rest:
        blocks.append(("h", 2, "Other plots", "other-plots"))
        blocks += [("img", p) for p in rest]
    blocks.append(("h", 2, "Environment and this machine's peaks", "environment"))
    blocks.append(("ul", _env_lines(header)))
    blocks += _peaks_blocks(peaks)
    sk = _skip_counts(records)
    if sk:
        blocks.append(("p", f"Skipped cells by reason ({sum(int(x.split(' x ')[0]) for x in sk)}):"))
        blocks.append(("ul", sk))
    return blocks, plot_list


def _merge_files(files: list[ResultsFile]) -> tuple[
        dict[str, ResultRecord], dict[str, int], dict[tuple[int, int], list[ResultRecord]]]:
    """The cells a report over `files` shows: (key -> record, key -> index of the file
    it comes from, (earlier file, later file) -> the earlier file's records the later
    one superseded). A later file's run of a case (and dtype) replaces the earlier
    files' cells of it, sizes included (an update run of the cases changed since)."""
    latest: dict[str, ResultRecord] = {}
    source: dict[str, int] = {}
    superseded: dict[tuple[int, int], list[ResultRecord]] = {}
    for i, f in enumerate(files):
        new = f.latest()
        again = {(r.get("case"), r.get("dtype")) for r in new.values()}
        for k in [k for k, r in latest.items() if (r.get("case"), r.get("dtype")) in again]:
            superseded.setdefault((source.pop(k), i), []).append(latest.pop(k))
        latest.update(new)
        source.update(dict.fromkeys(new, i))
    return latest, source, superseded


def _superseded_warnings(files: list[ResultsFile],
                         superseded: dict[tuple[int, int], list[ResultRecord]]) -> list[str]:
    """One warning per pair of files where the later one replaced cells of the earlier."""
    out = []
    for (old, new), rs in sorted(superseded.items()):
        cases = sorted({f"{r['case']} {r['dtype']}" for r in rs})
        named = ", ".join(cases[:6]) + (f" and {len(cases) - 6} more" if len(cases) > 6 else "")
        out.append(f"{len(rs)} cell(s) of {files[old].path} ({_run_label(old)}) are "
                   f"superseded by {files[new].path} ({_run_label(new)}), which ran the same "
                   f"case and dtype again ({named}): this report shows "
                   f"{_run_label(new)}'s numbers for them and leaves out the sizes only "
                   f"{_run_label(old)} measured; report the files one by one to see "
                   f"{_run_label(old)}'s")
    return out


def _peaks_blocks(peaks: dict[str, Any]) -> list[Block]:
    """The peaks "% of peak" divides by: where they come from, then one line each."""
    pk = []
    sources = []
    for cls, pc in peaks.get("by_class", {}).items():
        for dt, (v, key) in sorted(pc["gflops"].items()):
            pk.append(f"{cls} {dt}: {v:.3g} GFLOP/s (cell {key})")
        for v, key in pc["gbs"].values():
            pk.append(f"{cls} streaming: {v:.3g} GB/s (cell {key})")
        sources.append(f"{cls}: {pc['source']}")
    return [("p", "Peak of this machine per processor: the best GEMM GFLOP/s per dtype and "
                  "the best streaming GB/s of any backend. \"% of peak\" is each cell's rate "
                  "over that peak (GPU cells over the GPU's), so 100% means as fast as the "
                  "calibration kernel ran here through the fastest library, not a vendor "
                  "figure. Source: " + "; ".join(sources) + "."),
            ("ul", pk or ["no throughput measured"])]


def _md_text(x: Any) -> str:
    """Text from a results file as Markdown: no raw HTML, no table breaks, no links,
    no math, no control characters (:func:`._escape.markdown`)."""
    return markdown(x)


def _md_cell(c: Any) -> str:
    if isinstance(c, tuple) and c and c[0] == "link":
        return f"[{_md_text(c[1])}](#{c[2]})"
    return "<br>".join(_md_text(part) for part in str(c).split("\n"))


def render_md(blocks: list[Block], outdir: Path) -> str:
    lines: list[str] = []
    for b in blocks:
        if b[0] == "h":
            if len(b) > 3:
                lines.append(f'<a id="{b[3]}"></a>')
                lines.append("")
            lines += ["#" * b[1] + " " + _md_text(b[2]), ""]
        elif b[0] == "p":
            lines += [_md_text(b[1]), ""]
        elif b[0] == "ul":
            lines += [f"- {_md_text(x)}" for x in b[1]] + [""]
        elif b[0] == "toc":
            lines += [f"- [{_md_text(t)}](#{a})" for t, a in b[1]] + [""]
        elif b[0] == "details":
            lines += [f"<details><summary>{_md_text(b[1])}</summary>", ""]
            lines.append(render_md(b[2], outdir))
            lines += ["</details>", ""]
        elif b[0] == "table":
            lines.append("| " + " | ".join(_md_cell(h) for h in b[1]) + " |")
            lines.append("|" + "---|" * len(b[1]))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b[2]]
            lines.append("")
        elif b[0] == "img":
            p = b[1]
            lines += [f"![{_md_text(p['title'])}]({Path(p['png']).name})", ""]
    return "\n".join(lines)


def _jinja_env() -> Any:
    """The Jinja2 environment of the HTML template, autoescape on; every ``{{ value }}``
    passes :func:`._escape.terminal` first (control characters made visible)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("xlinalg.bench", "templates"),
        autoescape=True,
        finalize=lambda v: v if isinstance(v, Markup) else terminal(v),
        trim_blocks=False,
        undefined=jinja2.StrictUndefined,
    )
    env.tests["link"] = lambda c: isinstance(c, tuple) and len(c) == 3 and c[0] == "link"
    env.filters["lines"] = lambda s: str(s).split("\n")
    return env


def _html_ready(blocks: list[Block]) -> list[Block]:
    """`blocks` with each plot as the template links it: the PNG's file name beside
    report.html (no copy of the image inside the HTML) and its size in pixels."""
    out: list[Block] = []
    for b in blocks:
        if b[0] == "img":
            p = b[1]
            out.append(("img", {"src": Path(p["png"]).name, "title": p["title"],
                                "width": int(p.get("width") or 0) or "",
                                "height": int(p.get("height") or 0) or ""}))
        elif b[0] == "details":
            out.append(("details", b[1], _html_ready(b[2])))
        else:
            out.append(b)
    return out


def render_html(blocks: list[Block]) -> str:
    """The report as HTML, from the package's template ``templates/report.html``."""
    return str(_jinja_env().get_template("report.html").render(blocks=_html_ready(blocks)))


def write_report(results: list[str | Path], outdir: Path | None = None, plots: bool = True,
                 ) -> tuple[Path, int]:
    """Read `results` (the first names the default directory), write report.md,
    report.html and the plots; return (directory, number of plots).
    Raises ResultsFileError for an unreadable file, OSError for the directory, and
    :class:`._outfile.OutputFileError` (an OSError) for an output name that is a
    link or not a regular file: each file is written whole and renamed over its
    name (:func:`._outfile.write_output`), never through a link."""
    from ._outfile import write_output
    from ._store import read_results

    files = [read_results(p, warn=False) for p in results]
    src = Path(results[0])
    outdir = outdir if outdir is not None else src.with_name(src.stem + "-report")
    outdir.mkdir(parents=True, exist_ok=True)
    blocks, plot_list = build_report(files[0], outdir, plots=plots, extra=files[1:])
    write_output(outdir / "report.md", render_md(blocks, outdir))
    write_output(outdir / "report.html", render_html(blocks))
    return outdir, len(plot_list)


def run(args: argparse.Namespace) -> int:
    from ._store import ResultsFileError, read_results

    paths = [args.results, *(getattr(args, "more", None) or [])]
    try:
        files = [read_results(p, warn=False) for p in paths]
    except ResultsFileError as exc:
        print(terminal(f"xlinalg report: error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    for w in [w for f in files for w in f.warnings] + _superseded_warnings(
            files, _merge_files(files)[2]):
        print(terminal(f"xlinalg report: warning: {w}"), file=sys.stderr)
    try:
        outdir, n = write_report(paths, Path(args.out) if args.out else None,
                                 plots=not getattr(args, "no_plots", False))
    except ResultsFileError as exc:
        print(terminal(f"xlinalg report: error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(terminal(f"xlinalg report: error: cannot write the report{where}: "
                       f"{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_USAGE
    print(terminal(f"wrote {outdir / 'report.md'}, {outdir / 'report.html'} and {n} plot(s) "
                   f"(PNG) in {outdir}"))
    return EXIT_OK
