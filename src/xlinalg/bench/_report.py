"""``xlinalg report results.jsonl [--out DIR]``: report.md, report.html and plots.

One table per document section (Q1-Q4, A1-A15), a findings section computed
from the data (:mod:`._findings`), and plots (:mod:`._plots`, PNG and SVG).
The HTML file is self-contained: plots are inlined as base64 PNG.
"""

from __future__ import annotations

import argparse
import base64
import html
import sys
from pathlib import Path
from typing import Any

from . import _findings as F

__all__ = ["add_arguments", "build_report", "run"]

EXIT_OK, EXIT_USAGE = 0, 2

Block = tuple  # ("h", level, text) | ("p", text) | ("ul", [text]) | ("table", hdr, rows) | ("img", plot)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a results file (JSON Lines)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="output directory (default: <results name>-report beside it)")
    parser.add_argument("--no-plots", action="store_true", help="tables and findings only")


def _fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= f or unit == "ns":
            return f"{s / f:.3g} {unit}"
    return f"{s:.3g} s"  # pragma: no cover


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "-"  # pragma: no cover


def _peak_mem(r: dict[str, Any]) -> str:
    m = r.get("memory") or {}
    vals = [m.get(k) for k in ("device_peak_bytes", "tracemalloc_peak_bytes",
                               "rss_peak_delta_bytes")]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return _fmt_bytes(max(vals)) if vals else "-"


def _note(r: dict[str, Any]) -> str:
    st = r.get("status")
    if st == "skipped":
        return f"skipped: {r.get('skip_reason') or '?'}"
    if st == "failed":
        e = r.get("error") or {}
        return f"failed ({e.get('kind', 'error')}): {str(e.get('message', ''))[:160]}"
    if st == "wrong":
        return f"WRONG: {str((r.get('check') or {}).get('message', ''))[:160]}"
    t = r.get("time") or {}
    return "noisy" if t.get("noisy") else ""


def _section_table(rs: list[dict[str, Any]], peaks: dict[str, Any]) -> tuple[list[str], list]:
    hdr = ["case", "backend", "size", "dtype", "median", "IQR", "rate", "% of peak",
           "check", "peak memory", "status / note"]
    rows = []
    for r in sorted(rs, key=lambda r: (r["case"], str(r["dtype"]), F.size_key(r),
                                       r["backend"])):
        t = r.get("time") or {}
        unit, rate, frac = F.fraction_of_peak(r, peaks)
        ran = r.get("status") not in ("skipped", "failed")
        rows.append([
            r["case"], r["backend"], str(r["size_label"]), str(r["dtype"]),
            _fmt_time(t.get("median_s")) if ran else "-",
            _fmt_time(t.get("iqr_s")) if ran else "-",
            f"{rate:.3g} {unit}" if rate is not None else "-",
            f"{100 * frac:.1f}%" if frac is not None else "-",
            str((r.get("check") or {}).get("verdict", "-")),
            _peak_mem(r) if ran else "-",
            f"{r.get('status')}" + (f": {_note(r)}" if _note(r) else ""),
        ])
    return hdr, rows


def _env_lines(hdr: dict[str, Any] | None) -> list[str]:
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
    for lib in env.get("blas") or []:
        if lib.get("user_api") == "blas":
            lines.append(f"BLAS: {lib.get('internal_api')} {lib.get('version') or ''} "
                         f"({lib.get('architecture') or ''}), {lib.get('num_threads')} threads")
    return lines


def _findings_blocks(records: list[dict[str, Any]], env: dict[str, Any],
                     peaks: dict[str, Any]) -> list[Block]:
    out: list[Block] = [("h", 2, "Findings")]
    # winners
    cw = F.case_winners(F.winners(records))
    out.append(("h", 3, "Which backend wins each case here"))
    if cw:
        rows = [[w["section"], w["case"], w["dtype"], w["winner"], f"{w['wins']} of {w['of']}",
                 ", ".join(f"{b}: {n}" for b, n in sorted(w["all"].items()))] for w in cw]
        out.append(("table", ["section", "case", "dtype", "winner", "sizes won", "wins"], rows))
        margins = [w for w in F.winners(records) if w["margin"]]
        if margins:
            out.append(("p", "Per size: the fastest backend, and how many times faster it is "
                             "than the runner-up."))
            out.append(("table", ["section", "case", "size", "dtype", "fastest", "median",
                                  "margin", "runner-up"],
                        [[w["section"], w["case"], w["size"], w["dtype"], w["winner"],
                          _fmt_time(w["median_s"]), f"{w['margin']:.2f}x", w["runner_up"]]
                         for w in margins]))
    else:
        out.append(("p", "No case ran on two or more backends."))
    # loop vs batched
    out.append(("h", 3, "Q1 vs Q4: how to solve many systems fast (loop vs batched)"))
    lb = F.loop_vs_batched(records)
    if lb:
        rows = [[d["backend"], d["dtype"], d["size"], d["loop_case"], _fmt_time(d["loop_s"]),
                 d["method"], _fmt_time(d["method_s"]), f"{d['speedup']:.3g}x"] for d in lb]
        out.append(("table", ["backend", "dtype", "size", "loop case", "loop time", "method",
                              "method time", "speedup"], rows))
        best = max(lb, key=lambda d: d["speedup"])
        out.append(("p", f"The largest gain: {best['method']} on {best['backend']} "
                         f"({best['size']}, {best['dtype']}) is {best['speedup']:.3g}x faster "
                         "than the Python loop."))
    else:
        out.append(("p", "No Q4 cell has a matching loop cell (same backend, dtype and size) "
                         "in this file."))
    # the question's own loop (q1_*): one line, fastest first (a sweep case that shares
    # the section, e.g. the generic `solve`, is in its own table)
    q1 = [r for r in records if str(r.get("case", "")).startswith("q1") and F.good(r)]
    if q1:
        per = "; ".join(f"{r['backend']} {r['dtype']} {r['size_label']}: "
                        f"{_fmt_time(F.median(r))}" for r in sorted(q1, key=F.median))
        out.append(("p", f"Q1, the question's Python loop (medians, fastest first): {per}."))
    gpu_here = any(F.is_gpu(r["backend"]) for r in records)
    out.append(("p", "Why the GPU was slower in the question: at n = 5 a solve is ~100 "
                     "flops, so each call costs only the per-call overhead (Python dispatch, "
                     "a kernel launch and a device synchronisation per call), which a GPU "
                     "pays many times over what a CPU LAPACK call costs. Batching the 1000 "
                     "systems into one (batch, n, n) solve pays that overhead once. "
                     + ("GPU cells are in this file: see the table above."
                        if gpu_here else "This file has no GPU cells, so the GPU side of the "
                        "answer is not measured here; the CPU rows above show the same effect "
                        "of per-call overhead.")))
    # crossover
    out.append(("h", 3, "Crossover in the solve sweep"))
    co = F.crossovers(records)
    if co:
        items = []
        for c in co:
            ranges = ", ".join(f"{r['winner']} for n = {r['from']:g}-{r['to']:g}"
                               if r["from"] != r["to"] else f"{r['winner']} at n = {r['from']:g}"
                               for r in c["ranges"])
            firsts = ", ".join(f"{b} first wins at n = {n:g}" for b, n in c["first_win"].items())
            never = (f"; never fastest: {', '.join(c['never_wins'])}" if c["never_wins"] else "")
            items.append(f"{c['case']} ({c['dtype']}): fastest {ranges}. {firsts}{never}.")
        out.append(("ul", items))
    else:
        out.append(("p", "No solve sweep with two or more backends in this file."))
    # claims
    out.append(("h", 3, "The article's claims"))
    rows = [[c["claim"], c["verdict"], c["evidence"]] for c in F.claims(records, env, peaks)]
    out.append(("table", ["claim", "verdict", "numbers"], rows))
    return out


def build_report(res: Any, outdir: Path, plots: bool = True) -> tuple[list[Block], list[dict]]:
    """The document blocks and plot list for a :class:`ResultsFile`."""
    records = list(res.latest().values())
    header = res.headers[-1] if res.headers else {}
    env = header.get("env") or {}
    peaks = F.calibrate_peaks(records)
    blocks: list[Block] = [("h", 1, "xlinalg benchmark report")]
    blocks.append(("p", f"Results file: {res.path}; {len(records)} cells "
                        f"({sum(F.good(r) for r in records)} with a valid time)."))
    blocks.append(("ul", _env_lines(header)))
    pk = []
    sources = []
    for cls, pc in peaks.get("by_class", {}).items():
        for dt, (v, key) in sorted(pc["gflops"].items()):
            pk.append(f"{cls} {dt}: {v:.3g} GFLOP/s (cell {key})")
        for _, (v, key) in pc["gbs"].items():
            pk.append(f"{cls} streaming: {v:.3g} GB/s (cell {key})")
        sources.append(f"{cls}: {pc['source']}")
    blocks.append(("p", "Peak of this machine per processor, from " + "; ".join(sources)
                   + " (the best GEMM GFLOP/s per dtype and the best streaming GB/s of any "
                     "backend): "
                   + ("; ".join(pk) if pk else "no throughput measured")
                   + ". \"% of peak\" is each cell's rate over that peak (GPU cells over the "
                     "GPU's), so 100% means as fast as the calibration kernel ran here through "
                     "the fastest library, not a vendor figure."))
    for w in res.warnings:
        blocks.append(("p", f"Warning: {w}"))
    plot_list: list[dict] = []
    if plots and records:
        from ._plots import make_plots

        plot_list = make_plots(records, outdir)
    blocks += _findings_blocks(records, env, peaks)
    blocks.append(("h", 2, "Results by section"))
    by_plot = {p["name"]: p for p in plot_list}
    for sec, rs in F.sections(records).items():
        blocks.append(("h", 3, f"{sec}: {F.SECTION_TITLES.get(sec, '')}"))
        docs = sorted({str(r.get("case_doc")) for r in rs if r.get("case_doc")})
        if docs:
            blocks.append(("p", " / ".join(docs)))
        hdr, rows = _section_table(rs, peaks)
        blocks.append(("table", hdr, rows))
        if sec + "" and f"speedup_{sec}" in by_plot:
            blocks.append(("img", by_plot[f"speedup_{sec}"]))
        if sec in ("Q3",) or (sec == "Other" and not any(F.section_of(r) == "Q3"
                                                         for r in records)):
            for p in plot_list:
                if p["name"].startswith("sweep_"):
                    blocks.append(("img", p))
        if sec == "Q4":
            for p in plot_list:
                if p["name"].startswith("loop_vs_"):
                    blocks.append(("img", p))
    shown = {b[1]["name"] for b in blocks if b[0] == "img"}
    rest = [p for p in plot_list if p["name"] not in shown]
    if rest:
        blocks.append(("h", 2, "Other plots"))
        blocks += [("img", p) for p in rest]
    return blocks, plot_list


def _md_cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_md(blocks: list[Block], outdir: Path) -> str:
    lines: list[str] = []
    for b in blocks:
        if b[0] == "h":
            lines += ["#" * b[1] + " " + b[2], ""]
        elif b[0] == "p":
            lines += [b[1], ""]
        elif b[0] == "ul":
            lines += [f"- {x}" for x in b[1]] + [""]
        elif b[0] == "table":
            lines.append("| " + " | ".join(_md_cell(h) for h in b[1]) + " |")
            lines.append("|" + "---|" * len(b[1]))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b[2]]
            lines.append("")
        elif b[0] == "img":
            p = b[1]
            png = Path(p["png"]).name
            svg = Path(p["svg"]).name
            lines += [f"![{p['title']}]({png})", "", f"([SVG]({svg}))", ""]
    return "\n".join(lines)


_CSS = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}tr:nth-child(even){background:#fafafa}
img{max-width:100%;border:1px solid #eee}"""


def render_html(blocks: list[Block]) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>xlinalg benchmark report</title>", f"<style>{_CSS}</style></head><body>"]
    for b in blocks:
        if b[0] == "h":
            parts.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
        elif b[0] == "p":
            parts.append(f"<p>{e(b[1])}</p>")
        elif b[0] == "ul":
            parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in b[1]) + "</ul>")
        elif b[0] == "table":
            parts.append("<table><thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in b[1])
                         + "</tr></thead><tbody>")
            for row in b[2]:
                parts.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>")
            parts.append("</tbody></table>")
        elif b[0] == "img":
            data = base64.b64encode(Path(b[1]["png"]).read_bytes()).decode("ascii")
            parts.append(f"<figure><img alt=\"{e(b[1]['title'])}\" "
                         f"src=\"data:image/png;base64,{data}\">"
                         f"<figcaption>{e(b[1]['title'])}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def run(args: argparse.Namespace) -> int:
    from ._store import ResultsFileError, read_results

    try:
        res = read_results(args.results, warn=False)
    except ResultsFileError as exc:
        print(f"xlinalg report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for w in res.warnings:
        print(f"xlinalg report: warning: {w}", file=sys.stderr)
    src = Path(args.results)
    outdir = Path(args.out) if args.out else src.with_name(src.stem + "-report")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"xlinalg report: error: cannot create {outdir}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    blocks, plots = build_report(res, outdir, plots=not getattr(args, "no_plots", False))
    (outdir / "report.md").write_text(render_md(blocks, outdir), encoding="utf-8")
    (outdir / "report.html").write_text(render_html(blocks), encoding="utf-8")
    print(f"wrote {outdir / 'report.md'}, {outdir / 'report.html'} and {len(plots)} plot(s) "
          f"(PNG + SVG) in {outdir}")
    return EXIT_OK
