"""How a study plugs into the harness: its cases, and what its report adds.

The harness (:mod:`xlinalg.bench`) knows no case by name. A study is a package
that registers cases (:func:`~xlinalg.bench.register_case`, when its case
modules are imported) and describes itself with a :class:`Study`: the modules
to import (by the runner and by each worker process, which imports them by
module path), the titles of its sections, and optional hooks for the report,
the plots and the terminal summary after a run. The ``xlinalg`` command composes
the harness with the documents' study (:mod:`xlinalg.study`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["ReportPart", "Study", "load_study", "study_case_modules"]

Records = list[dict[str, Any]]
Plots = list[dict[str, Any]]


class ReportPart(NamedTuple):
    """One part a study adds to the report: its blocks (their heading included),
    its entry in the table of contents (text, anchor), and whether it comes before
    the table of contents (``lead``, e.g. a summary) or after it."""

    toc: tuple[str, str]
    blocks: list[tuple[Any, ...]]
    lead: bool = False


#: report(records, env, peaks, plots by section) -> the study's parts of the report
ReportHook = Callable[[Records, dict[str, Any], dict[str, Any], Mapping[str, Plots]],
                      Sequence[ReportPart]]
#: plots(records, outdir, generic) -> every plot; ``generic(records, outdir)`` makes
#: the harness's own (the study decides where they go among its own)
PlotHook = Callable[[Records, Path, Callable[[Records, Path], Plots]], Plots]
#: summary(records) -> [{"title", "sections", "line"}]: one line per workload
SummaryHook = Callable[[Records], list[dict[str, Any]]]


@dataclass(frozen=True)
class Study:
    """A study: cases the harness runs and what its report says about them.

    Parameters
    ----------
    name : str
        What the study is called.
    case_modules : tuple of str
        Modules whose import registers the study's cases, in run order; the runner
        and every worker process import them (:func:`load_study`).
    section_titles : mapping
        Section -> title, for the sections its cases declare, in report order.
    tags : tuple of str
        The tags its cases declare beyond the harness's (what its report reads).
    groups : mapping
        Its opt-in groups of cases: group -> what it is (:class:`~xlinalg.bench.Case`'s
        ``group``).
    report, plots, summary : callables, optional
        The study's own parts of the report (:data:`ReportHook`), its plots
        (:data:`PlotHook`) and the terminal summary after a run (:data:`SummaryHook`).
    """

    name: str
    case_modules: tuple[str, ...]
    section_titles: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    groups: Mapping[str, str] = field(default_factory=dict)
    report: ReportHook | None = None
    plots: PlotHook | None = None
    summary: SummaryHook | None = None


_LOADED: dict[str, None] = {}  # case modules imported so far, in order (a set that keeps order)


def load_study(study: Study) -> Study:
    """Declare the study's sections, tags and groups, import its case modules
    (registering its cases) and remember them, so that worker processes import them
    too. Loading a study twice does nothing more."""
    from ._cases import declare

    declare(list(study.section_titles), study.tags, study.groups)
    for mod in study.case_modules:
        importlib.import_module(mod)
        _LOADED.setdefault(mod)
    return study


def study_case_modules() -> tuple[str, ...]:
    """The case modules of every study loaded in this process, in load order (what a
    worker process imports before it runs a cell)."""
    return tuple(_LOADED)
