"""The documents' study: the cases of the two source documents (the question's
Q1-Q4 and the article's A1-A15, docs/sources.md), their findings and the
article's parts of the report and plots.

It plugs into the harness (:mod:`xlinalg.bench`, which knows no case by name)
through :data:`STUDY`, a :class:`xlinalg.bench.Study`; importing this package
registers its cases. The ``xlinalg`` command composes the two.
"""

from __future__ import annotations

from ..bench import Study, load_study
from ._findings import SECTION_TITLES, summary
from ._plots import make_plots
from ._report import report_parts

__all__ = ["STUDY"]

#: The documents' study, loaded (its cases registered) when this package is imported.
STUDY = load_study(Study(
    name="the two source documents",
    case_modules=("xlinalg.study.cases",),
    section_titles=SECTION_TITLES,
    tags=("loop", "sweep"),  # a Python loop of solves (Q1-Q4's baseline); the solve sweep
    groups={"linalg": "linear algebra beyond the documents: inv, cholesky, eigh, lstsq and "
                      "det on a batch of small matrices and on one large matrix (xlinalg's "
                      "functions)"},
    report=report_parts,
    plots=make_plots,
    summary=summary,
))
