"""What every ``xlinalg`` command shares: exit statuses, one-line errors, streams,
the console, and how times and sizes are written."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_SIGINT, EXIT_SIGTERM = 130, 143
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in xlinalg (reported in one line, never a traceback)


def _tolerant_streams() -> None:
    """Output that the terminal's encoding cannot show (an ASCII-only locale:
    LANG=C, PYTHONIOENCODING=ascii) is written as escapes, never an error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def _silence_stdout() -> None:
    """After stdout failed (a closed pipe, a full disk), send the rest to /dev/null,
    so that the interpreter's final flush does not print a second error."""
    import os

    with contextlib.suppress(Exception):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _UsageError(Exception):
    """A one-line usage error (exit status 2)."""


class _Terminated(KeyboardInterrupt):
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


def _fmt_bytes(n: float | None) -> str:
    from ..bench._units import format_bytes

    return format_bytes(n, missing="?")


def _fmt_time(s: float | None) -> str:
    from ..bench._units import format_time

    return format_time(s, missing="?")
