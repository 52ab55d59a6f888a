"""Loading ``--case-file`` files: user code, bounded and with one-line errors.

Apart from :mod:`._cases` (the registry) because the bound uses the cell's
alarm (:mod:`._cell`), which imports the registry.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._cases import load_case_file
from ._cell import CellTimeout, ExitCalled, alarm, exit_guard

__all__ = ["load_case_files"]


def load_case_files(paths: Sequence[str | os.PathLike[str]],
                    time_limit: float | None = None) -> list[str]:
    """:func:`load_case_file` for each path, with every failure as a one-line
    ``ValueError``: a file that raises, calls ``sys.exit`` or ``os._exit``, or (with
    `time_limit` seconds) does not finish importing in time. Ctrl-C still stops."""
    added: list[str] = []
    for f in paths:
        name = repr(str(f))
        try:
            with alarm(time_limit), exit_guard():
                added += load_case_file(f)
        except KeyboardInterrupt:
            raise
        except ValueError as exc:
            raise ValueError(str(exc).splitlines()[0] if str(exc) else name) from None
        except CellTimeout:
            raise ValueError(f"case file {name} did not finish importing within "
                             f"{time_limit:g} s (the --time-limit)") from None
        except SystemExit as exc:
            how = "os._exit" if isinstance(exc, ExitCalled) else "sys.exit"
            raise ValueError(f"case file {name} called {how}({exc.code!r}) while being "
                             "imported") from None
        except BaseException as exc:
            first = (str(exc).splitlines() or [""])[0]
            raise ValueError(f"case file {name} failed to import: {type(exc).__name__}: "
                             f"{first}") from None
    return added
