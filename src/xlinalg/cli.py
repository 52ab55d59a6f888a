"""The ``xlinalg`` command: ``info``, ``bench``, ``report``, ``compare``.

Exit status: 0 success; 1 the run finished but some cell failed or gave a
wrong result (all recorded); 2 usage or environment error (unknown backend, case
or option, an unavailable backend, an unreadable or invalid results file, a
results file another run is writing, a file that cannot be written: disk full,
read-only); 70 an internal error (a bug); 130 interrupted by Ctrl-C; 143 stopped
by SIGTERM. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import json
import math
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, cast

__all__ = ["main"]

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


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that list the valid options."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            opts = sorted({s for a in self._actions for s in a.option_strings if s.startswith("--")})
            message += f"; valid options: {', '.join(opts)}"
        raise _UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


# ---------------------------------------------------------------------- parser
_BENCH_EPILOG = """\
examples:
  xlinalg bench                                   every available backend, default scale
  xlinalg bench --quick --backends numpy,torch-cpu --cases solve,matmul
  xlinalg bench --cases matmul --sizes 256,1024 --dtype float32 --threads 1
  xlinalg bench --out run.jsonl --resume          finish an interrupted run

What is measured: each cell (case x backend x size) gets identical inputs made
outside the timed region, a first call timed apart (compilation), warm-up,
calibrated blocks closed by the backend's fence (JAX block_until_ready, CUDA
synchronize, Dask compute), the median/IQR of per-call times, a check against a
float64 NumPy reference, and the peak memory of one more call. Every finished
cell is appended to the results file at once (JSON Lines). A cell that fails,
runs out of memory or past --time-limit is recorded and the run goes on.

exit status: 0 all cells ok; 1 some cell failed or was wrong; 2 usage error;
130 interrupted (the file keeps every finished cell: --resume completes it).
"""


def _build_parser() -> _Parser:
    from . import __version__

    parser = _Parser(
        prog="xlinalg",
        description=(
            "xlinalg: linear algebra on any array library, and a benchmark that times it "
            "honestly across NumPy, PyTorch, CuPy, JAX and Dask."
        ),
        epilog="Run 'xlinalg COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"xlinalg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_info = sub.add_parser(
        "info", help="the backends (available or not, and why), devices, versions, BLAS, threads",
        description="Show which backends can run here (and why not), their versions and "
                    "devices, the BLAS library and thread counts.",
    )
    p_info.add_argument("--json", action="store_true", help="print the information as JSON")

    p = sub.add_parser(
        "bench", help="time the operations on the installed backends (the main job)",
        description="Time every case on every selected backend and write one JSON line per "
                    "finished cell.",
        epilog=_BENCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--backends", metavar="LIST",
                   help="comma-separated backend ids (default: every available backend); "
                        "see 'xlinalg info'")
    p.add_argument("--cases", metavar="LIST",
                   help="comma-separated case names (default: all); see --list-cases")
    p.add_argument("--sizes", metavar="LIST",
                   help="comma-separated sizes replacing the scale's, e.g. 64,256 or "
                        "128x256x512 (a case reads n as its square form)")
    p.add_argument("--dtype", default="float64",
                   choices=["float64", "float32", "float16", "bfloat16"],
                   help="dtype of every input, the same on all backends (default: float64)")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--quick", dest="scale", action="store_const", const="quick",
                       help="small sizes and short timing (CI)")
    scale.add_argument("--full", dest="scale", action="store_const", const="full",
                       help="the documents' full sizes and longer timing")
    p.set_defaults(scale="default")
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="set BLAS/OpenMP, torch and Dask threads to N (JAX: CPU affinity); "
                        "default: the libraries' own, recorded")
    p.add_argument("--tf32", action="store_true",
                   help="allow TF32/reduced-precision float32 matmul (off by default)")
    p.add_argument("--out", metavar="FILE",
                   help="results file, JSON Lines (default: xlinalg-bench-DATE-TIME.jsonl)")
    p.add_argument("--resume", action="store_true",
                   help="continue --out FILE: skip the cells already in it")
    p.add_argument("--retry-failed", action="store_true",
                   help="with --resume, run again the cells recorded as failed")
    p.add_argument("--retry-noisy", action="store_true",
                   help="with --resume, measure again the cells flagged noisy (IQR/median > 10%%)")
    p.add_argument("--overwrite", action="store_true", help="replace --out FILE if it exists")
    p.add_argument("--time-limit", type=_time_limit, default=300.0, metavar="S",
                   help="seconds one cell may take before its worker is killed (default: 300)")
    p.add_argument("--memory-limit", type=_memory_size, metavar="SIZE",
                   help="address-space limit of each worker process, e.g. 8G (host memory)")
    dask_where = p.add_mutually_exclusive_group()
    dask_where.add_argument("--scheduler", metavar="ADDRESS",
                            help="run the dask backend on this dask.distributed scheduler "
                                 "(tcp://HOST:PORT; default: $DASK_SCHEDULER_ADDRESS, an active "
                                 "Client, else Dask's threaded scheduler)")
    dask_where.add_argument("--dask-workers", type=_positive_int, metavar="N",
                            help="run the dask backend on a LocalCluster of N worker processes "
                                 "(--threads threads each, default 1), closed at the end")
    p.add_argument("--dask-memory-limit", type=_memory_size, metavar="SIZE",
                   help="memory limit of each --dask-workers worker (e.g. 1GiB; default: auto)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the inputs (default: 0)")
    p.add_argument("--case-file", action="append", default=[], metavar="FILE",
                   help="a Python file declaring extra cases (repeatable)")
    p.add_argument("--no-isolate", action="store_true",
                   help="run cells in this process instead of a worker per backend "
                        "(no hard time limit)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="skip the calibration cells (a square GEMM and a streaming add) that "
                        "start each backend and give the report its peak")
    p.add_argument("--margin", type=_positive_float, default=1.05, metavar="F",
                   help="name a backend fastest only when its ratio to every other backend "
                        "clears F over the whole interval (default: 1.05); else 'tie within "
                        "noise'")
    p.add_argument("--no-recheck", action="store_true",
                   help="skip the second pass at the end of the run (every cell again, in "
                        "fresh worker processes; its intervals and verdicts span both passes, "
                        "and cells whose passes disagree are measured again: stalls)")
    p.add_argument("--stall-factor", type=_positive_float, default=2.0, metavar="F",
                   help="a cell whose two passes are more than F times apart is measured "
                        "again (default: 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true",
                   help="do not write the report (report.md, report.html and plots in "
                        "<results name>-report beside the results file)")
    p.add_argument("--list-cases", action="store_true",
                   help="list the cases and their sizes, and exit")

    parser.subparsers = {"info": p_info, "bench": p}  # type: ignore[attr-defined]
    for name, helptext in (("report", "tables and plots from a results file"),
                           ("compare", "compare two results files")):
        sp = sub.add_parser(name, help=helptext, description=helptext)
        _subcommand(name).add_arguments(sp)
        parser.subparsers[name] = sp  # type: ignore[attr-defined]
    return parser


def _subcommand(name: str) -> Any:
    """``xlinalg.bench._<name>``: report and compare, each with ``add_arguments`` and ``run``."""
    return importlib.import_module(f"xlinalg.bench._{name}")


#: Most threads (--threads) or worker processes (--dask-workers): the libraries
#: take a C int, and thousands on a few cores measure the scheduler, not the library.
MAX_COUNT = 4096


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if not 1 <= v <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer up to {MAX_COUNT}, got {text[:40]!r}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 2**63
    if not -(2**63) <= v < 2**63:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from -2**63 to 2**63-1, got {text[:40]!r}")
    return v


#: Largest --time-limit (seconds): the OS timers overflow somewhere past it, and a
#: cell that may hang for ever would hang the run for ever.
MAX_TIME_LIMIT = 1e6


def _positive_float(text: str) -> float:
    """A finite number > 0 (``inf`` and ``nan`` are refused: they overflow timers
    and make every comparison false)."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 < v < math.inf:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    return v


def _time_limit(text: str) -> float:
    v = _positive_float(text)
    if v > MAX_TIME_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds, more than 0 and at most {MAX_TIME_LIMIT:g}, "
            f"got {text!r}")
    return v


#: Smallest --memory-limit: below it a worker cannot even import its library.
MIN_MEMORY_LIMIT = 256 * 2**20


def _memory_size(text: str) -> int:
    import resource

    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in units else ""
    try:
        v = float(t[: len(t) - len(unit)] if unit else t) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 512M or 8G, got {text!r}"
        ) from None
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    top = min(2**63 - 1, hard if hard != resource.RLIM_INFINITY else 2**63 - 1)
    if not MIN_MEMORY_LIMIT <= v <= top:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(
            f"expected a size from {_fmt_bytes(MIN_MEMORY_LIMIT)} to {_fmt_bytes(top)} (the "
            f"largest address-space limit this system takes), got {text!r}")
    return int(v)


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise _UsageError(f"xlinalg bench: error: empty list {text!r}")
    return items


# ---------------------------------------------------------------------- info
def _cmd_info(args: argparse.Namespace) -> int:
    from .backends import BACKEND_NAMES, get_backend
    from .bench._env import collect_env
    from .bench._escape import rich_text, terminal

    rows = []
    for name in BACKEND_NAMES:
        b = get_backend(name)
        reason = b.unavailable_reason()
        row: dict[str, Any] = {"backend": name, "available": reason is None}
        if reason is None:
            try:
                row["version"] = b.version()
                row["device"] = b.device_name()
            except Exception as exc:  # pragma: no cover - a broken install
                row["version"] = "?"
                row["device"] = f"error: {exc}"
        else:
            row["reason"] = reason
            row["install"] = b.install
        rows.append(row)
    env = collect_env()
    threads: dict[str, Any] = {}
    for r in rows:
        if r["available"]:  # each library's own settings (torch: threads, precision)
            threads.update(get_backend(r["backend"]).thread_info())
    env["blas"] = _blas_now()
    if args.json:
        print(json.dumps({"backends": rows, "env": env, "threads": threads}, indent=2))
        return EXIT_OK

    out = _console()
    if out is not None:
        from rich.table import Table

        t = Table(title="xlinalg backends", title_justify="left")
        for col in ("backend", "status", "version", "device / why not"):
            t.add_column(col)
        for r in rows:
            if r["available"]:
                t.add_row(rich_text(r["backend"]), "[green]available[/]",
                          rich_text(r["version"]), rich_text(r["device"]))
            else:
                t.add_row(rich_text(r["backend"]), "[red]unavailable[/]", "",
                          rich_text(f"{r['reason']}; install: {r['install']}"))
        out.print(t)
    else:
        for r in rows:
            if r["available"]:
                print(terminal(f"{r['backend']:18s} available    {r['version']:12s} "
                               f"{r['device']}"))
            else:
                print(terminal(f"{r['backend']:18s} unavailable  {r['reason']}; "
                               f"install: {r['install']}"))
    cpu = env["cpu"]
    print()
    print(terminal(f"Python {env['python']['version']} on {env['os']['platform']}"))
    print(terminal(f"CPU: {cpu['model']} ({cpu['logical_cores']} logical cores, "
                   f"{cpu['usable_cores']} usable); memory {_fmt_bytes(env['memory_bytes'])}"))
    gpus = env["gpus"]
    print(terminal("GPU: " + (", ".join(f"{g['name']} ({g['memory_mib']} MiB)" for g in gpus)
                              if gpus else "none found (no nvidia-smi or no device)")))
    for lib in env["blas"]:
        if "error" in lib:
            print(terminal(f"BLAS: {lib['error']}"))
            continue
        print(terminal(f"{str(lib.get('user_api', '?')).upper()}: {lib.get('internal_api')} "
                       f"{lib.get('version') or ''} "
                       f"({lib.get('architecture') or lib.get('prefix')}), "
                       f"{lib.get('num_threads')} threads"))
    for k, v in threads.items():
        print(f"{k}: {v}")
    if env["env_vars"]:  # values of the user's environment: shown, never interpreted
        print(terminal("environment: " + " ".join(f"{k}={v}"
                                                  for k, v in env["env_vars"].items())))
    return EXIT_OK


def _blas_now() -> list[dict[str, Any]]:
    import numpy as np  # noqa: F401 - load NumPy's BLAS so that threadpoolctl sees it

    from .bench._env import blas_info

    with contextlib.suppress(ImportError):  # SciPy may bring its own BLAS
        import scipy.linalg  # noqa: F401
    return blas_info()


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
    from .bench._units import format_bytes

    return format_bytes(n, missing="?")


def _fmt_time(s: float | None) -> str:
    from .bench._units import format_time

    return format_time(s, missing="?")


# ---------------------------------------------------------------------- bench
def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import (
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
    from .bench._escape import terminal

    if args.list_cases:
        try:
            load_case_files(args.case_file, time_limit=args.time_limit)
        except ValueError as exc:
            raise _UsageError(f"xlinalg bench: error: {exc}") from None
        for name in case_names():
            c = get_case(name)
            print(terminal(f"{name:12s} {c.doc}"))
            for sc in ("quick", "default", "full"):
                sizes = ", ".join(_size_str(s) for s in c.sizes_for(sc))
                print(terminal(f"{'':12s}   {sc:8s} {sizes}"))
        return EXIT_OK
    if args.resume and not args.out:
        raise _UsageError("xlinalg bench: error: --resume needs --out FILE (the file to continue)")
    if args.resume and args.overwrite:
        raise _UsageError("xlinalg bench: error: --resume and --overwrite exclude each other")
    out = args.out or f"xlinalg-bench-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    config = RunConfig(
        backends=_split(args.backends),
        cases=_split(args.cases),
        dtype=args.dtype,
        scale=args.scale,
        sizes=_split(args.sizes),
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
    progress = _Progress(enabled=not args.no_progress)
    try:
        with _dask_cluster(args):
            summary = run_benchmark(config, progress=progress)
    except (BenchUsageError, FileExistsError) as exc:
        raise _UsageError(f"xlinalg bench: error: {exc}") from None
    except ResultsWriteError as exc:  # disk full, read-only, not a file: an environment error
        kept = (f"; the {progress.finished} cell(s) finished before are in it"
                if progress.finished else "")
        raise _UsageError(f"xlinalg bench: error: {exc}{kept}") from None
    except ResultsFileError as exc:
        what = "" if isinstance(exc, ResultsFileBusyError) else "cannot resume: "
        raise _UsageError(f"xlinalg bench: error: {what}{exc}") from None
    except KeyboardInterrupt as exc:
        progress.stop()
        n = progress.finished
        how = "stopped by SIGTERM" if isinstance(exc, _Terminated) else "interrupted"
        print(terminal(f"xlinalg bench: {how}; {n} finished cell(s) of this run are in {out}; "
                       f"complete it with: xlinalg bench --resume --out {out} (and the same "
                       "options)"), file=sys.stderr)
        return EXIT_SIGTERM if isinstance(exc, _Terminated) else EXIT_SIGINT
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
    from .bench import plan_cells

    keys = [c["key"] for c in plan_cells(config)]
    records = [latest[k] for k in keys if k in latest]
    _print_table(records, config)
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
    if not args.no_report and records:
        _write_report(summary.path)
    return EXIT_FAILED if bad else EXIT_OK


@contextlib.contextmanager
def _dask_cluster(args: argparse.Namespace) -> Iterator[None]:
    """Where the dask backend runs (--scheduler, --dask-workers): bench/_dask.py."""
    if args.dask_memory_limit is not None and args.dask_workers is None:
        raise _UsageError("xlinalg bench: error: --dask-memory-limit needs --dask-workers N")
    from .bench import _dask

    if args.scheduler is not None:
        try:
            _dask.check_address(args.scheduler)
        except ValueError as exc:
            raise _UsageError(f"xlinalg bench: error: --scheduler: {exc}") from None
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
            raise _UsageError(f"xlinalg bench: error: --dask-workers: {exc}".splitlines()[0]) from None
        try:
            yield
        finally:
            cluster.__exit__(None, None, None)
    else:
        yield


def _write_report(path: Any) -> None:
    """The report beside the results file; a failure is one line, never the run's status."""
    from .bench import ResultsFileError
    from .bench._escape import terminal
    from .bench._report import write_report

    try:
        outdir, n = write_report([path])
    except (ResultsFileError, OSError, ImportError) as exc:
        print(terminal(f"xlinalg bench: warning: no report written ({exc}); "
                       f"'xlinalg report {path}' writes it"), file=sys.stderr)
        return
    print(terminal(f"Report: {outdir / 'report.html'} (and report.md, {n} plot(s)) in {outdir}"))


def _size_str(s: Any) -> str:
    from .bench import format_size

    return format_size(s)


class _Progress:
    """A rich progress bar on a terminal; one line per cell otherwise."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None
        self.finished = 0
        self.total = 0

    def __call__(self, event: str, payload: dict[str, Any], index: int, total: int) -> None:
        if event == "plan":
            self.total = total
            if payload.get("already_done"):
                print(f"resuming: {payload['already_done']} cell(s) already in the file, "
                      f"{payload.get('cells', total)} to run", file=sys.stderr)
            if self.enabled and sys.stderr.isatty():
                try:
                    from rich.progress import (
                        BarColumn,
                        MofNCompleteColumn,
                        Progress,
                        TextColumn,
                        TimeElapsedColumn,
                    )
                except ImportError:  # pragma: no cover
                    return
                self.bar = Progress(
                    TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=_console(stderr=True), transient=True,
                )
                self.bar.start()
                self.task = self.bar.add_task("benchmark", total=total)
        elif event == "start":
            if self.bar is not None:
                from .bench._escape import rich_markup

                desc = f"{payload['case']} {payload['backend']} {payload['size_label']}"
                self.bar.update(self.task, description=rich_markup(desc, max_len=120))
        elif event == "result":
            self.finished += 1
            if self.bar is not None:
                self.bar.advance(self.task)
            elif self.enabled:
                from .bench._escape import terminal

                print(terminal(f"[{index + 1}/{total}] {payload['case']} {payload['backend']} "
                               f"{payload['dtype']} {payload['size_label']}: "
                               f"{_cell_text(payload)}"), file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _cell_text(r: dict[str, Any], rich_markup: bool = False) -> str:
    st = r.get("status")
    if st == "skipped":
        return "skipped"
    if st == "failed":
        kind = r.get("error", {}).get("kind", "error")
        label = {"oom": "OOM", "timeout": "timeout", "crash": "crashed"}.get(kind, "error")
        return f"[red]{label}[/]" if rich_markup else label
    t = r.get("time", {})
    txt = _fmt_time(t.get("median_s"))
    rel = t.get("iqr_over_median")
    if rel is not None:
        txt += f" ±{rel * 50:.0f}%"  # half the IQR, relative to the median
    if t.get("noisy"):
        txt += " !"
    if st == "wrong":
        txt += " WRONG"
        if rich_markup:
            txt = f"[red]{txt}[/]"
    return txt


def _verdict_text(by: dict[str, dict[str, Any]]) -> str:
    """The short verdict of a (case, size) row: "numpy 1.4x [1.3, 1.5]", "tie" or ""."""
    v = next((r.get("verdict") for r in by.values() if isinstance(r.get("verdict"), dict)), None)
    if not v:
        return ""
    star = "*" if v.get("parallelism_note") else ""
    sp = v.get("speedup")
    if v.get("fastest") and isinstance(sp, dict):
        def num(k: str) -> str:  # null in a hostile or older file: shown as "?"
            x = sp.get(k)
            return f"{x:.2f}" if isinstance(x, (int, float)) else "?"

        return f"{v['fastest']} {num('ratio')}x [{num('lo')}, {num('hi')}]{star}"
    if v.get("tie"):
        return f"tie: {', '.join(map(str, v['tie']))}{star}"
    return ""


def _print_table(records: list[dict[str, Any]], config: Any) -> None:
    if not records:
        print("no cells ran")
        return
    backends = list(dict.fromkeys(r["backend"] for r in records))
    rows: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        rows.setdefault((r["case"], r["size_label"]), {})[r["backend"]] = r
    from .bench._escape import rich_text, terminal

    console = _console()
    from .bench._findings import verdict

    fastest = {}
    for key, by in rows.items():
        v = verdict(by)
        if v is not None and v["runner_up"] is not None and not v["tie"]:
            fastest[key] = v["winner"]
    title = (f"median time per call ({config.dtype}; ±: half the IQR; !: noisy; "
             "second line: GFLOP/s; bold *: fastest beyond the noise, unmarked: tie; "
             "verdict: the speed-up over the second with its interval; a * after it: the "
             "backends kept different numbers of cores busy)")
    if console is not None:
        from rich.table import Table

        t = Table(title=rich_text(title), title_justify="left")
        t.add_column("case")
        t.add_column("size")
        for b in backends:  # names are data (case files): rich Text, never markup
            t.add_column(rich_text(b), justify="right")
        t.add_column("verdict")
        for (case, size), by in rows.items():
            cells = []
            for b in backends:
                rb = by.get(b)
                if rb is None:
                    cells.append("")
                    continue
                txt = _cell_text(rb, rich_markup=True)
                if fastest.get((case, size)) == b:
                    txt = f"[bold green]*{txt}[/]"
                gf = (rb.get("throughput") or {}).get("gflops")
                if gf is not None and rb.get("status") in ("ok", "wrong", "unchecked"):
                    txt += f"\n[dim]{gf:.3g} GF/s[/]"
                cells.append(txt)
            t.add_row(rich_text(case), rich_text(size), *cells, rich_text(_verdict_text(by)))
        console.print(t)
    else:
        print(terminal(title))
        print(terminal("  ".join(["case".ljust(10), "size".ljust(14)]
                                 + [b.rjust(18) for b in backends] + ["verdict"])))
        for (case, size), by in rows.items():
            print(terminal("  ".join([case.ljust(10), size.ljust(14)]
                                     + [(("*" if fastest.get((case, size)) == b else "")
                                         + (_cell_text(by[b]) if b in by else "")).rjust(18)
                                        for b in backends]
                                     + [_verdict_text(by)])))
    for r in records:  # messages come from the libraries and from case files
        st = r.get("stall")
        if isinstance(st, dict) and st.get("stalled"):
            print(terminal(f"  {r['key']}: STALLED: median "
                           f"{_fmt_time(st.get('remeasured_median_s'))}, first "
                           f"{_fmt_time(st.get('first_median_s'))}, recheck "
                           f"{_fmt_time(st.get('recheck_median_s'))}"))
        if r.get("status") == "failed":
            e = r.get("error", {})
            print(terminal(f"  {r['key']}: {e.get('kind')}: {e.get('message')}"))
        elif r.get("status") == "wrong":
            print(terminal(f"  {r['key']}: WRONG: {r.get('check', {}).get('message')}"))
    skips: dict[str, int] = {}
    for r in records:
        if r.get("status") == "skipped":
            k = str(r.get("skip_reason") or "no reason recorded")
            skips[k] = skips.get(k, 0) + 1
    if skips:
        print(f"{sum(skips.values())} skipped cell(s), by reason:")
        for k, n in sorted(skips.items(), key=lambda kv: -kv[1]):
            print(terminal(f"  {n} x {k}"))


# ---------------------------------------------------------------------- report/compare
def _cmd_subcommand(name: str, args: argparse.Namespace) -> int:
    return int(_subcommand(name).run(args))


# ---------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xlinalg`` command. Returns the exit status."""
    old_term = None
    _tolerant_streams()
    command = "xlinalg"
    try:
        parser = _build_parser()
        args, extras = parser.parse_known_args(list(argv) if argv is not None else None)
        if extras:  # name the subcommand whose options were wrong, and list its options
            owner = parser.subparsers.get(args.command, parser)  # type: ignore[attr-defined]
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        command = f"xlinalg {args.command}"
        if args.command == "info":
            return _cmd_info(args)
        if args.command == "bench":
            def _on_term(signum: int, frame: Any) -> None:
                raise _Terminated()

            try:
                old_term = signal.signal(signal.SIGTERM, _on_term)
            except ValueError:  # not the main thread
                old_term = None
            return _cmd_bench(args)
        return _cmd_subcommand(args.command, args)
    except _UsageError as exc:
        from .bench._escape import terminal

        print(terminal(exc), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("xlinalg: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except BrokenPipeError:  # `xlinalg info | head`
        _silence_stdout()
        return EXIT_OK
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except OSError as exc:  # the environment: disk full, read-only, a closed or full stdout
        from .bench._escape import terminal

        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _silence_stdout()
        print(terminal(f"{command}: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, with where it happened
        from .bench._escape import terminal

        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        at = (f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
              if tb is not None else "")
        print(terminal(f"{command}: internal error: {type(exc).__name__}: {exc}{at} (a bug "
                       "in xlinalg: please report it with the command line)", max_len=2000),
              file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


if __name__ == "__main__":
    sys.exit(main())
