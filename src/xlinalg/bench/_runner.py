"""Running a benchmark: plan the cells, time them in worker processes, store each result.

>>> from xlinalg.bench import RunConfig, run_benchmark
>>> summary = run_benchmark(RunConfig(backends=["numpy"], cases=["calib_gemm"], scale="quick",
...                                   out="results.jsonl"))            # doctest: +SKIP

Isolated runs go side by side (:mod:`._sidebyside`: one worker process per
backend, rotated rounds, later passes in fresh processes); ``isolate=False`` runs
the cells in this process one backend after the other, with a best-effort
``SIGALRM`` time limit and no verdicts. docs/benchmark.md, "Side by side" and
"Nothing lost", describes both.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._lib._env import env_flag
from .._lib._escape import terminal
from .._machine import collect_env, shareable, shareable_argv
from ..backends import BACKEND_NAMES, available_backends, get_backend
from ._calibration import CALIBRATION_CASES
from ._casefiles import load_case_files
from ._cases import (
    DTYPES,
    OPT_IN_GROUPS,
    SCALES,
    case_names,
    default_case_names,
    get_case,
    group_case_names,
)
from ._cell import execute_cell, make_cell
from ._fairness import backend_state, configure_backend
from ._passes import usable_first_pass
from ._selfcheck import checked_selfcheck
from ._sidebyside import _loadavg, first_pass_only, group_key, run_side_by_side
from ._store import ResultStore
from ._timer import TimerConfig

__all__ = [
    "BenchUsageError",
    "RunConfig",
    "RunSummary",
    "plan_cells",
    "run_benchmark",
    "validate_config",
]


class BenchUsageError(ValueError):
    """The options of a run are invalid (unknown backend, case, size, dtype ...).

    The message is one line and lists the valid choices (and how to install an
    unavailable backend).
    """


#: RunConfig fields a results file's header does not record.
_NOT_RECORDED = ("out", "resume", "overwrite", "retry_failed", "retry_noisy")


@dataclass
class RunConfig:
    """Options of a benchmark run (the ``xlinalg bench`` options).

    Attributes
    ----------
    backends : list of str, optional
        Backend ids; default: every available one but those a run takes only when
        named (:func:`opt_in_backends`: Dask, array-api-strict).
    cases : list of str, optional
        Case names; default: every registered case.
    dtype : str
        The dtype of every input (one dtype for all backends: fairness).
    scale : str
        "quick", "default" or "full": which sizes and how long to time.
    sizes : list of str, optional
        Sizes in command-line form ("64", "128x256x512"), replacing the scale's.
    threads : int, optional
        Give every library N threads: BLAS/OpenMP pools, torch and Dask threads,
        and, for every backend alike (JAX has no thread setting), a CPU affinity
        of N cores in the worker; JAX with N = 1 also gets XLA's single-threaded
        Eigen flag.
    allow_tf32 : bool
        Let float32 matmuls use TF32 / "high" precision (off: full float32).
    out : path
        The JSONL results file.
    resume : bool
        Continue `out`: skip cells already in it.
    overwrite : bool
        Replace `out` if it exists.
    retry_failed : bool
        With `resume`, run again the cells recorded as failed.
    retry_noisy : bool
        With `resume`, measure again the cells flagged noisy (IQR/median over
        the threshold); reports use the newest record of a cell.
    time_limit : float, optional
        Seconds a cell may take (setup, timing, check and memory together).
    isolate : bool
        Run each backend in a worker process (required for a hard time limit).
    seed : int
        Seed of the inputs.
    case_files : list of path
        Python files declaring extra cases.
    memory_limit : int, optional
        Address-space limit of each worker in bytes (RLIMIT_AS; host only).
    timer : TimerConfig, optional
        Default: ``TimerConfig.for_scale(scale)``.
    check, memory : bool
        Check results against the reference; measure peak memory.
    margin : float
        A backend is named fastest only when the interval of its ratio to every
        other backend clears this factor (1.05: 5 %); else "tie within noise".
    recheck : bool
        At the end of the run, measure every group again in later passes, each
        in fresh worker processes (``timer.min_passes`` passes in all, up to
        ``timer.max_passes`` for groups whose passes disagree); its ratios and
        verdict come from the spread between the passes
        (:func:`._stats.combine_passes`). A cell whose first two passes'
        medians are more than `stall_factor` apart has a ``stall`` record
        (what its third pass says of it).
    stall_factor : float
        How far apart (either way) a cell's passes may be before its group
        gets more passes.
    calibrate : bool
        Start each backend with the calibration cells (``calib_gemm``,
        ``calib_stream`` at the scale's sizes): the peak GFLOP/s and GB/s that
        the report's "% of peak" divides by. Added even when `cases` names
        others (not twice when it names them).
    """

    backends: Sequence[str] | None = None
    cases: Sequence[str] | None = None
    dtype: str = "float64"
    scale: str = "default"
    sizes: Sequence[str] | None = None
    threads: int | None = None
    allow_tf32: bool = False
    out: str | os.PathLike[str] = "xlinalg-results.jsonl"
    resume: bool = False
    overwrite: bool = False
    retry_failed: bool = False
    retry_noisy: bool = False
    time_limit: float | None = 300.0
    isolate: bool = True
    seed: int = 0
    case_files: Sequence[str | os.PathLike[str]] = ()
    memory_limit: int | None = None
    timer: TimerConfig | None = None
    check: bool = True
    memory: bool = True
    calibrate: bool = True
    margin: float = 1.05
    recheck: bool = True
    stall_factor: float = 2.0

    def timer_config(self) -> TimerConfig:
        return self.timer or TimerConfig.for_scale(self.scale)

    def to_dict(self) -> dict[str, Any]:
        """The run settings a header records (``out`` and the resume flags are not)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_RECORDED}
        return {**d, "backends": list(self.backends or []), "cases": list(self.cases or []),
                "sizes": list(self.sizes) if self.sizes else None,
                "case_files": [str(p) for p in self.case_files],
                "timer": self.timer_config().to_dict()}


@dataclass
class RunSummary:
    """What a run did."""

    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    already_done: int = 0

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.get("status", "?") for r in self.records)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") in ("failed", "wrong")]


def validate_config(config: RunConfig) -> RunConfig:
    """Check names and values; fill defaults (backends, cases). Raises BenchUsageError."""
    validate_options(config)
    try:
        load_case_files(config.case_files, time_limit=config.time_limit)
    except ValueError as exc:
        raise BenchUsageError(str(exc)) from None
    if not config.cases:
        # Every case but the opt-in groups'; the calibration ones come from
        # `calibrate` (plan_cells).
        config.cases = [c for c in default_case_names() if c not in CALIBRATION_CASES]
    else:
        named: list[str] = []
        for c in config.cases:
            if c in OPT_IN_GROUPS and c not in case_names():  # --cases linalg: the group's cases
                named.extend(group_case_names(c))
                continue
            try:
                get_case(c)  # its message names the valid cases
            except ValueError as exc:
                raise BenchUsageError(str(exc)) from None
            named.append(c)
        config.cases = list(dict.fromkeys(named))
    if config.sizes:
        for c in config.cases:
            for s in config.sizes:
                try:
                    get_case(c).parse(str(s))
                except ValueError as exc:
                    raise BenchUsageError(f"invalid --sizes item {s!r}: {exc}") from None
    return config


def validate_options(config: RunConfig, *, environment: bool = True) -> RunConfig:
    """The checks that need no case file: values, option pairs, the backends' names
    (all available ones when none is given) and, with `environment`, the environment
    variables their processes read (:func:`check_environment`). Idempotent; the command
    line runs it before it starts anything (a Dask cluster; without `environment` when
    ``--scheduler``/``--dask-workers`` replace the variable). Raises BenchUsageError."""
    if config.scale not in SCALES:
        raise BenchUsageError(f"unknown scale {config.scale!r}; valid scales: {', '.join(SCALES)}")
    if config.dtype not in DTYPES:
        raise BenchUsageError(f"unknown dtype {config.dtype!r}; valid dtypes: {', '.join(DTYPES)}")
    if config.threads is not None and config.threads < 1:
        raise BenchUsageError(f"--threads must be a positive integer, got {config.threads}")
    if not (config.margin >= 1.0):
        raise BenchUsageError(f"--margin must be at least 1 (a factor), got {config.margin:g}")
    if not (config.stall_factor > 1.0):
        raise BenchUsageError(f"--stall-factor must be above 1 (a factor), got {config.stall_factor:g}")
    if config.time_limit is not None and config.time_limit <= 0:
        raise BenchUsageError(f"--time-limit must be positive, got {config.time_limit:g}")
    if isinstance(config.seed, bool) or not isinstance(config.seed, int) or not 0 <= config.seed < 2**63:
        raise BenchUsageError(f"--seed must be a whole number from 0 to 2**63-1, got {config.seed!r}"[:200])
    if config.memory_limit is not None and not config.isolate:
        raise BenchUsageError("--memory-limit limits each worker process; with --no-isolate there is "
                              "none (the cells run in this process): drop one of the two")
    out = os.path.realpath(os.fspath(config.out))
    for f in config.case_files:
        if os.path.realpath(os.fspath(f)) == out:
            raise BenchUsageError(f"--out {os.fspath(config.out)!r} is the --case-file itself: the results "
                                  "would overwrite the cases; name another results file")
    for flag in ("retry_failed", "retry_noisy"):
        if getattr(config, flag) and not config.resume:
            raise BenchUsageError(f"--{flag.replace('_', '-')} needs --resume")

    if not config.backends:
        config.backends = [b for b in available_backends() if not get_backend(b).bench.opt_in]
    else:
        for name in config.backends:
            if name not in BACKEND_NAMES:
                raise BenchUsageError(
                    f"unknown backend {name!r}; valid backends: {', '.join(BACKEND_NAMES)}"
                )
            b = get_backend(name)
            reason = b.unavailable_reason()
            if reason is not None:
                avail = ", ".join(available_backends()) or "none"
                raise BenchUsageError(
                    f"backend {name!r} is not available: {reason}; install: {b.install}; "
                    f"available here: {avail}"
                )
        config.backends = list(dict.fromkeys(config.backends))
    if environment:
        check_environment(config.backends)
    return config


def opt_in_backends() -> dict[str, str]:
    """The available backends a run leaves out unless ``--backends`` names them, each
    with the reason (``Backend.bench.opt_in``)."""
    return {b: get_backend(b).bench.opt_in for b in available_backends()
            if get_backend(b).bench.opt_in}


def check_environment(backends: Sequence[str]) -> None:
    """Each environment variable the processes of `backends` read (docs/environment.md)
    parses, else BenchUsageError naming it: found before any cell runs, not as a cell
    of every backend that crashed on it."""
    try:
        if any(get_backend(b).bench.uses_dask_scheduler for b in backends):
            from ..backends import _dask_cluster as _dask

            try:
                _dask.scheduler_address()
            except ValueError as exc:
                raise ValueError(f"{exc}; set it to the address of a running scheduler, or "
                                 "unset it") from None
        for name in sorted({v for b in backends for v in get_backend(b).bench.env_flags}):
            env_flag(name, True)
    except ValueError as exc:
        raise BenchUsageError(terminal(str(exc), 400)) from None


def plan_cells(config: RunConfig) -> list[dict[str, Any]]:
    """Every cell of the run, in execution order: case, size, then backend (the
    backends of one (case, size) are measured side by side)."""
    validate_config(config)
    timer = config.timer_config()
    cases = list(config.cases or ())
    added = [c for c in CALIBRATION_CASES if config.calibrate and c not in cases]
    # Calibration first (whether added here or named in `cases`).
    names = [c for c in CALIBRATION_CASES if c in cases or c in added]
    names += [c for c in cases if c not in CALIBRATION_CASES]
    cells: list[dict[str, Any]] = []
    for name in names:
        case = get_case(name)
        sizes = (
            [case.parse(str(s)) for s in config.sizes]
            if config.sizes and name not in added
            else case.sizes_for(config.scale)
        )
        # the case's own timer at this scale (Case.timing), unless the run was given one
        case_timer = timer if config.timer is not None else case.timer_at(config.scale, timer)
        for size in dict.fromkeys(sizes):
            for backend in config.backends or ():
                cell = make_cell(
                    case, backend, size, dtype=config.dtype, seed=config.seed, timer=case_timer,
                    check=config.check, memory=config.memory, threads=config.threads,
                    allow_tf32=config.allow_tf32,
                )
                why = case.skip_reason_at(config.scale, backend, config.dtype, size)
                if why:  # a rule of this scale only (Case.skip_at): the worker records it
                    cell["skip_reason"] = why
                cells.append(cell)
    return cells


Progress = Callable[[str, dict[str, Any], int, int], None]


def run_benchmark(config: RunConfig, *, progress: Progress | None = None) -> RunSummary:
    """Run every cell of `config`, appending each result to ``config.out``.

    Parameters
    ----------
    config : RunConfig
    progress : callable, optional
        ``progress(event, payload, index, total)`` with event "plan" (payload
        ``{"cells": n, "already_done": k}``), "start" (the cell) and "result"
        (the record).

    Returns
    -------
    RunSummary

    Raises
    ------
    BenchUsageError
        Invalid options.
    FileExistsError
        ``out`` exists and neither resume nor overwrite was asked.
    ResultsFileError
        Resuming a file that cannot be read, or (:class:`ResumeMismatchError`)
        whose cells were measured under other settings; another run holds the
        file (:class:`ResultsFileBusyError`); it cannot be written
        (:class:`ResultsWriteError`).
    KeyboardInterrupt
        Propagated after the workers are stopped and the file is closed; every
        finished cell is already in the file.
    """
    cells = plan_cells(config)
    store = ResultStore(config.out, resume=config.resume, overwrite=config.overwrite)
    summary = RunSummary(path=store.path)
    for w in store.previous.warnings if store.previous else ():  # what resuming tolerated
        print(terminal(f"xlinalg bench: warning: {w}"), file=sys.stderr)
    try:
        done = (
            store.previous.finished_keys(include_failed=not config.retry_failed,
                                         include_noisy=not config.retry_noisy)
            if store.previous else set()
        )
        todo = [c for c in cells if c["key"] not in done]
        second: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if config.isolate and store.previous:
            todo, second = _side_by_side_resume(cells, todo, store.previous.latest(),
                                                recheck=config.recheck)
        summary.already_done = len(cells) - len(todo)
        run_info = shareable(config.to_dict())  # case files' paths: no user, no layout
        run_info["argv"] = shareable_argv(sys.argv)
        run_info["isolation"] = "a worker process per backend" if config.isolate else "in-process"
        run_info["execution"] = (
            "side by side: each (case, size, dtype) on every backend in rotated rounds"
            if config.isolate else "sequential: one backend after the other (no verdicts)"
        )
        env = collect_env()
        store.check_settings(env, run_info)  # a --resume under other settings: before any work
        # side by side, every cell is recorded twice: after its first pass, and over
        # every pass (the later ones with the recheck)
        total = len(todo) * (2 if config.isolate and config.recheck else 1) + len(second)
        run_info["load_at_start"] = _load_at_start(env)
        report: Progress = progress or (lambda *_: None)

        def write_header(selfcheck: dict[str, Any]) -> None:
            store.write_header(env, {**run_info, "fence_selfcheck": selfcheck})
            report("plan", {"cells": len(todo), "already_done": summary.already_done,
                            "second_pass": len(second)}, 0, total)

        # the index of a progress event: how many records are in the file so far
        def start(cell: dict[str, Any]) -> None:
            report("start", cell, len(summary.records), total)

        def emit(rec: dict[str, Any]) -> None:
            full = store.append(shareable(rec))  # error messages carry paths: the file is shared
            report("result", full, len(summary.records), total)
            summary.records.append(full)

        if config.isolate:
            run_side_by_side(config, todo, write_header, start=start, emit=emit,
                             second_pass=second)
        else:
            # the fence self-check of every backend, in this process
            write_header({b: checked_selfcheck(b) for b in config.backends or ()} if todo else {})
            _run_inprocess(config, todo, start, emit)
    finally:
        store.close()
    return summary


def _side_by_side_resume(
    cells: list[dict[str, Any]], todo: list[dict[str, Any]], latest: Mapping[str, Any], *,
    recheck: bool,
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    """What a resumed side-by-side run still owes: (cells to measure, second passes).

    A group (one case, size and dtype on every backend) is measured as a whole, so
    a group that the interruption left with some of its cells never recorded is
    measured again whole: its ratios must come from the same rounds. (A cell
    left out by ``--retry-failed`` or ``--retry-noisy`` runs with the group's
    other left-out cells only, as asked.) With the recheck, a run stopped
    between its two passes left records of the first pass only; each such
    (cell, record) is returned so that the second pass runs for it as it would
    have in one uninterrupted run.
    """
    broken = {group_key(c) for c in todo if c["key"] not in latest}
    if recheck:  # a first pass the second cannot be merged with: the group again, whole
        broken |= {group_key(c) for c in cells
                   if c["key"] in latest and first_pass_only(latest[c["key"]])
                   and not usable_first_pass(latest[c["key"]])}
    left = {c["key"] for c in todo}
    todo = [c for c in cells if c["key"] in left or group_key(c) in broken]
    if not recheck:
        return todo, []
    left = {c["key"] for c in todo}
    owing = {group_key(c) for c in cells
             if c["key"] not in left and first_pass_only(latest[c["key"]])}
    # with them, the group's other first-pass records (a skipped or failed backend):
    # they get the verdict drawn from every pass too, not keep the first pass's
    second = [(c, dict(latest[c["key"]])) for c in cells
              if c["key"] not in left and group_key(c) in owing
              and not _over_passes(latest[c["key"]])]
    return todo, second


def _over_passes(rec: Mapping[str, Any]) -> bool:
    """A record written after its group's last pass (its verdict counts them)."""
    v = rec.get("verdict")
    return isinstance(v, Mapping) and isinstance(v.get("passes"), int)


def _load_at_start(env: dict[str, Any]) -> dict[str, Any] | None:
    """The 1-minute load average at the start, and whether it exceeds the usable cores
    (then multi-threaded libraries wait for the scheduler: a warning on stderr)."""
    load = _loadavg()
    if load is None:  # pragma: no cover - not POSIX
        return None
    cores = (env.get("cpu") or {}).get("usable_cores") or os.cpu_count() or 1
    over = load > cores
    if over:
        print(f"xlinalg bench: warning: load average {load:.1f} on {cores} usable core(s): "
              "the machine is oversubscribed; timings of libraries using several threads "
              "depend on the scheduler (see effective_cores in the records); --threads 1 "
              "puts every library on one core", file=sys.stderr)
    return {"load_avg_1min": load, "usable_cores": cores, "oversubscribed": over}


def _run_inprocess(config: RunConfig, todo: list[dict[str, Any]],
                   start: Callable[[dict[str, Any]], None],
                   emit: Callable[[dict[str, Any]], None]) -> None:
    current: str | None = None
    restore: Callable[[], None] | None = None
    state: dict[str, Any] = {}
    order = list(config.backends or ())
    # one backend after the other: each is configured once
    todo = sorted(todo, key=lambda c: order.index(c["backend"]) if c["backend"] in order else 0)
    try:
        for cell in todo:
            start(cell)
            if cell["backend"] != current:
                if restore is not None:
                    restore()
                current = cell["backend"]
                restore = configure_backend(current, threads=config.threads,
                                            allow_tf32=config.allow_tf32)
                state = backend_state(current, threads_requested=config.threads)
            emit(execute_cell(cell, backend_state=state, time_limit=config.time_limit))
    finally:
        if restore is not None:
            restore()

