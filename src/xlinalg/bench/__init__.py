"""The xlinalg benchmark harness: device-correct timing across array libraries.

Its public API is :data:`__all__` (cases, timer, runner, store, environment, the
:class:`Study` plug-in); the documents' cases are a study (:mod:`xlinalg.study`),
which the ``xlinalg`` command loads (docs/benchmark.md, "The harness and the
study"). Importing this package imports no array library but NumPy, and none of
rich, threadpoolctl or psutil (they are imported where used).
"""

from .._machine import collect_env
from . import _calibration  # noqa: F401  (registers the calibration cases, before any other)
from ._casefiles import load_case_files
from ._cases import (
    DTYPES,
    SCALES,
    Case,
    Ctx,
    case_names,
    format_size,
    get_case,
    register_case,
    unregister_case,
)
from ._cell import check_result, execute_cell, make_cell
from ._resultsfile import (
    SCHEMA_VERSION,
    ResultsFile,
    ResultsFileBusyError,
    ResultsFileError,
    ResultsFileWarning,
    ResultsWriteError,
    ResumeMismatchError,
    cell_key,
    read_results,
)
from ._runner import (
    BenchUsageError,
    RunConfig,
    RunSummary,
    plan_cells,
    run_benchmark,
    validate_config,
)
from ._selfcheck import fence_selfcheck
from ._store import ResultStore, settings_differences
from ._study import ReportPart, Study, load_study, study_case_modules
from ._timer import Measurement, Stats, Timer, TimerConfig, calibrate, time_block

__all__ = [
    "BenchUsageError",
    "Case",
    "Ctx",
    "DTYPES",
    "Measurement",
    "ReportPart",
    "ResultStore",
    "ResultsFile",
    "ResultsFileBusyError",
    "ResultsFileError",
    "ResultsFileWarning",
    "ResultsWriteError",
    "ResumeMismatchError",
    "RunConfig",
    "RunSummary",
    "SCALES",
    "SCHEMA_VERSION",
    "Stats",
    "Study",
    "Timer",
    "TimerConfig",
    "calibrate",
    "case_names",
    "cell_key",
    "check_result",
    "collect_env",
    "execute_cell",
    "fence_selfcheck",
    "format_size",
    "get_case",
    "load_case_files",
    "load_study",
    "make_cell",
    "plan_cells",
    "read_results",
    "register_case",
    "run_benchmark",
    "settings_differences",
    "study_case_modules",
    "time_block",
    "unregister_case",
    "validate_config",
]
