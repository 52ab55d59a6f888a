"""Plots of a results file (matplotlib, Agg backend, imported lazily).

Each plot is written as one palette PNG, at most :data:`MAX_WIDTH_PX` wide
(one plot per case rather than one strip per section), with the interquartile
range drawn as error bars or bands, units and sizes on the axes, and noisy or
stalled cells marked. :func:`make_plots` returns a list of ``{"name",
"title", "png", "section", "width", "height"}`` for the report to link
("section": a case section such as ``"A1"``, or a study's own such as
``"question"``; width and height in pixels). A study's plots
(:class:`~xlinalg.bench.Study`) are drawn with the helpers here.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lib._escape import filename, plot_text
from .._lib._units import format_time
from . import _findings as F

if TYPE_CHECKING:
    from ._study import Study

__all__ = ["MAX_WIDTH_PX", "make_plots", "plot_speedups"]

#: Widest plot in pixels (a reader sees it whole at 100% zoom).
MAX_WIDTH_PX = 1600
_DPI = 100
MAX_WIDTH_IN = MAX_WIDTH_PX / _DPI - 0.1


def pyplot() -> Any:
    import matplotlib as mpl

    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def new_figure(width_in: float, height_in: float = 4.5) -> tuple[Any, Any]:
    return pyplot().subplots(figsize=(min(max(width_in, 6.0), MAX_WIDTH_IN), height_in))


def save_plot(fig: Any, outdir: Path, name: str, title: str, section: str, *,
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
    pyplot().close(fig)
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


def time_axis(axis: Any) -> None:
    """Tick labels as times with units (10 µs, 1 ms) on a log axis."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: format_time(v) if v > 0 else ""))


def plain_axis(axis: Any) -> None:
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


def plot_name(*parts: Any) -> str:
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


def plot_label(s: Any) -> str:
    """Text from a results file, safe for matplotlib (no mathtext, no control
    characters, bounded length)."""
    return plot_text(s, max_len=80)


_MARK = {"noisy": " ~", "stalled": " STALL"}
#: matplotlib's tab10 colours, grey (C7) last: it reads as "missing" beside the others.
_PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "C7")


def color_of(backend: str) -> str:
    """The same colour for a backend in every plot: its place in the backend registry
    (a new library gets the next colour without an edit here); a name the registry does
    not know gets one from its characters."""
    from ..backends import BACKEND_NAMES

    i = BACKEND_NAMES.index(backend) if backend in BACKEND_NAMES else sum(map(ord, backend))
    return _PALETTE[i % len(_PALETTE)]


_MAX_SIZES = 12


#: Ratio bars use a log axis when their values span at least this factor (1 included);
#: below it a log axis labels too few ticks (often only 1 and 0.5) to read a bar against.
_LOG_SPAN = 10.0


def bar_width_in(n_bars: int) -> float:
    """Figure width for `n_bars` bars: room for a label over each, within the limit."""
    return 3.5 + 0.65 * n_bars


def ratio_bars(ax: Any, groups: list[str], series: dict[str, list[tuple[float, float, float,
                                                                           str] | None]],
                ) -> None:
    """Grouped bars of ratios with interval error bars; "~"/"STALL" marks."""
    from matplotlib.patches import Patch

    names = sorted(b for b, vs in series.items() if any(v is not None for v in vs))
    w = 0.8 / max(1, len(names))
    fig_px = ax.figure.get_size_inches()[0] * _DPI
    px_per_bar = 0.8 * fig_px / max(1, len(groups) * len(names))
    rotate = px_per_bar < 48
    marked = False
    handles = []
    for j, b in enumerate(names):
        got = [(i, v) for i, v in enumerate(series[b]) if v is not None]
        xs = [i - 0.4 + w * (j + 0.5) for i, _ in got]
        ys = [v[1] for _, v in got]
        lo = [max(0.0, v[1] - v[0]) for _, v in got]
        hi = [max(0.0, v[2] - v[1]) for _, v in got]
        color = color_of(b)
        bars = ax.bar(xs, ys, w, color=color, yerr=[lo, hi], capsize=2,
                      error_kw={"elinewidth": 0.8, "alpha": 0.7})
        handles.append(Patch(color=color, label=plot_label(b)))
        for bar, x, y, h, (_, v) in zip(bars, xs, ys, hi, got):
            if v[3]:
                bar.set_hatch("//")
                marked = True
            # over the error bar, so the two never cross
            ax.annotate(F.fmt_ratio(y) + _MARK.get(v[3], ""), (x, y + h), ha="center",
                        va="bottom", fontsize=7, rotation=90 if rotate else 0)
    if marked:
        handles.append(Patch(facecolor="white", edgecolor="k", hatch="//",
                             label="noisy (~) or stalled"))
    ax.axhline(1.0, color="k", lw=0.8)
    ends = [e for vs in series.values() for v in vs if v is not None for e in (v[0], v[2])
            if e > 0]
    if ends and max(ends + [1.0]) / min(ends + [1.0]) >= _LOG_SPAN:
        ax.set_yscale("log")
        plain_axis(ax.yaxis)
    # else linear: a log axis over less than a decade labels one or two ticks
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=8, rotation=30 if len(groups) > 6 else 0)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.margins(y=0.2)
    ax.legend(handles=handles, title="backend", fontsize=8, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))


def ratio_with_mark(slow: dict[str, Any], fast: dict[str, Any]) -> tuple[float, float, float, str] | None:
    rr = F.ratio(slow, fast)
    return None if rr is None else (*rr, F.shaky(slow) or F.shaky(fast))


def plot_speedups(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Per case and dtype: each backend's speed-up over NumPy at each size."""
    baseline = "numpy"
    out = []
    cases: dict[tuple[str, str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict))
    for r in records:
        cases[(F.section_of(r), r["case"], str(r["dtype"]))][str(r["size_label"])][r["backend"]] = r
    for (sec, case, dtype), by_size in sorted(cases.items()):
        keys = [lab for lab, by in by_size.items()
                if baseline in by and F.good(by[baseline])
                and any(b != baseline and F.good(x) for b, x in by.items())]
        if not keys:
            continue
        keys.sort(key=lambda lab: F.size_key(by_size[lab][baseline]))
        thinned = len(keys) > _MAX_SIZES
        if thinned:  # _MAX_SIZES evenly spaced sizes, the first and last kept
            keys = [keys[i] for i in sorted({round(i * (len(keys) - 1) / (_MAX_SIZES - 1))
                                             for i in range(_MAX_SIZES)})]
        backends = sorted({b for k in keys for b, x in by_size[k].items()
                           if b != baseline and F.good(x)})
        series = {b: [(ratio_with_mark(by_size[k][baseline], by_size[k][b])
                       if b in by_size[k] and F.good(by_size[k][b]) else None) for k in keys]
                  for b in backends}
        fig, ax = new_figure(bar_width_in(len(keys) * max(1, len(backends))))
        ratio_bars(ax, [plot_label(k) for k in keys], series)
        names = [str(n) for n in (by_size[keys[0]][baseline].get("params") or {})] or ["size"]
        ax.set_xlabel(plot_label(f"size ({' x '.join(names)})"))
        ax.set_ylabel(f"speed-up over {plot_label(baseline)} (>1: faster; bars: IQR range)")
        cdt = F.compute_dtype(next(iter(by_size[keys[0]].values())))
        title = (f"{sec} {plot_label(case)} ({plot_label(cdt)}): speed-up over {plot_label(baseline)}"
                 + (f", {_MAX_SIZES} of the sizes" if thinned else ""))
        ax.set_title(title, fontsize=10)
        out.append(save_plot(fig, outdir, plot_name("speedup", sec, case, dtype), title, sec))
    return out


def make_plots(records: list[dict[str, Any]], outdir: str | Path,
               study: Study | None = None) -> list[dict[str, Any]]:
    """All plots of the report into ``outdir``: the harness's (speed-ups over a
    baseline), and the study's where it has a ``plots`` hook (which places the
    harness's among its own)."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    token = _WRITTEN.set({})
    try:
        if study is not None and study.plots is not None:
            return study.plots(records, outdir, plot_speedups)
        return plot_speedups(records, outdir)
    finally:
        _WRITTEN.reset(token)
