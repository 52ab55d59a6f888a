"""The documents' benchmark cases (docs/sources.md lists the documents' parts), one
module per part of the documents.

Importing this package registers every case, in document order (the order
``xlinalg bench`` runs them and ``--list-cases`` lists them), after the
harness's calibration cases (:mod:`xlinalg.bench._calibration`): the
question's Q1-Q4, then the article's A1-A15, then the opt-in section
beyond the documents (:mod:`.beyond_linalg`, ``--cases linalg``; not in the default
run). Each case is one :func:`~xlinalg.bench.register_case` call; the case
type and the registry are in :mod:`xlinalg.bench._cases`.

Sizes are the documents' own at the ``full`` scale; ``default`` finishes in a few
minutes on a 2-core machine with every CPU backend; ``quick`` is for CI.
"""

from __future__ import annotations

# Each module registers its cases when imported: this order is the run order.
# isort: off
from . import questions  # noqa: F401
from . import article_dense, article_elementwise, article_linalg  # noqa: F401
from . import article_memory, article_compiled  # noqa: F401
from . import beyond_linalg  # noqa: F401  (opt-in: --cases linalg)
# isort: on

__all__: list[str] = []
