"""This machine's peaks (per processor class and dtype) and each cell's fraction of them.

Which cells set a peak, and which peak a cell is measured against, is what the
cases declare (:mod:`._fields`): a calibration case sets the peak named by its
``peak`` field; without calibration cells the best ``gemm``-tagged cell sets the
arithmetic peak and the best ``stream``-tagged cell the bandwidth peak.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._fields import (
    compute_dtype,
    device_class,
    good,
    has_tag,
    is_calibration,
    peak_of,
    units_of,
)

__all__ = ["calibrate_peaks", "fraction_of_peak", "rates_above_peak"]


def _best(records: list[dict[str, Any]], rate: str, keep: Callable[[dict[str, Any]], bool],
          ) -> dict[str, tuple[float, str]]:
    """The best `rate` (``"gflops"``: per compute dtype, ``"gbs"``: ``"any"``) of the
    good cells that `keep` takes, with the key of the cell that set it."""
    out: dict[str, tuple[float, str]] = {}
    for r in records:
        v = (r.get("throughput") or {}).get(rate)
        dt = compute_dtype(r) if rate == "gflops" else "any"
        if good(r) and isinstance(v, (int, float)) and keep(r) and v > out.get(dt, (0.0, ""))[0]:
            out[dt] = (float(v), r["key"])
    return out


def _peaks_of(records: list[dict[str, Any]], calibrated: bool) -> tuple[dict, dict]:
    if calibrated:
        return (_best(records, "gflops", lambda r: peak_of(r) == "arithmetic"),
                _best(records, "gbs", lambda r: peak_of(r) == "bandwidth"))
    has_stream = any(good(r) and has_tag(r, "stream") for r in records)
    # no GEMM: the best arithmetic rate of any cell
    return (_best(records, "gflops", lambda r: has_tag(r, "gemm"))
            or _best(records, "gflops", lambda r: True),
            _best(records, "gbs", lambda r: has_tag(r, "stream")
                  or (not has_stream and not has_tag(r, "gemm"))))


def calibrate_peaks(records: list[dict[str, Any]]) -> dict[str, Any]:
    """This machine's peaks, per device class (cpu, gpu) and dtype.

    From the calibration records (cases tagged ``calibration``, run at the start of
    each backend; each sets the peak its case names) where the file has them for that device class, else from the
    best measured GEMM GFLOP/s and the best streaming GB/s of any cell of that
    class. Returns ``{"gflops": {dtype: (value, cell)}, "gbs": {"any": (value,
    cell)}, "source": text, "by_class": {cls: {"gflops", "gbs", "source"}}}``;
    the top-level entries are the CPU's (or the only class present).
    """
    by_class: dict[str, dict[str, Any]] = {}
    for cls in ("cpu", "gpu"):
        rs = [r for r in records if device_class(r) == cls]
        if not rs:
            continue
        calib = [r for r in rs if is_calibration(r) and good(r)]
        gflops, gbs = _peaks_of(calib, True) if calib else ({}, {})
        fg, fb = _peaks_of([r for r in rs if not is_calibration(r)], False)
        source = "the calibration cells of this run"
        if (not gflops or not gbs) and (fg or fb):
            gflops, gbs = gflops or fg, gbs or fb
            source = ("the calibration cells, completed by the best cells of this file"
                      if calib else "the best cells of this file (no calibration cells)")
        if calib:
            # a report over several runs: calibration from a busier run than the cells
            # of the same dtype (a GEMM cannot beat the GEMM peak) is not their peak
            raised = [dt for dt, (v, _k) in fg.items() if dt in gflops and v > gflops[dt][0]]
            for dt in raised:
                gflops[dt] = fg[dt]
            if raised:
                source += (f" (for {', '.join(sorted(raised))}: the best GEMM cell, faster "
                           "than the calibration of a busier run)")
        by_class[cls] = {"gflops": gflops, "gbs": gbs, "source": source}
    top = by_class.get("cpu") or by_class.get("gpu") or {
        "gflops": {}, "gbs": {}, "source": "no cells"}
    return {**top, "by_class": by_class}


def fraction_of_peak(r: dict[str, Any], peaks: dict[str, Any]) -> tuple[str, float | None,
                                                                          float | None]:
    """(unit, achieved rate, fraction of the calibrated peak of the cell's device class)."""
    pc = (peaks.get("by_class") or {}).get(device_class(r), peaks)
    tp = r.get("throughput") or {}
    if peak_of(r) == "none":  # a rate, of no peak
        unit, pk = units_of(r), None
        v = tp.get("gbs" if unit == "GB/s" else "gflops")
    elif peak_of(r) == "bandwidth" or tp.get("gflops") is None:
        v = tp.get("gbs")
        pk = pc["gbs"].get("any")
        unit = "GB/s"
    else:
        v = tp.get("gflops")
        # the peak of the dtype the cell computes in; none measured: no fraction
        # (a bfloat16 GEMM against a float64 peak would read 400%)
        pk = pc["gflops"].get(compute_dtype(r))
        unit = "GFLOP/s"
    if not isinstance(v, (int, float)) or not good(r):
        return unit, None, None
    frac = v / pk[0] if pk and pk[0] > 0 else None
    return unit, float(v), frac


def rates_above_peak(r: dict[str, Any], peaks: dict[str, Any]) -> list[str]:
    """The rates of cell `r` (``"gflops"``, ``"gbs"``) above the peak of its device
    class (:func:`calibrate_peaks`): never the machine's rate (cache-resident data,
    or a dtype lower than the one it computes in); a calibration cell sets the peak."""
    pc = (peaks.get("by_class") or {}).get(device_class(r), peaks)
    tp = r.get("throughput") or {}
    pk: dict[str, Any] = {"gflops": (pc.get("gflops") or {}).get(compute_dtype(r)),
                          "gbs": (pc.get("gbs") or {}).get("any")}
    return [] if is_calibration(r) else [
        u for u in pk if isinstance(tp.get(u), (int, float)) and pk[u] and tp[u] > pk[u][0]]
