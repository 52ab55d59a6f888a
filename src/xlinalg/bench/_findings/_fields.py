"""What a result record says about its cell: its case's declared fields, its numbers.

Every other findings module reads a record through these functions, never by
looking at the case's name. A record carries the fields its case declared
(:meth:`xlinalg.bench.Case.describe`): ``section``, ``tags``, ``units``,
``peak`` and ``compute_dtype``; :func:`fields` returns them, each checked (the
file is data from strangers): a field that is missing or not valid reads as a
case that declares nothing would (section "Other", no tags, GFLOP/s). Files
written before records carried them are migrated once by
``benchmarks/migrate_results.py``.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .._cases import (
    DTYPES,
    KNOWN_TAGS,
    PEAKS,
    UNITS,
    backend_object,
    get_case,
    section_order,
    valid_section,
)
from .._verdict import positive

__all__ = [
    "SECTION_TITLES",
    "CaseFields",
    "case_notes",
    "compute_dtype",
    "device_class",
    "dtype_text",
    "fields",
    "find_cell",
    "good",
    "has_tag",
    "is_calibration",
    "is_gpu",
    "median",
    "median_or_inf",
    "peak_of",
    "processor_class",
    "rates_at",
    "raw_times",
    "section_of",
    "section_order",
    "sections",
    "size_key",
    "units_of",
]

#: The titles of the harness's own sections (a study adds its sections' titles).
SECTION_TITLES: dict[str, str] = {
    "Calibration": "this machine's peaks: a square GEMM and a streaming add, run first on "
                   "each backend",
    "Extra": "cases beyond the study's (a case file's)",
    "Other": "cases without a document id",
}


class CaseFields(NamedTuple):
    """What a case declares, as its record says it."""

    section: str
    tags: tuple[str, ...]
    units: str
    peak: str
    compute_dtype: str  # empty: the run's dtype


#: The fields of a case that declares nothing: what a missing or invalid field reads as.
UNDECLARED = CaseFields("Other", (), "GFLOP/s", "arithmetic", "")


def fields(r: dict[str, Any]) -> CaseFields:
    """The case fields record `r` declares, each one checked (:data:`UNDECLARED`'s
    in place of a field that is missing or not valid)."""
    sec, tags, units = r.get("section"), r.get("tags"), r.get("units")
    peak, cdt = r.get("peak"), r.get("compute_dtype")
    return CaseFields(
        sec if isinstance(sec, str) and valid_section(sec) else UNDECLARED.section,
        tuple(t for t in tags if t in KNOWN_TAGS) if isinstance(tags, list) else (),
        units if units in UNITS else UNDECLARED.units,
        peak if peak in PEAKS else UNDECLARED.peak,
        cdt if cdt in DTYPES else UNDECLARED.compute_dtype)


def case_notes(case: str) -> dict[str, str]:
    """backend -> what a reader must know about its cells of `case` (declared by the
    registered case; none for a case not registered here)."""
    try:
        return dict(get_case(str(case)).notes)
    except ValueError:
        return {}


def has_tag(r: dict[str, Any], tag: str) -> bool:
    return tag in fields(r).tags


def is_calibration(r: dict[str, Any]) -> bool:
    return has_tag(r, "calibration")


def section_of(r: dict[str, Any]) -> str:
    """The cell's section: ``"Calibration"``, a study's (``"Q1"``, ``"A12"``...) or ``"Other"``."""
    return "Calibration" if is_calibration(r) else fields(r).section


def units_of(r: dict[str, Any]) -> str:
    """``"GFLOP/s"`` or ``"GB/s"``: the case's declared figure of merit."""
    return fields(r).units


def peak_of(r: dict[str, Any]) -> str:
    """``"arithmetic"``, ``"bandwidth"`` or ``"none"``: the peak the cell's rate is a
    fraction of, as its case declares."""
    return fields(r).peak


def compute_dtype(r: dict[str, Any]) -> str:
    """The dtype a cell computes in: the run's, except for cases that cast (a case
    declaring ``compute_dtype="bfloat16"`` computes in bfloat16 whatever the run's dtype)."""
    return fields(r).compute_dtype or str(r.get("dtype"))


def dtype_text(run_dtype: str, compute_dtypes: Iterable[str]) -> str:
    """How the report and the terminal name the dtype of cells of a `run_dtype` run:
    the run's dtype, or the dtypes they compute in with the run's beside it."""
    cdt = set(compute_dtypes)
    if cdt == {run_dtype}:
        return run_dtype
    return f"computes in {', '.join(sorted(cdt))} (run dtype {run_dtype})"


def sections(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records grouped by section, in report order (:func:`.._cases.section_order`)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        out[section_of(r)].append(r)
    return {k: out[k] for k in sorted(out, key=section_order)}


def size_key(r: dict[str, Any]) -> tuple[float, str]:
    """Sort key of a cell's size: product of its numbers, then the label."""
    s = r.get("size")
    nums = [float(v) for v in (s if isinstance(s, (list, tuple)) else [s])
            if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return (math.prod(nums) if nums else 0.0, str(r.get("size_label", "")))


def good(r: dict[str, Any]) -> bool:
    """A cell with a usable time (ran and was not wrong)."""
    return r.get("status") in ("ok", "unchecked") and median(r) is not None


def median(r: Mapping[str, Any] | None) -> float | None:
    """A record's median time per call, if a positive finite number (None: no record)."""
    v = ((r or {}).get("time") or {}).get("median_s")
    return float(v) if positive(v) else None


def raw_times(r: Mapping[str, Any]) -> list[float]:
    """A record's per-call times (``time.raw_s``), those that are positive finite numbers."""
    return [float(x) for x in (r.get("time") or {}).get("raw_s") or [] if positive(x)]


#: A throughput's amounts and the rate each gives (per second, in units of 1e9).
_RATES = {"flops": "gflops", "bytes": "gbs"}


def rates_at(thr: Mapping[str, Any], time: Mapping[str, Any]) -> dict[str, Any]:
    """A record's ``throughput`` `thr` (the ``flops`` and ``bytes`` one call does,
    and ``rate_of``) with its rates, ``gflops`` and ``gbs``, at the record's `time`:
    its median, or its best sample where ``rate_of`` says so (a calibration's peak).
    The one place a rate is made, for a pass's record and for the record merged from
    several passes (whose median is over every pass's rounds). Marks an older runner
    wrote against its own peak (``above_peak``, ``cache_resident``) judged an old rate
    and are left out (the report judges rates: ``rates_above_peak``)."""
    t = time.get("min_s" if thr.get("rate_of") == "best sample" else "median_s")
    out: dict[str, Any] = {}
    for k, v in thr.items():
        if k in ("above_peak", "cache_resident", "gflops", "gbs"):
            continue
        out[k] = v
        rate = _RATES.get(k)
        if rate is not None:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            out[rate] = float(v) / t / 1e9 if ok and positive(t) else None
    return out


def median_or_inf(r: dict[str, Any]) -> float:
    """The median, or inf for a cell without one: sorts cells with no time last."""
    m = median(r)
    return math.inf if m is None else m


@functools.lru_cache(maxsize=256)
def processor_class(backend: str) -> str:
    """``"gpu"`` or ``"cpu"``: the processor class the registered backend `backend`
    says it computes on (``Backend.bench.processor_class``); a name the
    registry does not know (a results file from elsewhere) counts as a CPU."""
    be = backend_object(backend)
    return str(be.bench.processor_class()) if be is not None else "cpu"


def is_gpu(backend: str) -> bool:
    return processor_class(str(backend)) == "gpu"


def device_class(r: dict[str, Any]) -> str:
    """``"gpu"`` or ``"cpu"``: the processor a cell's backend computes on."""
    return processor_class(str(r.get("backend", "")))


def find_cell(records: list[dict[str, Any]], case: str, backend: str, dtype: str,
              label: str) -> dict[str, Any] | None:
    """The record of one cell (case, backend, dtype, size label), or None."""
    return next((r for r in records if r.get("case") == case and r.get("backend") == backend
                 and str(r.get("dtype")) == dtype and str(r.get("size_label")) == label), None)
