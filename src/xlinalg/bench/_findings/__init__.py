"""Analysis of a results file: sections, calibrated peaks, winners, claims.

Pure Python on the JSON records (no array library, no matplotlib), shared by
``xlinalg report`` (:mod:`.._report`) and the plots (:mod:`.._plots`).

A record is read through :mod:`._fields`: the section, tags, units, peak and
compute dtype its case declared (:class:`~xlinalg.bench.Case`), carried by the
record; old records without them go through the one legacy path there. Nothing
here decides anything from the spelling of a case's name.

Every comparison between backends goes through :func:`verdict` (the winner,
its margin over the runner-up with an interval, or a tie within noise).

Modules: :mod:`._fields` (what a record says), :mod:`._verdicts` (who is faster),
:mod:`._peaks` (this machine's peaks), :mod:`._solves` (loop vs batched,
crossovers), :mod:`._claims` (the article's claims), :mod:`._article` (its
tables), :mod:`._summary` (one line per workload).
"""

from __future__ import annotations

from ._article import ARTICLE_SETUP, ARTICLE_TABLES, article_rows, compare_text, cross_dtype_drift
from ._claims import claims
from ._fields import (
    SECTION_TITLES,
    CaseFields,
    case_notes,
    compute_dtype,
    device_class,
    dtype_text,
    fields,
    find_cell,
    good,
    has_tag,
    is_calibration,
    is_gpu,
    median,
    peak_of,
    section_of,
    sections,
    side,
    size_key,
    units_of,
)
from ._peaks import calibrate_peaks, fraction_of_peak
from ._solves import crossovers, loop_vs_batched, sweep_records
from ._summary import WORKLOADS, machine_line, summary
from ._verdicts import (
    MIN_MARGIN,
    case_winners,
    fmt_interval,
    fmt_ratio,
    quartiles,
    ratio,
    shaky,
    verdict,
    verdict_text,
    winners,
)

__all__ = [
    "ARTICLE_SETUP",
    "ARTICLE_TABLES",
    "MIN_MARGIN",
    "SECTION_TITLES",
    "WORKLOADS",
    "CaseFields",
    "article_rows",
    "calibrate_peaks",
    "case_notes",
    "case_winners",
    "claims",
    "compare_text",
    "compute_dtype",
    "cross_dtype_drift",
    "crossovers",
    "device_class",
    "dtype_text",
    "fields",
    "find_cell",
    "fmt_interval",
    "fmt_ratio",
    "fraction_of_peak",
    "good",
    "has_tag",
    "is_calibration",
    "is_gpu",
    "loop_vs_batched",
    "machine_line",
    "median",
    "peak_of",
    "quartiles",
    "ratio",
    "section_of",
    "sections",
    "shaky",
    "side",
    "size_key",
    "summary",
    "sweep_records",
    "units_of",
    "verdict",
    "verdict_text",
    "winners",
]
