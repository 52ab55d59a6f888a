"""The worker process that times one backend: ``python -m xlinalg.bench._worker``.

The runner starts one worker per backend (pyperf and asv isolate benchmarks in
processes the same way): each library gets a fresh interpreter with its own
settings (JAX's 64-bit mode, thread pools, CUDA context, allocator), and a cell
that hangs in a C call or is killed by the out-of-memory killer takes only its
worker down — the runner records the cell and starts a new worker.

Protocol: newline-delimited JSON. Requests arrive on stdin, replies go to the
file descriptor given by ``--fd``:

- once at start: ``{"event": "hello", "state": {...}}`` (or ``{"event": "fatal"}``);
- ``{"op": "selfcheck"}`` -> ``{"event": "selfcheck", "result": {...}}``: the
  fence self-check (:func:`._selfcheck.fence_selfcheck`) in this worker;
- ``{"op": "begin", "cell": {...}}``: the side-by-side protocol, where the
  runner decides when each sample is taken. The worker prepares the cell
  (inputs, first call, warm-up, calibration) and answers
  ``{"event": "ready", "number": n, "first_call_s": ...}``; then each
  ``{"op": "sample"}`` takes ``blocks_per_round`` samples back to back and answers
  ``{"event": "samples", "times": [per-call s], "number": n, "wall_s", "cpu_s"}``
  (``cpu_s``: the process's CPU time over them, all threads; the fastest is the
  round's value in the cell's statistics); ``{"op":
  "finish"}`` ends the cell (check, memory) and answers with its record.
  A cell that is skipped or fails answers ``{"event": "result"}`` at once,
  whatever was asked;
- ``{"op": "exit"}``.
The worker's own stdout is redirected to stderr so that a library printing
something cannot corrupt the channel. Nothing but JSON crosses it.

SIGINT is ignored here: the runner owns the interrupt and stops workers itself.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import sys
import time
from typing import Any

from ._store import dumps_record

__all__ = ["main"]

#: a block this long (seconds) is the round's only block: the best of several
#: blocks guards short blocks against a scheduler interruption (a 5 ms block
#: interrupted once is twice as long), while a block of 50 ms or more already
#: averages the interruptions it meets; repeating it only lengthens the run
#: (the default run's 4096x4096 elementwise cells: docs/performance.md)
LONG_BLOCK_S = 0.05


def _set_parent_death_signal() -> None:
    """Linux: get SIGKILL when the runner dies, so a worker never outlives it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # no libc or no prctl: best effort
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def _send(fd: int, obj: dict[str, Any]) -> None:
    view = memoryview((dumps_record(obj) + "\n").encode("utf-8"))
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read() -> dict[str, Any] | None:
    """The next request from stdin (None at end of input)."""
    for line in sys.stdin:
        if line.strip():
            req = json.loads(line)
            return req if isinstance(req, dict) else {}
    return None


def _remote_sampler(fd: int) -> Any:
    """A sampler for :func:`execute_cell`: the runner asks for each sample."""

    def sampler(timer: Any) -> Any:
        prep = timer.prepare()
        _send(fd, {"event": "ready", "number": prep.number, "first_call_s": prep.first_call_s})
        best: list[tuple[float, float | None]] = []  # each round's fastest block
        while True:
            req = _read()
            op = None if req is None else req.get("op")
            if op != "sample":
                if op == "exit" or req is None:
                    raise SystemExit(0)
                break  # "finish"
            k = max(1, timer.config.blocks_per_round)
            w0, c0 = time.perf_counter(), time.process_time()
            got = []
            for _ in range(k):
                got.append(timer.sample(prep.number))
                if got[-1][0] * prep.number >= LONG_BLOCK_S:
                    break  # a long block: interruptions are a small part of it already
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            best.append(min(got, key=lambda g: g[0]))  # the round's value: its fastest block
            _send(fd, {"event": "samples", "times": [t for t, _ in got], "number": prep.number,
                       "wall_s": wall, "cpu_s": cpu})
        if not best:  # finished before any round: one sample so the record has a time
            best.append(timer.sample(prep.number))
        dev = [d for _, d in best if d is not None]
        return timer.measurement(prep, [t for t, _ in best], dev or None)

    return sampler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xlinalg.bench._worker")
    p.add_argument("--backend", required=True)
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--allow-tf32", action="store_true")
    p.add_argument("--case-file", action="append", default=[])
    p.add_argument("--case-module", action="append", default=[],
                   help="a module whose import registers cases (a study's)")
    p.add_argument("--memory-limit", type=int, default=None, help="RLIMIT_AS in bytes")
    p.add_argument("--parent", type=int, default=None)
    args = p.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_parent_death_signal()
    if args.parent is not None and os.getppid() != args.parent:  # parent already gone
        return 1
    os.dup2(2, 1)  # stray prints go to the log, never into the channel
    fd = args.fd

    try:
        if args.threads:  # the first N CPUs (see Worker.start)
            with contextlib.suppress(AttributeError, OSError):  # not Linux
                os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.threads])
        if args.memory_limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (args.memory_limit, args.memory_limit))
        from ..backends import get_backend
        from ._casefiles import load_case_files
        from ._cell import execute_cell
        from ._fairness import backend_state, configure_backend
        from ._selfcheck import checked_selfcheck

        get_backend(args.backend).require()
        configure_backend(args.backend, threads=args.threads, allow_tf32=args.allow_tf32)
        for mod in args.case_module:  # a study's cases (xlinalg.bench.load_study)
            importlib.import_module(mod)
        load_case_files(args.case_file)  # os._exit at import: a reason, not a silent death
        state = backend_state(args.backend, threads_requested=args.threads)
    except BaseException as exc:  # report why the worker cannot start
        _send(fd, {"event": "fatal", "error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
        return 1
    _send(fd, {"event": "hello", "pid": os.getpid(), "state": state})

    while (req := _read()) is not None and (op := req.get("op")) != "exit":
        if op == "selfcheck":
            res = checked_selfcheck(args.backend, configure=False, state=state)
            _send(fd, {"event": "selfcheck", "result": res})
        elif op == "begin":
            rec = execute_cell(req["cell"], backend_state=state, sampler=_remote_sampler(fd))
            _send(fd, {"event": "result", "record": rec})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
