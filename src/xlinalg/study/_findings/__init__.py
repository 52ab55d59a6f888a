"""The documents' findings: the article's tables and claims, the question's loop
against batched solves and the solve sweep's crossovers, and one summary line per
workload. They read records through the harness's analysis
(:mod:`xlinalg.bench._findings`), never by the spelling of a case's name except
where a document names its own case.

Modules: :mod:`._setup` (the documents' sections and libraries), :mod:`._solves`
(loop vs batched, crossovers), :mod:`._claims` (the article's claims),
:mod:`._article` (its tables), :mod:`._summary` (one line per workload).
"""

from __future__ import annotations

from ...bench._findings import (
    MARGIN,
    fmt_ratio,
    good,
    is_gpu,
    median,
    section_of,
)
from ._article import ARTICLE_SETUP, ARTICLE_TABLES, article_rows, compare_text, cross_dtype_drift
from ._claims import claims
from ._setup import ARTICLE_NUMPY, ARTICLE_TORCH_CPU, SECTION_TITLES
from ._solves import bandwidth_shares, crossovers, loop_vs_batched, side, sweep_records
from ._summary import WORKLOADS, machine_line, summary

__all__ = [
    "ARTICLE_NUMPY",
    "ARTICLE_SETUP",
    "ARTICLE_TABLES",
    "ARTICLE_TORCH_CPU",
    "MARGIN",
    "SECTION_TITLES",
    "WORKLOADS",
    "article_rows",
    "bandwidth_shares",
    "claims",
    "compare_text",
    "cross_dtype_drift",
    "crossovers",
    "fmt_ratio",
    "good",
    "is_gpu",
    "loop_vs_batched",
    "machine_line",
    "median",
    "section_of",
    "side",
    "summary",
    "sweep_records",
]
