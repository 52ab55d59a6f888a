"""Running a benchmark: plan the cells, time them in worker processes, store each result.

>>> from xlinalg.bench import RunConfig, run_benchmark
>>> summary = run_benchmark(RunConfig(backends=["numpy"], cases=["solve"], scale="quick",
...                                   out="results.jsonl"))            # doctest: +SKIP

Cells run backend by backend (one backend's worker alive at a time, so each
library has the machine, its memory and its GPU to itself), then case by case,
size by size. Each finished cell is appended to the results file at once.

Isolation (default): one worker process per backend
(:mod:`xlinalg.bench._worker`). A cell that passes ``time_limit`` has its
worker killed — the only way to stop a LAPACK call or a CUDA kernel — and is
recorded as ``timeout``; a worker that dies (the out-of-memory killer, a
segfault) is recorded as ``crash``; a new worker serves the next cell. The
cost is one interpreter start and the backend's import per backend (and per
killed worker): about a second for torch or JAX.

Without isolation (``isolate=False``) cells run in the calling process: the
fairness settings are applied and restored around each backend, and the time
limit is a best-effort ``SIGALRM`` that cannot interrupt a C call.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._cases import DTYPES, SCALES, case_names, format_size, get_case, load_case_file
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


@dataclass
class RunConfig:
    """Options of a benchmark run (the ``xlinalg bench`` options).

    Attributes
    ----------
    backends : list of str, optional
        Backend ids; default: every available one.
    cases : list of str, optional
        Case names; default: every registered case.
    dtype : str
        The dtype of every input (one dtype for all backends: fairness).
    scale : str
        "quick", "default" or "full": which sizes and how long to time.
    sizes : list of str, optional
        Sizes in command-line form ("64", "128x256x512"), replacing the scale's.
    threads : int, optional
        Set BLAS, OpenMP, torch and Dask threads (JAX: CPU affinity and XLA_FLAGS).
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

    def timer_config(self) -> TimerConfig:
        return self.timer or TimerConfig.for_scale(self.scale)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backends": list(self.backends or []),
            "cases": list(self.cases or []),
            "dtype": self.dtype,
            "scale": self.scale,
            "sizes": list(self.sizes) if self.sizes else None,
            "threads": self.threads,
            "allow_tf32": self.allow_tf32,
            "time_limit": self.time_limit,
            "isolate": self.isolate,
            "seed": self.seed,
            "case_files": [str(p) for p in self.case_files],
            "memory_limit": self.memory_limit,
            "timer": self.timer_config().to_dict(),
            "check": self.check,
            "memory": self.memory,
            "calibrate": self.calibrate,
        }


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


# ---------------------------------------------------------------------- validation
def validate_config(config: RunConfig) -> RunConfig:
    """Check names and values; fill defaults (backends, cases). Raises BenchUsageError."""
    from ..backends import BACKEND_NAMES, available_backends, get_backend

    for f in config.case_files:
        try:
            load_case_file(f)
        except ValueError as exc:
            raise BenchUsageError(str(exc)) from None
        except Exception as exc:
            raise BenchUsageError(
                f"case file {str(f)!r} failed to import: {type(exc).__name__}: {exc}".splitlines()[0]
            ) from None
    if config.scale not in SCALES:
        raise BenchUsageError(f"unknown scale {config.scale!r}; valid scales: {', '.join(SCALES)}")
    if config.dtype not in DTYPES:
        raise BenchUsageError(f"unknown dtype {config.dtype!r}; valid dtypes: {', '.join(DTYPES)}")
    if config.threads is not None and config.threads < 1:
        raise BenchUsageError(f"--threads must be a positive integer, got {config.threads}")
    if config.time_limit is not None and config.time_limit <= 0:
        raise BenchUsageError(f"--time-limit must be positive, got {config.time_limit:g}")

    if not config.backends:
        config.backends = available_backends()
    else:
        seen: list[str] = []
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
            if name not in seen:
                seen.append(name)
        config.backends = seen

    valid_cases = case_names()
    if not config.cases:
        from ._suite import CALIBRATION_CASES

        # Every case; the calibration ones come from `calibrate` (plan_cells).
        config.cases = [c for c in valid_cases if c not in CALIBRATION_CASES]
    else:
        for c in config.cases:
            if c not in valid_cases:
                raise BenchUsageError(f"unknown case {c!r}; valid cases: {', '.join(valid_cases)}")
        config.cases = list(dict.fromkeys(config.cases))
    if config.sizes:
        for c in config.cases:
            for s in config.sizes:
                try:
                    get_case(c).parse(str(s))
                except ValueError as exc:
                    raise BenchUsageError(f"invalid --sizes item {s!r}: {exc}") from None
    if config.retry_failed and not config.resume:
        raise BenchUsageError("--retry-failed needs --resume")
    if config.retry_noisy and not config.resume:
        raise BenchUsageError("--retry-noisy needs --resume")
    return config


def plan_cells(config: RunConfig) -> list[dict[str, Any]]:
    """Every cell of the run, in execution order (backend, case, size)."""
    from ._cell import make_cell

    validate_config(config)
    timer = config.timer_config()
    from ._suite import CALIBRATION_CASES

    cases = list(config.cases or ())
    added = [c for c in CALIBRATION_CASES if config.calibrate and c not in cases]
    # Calibration first (whether added here or named in `cases`).
    names = [c for c in CALIBRATION_CASES if c in cases or c in added]
    names += [c for c in cases if c not in CALIBRATION_CASES]
    cells = []
    for backend in config.backends or ():
        for name in names:
            case = get_case(name)
            sizes = (
                [case.parse(str(s)) for s in config.sizes]
                if config.sizes and name not in added
                else case.sizes_for(config.scale)
            )
            for size in dict.fromkeys(sizes):
                cells.append(
                    make_cell(
                        case, backend, size, dtype=config.dtype, seed=config.seed, timer=timer,
                        check=config.check, memory=config.memory, threads=config.threads,
                        allow_tf32=config.allow_tf32,
                    )
                )
    return cells


# ---------------------------------------------------------------------- workers
class WorkerError(RuntimeError):
    """A worker could not start, or died."""


class _CellTimeout(Exception):
    pass


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except (ValueError, AttributeError):
        return f"signal {-code}"


class Worker:
    """A worker process timing cells of one backend (see :mod:`._worker`)."""

    def __init__(self, backend: str, config: RunConfig, log_dir: Path) -> None:
        self.backend = backend
        self.config = config
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.rfd: int | None = None
        self.buf = b""
        self.state: dict[str, Any] = {}
        self.log_path = log_dir / f"worker-{backend}-{time.monotonic_ns()}.log"

    def _env(self) -> dict[str, str]:
        env = os.environ.copy()
        src = str(Path(__file__).resolve().parents[2])  # the directory holding `xlinalg`
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        n = self.config.threads
        if n is not None:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = str(n)
        if self.backend == "jax-cpu":
            env.setdefault("JAX_PLATFORMS", "cpu")
            if n is not None:
                flags = env.get("XLA_FLAGS", "")
                if n == 1:
                    flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
                env["XLA_FLAGS"] = flags.strip()
        if self.backend == "cupy":
            env["CUPY_TF32"] = "1" if self.config.allow_tf32 else "0"
        return env

    def start(self, timeout: float) -> None:
        r, w = os.pipe()
        cmd = [sys.executable, "-m", "xlinalg.bench._worker", "--backend", self.backend,
               "--fd", str(w), "--parent", str(os.getpid())]
        if self.config.threads is not None:
            cmd += ["--threads", str(self.config.threads)]
        if self.config.allow_tf32:
            cmd.append("--allow-tf32")
        for f in self.config.case_files:
            cmd += ["--case-file", str(Path(f).resolve())]
        if self.config.memory_limit:
            cmd += ["--memory-limit", str(int(self.config.memory_limit))]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in kill()/close()
        if self.backend.startswith("jax") and self.config.threads is not None:
            # JAX's thread pool follows the CPU affinity (set in the worker before import)
            cmd += ["--affinity", str(self.config.threads)]
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=self._log, stderr=self._log,
                pass_fds=(w,), env=self._env(),
            )
        finally:
            os.close(w)
        self.rfd = r
        msg = self._recv(timeout, starting=True)
        if msg.get("event") == "fatal":
            self.kill()
            raise WorkerError(f"the {self.backend} worker could not start: {msg.get('error')}")
        self.state = msg.get("state", {})

    def _death_message(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = ""
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
            if lines:
                tail = f"; last output: {lines[-1][:200]}"
        except OSError:
            pass
        if code is not None and code < 0:
            how = f"was killed by {_signal_name(code)}"
            if code == -signal.SIGKILL:
                how += " (the kernel's out-of-memory killer, if nothing else sent it)"
        else:
            how = f"exited with status {code}"
        return f"the {self.backend} worker process {how}{tail}"

    def _recv(self, timeout: float | None, *, starting: bool = False) -> dict[str, Any]:
        assert self.rfd is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                if starting:
                    self.kill()
                    raise WorkerError(
                        f"the {self.backend} worker did not start within {timeout:g} s"
                    )
                raise _CellTimeout
            ready, _, _ = select.select([self.rfd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                msg = self._death_message()
                self.kill()
                raise WorkerError(msg)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.kill()
            raise WorkerError(f"the {self.backend} worker sent a garbled reply") from None
        if not isinstance(msg, dict):
            self.kill()
            raise WorkerError(f"the {self.backend} worker sent an unexpected reply")
        return msg

    def run(self, cell: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        assert self.proc is not None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"op": "run", "cell": cell}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            why = self._death_message()
            self.kill()
            raise WorkerError(why) from None
        reply = self._recv(timeout)
        return reply["record"]

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        if self.rfd is not None:
            os.close(self.rfd)
            self.rfd = None
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        self.proc = None

    def close(self) -> None:
        if self.alive:
            assert self.proc is not None
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


# ---------------------------------------------------------------------- the run
Progress = Callable[[str, dict[str, Any], int, int], None]


def _failed_record(cell: dict[str, Any], kind: str, message: str, wall: float) -> dict[str, Any]:
    case = get_case(cell["case"])
    size = case.normalize(cell["size"])
    return {
        "key": cell["key"],
        "case": cell["case"],
        "backend": cell["backend"],
        "dtype": cell["dtype"],
        "size": cell["size"],
        "size_label": format_size(size),
        "params": case.params(size),
        "case_doc": case.doc,
        "status": "failed",
        "error": {"kind": kind, "type": kind, "message": message[:500]},
        "cell_wall_s": wall,
    }


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
        Resuming a file that cannot be read.
    KeyboardInterrupt
        Propagated after the workers are stopped and the file is closed; every
        finished cell is already in the file.
    """
    from ._env import collect_env

    cells = plan_cells(config)
    store = ResultStore(config.out, resume=config.resume, overwrite=config.overwrite)
    summary = RunSummary(path=store.path)
    try:
        done = (
            store.previous.finished_keys(include_failed=not config.retry_failed,
                                         include_noisy=not config.retry_noisy)
            if store.previous else set()
        )
        todo = [c for c in cells if c["key"] not in done]
        summary.already_done = len(cells) - len(todo)
        run_info = config.to_dict()
        run_info["argv"] = sys.argv[:]
        run_info["isolation"] = "a worker process per backend" if config.isolate else "in-process"
        store.write_header(collect_env(), run_info)
        total = len(todo)
        if progress:
            progress("plan", {"cells": total, "already_done": summary.already_done}, 0, total)
        runner = _run_isolated if config.isolate else _run_inprocess
        runner(config, todo, store, summary, progress)
    finally:
        store.close()
    return summary


def _emit(store: ResultStore, summary: RunSummary, rec: dict[str, Any],
          progress: Progress | None, i: int, total: int) -> None:
    full = store.append(rec)
    summary.records.append(full)
    if progress:
        progress("result", full, i, total)


def _run_isolated(config: RunConfig, todo: list[dict[str, Any]], store: ResultStore,
                  summary: RunSummary, progress: Progress | None) -> None:
    limit = config.time_limit
    startup = max(120.0, 2 * limit) if limit else None
    with tempfile.TemporaryDirectory(prefix="xlinalg-bench-") as tmp:
        worker: Worker | None = None
        broken: dict[str, str] = {}  # backends whose worker cannot start, and why
        try:
            for i, cell in enumerate(todo):
                if progress:
                    progress("start", cell, i, len(todo))
                t0 = time.perf_counter()
                if cell["backend"] in broken:
                    rec = _failed_record(cell, "crash", broken[cell["backend"]], 0.0)
                    _emit(store, summary, rec, progress, i, len(todo))
                    continue
                if worker is not None and (worker.backend != cell["backend"] or not worker.alive):
                    worker.close()
                    worker = None
                try:
                    if worker is None:
                        worker = Worker(cell["backend"], config, Path(tmp))
                        try:
                            worker.start(startup or 600.0)
                        except WorkerError as exc:
                            broken[cell["backend"]] = str(exc)
                            raise
                    rec = worker.run(cell, limit)
                except _CellTimeout:
                    assert worker is not None
                    worker.kill()
                    worker = None
                    rec = _failed_record(
                        cell, "timeout",
                        f"cell ran past the time limit of {limit:g} s; its worker process was "
                        "killed",
                        time.perf_counter() - t0,
                    )
                except WorkerError as exc:
                    if worker is not None:
                        worker.kill()
                    worker = None
                    rec = _failed_record(cell, "crash", str(exc), time.perf_counter() - t0)
                _emit(store, summary, rec, progress, i, len(todo))
        except BaseException:  # Ctrl-C, SIGTERM: do not wait for the cell in flight
            if worker is not None:
                worker.kill()
            raise
        else:
            if worker is not None:
                worker.close()


def _run_inprocess(config: RunConfig, todo: list[dict[str, Any]], store: ResultStore,
                   summary: RunSummary, progress: Progress | None) -> None:
    from ._cell import execute_cell
    from ._env import backend_state, configure_backend

    current: str | None = None
    restore: Callable[[], None] | None = None
    state: dict[str, Any] = {}
    try:
        for i, cell in enumerate(todo):
            if progress:
                progress("start", cell, i, len(todo))
            if cell["backend"] != current:
                if restore is not None:
                    restore()
                current = cell["backend"]
                restore = configure_backend(current, threads=config.threads,
                                            allow_tf32=config.allow_tf32)
                state = backend_state(current, threads_requested=config.threads)
            rec = execute_cell(cell, backend_state=state, time_limit=config.time_limit)
            _emit(store, summary, rec, progress, i, len(todo))
    finally:
        if restore is not None:
            restore()

