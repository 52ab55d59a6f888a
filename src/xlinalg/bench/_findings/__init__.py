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

from . import _fields, _peaks, _verdicts
from ._fields import *  # noqa: F403
from ._peaks import *  # noqa: F403
from ._verdicts import *  # noqa: F403

__all__ = _fields.__all__ + _peaks.__all__ + _verdicts.__all__
