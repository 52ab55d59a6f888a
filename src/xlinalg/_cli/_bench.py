"""``xlinalg bench``: run the benchmark from the command line's options."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import sys
from collections.abc import Iterator
from typing import Any, cast

from ._common import (
    RESULTS_DIR,
    ExitCode,
    Terminated,
    UsageError,
    _results_dir,
    _study,
)
from ._table import _Progress, print_table


def default_out(now: dt.datetime | None = None) -> str:
    """The results file of a run without --out: ``xlinalg-results/xlinalg-bench-DATE-TIME.jsonl``."""
    return os.path.join(RESULTS_DIR, f"xlinalg-bench-{now or dt.datetime.now():%Y%m%d-%H%M%S}.jsonl")


def _split(text: str | None, option: str) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"xlinalg bench: error: {option}: an empty list ({text!r}); name at least one, "
                          "or leave the option out for all")
    return items


def cmd_bench(args: argparse.Namespace) -> int:
    _study()
    from .._lib._escape import terminal
    from ..backends import get_backend
    from ..bench import (
        BenchUsageError,
        ResultsFileBusyError,
        ResultsFileError,
        ResultsWriteError,
        RunConfig,
        case_names,
        get_case,
        load_case_files,
        read_results,
        run_benchmark,
    )
    from ..bench._runner import opt_in_backends, validate_config, validate_options

    if args.tune:
        from ._tune import cli_tune

        return cli_tune(args)
    if args.list_cases:
        try:
            load_case_files(args.case_file, time_limit=args.time_limit)
        except ValueError as exc:
            raise UsageError(f"xlinalg bench: error: {exc}") from None
        for name in case_names():
            c = get_case(name)
            opt_in = f" [opt-in: --cases {c.group}; not in the default run]" if c.group else ""
            print(terminal(f"{name:12s} {c.doc}{opt_in}"))
            for sc in ("quick", "default", "full"):
                sizes = ", ".join(_size_str(s) for s in c.sizes_for(sc))
                print(terminal(f"{'':12s}   {sc:8s} {sizes}"))
        return ExitCode.OK
    if args.resume and not args.out:
        raise UsageError("xlinalg bench: error: --resume needs --out FILE (the file to continue)")
    if args.resume and args.overwrite:
        raise UsageError("xlinalg bench: error: --resume and --overwrite exclude each other")
    if args.out is not None and not args.out.strip():
        raise UsageError("xlinalg bench: error: --out: an empty file name; name the results file, "
                          f"or leave --out out for {RESULTS_DIR}/xlinalg-bench-DATE-TIME.jsonl")
    out = args.out or default_out()
    config = RunConfig(
        backends=_split(args.backends, "--backends"),
        cases=_split(args.cases, "--cases"),
        dtype=args.dtype,
        scale=args.scale,
        sizes=_split(args.sizes, "--sizes"),
        threads=args.threads,
        allow_tf32=args.tf32,
        out=out,
        resume=args.resume,
        overwrite=args.overwrite,
        retry_failed=args.retry_failed,
        retry_noisy=args.retry_noisy,
        time_limit=args.time_limit,
        isolate=not args.no_isolate,
        calibrate=not args.no_calibrate,
        margin=args.margin,
        recheck=not args.no_recheck,
        stall_factor=args.stall_factor,
        seed=args.seed,
        case_files=args.case_file,
        memory_limit=args.memory_limit,
    )
    if args.dry_run:
        return _dry_run(config)
    if not args.out:
        _results_dir()
    progress = _Progress(enabled=not args.no_progress)
    try:
        # before anything starts (a Dask cluster's processes); --scheduler and
        # --dask-workers set DASK_SCHEDULER_ADDRESS: run_benchmark checks it then
        validate_options(config, environment=args.scheduler is None and args.dask_workers is None)
        if (args.dask_workers is not None or args.scheduler is not None) and not any(
            get_backend(b).bench.uses_dask_scheduler for b in config.backends or ()
        ):
            opt = "--dask-workers" if args.dask_workers is not None else "--scheduler"
            raise BenchUsageError(f"{opt} runs the dask backend, which this run leaves out (backends: "
                                  f"{', '.join(config.backends or ())}): add dask to --backends, or drop {opt}")
        if args.backends is None:
            validate_config(config)  # a usage error first, alone
            left = opt_in_backends()
            if left:
                print(terminal(f"xlinalg bench: not in the default run: {', '.join(left)} (not "
                               "libraries the documents choose between; --backends names them)"),
                      file=sys.stderr)
        with _dask_cluster(args):
            summary = run_benchmark(config, progress=progress)
    except (BenchUsageError, FileExistsError) as exc:
        raise UsageError(f"xlinalg bench: error: {exc}") from None
    except ResultsWriteError as exc:  # disk full, read-only, not a file: an environment error
        kept = (f"; the {progress.finished} cell(s) finished before are in it"
                if progress.finished else "")
        raise UsageError(f"xlinalg bench: error: {exc}{kept}") from None
    except ResultsFileError as exc:
        what = "" if isinstance(exc, ResultsFileBusyError) else "cannot resume: "
        raise UsageError(f"xlinalg bench: error: {what}{exc}") from None
    except KeyboardInterrupt as exc:
        progress.stop()
        n = progress.finished
        how = "stopped by SIGTERM" if isinstance(exc, Terminated) else "interrupted"
        print(terminal(f"xlinalg bench: {how}; {n} finished cell(s) of this run are in {out}; "
                       f"complete it with: xlinalg bench --resume --out {out} (and the same "
                       "options)"), file=sys.stderr)
        return ExitCode.SIGTERM if isinstance(exc, Terminated) else ExitCode.SIGINT
    finally:
        progress.stop()

    # the table shows every planned cell, including those done before a resume
    try:
        written = read_results(summary.path, warn=False)
        # the table's helpers take plain dicts (typed records are a subtype in practice)
        latest = cast("dict[str, dict[str, Any]]", written.latest())
        fence = (written.headers[-1].get("run") or {}).get("fence_selfcheck") or {}
    except ResultsFileError:  # pragma: no cover - we just wrote it
        latest = {r["key"]: r for r in summary.records}
        fence = {}
    from ..bench import plan_cells

    keys = [c["key"] for c in plan_cells(config)]
    records = [latest[k] for k in keys if k in latest]
    print_table(records, config)
    _print_summary(records)
    bad = [r for r in records if r.get("status") in ("failed", "wrong")]
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    line = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    extra = f" ({summary.already_done} from before)" if summary.already_done else ""
    print(terminal(f"{len(records)} cells{extra}: {line}. Results: {summary.path}"))
    if isinstance(fence, dict) and fence:
        bad_fence = [b for b, v in fence.items() if not (isinstance(v, dict) and v.get("ok"))]
        print(terminal("fence self-check: " + (
            "passed on " + ", ".join(fence) if not bad_fence else
            "FAILED on " + ", ".join(bad_fence) + " (their times may not wait for the work; "
            "see the header's run.fence_selfcheck)")))
    from ._table import conclusion_line

    if (last := conclusion_line(records)) is not None:
        print(terminal(last))
    if not args.no_report and records:
        _write_report(summary.path)
    return ExitCode.FAILED if bad else ExitCode.OK


@contextlib.contextmanager
def _dask_cluster(args: argparse.Namespace) -> Iterator[None]:
    """Where the dask backend runs (--scheduler, --dask-workers): backends/_dask_cluster.py."""
    if args.dask_memory_limit is not None and args.dask_workers is None:
        raise UsageError("xlinalg bench: error: --dask-memory-limit needs --dask-workers N")
    from ..backends import _dask_cluster as _dask

    if args.scheduler is not None:
        try:
            _dask.check_address(args.scheduler)
            _dask.probe(args.scheduler)
        except ValueError as exc:
            raise UsageError(f"xlinalg bench: error: --scheduler: {exc}") from None
        old = os.environ.get(_dask.ENV)
        os.environ[_dask.ENV] = args.scheduler
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(_dask.ENV, None)
            else:
                os.environ[_dask.ENV] = old
    elif args.dask_workers is not None:
        try:
            cluster = _dask.local_cluster(args.dask_workers, args.dask_memory_limit, args.threads)
            cluster.__enter__()
        except Exception as exc:
            raise UsageError(f"xlinalg bench: error: --dask-workers: {exc}".splitlines()[0]) from None
        try:
            yield
        finally:
            cluster.__exit__(None, None, None)
    else:
        yield


def _write_report(path: Any) -> None:
    """The report beside the results file; a failure is one line, never the run's status."""
    from .._lib._escape import terminal
    from ..bench import ResultsFileError
    from ..bench._report import write_report

    try:
        outdir, n = write_report([path], study=_study())
    except (ResultsFileError, OSError, ImportError) as exc:
        print(terminal(f"xlinalg bench: warning: no report written ({exc}); "
                       f"'xlinalg report {path}' writes it"), file=sys.stderr)
        return
    except Exception as exc:  # a bug in the report: the measurements are safe in the file
        print(terminal(f"xlinalg bench: warning: no report written (internal error, a bug in xlinalg: "
                       f"{type(exc).__name__}: {exc}); the results are complete in {path}"), file=sys.stderr)
        return
    print(terminal(f"Report: {outdir / 'report.html'} (and report.md, {n} plot(s)) in {outdir}"))


def _print_summary(records: list[dict[str, Any]]) -> None:
    """The report's summary in the terminal: which library for which workload, one line
    each (workloads this run did not measure are left out)."""
    from .._lib._escape import terminal

    summary = _study().summary
    rows = [w for w in summary(records) if w["line"] != "not in this file"] if summary else []
    if not rows:
        return
    print("Which library for which workload, on this machine (the report's summary):")
    for w in rows:
        print(terminal(f"  {w['title']} ({', '.join(w['sections'])}): {w['line']}"))


def _dry_run(config: Any) -> int:
    """``--dry-run``: the cells the options select (every name and size checked), then exit."""
    from .._lib._escape import terminal
    from ..bench import BenchUsageError, get_case, plan_cells

    try:
        cells = plan_cells(config)
    except BenchUsageError as exc:
        raise UsageError(f"xlinalg bench: error: {exc}") from None
    sizes: dict[str, list[str]] = {}
    for c in cells:
        label = _size_str(c["size"])
        if label not in sizes.setdefault(c["case"], []):
            sizes[c["case"]].append(label)
    print(terminal(f"dry run: {len(cells)} cells ({config.scale} scale, {config.dtype}) on "
                   f"{', '.join(config.backends or ())}; nothing is timed"))
    for name, labels in sizes.items():
        print(terminal(f"  {name:24s} {get_case(name).section:11s} {', '.join(labels)}"))
    return ExitCode.OK


def _size_str(s: Any) -> str:
    from ..bench import format_size

    return format_size(s)
