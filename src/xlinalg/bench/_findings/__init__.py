"""Analysis of a results file: sections, calibrated peaks, verdicts.

Pure Python on the JSON records (no array library, no matplotlib), shared by
``xlinalg report`` (:mod:`.._report`), the plots (:mod:`.._plots`) and a study's
findings (:class:`xlinalg.bench.Study`).

A record is read through :mod:`._fields`: the section, tags, units, peak and
compute dtype its case declared (:class:`~xlinalg.bench.Case`), carried by the
record. Nothing here decides anything from the spelling of a case's name.

Every comparison between backends goes through :func:`verdict` (the runner's
recorded verdict, or the one rule of :mod:`.._verdict` over the cells).

Modules: :mod:`._fields` (what a record says), :mod:`._verdicts` (who is faster),
:mod:`._peaks` (this machine's peaks).
"""

from __future__ import annotations

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
    median_or_inf,
    peak_of,
    section_of,
    section_order,
    sections,
    size_key,
    units_of,
)
from ._peaks import calibrate_peaks, fraction_of_peak, rates_above_peak
from ._verdicts import (
    MARGIN,
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
    "MARGIN",
    "SECTION_TITLES",
    "CaseFields",
    "calibrate_peaks",
    "case_notes",
    "compute_dtype",
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
    "median",
    "median_or_inf",
    "peak_of",
    "quartiles",
    "ratio",
    "rates_above_peak",
    "section_of",
    "section_order",
    "sections",
    "shaky",
    "size_key",
    "units_of",
    "verdict",
    "verdict_text",
    "winners",
]
