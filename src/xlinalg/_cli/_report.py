"""``xlinalg report RESULTS [MORE ...]``: the command; the report is the harness's
(:func:`xlinalg.bench._report.write_report`) with the documents' study composed in, imported when the command runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import ExitCode, _study

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a results file (JSON Lines)")
    parser.add_argument("more", metavar="MORE", nargs="*",
                        help="more results files of the same machine (e.g. the float32 run "
                             "beside a float64 one): one report over all of them")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="output directory (default: <results name>-report beside it)")
    parser.add_argument("--no-plots", action="store_true", help="tables and findings only")


def run(args: argparse.Namespace) -> ExitCode:
    from .._lib._escape import terminal
    from ..bench import ResultsFileError, read_results
    from ..bench._report import merge_files, superseded_warnings, write_report

    paths = [args.results, *(getattr(args, "more", None) or [])]
    try:
        files = [read_results(p, warn=False) for p in paths]
    except ResultsFileError as exc:
        print(terminal(f"xlinalg report: error: {exc}"), file=sys.stderr)
        return ExitCode.USAGE
    for w in [w for f in files for w in f.warnings] + superseded_warnings(
            files, merge_files(files)[2]):
        print(terminal(f"xlinalg report: warning: {w}"), file=sys.stderr)
    try:
        outdir, n = write_report(paths, Path(args.out) if args.out else None,
                                 plots=not getattr(args, "no_plots", False), study=_study())
    except ResultsFileError as exc:
        print(terminal(f"xlinalg report: error: {exc}"), file=sys.stderr)
        return ExitCode.USAGE
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(terminal(f"xlinalg report: error: cannot write the report{where}: "
                       f"{exc.strerror or exc}"), file=sys.stderr)
        return ExitCode.USAGE
    print(terminal(f"wrote {outdir / 'report.md'}, {outdir / 'report.html'} and {n} plot(s) "
                   f"(PNG) in {outdir}"))
    return ExitCode.OK
