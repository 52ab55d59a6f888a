"""What every ``xlinalg`` command shares: the exit statuses (:class:`ExitCode`),
one-line errors, streams, the console, and how times and sizes are written."""

from __future__ import annotations

import contextlib
import enum
import sys
from typing import Any


class ExitCode(enum.IntEnum):
    """The exit status of every ``xlinalg`` command (``info``, ``bench``, ``report``,
    ``compare``): the one definition, documented in docs/benchmark.md."""

    #: success
    OK = 0
    #: the run finished but some cell failed or gave a wrong result (all recorded);
    #: ``compare --fail-on``: a cell flagged (or a machine shift)
    FAILED = 1
    #: usage or environment error: unknown backend, case or option, an unavailable
    #: backend, an unreadable or invalid results file, one another run is writing,
    #: a file that cannot be written (disk full, read-only)
    USAGE = 2
    #: EX_SOFTWARE: an internal error, a bug in xlinalg (one line, never a traceback)
    INTERNAL = 70
    #: interrupted by Ctrl-C (128 + SIGINT)
    SIGINT = 130
    #: stopped by SIGTERM (128 + SIGTERM)
    SIGTERM = 143


#: Where ``xlinalg bench`` without --out writes (its results file and the report
#: beside it, or the --tune table): a folder of the current directory, covered by
#: the project's .gitignore.
RESULTS_DIR = "xlinalg-results"


def _results_dir() -> None:
    """Make :data:`RESULTS_DIR` (a usage error, one line, if it cannot be made)."""
    import os

    try:
        os.makedirs(RESULTS_DIR, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"xlinalg bench: error: cannot create the results folder "
                          f"{RESULTS_DIR}/ ({exc.strerror or exc}); name the output file "
                          "with --out FILE") from None


def tolerant_streams() -> None:
    """Output that the terminal's encoding cannot show (an ASCII-only locale:
    LANG=C, PYTHONIOENCODING=ascii) is written as escapes, never an error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def silence_stdout() -> None:
    """After stdout failed (a closed pipe, a full disk), send the rest to /dev/null,
    so that the interpreter's final flush does not print a second error."""
    import os

    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class UsageError(Exception):
    """A one-line usage error (exit status 2)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that the run stops cleanly."""


def _console(stderr: bool = False) -> Any:
    try:
        from rich.console import Console
    except ImportError:
        return None
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:  # a file or a pipe: do not squeeze tables into 80 columns
        console = Console(stderr=stderr, highlight=False, width=200)
    return console


def _study() -> Any:
    """The documents' study (:data:`xlinalg.study.STUDY`), loaded: its cases registered
    beside the harness's. Every command that runs or reads cases composes it."""
    from ..study import STUDY

    return STUDY


def _fmt_bytes(n: float | None) -> str:
    from .._lib._units import format_bytes

    return format_bytes(n, missing="?")


def _fmt_time(s: float | None) -> str:
    from .._lib._units import format_time

    return format_time(s, missing="?")
