"""Plots of a results file (matplotlib, Agg backend, imported lazily).

Each plot is written as one palette PNG, at most :data:`MAX_WIDTH_PX` wide
(one plot per case rather than one strip per section), with the interquartile
range drawn as error bars or bands, units and sizes on the axes, and noisy or
stalled cells marked. :func:`make_plots` returns a list of ``{"name",
"title", "png", "section", "width", "height"}`` for the report to link
("section": a document section such as ``"A1"``, or ``"question"`` for Q1-Q4
together; width and height in pixels).
"""

from __future__ import annotations

import contextvars
import hashlib
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import _findings as F
from ._escape import filename, plot_text
from ._findings._fields import section_order as _section_order
from ._units import format_time

__all__ = ["MAX_WIDTH_PX", "SUMMARY_PLOT", "make_plots", "plot_summary"]

#: Widest plot in pixels (a reader sees it whole at 100% zoom).
MAX_WIDTH_PX = 1600
_DPI = 100
_MAX_W_IN = MAX_WIDTH_PX / _DPI - 0.1


def _plt() -> Any:
    import matplotlib as mpl

    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _fig(width_in: float, height_in: float = 4.5) -> tuple[Any, Any]:
    return _plt().subplots(figsize=(min(max(width_in, 6.0), _MAX_W_IN), height_in))


def _save(fig: Any, outdir: Path, name: str, title: str, section: str, *,
          layout: bool = True) -> dict[str, Any]:
    """`fig` as ``name.png``: a 256-colour palette PNG (the plots are flat colours and
    text, so nothing visible is lost and the file is about a third of matplotlib's RGBA
    PNG; SVG was larger still). The report's HTML and Markdown link this one file."""
    import io

    from PIL import Image

    from ._outfile import write_output

    png = outdir / f"{name}.png"
    if layout:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)  # figsize x dpi: never wider than MAX_WIDTH_PX
    _plt().close(fig)
    buf.seek(0)
    with Image.open(buf) as im:
        pal = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                         dither=Image.Dither.NONE)
        out = io.BytesIO()
        pal.save(out, format="PNG", optimize=True)
        write_output(png, out.getvalue())  # renamed over the name, never through a link
        width, height = im.size
    return {"name": name, "title": title, "png": str(png), "section": section,
            "width": width, "height": height}


def _time_axis(axis: Any) -> None:
    """Tick labels as times with units (10 µs, 1 ms) on a log axis."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: format_time(v) if v > 0 else ""))


def _plain_axis(axis: Any) -> None:
    """Tick labels as plain numbers (0.5, 2, 100) instead of 10^x on a log axis."""
    from matplotlib.ticker import FuncFormatter

    def minor(v: float, _: Any) -> str:
        # label only 2x and 5x between the decades: 20, 50, 200 ... (not 60 70 80 90,
        # which collide on a log axis)
        if v <= 0:
            return ""
        lead = v / 10 ** math.floor(math.log10(v))
        return f"{v:g}" if any(abs(lead - d) < 1e-6 for d in (2, 5)) else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(minor))


#: the names the running :func:`make_plots` has written, lower-cased -> the parts each
#: stands for (None outside it)
_WRITTEN: contextvars.ContextVar[dict[str, tuple[str, ...]] | None] = contextvars.ContextVar(
    "xlinalg_plot_names", default=None)


def _safe(*parts: Any) -> str:
    """A file name for a plot of `parts` (ASCII, at most 100 bytes), joined by ``_``.

    Distinct parts give distinct files: a join can be ambiguous (case ``s`` with
    dtype ``a_b``, case ``s_a`` with dtype ``b``: names from a shared file) and a
    case-insensitive file system takes ``X`` for ``x``. A name already written in
    this report for other parts gets a hash of the parts, so no plot overwrites
    another and none is linked twice.
    """
    key = tuple(str(p) for p in parts)
    name = filename("_".join(key))
    written = _WRITTEN.get()
    if written is None:
        return name
    if written.get(name.lower(), key) != key:
        name = filename(f"{name}-{hashlib.sha256(repr(key).encode('utf-8', 'surrogatepass')).hexdigest()[:10]}")
    written[name.lower()] = key
    return name


def _text(s: Any) -> str:
    """Text from a results file, safe for matplotlib (no mathtext, no control
    characters, bounded length)."""
    return plot_text(s, max_len=80)


_MARK = {"noisy": " ~", "stalled": " STALL"}
#: matplotlib's tab10 colours, grey (C7) last: it reads as "missing" beside the others.
_PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "C7")


def _color(backend: str) -> str:
    """The same colour for a backend in every plot: its place in the backend registry
    (a new library gets the next colour without an edit here); a name the registry does
    not know gets one from its characters."""
    from ..backends import BACKEND_NAMES

    if backend in BACKEND_NAMES:
        return _PALETTE[BACKEND_NAMES.index(backend) % len(_PALETTE)]
    return _PALETTE[sum(map(ord, backend)) % len(_PALETTE)]


def plot_sweep(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Runtime against matrix side n, one line per backend, IQR band, log-log (Q3)."""
    sw = [r for r in F.sweep_records(records) if F.good(r) and F.side(r) is not None]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sw:
        groups[(r["case"], str(r["dtype"]))].append(r)
    out = []
    for (case, dtype), rs in sorted(groups.items()):
        # a full sweep (about 100 sizes) gets the whole width limit: at 1000 px its
        # points and rings ran together
        n_sizes = len({F.side(r) for r in rs})
        fig, ax = _fig(10 if n_sizes <= 20 else _MAX_W_IN, 5.5 if n_sizes <= 20 else 6.5)
        lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rs:
            lines[r["backend"]].append(r)
        shaky_any = False
        for b, pts in sorted(lines.items()):
            pts.sort(key=lambda r: F.side(r) or 0.0)
            # (good cells: each has its quartiles)
            rows = [(F.side(r), q, r) for r in pts if (q := F.quartiles(r)) is not None]
            xs = [x for x, _, _ in rows]
            qs = [q for _, q, _ in rows]
            (line,) = ax.plot(xs, [q[1] for q in qs], marker="o", ms=3, label=_text(b),
                              color=_color(b))
            ax.fill_between(xs, [q[0] for q in qs], [q[2] for q in qs],
                            color=line.get_color(), alpha=0.2, lw=0)
            bad = [(x, q[1]) for x, q, r in rows if F.shaky(r)]
            if bad:
                shaky_any = True
                ax.plot([p[0] for p in bad], [p[1] for p in bad], ls="none", marker="o",
                        ms=7, mfc="none", mec=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_axis(ax.xaxis)
        _time_axis(ax.yaxis)
        ax.set_xlabel("matrix side n (one n x n system and one right-hand side)")
        ax.set_ylabel("time per solve (median; band: IQR)")
        title = f"{_text(case)}: runtime against matrix side n ({_text(dtype)})"
        ax.set_title(title + ("\nringed points: noisy or stalled cells" if shaky_any else ""),
                     fontsize=11)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="backend")
        out.append(_save(fig, outdir, _safe("sweep", case, dtype), title, "Q3"))
    return out


def plot_loop_vs_batched(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Loop vs one call per stack, per backend and size (IQR error bars, speed-up written)."""
    rows = F.loop_vs_batched(records)
    if not rows:
        return []
    out = []
    by_method: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for d in rows:
        by_method[(d["method"], d["dtype"])].append(d)
    multi = len({d["dtype"] for d in rows}) > 1
    for (method, dtype), ds in sorted(by_method.items()):
        labels = [f"{_text(d['backend'])}\n{_text(d['size'])}" for d in ds]
        x = list(range(len(ds)))
        w = 0.4
        fig, ax = _fig(1.0 * len(ds) + 3.5, 5.0)
        for off, key, label in ((-w / 2, "loop", "Python loop"), (w / 2, "method", _text(method))):
            qs = [d[f"{key}_q"] for d in ds]
            ax.bar([i + off for i in x], [q[1] for q in qs], w, label=label,
                   yerr=[[q[1] - q[0] for q in qs], [q[2] - q[1] for q in qs]], capsize=2,
                   error_kw={"elinewidth": 0.8, "alpha": 0.7})
        for i, d in zip(x, ds):
            ax.annotate(F.fmt_ratio(d["speedup"]), (i + w / 2, d["method_q"][2]),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
        ax.set_yscale("log")
        _time_axis(ax.yaxis)
        ax.set_ylabel("median time for all COUNT systems")
        ax.set_xlabel("backend, COUNT x n")
        title = (f"Python loop vs {_text(method)}, {_text(dtype)} (speed-up on the bars; "
                 "error bars: IQR)")
        # two lines: a narrow plot (few bars) cut the one-line title off
        ax.set_title(f"Python loop vs {_text(method)}, {_text(dtype)}\n(speed-up on the bars; "
                     "error bars: IQR)", fontsize=11)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        # beside the axes: inside, it covered short bars
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        name = _safe("loop_vs", method, dtype) if multi else _safe("loop_vs", method)
        out.append(_save(fig, outdir, name, title, "question"))
    return out


_MAX_SIZES = 12


def _thin(keys: list[Any]) -> tuple[list[Any], bool]:
    """At most _MAX_SIZES evenly spaced items, first and last kept."""
    if len(keys) <= _MAX_SIZES:
        return keys, False
    idx = sorted({round(i * (len(keys) - 1) / (_MAX_SIZES - 1)) for i in range(_MAX_SIZES)})
    return [keys[i] for i in idx], True


#: Ratio bars use a log axis when their values span at least this factor (1 included);
#: below it a log axis labels too few ticks (often only 1 and 0.5) to read a bar against.
_LOG_SPAN = 10.0


def _bar_width_in(n_bars: int) -> float:
    """Figure width for `n_bars` bars: room for a label over each, within the limit."""
    return 3.5 + 0.65 * n_bars


def _ratio_bars(ax: Any, groups: list[str], series: dict[str, list[tuple[float, float, float,
                                                                           str] | None]],
                ) -> bool:
    """Grouped bars of ratios with interval error bars; "~"/"STALL" marks. True: a mark."""
    from matplotlib.patches import Patch

    names = sorted(b for b, vs in series.items() if any(v is not None for v in vs))
    w = 0.8 / max(1, len(names))
    fig_px = ax.figure.get_size_inches()[0] * _DPI
    px_per_bar = 0.8 * fig_px / max(1, len(groups) * len(names))
    rotate = px_per_bar < 48
    marked = False
    handles = []
    for j, b in enumerate(names):
        xs, ys, lo, hi, marks = [], [], [], [], []
        for i, v in enumerate(series[b]):
            if v is None:
                continue
            xs.append(i - 0.4 + w * (j + 0.5))
            ys.append(v[1])
            lo.append(max(0.0, v[1] - v[0]))
            hi.append(max(0.0, v[2] - v[1]))
            marks.append(v[3])
        color = _color(b)
        bars = ax.bar(xs, ys, w, color=color, yerr=[lo, hi], capsize=2,
                      error_kw={"elinewidth": 0.8, "alpha": 0.7})
        handles.append(Patch(color=color, label=_text(b)))
        for bar, m in zip(bars, marks):
            if m:
                bar.set_hatch("//")
                marked = True
        for x, y, h, m in zip(xs, ys, hi, marks):
            # over the error bar, so the two never cross
            ax.annotate(F.fmt_ratio(y) + _MARK.get(m, ""), (x, y + h), ha="center",
                        va="bottom", fontsize=7, rotation=90 if rotate else 0)
    if marked:
        handles.append(Patch(facecolor="white", edgecolor="k", hatch="//",
                             label="noisy (~) or stalled"))
    ax.axhline(1.0, color="k", lw=0.8)
    ends = [e for vs in series.values() for v in vs if v is not None for e in (v[0], v[2])
            if e > 0]
    if ends and max(ends + [1.0]) / min(ends + [1.0]) >= _LOG_SPAN:
        ax.set_yscale("log")
        _plain_axis(ax.yaxis)
    # else linear: a log axis over less than a decade labels one or two ticks
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8, rotation=30 if len(groups) > 6 else 0)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.margins(y=0.2)
    ax.legend(handles=handles, title="backend", fontsize=8, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    return marked


def _ratio(slow: dict[str, Any], fast: dict[str, Any]) -> tuple[float, float, float, str] | None:
    rr = F.ratio(slow, fast)
    if rr is None:
        return None
    mark = F.shaky(slow) or F.shaky(fast)
    return rr[0], rr[1], rr[2], mark


def plot_speedups(records: list[dict[str, Any]], outdir: Path,
                  baseline: str = "numpy") -> list[dict[str, Any]]:
    """Per case and dtype: each backend's speed-up over `baseline` at each size."""
    out = []
    cases: dict[tuple[str, str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict))
    for r in records:
        sec = F.section_of(r)
        if sec in ("Q3", "A12"):  # the sweep and the precision plot have their own
            continue
        cases[(sec, r["case"], str(r["dtype"]))][str(r["size_label"])][r["backend"]] = r
    for (sec, case, dtype), by_size in sorted(cases.items()):
        keys = [lab for lab, by in by_size.items()
                if baseline in by and F.good(by[baseline])
                and any(b != baseline and F.good(x) for b, x in by.items())]
        if not keys:
            continue
        keys.sort(key=lambda lab: F.size_key(by_size[lab][baseline]))
        keys, thinned = _thin(keys)
        backends = sorted({b for k in keys for b, x in by_size[k].items()
                           if b != baseline and F.good(x)})
        series = {b: [(_ratio(by_size[k][baseline], by_size[k][b])
                       if b in by_size[k] and F.good(by_size[k][b]) else None) for k in keys]
                  for b in backends}
        fig, ax = _fig(_bar_width_in(len(keys) * max(1, len(backends))))
        _ratio_bars(ax, [_text(k) for k in keys], series)
        names = [str(n) for n in (by_size[keys[0]][baseline].get("params") or {})] or ["size"]
        ax.set_xlabel(_text(f"size ({' x '.join(names)})"))
        ax.set_ylabel(f"speed-up over {_text(baseline)} (>1: faster; bars: IQR range)")
        cdt = F.compute_dtype(next(iter(by_size[keys[0]].values())))
        title = (f"{sec} {_text(case)} ({_text(cdt)}): speed-up over {_text(baseline)}"
                 + (f", {_MAX_SIZES} of the sizes" if thinned else ""))
        ax.set_title(title, fontsize=10)
        out.append(_save(fig, outdir, _safe("speedup", sec, case, dtype), title, sec))
    return out


def plot_precision(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """A12: each reduced precision against the same backend's float32 GEMM (its own
    baseline), per size: NumPy has no bfloat16, so a NumPy baseline would drop it."""
    rs = [r for r in records if F.section_of(r) == "A12" and F.good(r)]
    base = {(r["backend"], str(r["dtype"]), str(r["size_label"])): r for r in rs
            if F.compute_dtype(r) == "float32"}
    out = []
    for dtype in sorted({str(r["dtype"]) for r in rs}):
        for target in ("float16", "bfloat16"):
            cells = [r for r in rs if F.compute_dtype(r) == target and str(r["dtype"]) == dtype
                     and (r["backend"], dtype, str(r["size_label"])) in base]
            if not cells:
                continue
            keys = sorted({str(r["size_label"]) for r in cells},
                          key=lambda lab: F.size_key(next(r for r in cells
                                                          if str(r["size_label"]) == lab)))
            backends = sorted({r["backend"] for r in cells})
            series: dict[str, list[Any]] = {}
            for b in backends:
                series[b] = []
                for k in keys:
                    c = next((r for r in cells if r["backend"] == b
                              and str(r["size_label"]) == k), None)
                    series[b].append(None if c is None else _ratio(base[(b, dtype, k)], c))
            fig, ax = _fig(_bar_width_in(len(keys) * len(backends)))
            _ratio_bars(ax, [_text(k) for k in keys], series)
            ax.set_xlabel("GEMM size (m x k x n)")
            ax.set_ylabel(f"float32 time / {target} time (>1: {target} faster)")
            title = (f"A12: {target} GEMM against the same backend's float32 GEMM "
                     f"({_text(dtype)} run)")
            ax.set_title(title, fontsize=10)
            out.append(_save(fig, outdir, _safe("precision", target, dtype), title, "A12"))
    return out


#: (section, slower case, faster case, what the ratio means): one backend's two cells
#: of the same size and dtype, the first's time over the second's.
PAIR_PLOTS = (
    ("A13", "a13_fusion_eager", "a13_fusion_compiled",
     "eager time / compiled time (>1: compiling pays)"),
)


def plot_pairs(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Per pair of :data:`PAIR_PLOTS` and dtype: each backend's first case against its own
    second case at each size (A13: eager against compiled, which NumPy cannot do, so a
    speed-up over NumPy has no compiled bars)."""
    out = []
    for sec, slow, fast, what in PAIR_PLOTS:
        cells = {(r["case"], r["backend"], str(r["dtype"]), str(r["size_label"])): r
                 for r in records if r["case"] in (slow, fast) and F.good(r)}
        for dtype in sorted({k[2] for k in cells}):
            pairs = {(b, lab): (cells[(slow, b, d, lab)], cells[(fast, b, d, lab)])
                     for (c, b, d, lab) in cells
                     if c == slow and d == dtype and (fast, b, d, lab) in cells}
            if not pairs:
                continue
            keys = sorted({lab for _, lab in pairs},
                          key=lambda lab: F.size_key(next(p[0] for (_, la), p in pairs.items()
                                                          if la == lab)))
            backends = sorted({b for b, _ in pairs})
            series = {b: [(_ratio(*pairs[(b, k)]) if (b, k) in pairs else None) for k in keys]
                      for b in backends}
            fig, ax = _fig(_bar_width_in(len(keys) * len(backends)))
            _ratio_bars(ax, [_text(k) for k in keys], series)
            first = next(iter(pairs.values()))[0]
            names = [str(n) for n in (first.get("params") or {})] or ["size"]
            ax.set_xlabel(_text(f"size ({' x '.join(names)})"))
            ax.set_ylabel(what)
            title = f"{sec}: {_text(slow)} against {_text(fast)} ({_text(dtype)})"
            ax.set_title(title, fontsize=10)
            out.append(_save(fig, outdir, _safe("pair", sec, slow, fast, dtype), title,
                             sec))
    return out


# ---------------------------------------------------------------------- the answer at a glance
#: The summary figure's name and section (the report puts it first in its summary).
SUMMARY_PLOT = "summary"
#: Rows of one case at most (a sweep's sizes are thinned to its ends and between).
_SUMMARY_SIZES_PER_CASE = 4
#: Colour scale of the summary: time / the row's fastest, 1x to this (and beyond).
_SUMMARY_MAX_RATIO = 16.0


def _summary_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (case, dtype, size) with a time, in the summary's workload order: its
    label, workload, per-backend time over the row's fastest, and the verdict's mark."""
    rows: list[dict[str, Any]] = []
    order = {s: i for i, (_, _, secs) in enumerate(F.WORKLOADS) for s in secs}
    titles = {s: title for _, title, secs in F.WORKLOADS for s in secs}
    by_case: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        groups[(str(r["case"]), str(r["dtype"]), str(r["size_label"]))][str(r["backend"])] = r
    for (case, dtype, label), by in groups.items():
        if F.is_calibration(next(iter(by.values()))):
            continue
        by_case[(case, dtype)].append((label, by))
    for (case, dtype), cells in by_case.items():
        cells.sort(key=lambda c: F.size_key(next(iter(c[1].values()))))
        keep = cells
        if len(cells) > _SUMMARY_SIZES_PER_CASE:  # the ends and evenly between
            step = (len(cells) - 1) / (_SUMMARY_SIZES_PER_CASE - 1)
            keep = [cells[i] for i in sorted({round(k * step)
                                               for k in range(_SUMMARY_SIZES_PER_CASE)})]
        for label, by in keep:
            times: dict[str, float] = {}
            for b, r in by.items():
                t = F.median(r) if F.good(r) else None
                if t is not None and t > 0:
                    times[b] = t
            if not times:
                continue
            sec = F.section_of(next(iter(by.values())))
            v = F.verdict(by)
            recorded = next((r.get("verdict") for r in by.values()
                             if isinstance(r.get("verdict"), dict)), None) or {}
            if v is None or v["n"] < 2:
                mark, text = "none", "no verdict: one backend ran"
            elif recorded.get("starved"):
                mark = "none"
                text = "no verdict: " + ", ".join(sorted(recorded["starved"])) + " starved of CPU"
            elif v["tie"]:
                mark, text = "tie", "tie: " + " = ".join(v.get("tied") or [v["winner"]])
            else:
                mark = "fastest"
                iv = v.get("interval")
                text = (f"{v['winner']}, {F.fmt_ratio(float(v['margin'] or 0))}"
                        + (f" {F.fmt_interval(*iv)}" if iv else "") + f" over {v['runner_up']}")
            best = min(times.values())
            rows.append({
                "label": f"{sec} {case} {label}" + (f" {dtype}" if dtype != "float64" else ""),
                "workload": titles.get(sec, "Other"), "order": (order.get(sec, len(order)),
                                                               _section_order(sec), case),
                "ratios": {b: t / best for b, t in times.items()},
                "status": {b: str(r.get("status")) for b, r in by.items()},
                "mark": mark, "winner": v["winner"] if v else None,
                "tied": set(v.get("tied") or ()) if v and mark == "tie" else set(),
                "verdict": text,
            })
    rows.sort(key=lambda r: tuple(r["order"]))  # stable: sizes stay in order within a case
    return rows


def plot_summary(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """The answer at a glance: workloads (rows: case, size, dtype) x backends, each cell
    coloured by its time over the row's fastest, with the verdict marked: a star on the
    backend named fastest, ``=`` on the backends of a tie within noise, and the verdict
    in words at the right of each row (``no verdict`` when one backend ran or a worker
    was starved of CPU). Sizes of a sweep are thinned to at most four rows."""
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    rows = _summary_rows(records)
    if not rows:
        return []
    from ..backends import BACKEND_NAMES

    seen = {b for r in rows for b in r["status"]}
    backends = [b for b in BACKEND_NAMES if b in seen] + sorted(seen - set(BACKEND_NAMES))
    grid = np.full((len(rows), len(backends)), np.nan)
    for i, r in enumerate(rows):
        for j, b in enumerate(backends):
            if b in r["ratios"]:
                grid[i, j] = min(r["ratios"][b], _SUMMARY_MAX_RATIO)
    plt = _plt()
    cell_w, label_w, verdict_w = 1.25, 3.3, 4.2
    width = min(label_w + cell_w * len(backends) + verdict_w, _MAX_W_IN)
    height = 1.6 + 0.3 * len(rows)
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((label_w / width, 0.9 / height, cell_w * len(backends) / width,
                       (height - 1.6) / height))
    cmap = plt.get_cmap("YlOrRd").with_extremes(bad="#eeeeee")
    img = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap,
                    norm=LogNorm(vmin=1.0, vmax=_SUMMARY_MAX_RATIO), interpolation="nearest")
    for i, r in enumerate(rows):
        for j, b in enumerate(backends):
            x = r["ratios"].get(b)
            if x is None:
                st = r["status"].get(b)
                txt = {"skipped": "skipped", "failed": "failed", "wrong": "WRONG",
                       None: ""}.get(st, st or "")
                ax.text(j, i, txt, ha="center", va="center", fontsize=8, color="#555555")
                continue
            mark = ""
            if r["mark"] == "fastest" and b == r["winner"]:
                mark = " \u2605"
                ax.add_patch(Rectangle((j - 0.48, i - 0.45), 0.96, 0.9, fill=False, lw=2.2,
                                       edgecolor="black"))
            elif r["mark"] == "tie" and b in r["tied"]:
                mark = " ="
                ax.add_patch(Rectangle((j - 0.48, i - 0.45), 0.96, 0.9, fill=False, lw=1.4,
                                       edgecolor="black", linestyle="--"))
            colour = "white" if x >= 6 else "black"
            ax.text(j, i, f"{F.fmt_ratio(x)}{mark}", ha="center", va="center", fontsize=9,
                    color=colour)
    ax.set_xticks(range(len(backends)))
    ax.set_xticklabels([_text(b) for b in backends], fontsize=10)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_text(r["label"]) for r in rows], fontsize=9)
    ax.tick_params(length=0)
    for i, r in enumerate(rows):
        ax.text(len(backends) - 0.4, i, _text(r["verdict"]), ha="left", va="center",
                fontsize=9, clip_on=False,
                color="#999999" if r["mark"] == "none" else "black")
        if i and r["workload"] != rows[i - 1]["workload"]:
            ax.axhline(i - 0.5, color="black", lw=0.8)
    ax.set_title("Time over the fastest backend of each row (lighter is faster); "
                 "\u2605 named fastest, = tie within noise, grey text: no verdict",
                 fontsize=10, loc="left", pad=22)
    cax = fig.add_axes((label_w / width, 0.35 / height, min(4.0, cell_w * len(backends)) / width,
                        0.18 / height))
    bar = fig.colorbar(img, cax=cax, orientation="horizontal")
    bar.set_ticks([1, 2, 4, 8, 16])
    bar.set_ticklabels(["1x", "2x", "4x", "8x", "16x+"])
    bar.ax.tick_params(labelsize=8)
    title = "Which library for which workload: time over the fastest, with the verdict"
    # fig.tight_layout would move the hand-placed axes: saved as laid out
    return [_save(fig, outdir, _safe(SUMMARY_PLOT), title, "summary", layout=False)]


def make_plots(records: list[dict[str, Any]], outdir: str | Path) -> list[dict[str, Any]]:
    """All plots of the report into ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    token = _WRITTEN.set({})
    try:
        return (plot_summary(records, outdir)
                + plot_sweep(records, outdir) + plot_loop_vs_batched(records, outdir)
                + plot_speedups(records, outdir) + plot_precision(records, outdir)
                + plot_pairs(records, outdir))
    finally:
        _WRITTEN.reset(token)
