"""Plots of a results file (matplotlib, Agg backend, imported lazily).

Each plot is written as PNG and SVG. :func:`make_plots` returns a list of
``{"name", "title", "png", "svg"}`` for the report to embed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from . import _findings as F

__all__ = ["make_plots"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, outdir: Path, name: str, title: str) -> dict[str, str]:
    png = outdir / f"{name}.png"
    svg = outdir / f"{name}.svg"
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    _plt().close(fig)
    return {"name": name, "title": title, "png": str(png), "svg": str(svg)}


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


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def plot_sweep(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, str]]:
    """Runtime against matrix side n, one line per backend, log-log (Q3)."""
    plt = _plt()
    sw = [r for r in F.sweep_records(records) if F.good(r) and F.side(r) is not None]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sw:
        groups[(r["case"], str(r["dtype"]))].append(r)
    out = []
    for (case, dtype), rs in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for r in rs:
            lines[r["backend"]].append((F.side(r), F.median(r)))  # type: ignore[arg-type]
        for b, pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=b)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_axis(ax.xaxis)
        ax.set_xlabel("matrix side n")
        ax.set_ylabel("median time per call [s]")
        title = f"{case}: runtime against matrix side ({dtype})"
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="backend")
        out.append(_save(fig, outdir, _safe(f"sweep_{case}_{dtype}"), title))
    return out


def plot_loop_vs_batched(records: list[dict[str, Any]], outdir: Path) -> list[dict[str, str]]:
    """Loop vs batched time per backend and size, with the speedup written on the bars."""
    rows = F.loop_vs_batched(records)
    if not rows:
        return []
    plt = _plt()
    out = []
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in rows:
        by_method[d["method"]].append(d)
    for method, ds in sorted(by_method.items()):
        labels = [f"{d['backend']}\n{d['size']}" for d in ds]
        x = list(range(len(ds)))
        w = 0.4
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(ds) + 2), 4.5))
        ax.bar([i - w / 2 for i in x], [d["loop_s"] for d in ds], w, label="Python loop")
        ax.bar([i + w / 2 for i in x], [d["method_s"] for d in ds], w, label=method)
        for i, d in zip(x, ds):
            ax.annotate(f"{d['speedup']:.3g}x", (i + w / 2, d["method_s"]),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("median time [s] (all systems)")
        ax.set_xlabel("backend / size")
        title = f"Q1/Q4: Python loop vs {method} (speedup on the bars)"
        ax.set_title(title)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend()
        out.append(_save(fig, outdir, _safe(f"loop_vs_{method}"), title))
    return out


_MAX_BARS = 12


def plot_speedups(records: list[dict[str, Any]], outdir: Path,
                  baseline: str = "numpy") -> list[dict[str, str]]:
    """Per section: speedup of each backend over ``baseline`` per cell (log scale)."""
    plt = _plt()
    out = []
    for sec, rs in F.sections(records).items():
        cells: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
        for r in rs:
            cells[(r["case"], str(r["dtype"]), str(r["size_label"]))][r["backend"]] = r
        keys = [k for k, by in cells.items()
                if baseline in by and F.good(by[baseline])
                and any(b != baseline and F.good(x) for b, x in by.items())]
        if not keys:
            continue
        keys.sort(key=lambda k: (k[0], k[1], F.size_key(cells[k][baseline])))
        # a sweep (Q3: 100 sizes) would be thousands of bars: at most _MAX_BARS sizes
        # per case, evenly spaced, first and last kept (every size is in the tables)
        groups: dict[tuple[str, str], list] = defaultdict(list)
        for k in keys:
            groups[(k[0], k[1])].append(k)
        thinned = False
        keys = []
        for g in groups.values():
            if len(g) > _MAX_BARS:
                idx = sorted({round(i * (len(g) - 1) / (_MAX_BARS - 1)) for i in range(_MAX_BARS)})
                g = [g[i] for i in idx]
                thinned = True
            keys += g
        backends = sorted({b for k in keys for b in cells[k] if b != baseline})
        fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(keys) * max(1, len(backends)) / 2 + 3),
                                        4.5))
        w = 0.8 / len(backends)
        for j, b in enumerate(backends):
            xs, ys = [], []
            for i, k in enumerate(keys):
                r = cells[k].get(b)
                if r is not None and F.good(r):
                    xs.append(i - 0.4 + w * (j + 0.5))
                    ys.append(F.median(cells[k][baseline]) / F.median(r))  # type: ignore[operator]
            ax.bar(xs, ys, w, label=b)
            for x, y in zip(xs, ys):
                ax.annotate(f"{y:.2g}x", (x, y), ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        _plain_axis(ax.yaxis)
        ax.set_xticks(range(len(keys)))
        multi = len({k[1] for k in keys}) > 1
        ax.set_xticklabels([f"{k[0]}\n{k[2]}" + (f"\n{k[1]}" if multi else "") for k in keys],
                           fontsize=7, rotation=30 if len(keys) > 6 else 0)
        ax.set_ylabel(f"speedup over {baseline} (>1: faster)")
        title = f"{sec}: speedup over {baseline}" + (
            f" ({_MAX_BARS} sizes per case shown)" if thinned else "")
        ax.set_title(title)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(title="backend", fontsize=8)
        out.append(_save(fig, outdir, _safe(f"speedup_{sec}"), title))
    return out


def make_plots(records: list[dict[str, Any]], outdir: str | Path) -> list[dict[str, str]]:
    """All plots of the report into ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    return (plot_sweep(records, outdir) + plot_loop_vs_batched(records, outdir)
            + plot_speedups(records, outdir))
