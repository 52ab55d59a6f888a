"""The ``xlinalg`` argument parser and the types of its options."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from . import _compare, _report
from ._common import UsageError, _fmt_bytes


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that list the valid options."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            opts = sorted({s for a in self._actions for s in a.option_strings if s.startswith("--")})
            message += f"; valid options: {', '.join(opts)}"
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


# ---------------------------------------------------------------------- parser
_BENCH_EPILOG = """\
examples:
  xlinalg bench                                   the documents' cases, default scale
  xlinalg bench --dry-run                         what that would run, without timing
  xlinalg bench --quick --backends numpy,torch-cpu --cases q4_batched,a1_gemm
  xlinalg bench --cases a1_gemm --sizes 256,1024 --dtype float32 --threads 1
  xlinalg bench --full --backends numpy,torch-cpu,jax-cpu,dask,array-api-strict
  xlinalg bench --cases linalg                    beyond the documents (opt-in): inv ... det
  xlinalg bench --out run.jsonl --resume          finish an interrupted run
  xlinalg bench --tune --out sel.json             this machine's method='auto' table
                                                  (then XLINALG_UNROLLED_SELECTION=sel.json)

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


def build_parser() -> _Parser:
    from .. import __version__

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
                   help="comma-separated backend ids (default: every available backend "
                        "but dask and array-api-strict, which run when named); see "
                        "'xlinalg info'")
    p.add_argument("--cases", metavar="LIST",
                   help="comma-separated case names or groups (default: every case but the "
                        "opt-in group 'linalg': inv, cholesky, eigh, lstsq, det beyond the "
                        "documents, which --cases linalg runs); see --list-cases")
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
                   help="allow TF32/reduced-precision float32 matmul and cuDNN convolutions "
                        "(off by default)")
    p.add_argument("--out", metavar="FILE",
                   help="results file, JSON Lines (default: "
                        "xlinalg-results/xlinalg-bench-DATE-TIME.jsonl)")
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
                   help="skip the later passes at the end of the run (every cell again, "
                        "twice or more, each time in fresh worker processes; intervals and "
                        "verdicts come from the spread between the passes, and cells whose "
                        "passes disagree get more passes); without them the intervals "
                        "come from one process's rounds")
    p.add_argument("--stall-factor", type=_positive_float, default=2.0, metavar="F",
                   help="a cell whose passes are more than F times apart gets more passes "
                        "and a stall record (default: 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true",
                   help="do not write the report (report.md, report.html and plots in "
                        "<results name>-report beside the results file)")
    tune = p.add_argument_group(
        "tuning method='auto' (--tune)",
        "measure where the numba kernel beats xl.solve(method='native') on this machine and "
        "write a selection table to --out (default: "
        "xlinalg-results/xlinalg-unrolled-selection.json); "
        "XLINALG_UNROLLED_SELECTION=FILE makes xlinalg use it (docs/unrolled.md)")
    tune.add_argument("--tune", action="store_true",
                      help="tune instead of benchmarking (--backends: some of numpy, torch-cpu, "
                           "jax-cpu; --quick: fewer batch sizes)")
    tune.add_argument("--tune-n", metavar="LIST", help="--tune: the matrix sizes n (default: 1 to 8)")
    tune.add_argument("--tune-batches", metavar="LIST",
                      help="--tune: the numbers of systems (default: 1,10,...,1000000)")
    tune.add_argument("--tune-dtypes", metavar="LIST", help="--tune: float64,float32 (default: both)")
    p.add_argument("--list-cases", action="store_true",
                   help="list the cases and their sizes, and exit")
    p.add_argument("--dry-run", action="store_true",
                   help="check the options and list the cells they select (case, sizes, "
                        "backends), and exit without timing anything")

    parser.subparsers = {"info": p_info, "bench": p}  # type: ignore[attr-defined]
    for name, helptext, command in (
            ("report", "tables and plots from a results file", _report),
            ("compare", "compare two results files", _compare)):
        sp = sub.add_parser(name, help=helptext, description=helptext)
        command.add_arguments(sp)
        parser.subparsers[name] = sp  # type: ignore[attr-defined]
    return parser


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
    if not 0 <= v < 2**63:  # NumPy's generators take no negative seed
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to 2**63-1, got {text[:40]!r}")
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
