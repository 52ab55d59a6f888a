"""``xlinalg report results.jsonl [more.jsonl ...] [--out DIR]``: report.md, report.html, plots.

The reader sees the answer first: a study's lead parts (the documents' study,
:mod:`xlinalg.study`: a summary, one line per workload), a table of contents, the
study's other parts (the article side by side, the question's answer), then one
section per case section with size x backend tables (median, first call,
verdict) and plots (:mod:`._plots`). A study plugs in through
:class:`~xlinalg.bench.Study`; without one the report has the generic parts only. Analysis is in :mod:`._findings`. The HTML comes from the
Jinja2 template ``templates/report.html`` (autoescape on); it and the
Markdown link the plots' PNG files beside them.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._lib._escape import markdown, terminal
from .._lib._units import format_bytes as _fmt_bytes
from .._lib._units import format_time as _fmt_time
from .._machine import blas_text
from . import _findings as F
from ._verdict import fmt_spread

if TYPE_CHECKING:
    from ._resultsfile import ResultsFile
    from ._schema import HeaderRecord, ResultRecord
    from ._study import Study

__all__ = ["build_report", "render_html", "render_md", "write_report"]

#: ("h", level, text[, anchor]) | ("p", text) | ("ul", [text]) | ("toc", [(text, anchor)])
#: | ("table", header, rows) | ("details", summary, [blocks]) | ("img", plot);
#: a table cell is text ("\n" breaks the line) or ("link", text, anchor).
Block = tuple


def _peak_mem(r: dict[str, Any]) -> str:
    """The largest peak the cell measured: each name in ``memory.measured`` is a byte
    count the memory probe wrote (host tracemalloc and RSS, and a GPU library's own
    allocator peak such as ``cuda_max_allocated_bytes``)."""
    m = r.get("memory") or {}
    names = [k for k in m.get("measured") or [] if isinstance(k, str) and k.endswith("_bytes")]
    nums = [v for v in (m.get(k) for k in names)
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return _fmt_bytes(max(nums)) if nums else "-"


def cell_note(r: dict[str, Any]) -> str:
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
        times = [_fmt_time(v) for v in (t.get("median_s"), t.get("iqr_s"), first_call(r))]
        rows.append([
            r["case"], r["backend"], str(r["size_label"]), F.compute_dtype(r),
            *(times if ran else ["-"] * 3),
            f"{rate:.3g} {unit}" if rate is not None else "-",
            f"{100 * frac:.1f}%" if frac is not None else "-",
            str((r.get("check") or {}).get("verdict", "-")),
            _peak_mem(r) if ran else "-",
            cell_note(r) or str(r.get("status")),
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


def first_call(r: dict[str, Any]) -> float | None:
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
        head, more, _ = cell_note(r).partition("; ")
        text = textwrap.shorten(head, width=64, placeholder=" [...]")
        if more and text and not text.endswith("[...]"):
            text += " [...]"
        return text or str(st)
    mark = {"noisy": " (noisy)", "stalled": " (STALLED)"}.get(F.shaky(r), "")
    first = first_call(r)
    return (f"{_fmt_time(F.median(r))}{fmt_spread(F.quartiles(r))}{mark}"
            + (f"\nfirst call {_fmt_time(first)}" if first is not None else ""))


_FOLD_ROWS = 25


def _pivots(rs: list[dict[str, Any]], said: dict[tuple[str, str, str], dict[str, Any]],
            ) -> list[Block]:
    """Per case and dtype: size x backend (median ±half IQR, first call) and the verdict
    (`said`: the run's verdicts, :func:`._findings.winners`, by case, dtype and size)."""
    out: list[Block] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in sorted(rs, key=lambda r: (r["case"], str(r["dtype"]))):
        groups.setdefault((r["case"], str(r["dtype"])), []).append(r)
    for (case, dtype), g in groups.items():
        backends = sorted({r["backend"] for r in g})
        sizes = sorted({str(r["size_label"]) for r in g},
                       key=lambda lab: F.size_key(next(r for r in g if str(r["size_label"]) == lab)))
        dt_txt = F.dtype_text(dtype, (F.compute_dtype(r) for r in g))
        rows = []
        for lab in sizes:
            by = {r["backend"]: r for r in g if str(r["size_label"]) == lab}
            w = said.get((case, dtype, lab))
            rows.append([lab] + [_pivot_cell(by.get(b)) for b in backends]
                        + [w["text"] if w and w["n_backends"] > 1 else "-"])
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
            if F.is_calibration(r) and F.peak_of(r) == "arithmetic" and F.good(r)
            and isinstance((r.get("throughput") or {}).get("gflops"), (int, float))]
    timed = [r for r in rs if F.good(r)]
    noisy = sum(1 for r in timed if F.shaky(r))
    gone = f" ({len(rs) - shown} superseded by a later file)" if shown < len(rs) else ""
    # cells measured by a --resume are of that later time: say when each resume began
    later = [str(h.get("created", "?")) for h in f.headers[1:]]
    resumed = f", resumed at {', '.join(later)}" if later else ""
    return (f"{_run_label(i)}: {f.path}: {', '.join(dts)}, created "
            f"{hdr['created'] if hdr else '?'}{resumed}, {len(rs)} cells, {shown} shown in this "
            f"report{gone}, {noisy} of {len(timed)} timed cells noisy or stalled; "
            f"calibration GEMM: {', '.join(gemm) if gemm else 'not in this run'}")


def anchor(section: str | None) -> str:
    return "sec-" + "".join(c for c in str(section).lower() if c.isalnum())


def _plain(records: Iterable[ResultRecord]) -> list[dict[str, Any]]:
    """Records as the findings read them (plain dicts: their functions take
    ``dict[str, Any]``); the same objects, no copy."""
    return cast("list[dict[str, Any]]", list(records))


def build_report(res: ResultsFile, outdir: Path, plots: bool = True,
                 extra: list[ResultsFile] | None = None, study: Study | None = None,
                 ) -> tuple[list[Block], list[dict]]:
    """The document blocks and plot list for a :class:`ResultsFile` (and `extra` files
    of the same machine, e.g. the float32 run next to the float64 one); `study` adds
    its section titles, its parts of the report and its plots."""
    files = [res, *(extra or [])]
    latest, source, superseded = merge_files(files)
    records = _plain(latest.values())
    origin = ({id(r): _run_label(source[k]) for k, r in latest.items()}
              if len(files) > 1 else None)
    header = res.headers[-1] if res.headers else None
    env: dict[str, Any] = dict(header["env"]) if header else {}
    peaks = F.calibrate_peaks(records)
    plot_list: list[dict] = []
    if plots and records:
        from ._plots import make_plots

        plot_list = make_plots(records, outdir, study)
    by_sec_plots: dict[str, list[dict]] = {}
    for p in plot_list:
        by_sec_plots.setdefault(str(p.get("section", "")), []).append(p)
    secs = F.sections(records)
    said = {(w["case"], w["dtype"], w["size"]): w for w in F.winners(records)}
    titles = {**F.SECTION_TITLES, **(study.section_titles if study is not None else {})}
    blocks: list[Block] = [("h", 1, "xlinalg benchmark report")]
    counts = Counter(str(r.get("status")) for r in records)
    blocks.append(("p", "Results: " + ", ".join(str(f.path) for f in files)
                   + f"; {len(records)} cells ("
                   + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")."))
    blocks.extend(("p", f"Warning: {w}") for f in files for w in f.warnings)
    blocks.extend(("p", f"Warning: {w}") for w in _mixing_warnings(res, files[1:], records))
    blocks.extend(("p", f"Warning: {w}") for w in superseded_warnings(files, superseded))
    if len(files) > 1:
        blocks.append(("p", "The runs in this report, and how fast the machine was in each "
                            "(the calibration GEMM and the share of noisy cells: numbers from "
                            "different runs compare only as far as these agree); the "
                            "\"from\" column of each section's cell table names the run a "
                            "cell comes from:"))
        n_shown = Counter(source.values())
        blocks.append(("ul", [_run_line(f, i, n_shown[i]) for i, f in enumerate(files)]))
    parts = (study.report(records, env, peaks, by_sec_plots)
             if study is not None and study.report is not None else [])
    lead = [part for part in parts if part.lead]
    rest = [part for part in parts if not part.lead]
    blocks += [b for part in lead for b in part.blocks]
    toc = [part.toc for part in lead + rest]
    toc += [(f"{sec}: {titles.get(sec, '')}", anchor(sec)) for sec in secs]
    toc += [("Environment and this machine's peaks", "environment")]
    blocks += [("h", 2, "Contents", "contents"), ("toc", toc)]
    blocks += [b for part in rest for b in part.blocks]
    for sec, rs in secs.items():
        blocks.append(("h", 2, f"{sec}: {titles.get(sec, '')}", anchor(sec)))
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
        blocks += _pivots(rs, said)
        blocks += [("img", p) for p in by_sec_plots.get(sec, [])]
        hdr, rows = _section_table(rs, peaks, origin)
        blocks.append(("details", f"every {sec} cell: rate, % of peak, check, memory, status",
                       [("table", hdr, rows)]))
    shown = {b[1]["name"] for b in blocks if b[0] == "img"}
    unshown = [p for p in plot_list if p["name"] not in shown]
    if unshown:
        blocks.append(("h", 2, "Other plots", "other-plots"))
        blocks += [("img", p) for p in unshown]
    blocks.append(("h", 2, "Environment and this machine's peaks", "environment"))
    blocks.append(("ul", _env_lines(header)))
    blocks += _peaks_blocks(peaks)
    skips = Counter(str(r.get("skip_reason") or "no reason recorded")
                    for r in records if r.get("status") == "skipped")
    if skips:
        blocks.append(("p", f"Skipped cells by reason ({skips.total()}):"))
        blocks.append(("ul", [f"{n} x {k}" for k, n in skips.most_common()]))
    return blocks, plot_list


def merge_files(files: list[ResultsFile]) -> tuple[
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


def superseded_warnings(files: list[ResultsFile],
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


def _jinja_env(html: bool = True) -> Any:
    """The Jinja2 environment of the report's templates: the HTML with autoescape on and
    every ``{{ value }}`` through :func:`xlinalg._lib._escape.terminal` first (control characters
    made visible); the Markdown with every text through :func:`xlinalg._lib._escape.markdown`."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("xlinalg.bench", "templates"),
        autoescape=html,
        finalize=(lambda v: v if isinstance(v, Markup) else terminal(v)) if html else None,
        trim_blocks=not html,
        lstrip_blocks=not html,
        undefined=jinja2.StrictUndefined,
    )
    env.tests["link"] = lambda c: isinstance(c, tuple) and len(c) == 3 and c[0] == "link"
    env.filters["lines"] = lambda s: str(s).split("\n")
    env.filters["md"] = markdown
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


def render_md(blocks: list[Block]) -> str:
    """The report as Markdown, from the package's template ``templates/report.md``."""
    return str(_jinja_env(html=False).get_template("report.md").render(
        blocks=_html_ready(blocks)))[:-1]


def render_html(blocks: list[Block]) -> str:
    """The report as HTML, from the package's template ``templates/report.html``."""
    return str(_jinja_env().get_template("report.html").render(blocks=_html_ready(blocks)))


def write_report(results: list[str | Path], outdir: Path | None = None, plots: bool = True,
                 study: Study | None = None) -> tuple[Path, int]:
    """Read `results` (the first names the default directory), write report.md,
    report.html and the plots; return (directory, number of plots).
    Raises ResultsFileError for an unreadable file, OSError for the directory, and
    :class:`._outfile.OutputFileError` (an OSError) for an output name that is a
    link or not a regular file: each file is written whole and renamed over its
    name (:func:`._outfile.write_output`), never through a link."""
    from ._outfile import write_output
    from ._resultsfile import read_results

    files = [read_results(p, warn=False) for p in results]
    src = Path(results[0])
    outdir = outdir if outdir is not None else src.with_name(src.stem + "-report")
    outdir.mkdir(parents=True, exist_ok=True)
    blocks, plot_list = build_report(files[0], outdir, plots=plots, extra=files[1:], study=study)
    write_output(outdir / "report.md", render_md(blocks))
    write_output(outdir / "report.html", render_html(blocks))
    return outdir, len(plot_list)
