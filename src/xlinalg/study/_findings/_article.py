"""The article's measured tables beside this file's cells, in the article's setup and
in fair ones (the same dtype on both libraries)."""

from __future__ import annotations

from typing import Any

from ...bench._findings._fields import find_cell, good, is_gpu, median
from ...bench._findings._verdicts import no_verdict_reason, paired_of, ratio, shaky
from ...bench._verdict import (
    BELOW_MARGIN,
    WITHIN_NOISE,
    fmt_interval,
    fmt_ratio,
    positive,
    reading,
)
from ._setup import ARTICLE_NUMPY, ARTICLE_SIDES, ARTICLE_TORCH_CPU

__all__ = ["ARTICLE_SETUP", "ARTICLE_TABLES", "article_rows", "compare_text", "cross_dtype_drift",
           "fmt_ms"]


#: The article's measured tables: (section, item, case, size label, (NumPy CPU,
#: PyTorch CPU, PyTorch GPU) in ms; None where it printed "out of memory").
ARTICLE_TABLES: tuple[tuple[str, str, str, str, tuple[float | None, ...]], ...] = (
    ("A1", "GEMM 128x256x512", "a1_gemm", "128x256x512", (2.31, 1.98, 0.12)),
    ("A1", "GEMM 512x1024x2048", "a1_gemm", "512x1024x2048", (48.76, 42.15, 1.87)),
    ("A1", "GEMM 2048x4096x8192", "a1_gemm", "2048x4096x8192", (None, None, 15.24)),
    ("A4", "add 4096x4096", "a4_add", "4096x4096", (5.2, 4.8, 0.3)),
    ("A4", "multiply 4096x4096", "a4_multiply", "4096x4096", (5.1, 4.7, 0.3)),
    ("A4", "sigmoid 4096x4096", "a4_sigmoid", "4096x4096", (22.4, 18.6, 1.2)),
    ("A5", "broadcast 128x1 -> 128x1024", "a5_broadcast", "128x1024x1", (0.15, 0.12, 0.04)),
    ("A7", "SVD 512x512", "a7_svd", "512", (68.0, 72.0, 9.0)),
    ("A8", "QR 512x512", "a8_qr", "512", (24.0, 26.0, 3.0)),
    ("A9", "batched matmul 16 x 256x256", "a9_batched_matmul", "16x256", (1.2, 1.0, 0.08)),
    ("A9", "batched matmul 64 x 256x256", "a9_batched_matmul", "64x256", (4.5, 3.8, 0.12)),
    ("A9", "batched matmul 256 x 256x256", "a9_batched_matmul", "256x256", (18.2, 15.4, 0.25)),
    ("A9", "batched matmul 1024 x 256x256", "a9_batched_matmul", "1024x256",
     (72.9, 61.7, 0.48)),
    ("A10", "matmul, non-contiguous 1024x512 operand", "a10_layout", "1024x0",
     (15.2, 14.6, 1.8)),
    ("A10", "matmul, contiguous 1024x512 operand", "a10_layout", "1024x1", (8.7, 7.9, 0.9)),
)
ARTICLE_SETUP = ("NumPy float64 against PyTorch float32 (NumPy's and torch.rand's defaults), "
                 "Xeon Gold 6248R 24 cores and an A100")



def fmt_ms(s: float | None) -> str:
    """Seconds as the article writes them (ms), without e-notation."""
    if s is None:
        return "-"
    ms = s * 1e3
    return f"{ms:.3g} ms" if ms < 1000 or ms >= 1e9 else f"{ms:,.0f} ms"


def compare_text(numpy_cell: dict[str, Any] | None, torch_cell: dict[str, Any] | None,
                 article: float | None) -> tuple[str, str]:
    """("numpy X ms / torch Y ms = r [lo-hi]", verdict against the article's ratio)."""
    if numpy_cell is None or torch_cell is None:
        return "-", "not run at this scale or dtype"
    bad = [c for c in (numpy_cell, torch_cell) if not good(c)]
    if bad:
        c = bad[0]
        why = c.get("skip_reason") or (c.get("error") or {}).get("kind") or c.get("status")
        return "-", f"{c['backend']} {c.get('status')}: {why}"
    rr = ratio(numpy_cell, torch_cell)
    if rr is None:  # good cells, but their quotient leaves the floats (1e308 over 1e-308)
        return "-", (f"not comparable: {fmt_ms(median(numpy_cell))} over "
                     f"{fmt_ms(median(torch_cell))} is out of range")
    lo, x, hi = rr
    faster = (torch_cell if x > 1 else numpy_cell)["backend"]  # (the verdict's winner)
    # "a / b = q": q is the quotient of the two figures printed (the medians). A
    # side-by-side run's ratio is another statistic (paired rounds, over passes):
    # it is printed apart, with its interval, and the verdict is drawn from it
    q = median(numpy_cell) / median(torch_cell)  # type: ignore[operator]
    paired = paired_of(numpy_cell, torch_cell) is not None
    nums = (f"{fmt_ms(median(numpy_cell))} / {fmt_ms(median(torch_cell))} = {fmt_ratio(q)}"
            + (f"; paired rounds {fmt_ratio(x)} {fmt_interval(lo, hi)}" if paired
               else f" {fmt_interval(lo, hi)}"))
    noise = [c["backend"] for c in (numpy_cell, torch_cell) if shaky(c)]
    tail = f" ({', '.join(noise)} cell noisy)" if noise else ""
    claim = ("" if article is None else
             f" (article: {ARTICLE_SIDES[1 if article > 1 else 0].word} "
             f"{fmt_ratio(article if article > 1 else 1 / article)})")
    why = (no_verdict_reason(numpy_cell.get("verdict")) if paired_of(numpy_cell, torch_cell)
           else None)
    if why is not None:  # the runner concluded nothing from these rounds
        v = f"no verdict: {why}" + claim
    elif reading(lo, hi) == WITHIN_NOISE:
        v = f"tie {WITHIN_NOISE}" + claim
    elif reading(lo, hi) == BELOW_MARGIN:
        v = BELOW_MARGIN + claim
    elif article is None:
        v = (f"both ran (article: out of memory); {faster} "
             f"faster, {fmt_ratio(max(x, 1 / x))}")
    elif (x > 1) == (article > 1):
        v = f"agrees: {faster} faster, {fmt_ratio(max(x, 1 / x))}" + claim
    else:
        v = f"refuted: {faster} faster, {fmt_ratio(max(x, 1 / x))}" + claim
    return nums, v + tail


#: Cells that measure the machine's speed whatever the dtype, and how: a streaming
#: add by its time per byte (its time halves in float32, its GB/s does not). Their
#: float64/float32 ratio is a measure of how differently busy the machine was in the
#: two runs. (The Python loop of tiny solves is not one: NumPy's float32 solve costs
#: about 1.2x its float64 one per call, in every run of this machine.)
_DRIFT_CASES = {"calib_stream": "per byte"}


def _drift_measure(r: dict[str, Any], how: str) -> tuple[float, str] | None:
    """(a time-like value: larger is slower, its text) of a drift cell, or None."""
    if how == "per call":
        m = median(r)
        return (m, fmt_ms(m)) if m else None
    gbs = (r.get("throughput") or {}).get("gbs")
    return (1.0 / gbs, f"{gbs:.3g} GB/s") if positive(gbs) else None


def cross_dtype_drift(records: list[dict[str, Any]]) -> tuple[float, str] | None:
    """How far apart the machine's speed was when the float64 and float32 cells were
    measured (separate runs): the largest float64/float32 ratio (either way) of a
    dtype-neutral measure (:data:`_DRIFT_CASES`) on one backend, with a text; None
    when no such pair is in the file."""
    best: tuple[float, str] | None = None
    for r in records:
        how = _DRIFT_CASES.get(str(r.get("case")))
        if how is None or str(r.get("dtype")) != "float64":
            continue
        o = find_cell(records, r["case"], r["backend"], "float32", str(r["size_label"]))
        if o is None or not good(r) or not good(o):
            continue
        ma, mb = _drift_measure(r, how), _drift_measure(o, how)
        if ma is None or mb is None:
            continue
        x = max(ma[0], mb[0]) / min(ma[0], mb[0])
        if best is None or x > best[0]:
            best = (x, f"{r['case']} on {r['backend']}, {how}: {ma[1]} in the float64 run, "
                       f"{mb[1]} in the float32 run")
    return best


def article_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The article's tables side by side with this file: each row measured in the
    article's own setup (NumPy float64 vs torch-cpu float32) and in fair ones (the same
    dtype on both; threads are the run's, the same for every backend)."""
    out = []
    gpu_b = sorted({r["backend"] for r in records if is_gpu(str(r["backend"])) and good(r)})
    for sec, item, case, label, (a_np, a_tc, a_gpu) in ARTICLE_TABLES:
        art = (f"NumPy {a_np} / torch-cpu {a_tc} / GPU {a_gpu} ms" if a_np is not None
               else f"NumPy and torch-cpu 'out of memory' / GPU {a_gpu} ms")
        a_ratio = a_np / a_tc if a_np and a_tc else None
        row: dict[str, Any] = {"section": sec, "item": item, "article": art}
        np64 = find_cell(records, case, ARTICLE_NUMPY, "float64", label)
        t32 = find_cell(records, "a12_precision_float32", ARTICLE_TORCH_CPU, "float64", label)
        if sec == "A1" and np64 is not None and t32 is not None and good(t32):
            # within one run: the float64 run's A12 cell casts torch's operands to float32
            nums, v = compare_text(np64, t32, a_ratio)
            row["own"] = (nums + "\n(one run: torch from a12_precision_float32)", v)
        else:
            row["own"] = compare_text(np64, find_cell(records, case, ARTICLE_TORCH_CPU, "float32", label),
                                      a_ratio)
        for dt in ("float64", "float32"):
            row[dt] = compare_text(find_cell(records, case, ARTICLE_NUMPY, dt, label),
                                   find_cell(records, case, ARTICLE_TORCH_CPU, dt, label), a_ratio)
        if gpu_b:
            g = [find_cell(records, case, b, dt, label) for b in gpu_b for dt in ("float32",
                                                                                 "float64")]
            ran = [x for x in g if x is not None and good(x)]
            row["gpu"] = ("; ".join(f"{x['backend']} {x['dtype']} {fmt_ms(median(x))}" for x in ran)
                          or "not run")
        else:
            row["gpu"] = "no GPU here"
        out.append(row)
    return out
