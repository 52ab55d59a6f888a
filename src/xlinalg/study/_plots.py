"""The documents' plots: the summary figure (which library for which workload), the
solve sweep (Q3), loop against batched solves (Q1-Q4), mixed precision (A12)
and the fusion pairs (A13). Drawn with the harness's plot helpers
(:mod:`xlinalg.bench._plots`); :func:`make_plots` places the harness's own
plots among them (the :class:`xlinalg.bench.Study` ``plots`` hook)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..bench import _findings as H
from ..bench._plots import (
    MAX_WIDTH_IN,
    bar_width_in,
    color_of,
    new_figure,
    plain_axis,
    plot_label,
    plot_name,
    pyplot,
    ratio_bars,
    ratio_with_mark,
    save_plot,
    time_axis,
)
from ..bench._verdict import WITHIN_NOISE, tie_reading, verdict_text
from . import _findings as S

__all__ = ["SUMMARY_PLOT", "make_plots", "plot_summary"]


def plot_sweep(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Runtime against matrix side n, one line per backend, IQR band, log-log (Q3)."""
    sw = [r for r in S.sweep_records(records) if H.good(r) and S.side(r) is not None]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sw:
        groups[(r["case"], str(r["dtype"]))].append(r)
    out = []
    for (case, dtype), rs in sorted(groups.items()):
        # a full sweep (about 100 sizes) gets the whole width limit: at 1000 px its
        # points and rings ran together
        n_sizes = len({S.side(r) for r in rs})
        fig, ax = new_figure(10 if n_sizes <= 20 else MAX_WIDTH_IN, 5.5 if n_sizes <= 20 else 6.5)
        lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rs:
            lines[r["backend"]].append(r)
        shaky_any = False
        for b, pts in sorted(lines.items()):
            pts.sort(key=lambda r: S.side(r) or 0.0)
            # (good cells: each has its quartiles)
            rows = [(S.side(r), q, r) for r in pts if (q := H.quartiles(r)) is not None]
            xs = [x for x, _, _ in rows]
            qs = [q for _, q, _ in rows]
            (line,) = ax.plot(xs, [q[1] for q in qs], marker="o", ms=3, label=plot_label(b),
                              color=color_of(b))
            ax.fill_between(xs, [q[0] for q in qs], [q[2] for q in qs],
                            color=line.get_color(), alpha=0.2, lw=0)
            bad = [(x, q[1]) for x, q, r in rows if H.shaky(r)]
            if bad:
                shaky_any = True
                ax.plot([p[0] for p in bad], [p[1] for p in bad], ls="none", marker="o",
                        ms=7, mfc="none", mec=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_axis(ax.xaxis)
        time_axis(ax.yaxis)
        ax.set_xlabel("matrix side n (one n x n system and one right-hand side)")
        ax.set_ylabel("time per solve (median; band: IQR)")
        title = f"{plot_label(case)}: runtime against matrix side n ({plot_label(dtype)})"
        ax.set_title(title + ("\nringed points: noisy or stalled cells" if shaky_any else ""),
                     fontsize=11)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="backend")
        out.append(save_plot(fig, outdir, plot_name("sweep", case, dtype), title, "Q3"))
    return out


def plot_loop_vs_batched(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """Loop vs one call per stack, per backend and size (IQR error bars, speed-up written)."""
    rows = S.loop_vs_batched(records)
    if not rows:
        return []
    out = []
    by_method: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for d in rows:
        by_method[(d["method"], d["dtype"])].append(d)
    multi = len({d["dtype"] for d in rows}) > 1
    for (method, dtype), ds in sorted(by_method.items()):
        labels = [f"{plot_label(d['backend'])}\n{plot_label(d['size'])}" for d in ds]
        x = list(range(len(ds)))
        w = 0.4
        fig, ax = new_figure(1.0 * len(ds) + 3.5, 5.0)
        for off, key, label in ((-w / 2, "loop", "Python loop"), (w / 2, "method", plot_label(method))):
            qs = [d[f"{key}_q"] for d in ds]
            ax.bar([i + off for i in x], [q[1] for q in qs], w, label=label,
                   yerr=[[q[1] - q[0] for q in qs], [q[2] - q[1] for q in qs]], capsize=2,
                   error_kw={"elinewidth": 0.8, "alpha": 0.7})
        for i, d in zip(x, ds):
            ax.annotate(H.fmt_ratio(d["speedup"]), (i + w / 2, d["method_q"][2]),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
        ax.set_yscale("log")
        time_axis(ax.yaxis)
        ax.set_ylabel("median time for all COUNT systems")
        ax.set_xlabel("backend, COUNT x n")
        title = (f"Python loop vs {plot_label(method)}, {plot_label(dtype)} (speed-up on the bars; "
                 "error bars: IQR)")
        # two lines: a narrow plot (few bars) cut the one-line title off
        ax.set_title(f"Python loop vs {plot_label(method)}, {plot_label(dtype)}\n(speed-up on the bars; "
                     "error bars: IQR)", fontsize=11)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        # beside the axes: inside, it covered short bars
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        name = plot_name("loop_vs", method, dtype) if multi else plot_name("loop_vs", method)
        out.append(save_plot(fig, outdir, name, title, "question"))
    return out


def plot_precision(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, Any]]:
    """A12: each reduced precision against the same backend's float32 GEMM (its own
    baseline), per size: NumPy has no bfloat16, so a NumPy baseline would drop it."""
    rs = [r for r in records if H.section_of(r) == "A12" and H.good(r)]
    base = {(r["backend"], str(r["dtype"]), str(r["size_label"])): r for r in rs
            if H.compute_dtype(r) == "float32"}
    out = []
    for dtype in sorted({str(r["dtype"]) for r in rs}):
        for target in ("float16", "bfloat16"):
            cells = [r for r in rs if H.compute_dtype(r) == target and str(r["dtype"]) == dtype
                     and (r["backend"], dtype, str(r["size_label"])) in base]
            if not cells:
                continue
            keys = sorted({str(r["size_label"]) for r in cells},
                          key=lambda lab: H.size_key(next(r for r in cells
                                                          if str(r["size_label"]) == lab)))
            backends = sorted({r["backend"] for r in cells})
            series: dict[str, list[Any]] = {}
            for b in backends:
                series[b] = []
                for k in keys:
                    c = next((r for r in cells if r["backend"] == b
                              and str(r["size_label"]) == k), None)
                    series[b].append(None if c is None else ratio_with_mark(base[(b, dtype, k)], c))
            fig, ax = new_figure(bar_width_in(len(keys) * len(backends)))
            ratio_bars(ax, [plot_label(k) for k in keys], series)
            ax.set_xlabel("GEMM size (m x k x n)")
            ax.set_ylabel(f"float32 time / {target} time (>1: {target} faster)")
            title = (f"A12: {target} GEMM against the same backend's float32 GEMM "
                     f"({plot_label(dtype)} run)")
            ax.set_title(title, fontsize=10)
            out.append(save_plot(fig, outdir, plot_name("precision", target, dtype), title, "A12"))
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
                 for r in records if r["case"] in (slow, fast) and H.good(r)}
        for dtype in sorted({k[2] for k in cells}):
            pairs = {(b, lab): (cells[(slow, b, d, lab)], cells[(fast, b, d, lab)])
                     for (c, b, d, lab) in cells
                     if c == slow and d == dtype and (fast, b, d, lab) in cells}
            if not pairs:
                continue
            keys = sorted({lab for _, lab in pairs},
                          key=lambda lab: H.size_key(next(p[0] for (_, la), p in pairs.items()
                                                          if la == lab)))
            backends = sorted({b for b, _ in pairs})
            series = {b: [(ratio_with_mark(*pairs[(b, k)]) if (b, k) in pairs else None) for k in keys]
                      for b in backends}
            fig, ax = new_figure(bar_width_in(len(keys) * len(backends)))
            ratio_bars(ax, [plot_label(k) for k in keys], series)
            first = next(iter(pairs.values()))[0]
            names = [str(n) for n in (first.get("params") or {})] or ["size"]
            ax.set_xlabel(plot_label(f"size ({' x '.join(names)})"))
            ax.set_ylabel(what)
            title = f"{sec}: {plot_label(slow)} against {plot_label(fast)} ({plot_label(dtype)})"
            ax.set_title(title, fontsize=10)
            out.append(save_plot(fig, outdir, plot_name("pair", sec, slow, fast, dtype), title,
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
    order = {s: i for i, (_, _, secs) in enumerate(S.WORKLOADS) for s in secs}
    titles = {s: title for _, title, secs in S.WORKLOADS for s in secs}
    by_case: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        groups[(str(r["case"]), str(r["dtype"]), str(r["size_label"]))][str(r["backend"])] = r
    for (case, dtype, label), by in groups.items():
        if H.is_calibration(next(iter(by.values()))):
            continue
        by_case[(case, dtype)].append((label, by))
    said = {(w["case"], w["dtype"], w["size"]): w for w in H.winners(records)}
    for (case, dtype), cells in by_case.items():
        cells.sort(key=lambda c: H.size_key(next(iter(c[1].values()))))
        keep = cells
        if len(cells) > _SUMMARY_SIZES_PER_CASE:  # the ends and evenly between
            step = (len(cells) - 1) / (_SUMMARY_SIZES_PER_CASE - 1)
            keep = [cells[i] for i in sorted({round(k * step)
                                               for k in range(_SUMMARY_SIZES_PER_CASE)})]
        for label, by in keep:
            times: dict[str, float] = {}
            for b, r in by.items():
                t = H.median(r) if H.good(r) else None
                if t is not None and t > 0:
                    times[b] = t
            if not times:
                continue
            sec = H.section_of(next(iter(by.values())))
            v = said.get((case, dtype, label))  # the report's verdict (the run's winners)
            recorded = next((r.get("verdict") for r in by.values()
                             if isinstance(r.get("verdict"), dict)), None) or {}
            if v is None or v["n"] < 2:
                mark, text = "none", "no verdict: one backend ran"
            elif recorded.get("starved"):  # (the runner's own words, shorter)
                mark = "none"
                text = "no verdict: " + ", ".join(sorted(recorded["starved"])) + " starved of CPU"
            elif v.get("no_verdict"):
                mark, text = "none", v["text"]
            elif v["tie"]:
                words = ("no winner" if v.get("fdr") else
                         "tie" if tie_reading(v) == WITHIN_NOISE else "below the margin")
                mark, text = "tie", f"{words}: " + " = ".join(v.get("tied") or [v["winner"]])
            else:
                mark, text = "fastest", verdict_text({**v, "note": ""})
            best = min(times.values())
            rows.append({
                "label": f"{sec} {case} {label}" + (f" {dtype}" if dtype != "float64" else ""),
                "workload": titles.get(sec, "Other"), "order": (order.get(sec, len(order)),
                                                               H.section_order(sec), case),
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
    plt = pyplot()
    cell_w, label_w, verdict_w = 1.25, 3.3, 4.2
    width = min(label_w + cell_w * len(backends) + verdict_w, MAX_WIDTH_IN)
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
            ax.text(j, i, f"{H.fmt_ratio(x)}{mark}", ha="center", va="center", fontsize=9,
                    color=colour)
    ax.set_xticks(range(len(backends)))
    ax.set_xticklabels([plot_label(b) for b in backends], fontsize=10)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([plot_label(r["label"]) for r in rows], fontsize=9)
    ax.tick_params(length=0)
    for i, r in enumerate(rows):
        ax.text(len(backends) - 0.4, i, plot_label(r["verdict"]), ha="left", va="center",
                fontsize=9, clip_on=False,
                color="#999999" if r["mark"] == "none" else "black")
        if i and r["workload"] != rows[i - 1]["workload"]:
            ax.axhline(i - 0.5, color="black", lw=0.8)
    ax.set_title("Time over the fastest backend of each row (lighter is faster); "
                 "\u2605 named fastest, = tie (within noise or below the margin), grey text: no verdict",
                 fontsize=10, loc="left", pad=22)
    cax = fig.add_axes((label_w / width, 0.35 / height, min(4.0, cell_w * len(backends)) / width,
                        0.18 / height))
    bar = fig.colorbar(img, cax=cax, orientation="horizontal")
    bar.set_ticks([1, 2, 4, 8, 16])
    bar.set_ticklabels(["1x", "2x", "4x", "8x", "16x+"])
    bar.ax.tick_params(labelsize=8)
    title = "Which library for which workload: time over the fastest, with the verdict"
    # fig.tight_layout would move the hand-placed axes: saved as laid out
    return [save_plot(fig, outdir, plot_name(SUMMARY_PLOT), title, "summary", layout=False)]


def make_plots(records: list[dict[str, Any]], outdir: Path,
               generic: Callable[[list[dict[str, Any]], Path], list[dict[str, Any]]],
               ) -> list[dict[str, Any]]:
    """The study's plots with the harness's own (`generic`: speed-ups over NumPy) among
    them, in the report's order; the sweep (Q3) and the precision GEMMs (A12) have
    their own plots instead."""
    return (plot_summary(records, outdir)
            + plot_sweep(records, outdir) + plot_loop_vs_batched(records, outdir)
            + generic([r for r in records if H.section_of(r) not in ("Q3", "A12")], outdir)
            + plot_precision(records, outdir) + plot_pairs(records, outdir))
