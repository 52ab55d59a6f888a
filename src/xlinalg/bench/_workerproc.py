"""The runner's side of the worker processes: start, talk to, time out and kill them.

:class:`Worker` is one worker process (:mod:`._worker` is the other side);
:class:`Pool` keeps one live worker per backend for a whole run and restarts
one after a failure; :class:`WorkerClient` speaks the side-by-side protocol
(begin, sample, finish) to one backend's worker for
:func:`._sidebyside.measure_group`, turning a time-out or a dead worker into
:class:`ClientFailure`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..backends import get_backend
from ._cell import record_head
from ._study import study_case_modules

__all__ = ["ClientFailure", "Pool", "Worker", "WorkerClient", "WorkerError", "failed_record"]


class ClientFailure(Exception):
    """A client passed the time limit (``kind="timeout"``) or died (``"crash"``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class WorkerError(RuntimeError):
    """A worker could not start, or died."""


class Worker:
    """A worker process timing cells of one backend (see :mod:`._worker`)."""

    def __init__(self, backend: str, config: Any, log_dir: Path) -> None:
        self.backend = backend
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        self.rfd: int | None = None
        self.buf = b""
        self.log_path = log_dir / f"worker-{backend}-{time.monotonic_ns()}.log"

    def _env(self) -> dict[str, str]:
        env = os.environ.copy()
        src = str(Path(__file__).resolve().parents[2])  # the directory holding `xlinalg`
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        n = self.config.threads
        if n is not None:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env[var] = str(n)
        get_backend(self.backend).bench.worker_env(env, threads=n, allow_tf32=self.config.allow_tf32)
        return env

    def start(self, timeout: float) -> None:
        r, w = os.pipe()
        cmd = [sys.executable, "-m", "xlinalg.bench._worker", "--backend", self.backend,
               "--fd", str(w), "--parent", str(os.getpid())]
        if self.config.threads is not None:
            # The worker also takes N cores (its CPU affinity, set before import), every
            # backend alike: JAX's thread pool follows the affinity and has no other
            # setting, so the others get the same N cores on top of their own settings.
            cmd += ["--threads", str(self.config.threads)]
        if self.config.allow_tf32:
            cmd.append("--allow-tf32")
        for mod in study_case_modules():  # a study's cases: imported by module path
            cmd += ["--case-module", mod]
        for f in self.config.case_files:
            cmd += ["--case-file", str(Path(f).resolve())]
        if self.config.memory_limit:
            cmd += ["--memory-limit", str(int(self.config.memory_limit))]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in kill()/close()
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
            raise self._fail(f"the {self.backend} worker could not start: {msg.get('error')}")

    def _fail(self, message: str) -> WorkerError:
        """Kill the worker; the error to raise."""
        self.kill()
        return WorkerError(message)

    def _death_message(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = ""
        with contextlib.suppress(OSError):
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
            if lines:
                tail = f"; last output: {lines[-1][:200]}"
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
            if code == -signal.SIGKILL:
                how += " (the kernel's out-of-memory killer, if nothing else sent it)"
        else:
            how = f"exited with status {code}"
            if code == 0:  # a worker exits only when asked: the case ended the process
                how += (" without reporting the cell (did the case end its process: "
                        "os._exit, a C exit()?)")
        return f"the {self.backend} worker process {how}{tail}"

    def _recv(self, timeout: float | None, *, starting: bool = False) -> dict[str, Any]:
        assert self.rfd is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                if starting:
                    raise self._fail(
                        f"the {self.backend} worker did not start within {timeout:g} s")
                raise TimeoutError  # the cell's time limit
            ready, _, _ = select.select([self.rfd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise self._fail(self._death_message())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise self._fail(f"the {self.backend} worker sent a garbled reply") from None
        if not isinstance(msg, dict):
            raise self._fail(f"the {self.backend} worker sent an unexpected reply")
        return msg

    def request(self, req: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Send one request, return the reply (see :mod:`._worker` for the protocol).

        Raises ``TimeoutError`` after `timeout` seconds and :class:`WorkerError`
        when the worker is dead or answers garbage.
        """
        assert self.proc is not None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._fail(self._death_message()) from None
        reply = self._recv(timeout)
        if reply.get("event") == "result" and not isinstance(reply.get("record"), dict):
            raise self._fail(f"the {self.backend} worker sent a result without a record")
        return reply

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
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
        self.kill()


def failed_record(cell: dict[str, Any], kind: str, message: str, wall: float) -> dict[str, Any]:
    """The record of a cell whose worker timed out or died."""
    return {
        **record_head(cell)[2],
        "status": "failed",
        "error": {"kind": kind, "type": kind, "message": message[:500]},
        "cell_wall_s": wall,
    }


class Pool:
    """One live worker process per backend, restarted after a failure."""

    def __init__(self, config: Any, log_dir: Path) -> None:
        self.config = config
        self.log_dir = log_dir
        limit = config.time_limit
        self.startup = max(120.0, 2 * limit) if limit else 600.0
        self.workers: dict[str, Worker] = {}
        self.broken: dict[str, str] = {}  # backends whose worker cannot start, and why

    def ensure(self, backend: str) -> bool:
        """A live worker for `backend` (started if needed); False if it cannot start."""
        if backend in self.broken:
            return False
        if backend in self.workers and self.workers[backend].alive:
            return True
        self.kill(backend)  # a dead one
        w = Worker(backend, self.config, self.log_dir)
        try:
            w.start(self.startup)
        except WorkerError as exc:
            self.broken[backend] = str(exc)
            return False
        self.workers[backend] = w
        return True

    def kill(self, backend: str) -> None:
        w = self.workers.pop(backend, None)
        if w is not None:
            w.kill()

    def close(self, *, kill: bool = False) -> None:
        for b in list(self.workers):
            w = self.workers.pop(b)
            w.kill() if kill else w.close()

    def selfcheck(self) -> dict[str, Any]:
        """The fence self-check in every backend's worker (the header's ``fence_selfcheck``)."""
        out: dict[str, Any] = {}
        for b in self.config.backends or ():
            if not self.ensure(b):
                out[b] = {"backend": b, "ok": False, "error": self.broken[b]}
                continue
            try:
                reply = self.workers[b].request({"op": "selfcheck"}, self.startup)
                out[b] = reply.get("result") or {"backend": b, "ok": False, "error": "no result"}
            except (TimeoutError, WorkerError) as exc:
                self.kill(b)
                out[b] = {"backend": b, "ok": False,
                          "error": str(exc) or f"no answer within {self.startup:g} s"}
        return out


class WorkerClient:
    """The side-by-side client (:class:`._sidebyside.Client`) of one backend over its
    worker process."""

    def __init__(self, pool: Pool, backend: str) -> None:
        self.pool = pool
        self.backend = backend

    def _req(self, req: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        w = self.pool.workers.get(self.backend)
        if w is None or not w.alive:
            raise ClientFailure("crash", f"the {self.backend} worker is gone")
        try:
            return dict(w.request(req, timeout))
        except TimeoutError:
            self.pool.kill(self.backend)
            raise ClientFailure(
                "timeout", f"cell ran past the time limit of {self.pool.config.time_limit:g} s; "
                "its worker process was killed") from None
        except WorkerError as exc:
            self.pool.kill(self.backend)
            raise ClientFailure("crash", str(exc)) from None

    def begin(self, cell: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return self._req({"op": "begin", "cell": cell}, timeout)

    def sample(self, timeout: float | None) -> dict[str, Any]:
        return self._req({"op": "sample"}, timeout)

    def finish(self, timeout: float | None) -> dict[str, Any]:
        return self._req({"op": "finish"}, timeout)
