"""Loading ``--case-file`` files: user code, bounded and with one-line errors.

Apart from :mod:`._cases` (the registry) because the bound uses the cell's
alarm (:mod:`._cell`), which imports the registry.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._cases import case_names
from ._cell import CellTimeout, ExitCalled, alarm, exit_guard

__all__ = ["load_case_files"]

_LOADED: dict[str, list[str]] = {}  # a file imported in this process -> the cases it added


def load_case_files(paths: Sequence[str | os.PathLike[str]],
                    time_limit: float | None = None) -> list[str]:
    """Import each Python file that registers cases (once per process: code the user
    chose to run, like a ``conftest.py``; nothing is ever loaded from a results file);
    return the names they added. Every failure is a one-line ``ValueError``: a file
    that is missing, raises, calls ``sys.exit`` or ``os._exit``, or (with
    `time_limit` seconds) does not finish importing in time. Ctrl-C still stops."""
    added: list[str] = []
    for f in paths:
        name, before = repr(str(f)), set(case_names())
        try:
            p = Path(f).resolve()
            if not p.is_file():
                raise ValueError(f"case file {name} does not exist")
            if str(p) not in _LOADED:
                mod_name = f"_xlinalg_case_file_{len(_LOADED)}_{p.stem}"
                spec = importlib.util.spec_from_file_location(mod_name, p)
                if spec is None or spec.loader is None:
                    raise ValueError(f"cannot import case file {name}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                with alarm(time_limit), exit_guard():
                    spec.loader.exec_module(module)
                _LOADED[str(p)] = [n for n in case_names() if n not in before]
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
        added += _LOADED[str(p)]
    return added
