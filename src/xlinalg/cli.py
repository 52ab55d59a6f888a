"""The ``xlinalg`` command: ``info``, ``bench``, ``report``, ``compare``.

Exit status: :class:`ExitCode` (0 success; 1 the run finished but some cell
failed or gave a wrong result, all recorded; 2 usage or environment error; 70 an
internal error, a bug; 130 interrupted by Ctrl-C; 143 stopped by SIGTERM).
Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import Any

from ._cli import _compare, _report
from ._cli._bench import cmd_bench
from ._cli._common import (
    ExitCode,
    Terminated,
    UsageError,
    silence_stdout,
    tolerant_streams,
)
from ._cli._info import cmd_info
from ._cli._parser import build_parser
from ._cli._table import print_table as print_table  # re-exported: tests import it from here

__all__ = ["ExitCode", "main"]


# ---------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xlinalg`` command. Returns the exit status."""
    old_term = None
    tolerant_streams()
    command = "xlinalg"
    try:
        parser = build_parser()
        args, extras = parser.parse_known_args(list(argv) if argv is not None else None)
        if extras:  # name the subcommand whose options were wrong, and list its options
            owner = parser.subparsers.get(args.command, parser)  # type: ignore[attr-defined]
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        if args.command is None:
            parser.print_help()
            return ExitCode.USAGE
        command = f"xlinalg {args.command}"
        if args.command == "info":
            return cmd_info(args)
        if args.command == "bench":
            def _on_term(signum: int, frame: Any) -> None:
                raise Terminated()

            try:
                old_term = signal.signal(signal.SIGTERM, _on_term)
            except ValueError:  # not the main thread
                old_term = None
            return cmd_bench(args)
        if args.command == "report":
            return _report.run(args)
        return _compare.run(args)
    except UsageError as exc:
        from ._lib._escape import terminal

        print(terminal(exc), file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("xlinalg: interrupted", file=sys.stderr)
        return ExitCode.SIGINT
    except BrokenPipeError:  # `xlinalg info | head`
        silence_stdout()
        return ExitCode.OK
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else ExitCode.OK
    except OSError as exc:  # the environment: disk full, read-only, a closed or full stdout
        from ._lib._escape import terminal

        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        silence_stdout()
        print(terminal(f"{command}: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return ExitCode.USAGE
    except Exception as exc:  # a bug: still one line, with where it happened
        from ._lib._escape import terminal

        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        at = (f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
              if tb is not None else "")
        print(terminal(f"{command}: internal error: {type(exc).__name__}: {exc}{at} (a bug "
                       "in xlinalg: please report it with the command line)", max_len=2000),
              file=sys.stderr)
        return ExitCode.INTERNAL
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


if __name__ == "__main__":
    sys.exit(main())
