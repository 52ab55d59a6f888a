"""The results file: JSON Lines, one record per line, appended and synced at once.

A run (and each ``--resume``) appends a header, then one ``result`` line per
finished cell, written in one ``write``, flushed and ``fsync``-ed, under an
exclusive ``flock``; non-finite floats are stored as ``null``. What that buys:
docs/benchmark.md, "Nothing lost". Reading is :mod:`._resultsfile`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import signal
import stat
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .._lib._escape import terminal
from ._resultsfile import (
    SCHEMA_VERSION,
    ResultsFile,
    ResultsFileBusyError,
    ResultsFileError,
    ResultsWriteError,
    ResumeMismatchError,
    _check_identity,
    _why,
    get_path,
    read_results,
)
from ._schema import RESULT_REQUIRED

__all__ = ["LINK_REFUSED", "ResultStore", "dumps_record", "settings_differences"]

#: What must be the same to resume a file: the run settings (``header["run"]``) and
#: the environment (``header["env"]``, as dotted paths) under which a cell is
#: measured. Cells measured under other settings would mix silently into one file.
#: The backends, cases and sizes may differ (they only pick cells; a cell's key
#: names it), and so may the time limit.
RESUME_RUN_KEYS: tuple[str, ...] = (
    "dtype", "scale", "threads", "seed", "allow_tf32", "isolate", "memory_limit", "timer",
    "check", "memory", "margin", "recheck", "stall_factor",
)
RESUME_ENV_KEYS: tuple[str, ...] = (
    "xlinalg", "python.version", "python.implementation", "numpy", "packages",
    "machine_id", "cpu.model", "cpu.usable_cores",
)
_MISSING = object()


def _flat(prefix: str, v: Any) -> dict[str, Any]:
    """{"packages.torch": "2.3", ...} for a dict value; {prefix: v} otherwise."""
    if not isinstance(v, dict):
        return {prefix: v}
    return {path: x for k, sub in v.items() for path, x in _flat(f"{prefix}.{k}", sub).items()}


def settings_differences(header: Mapping[str, Any], run: Mapping[str, Any],
                         env: Mapping[str, Any]) -> list[str]:
    """How `run` and `env` differ from a file's `header` in what must match to
    resume (:data:`RESUME_RUN_KEYS`, :data:`RESUME_ENV_KEYS`): ``"seed: 0 in
    the file, 1 now"`` per difference. A setting missing on either side (an
    older file, a caller that does not record it) is not compared."""
    now = {"run": json.loads(dumps_record(run)), "env": json.loads(dumps_record(env))}
    out: list[str] = []
    for part, keys in (("run", RESUME_RUN_KEYS), ("env", RESUME_ENV_KEYS)):
        for key in keys:
            old = get_path(header.get(part), *key.split("."), default=_MISSING)
            new = get_path(now[part], *key.split("."), default=_MISSING)
            if old is _MISSING or new is _MISSING:
                continue
            a, b = _flat(key, old), _flat(key, new)
            out.extend(f"{k}: {json.dumps(a.get(k))} in the file, {json.dumps(b.get(k))} now"
                       for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
    return out


def _lock(path: Path, fd: int, wait: float) -> None:
    """Exclusive, non-blocking ``flock`` on `fd` (retried for `wait` seconds).

    ``flock`` belongs to the open file: it goes when the file is closed or the
    process ends in any way. Without ``fcntl`` (Windows) there is no lock.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ResultsFileBusyError(
                    path, None, "another xlinalg bench run is writing this file; wait for it "
                    "to finish or choose another --out") from None
            time.sleep(0.05)
        except OSError as exc:  # a file system without locks (some network mounts)
            raise ResultsWriteError(path, None, f"cannot lock: {_why(exc)}") from None


def _clean(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats -> None, tuples -> lists, numpy scalars -> Python."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return _clean(obj.item())
    return str(obj)


def dumps_record(record: Mapping[str, Any]) -> str:
    """One JSON line (no newline), strict JSON (no NaN)."""
    return json.dumps(_clean(record), allow_nan=False, separators=(",", ":"))


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a record is written (the main thread, POSIX).

    Python runs a signal's handler in the main thread between bytecodes, whichever
    thread the operating system delivered the signal to; blocking the signals in the
    main thread alone (``pthread_sigmask``) only sends them to another thread (one of
    OpenBLAS's) and the handler still runs inside the write. So for the write each
    handler is replaced by one that notes the signal, and each noted signal is
    raised again right after the line is written and synced, under the handler that
    was there before (Ctrl-C then stops the run between two whole lines).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers run in the main thread only: nothing to hold here
        return
    pending: list[int] = []

    def _note(signum: int, frame: Any) -> None:
        pending.append(signum)

    old: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not None:  # None: a handler not set from Python
                old[sig] = signal.signal(sig, _note)
        yield
    finally:
        for num, handler in old.items():
            signal.signal(num, handler)
        for num in dict.fromkeys(pending):
            signal.raise_signal(num)


#: Why a symbolic link is not opened for writing (the results file, a report's files).
LINK_REFUSED = ("is a symbolic link; xlinalg does not write through links (that would "
                "change the file it points to): remove the link, or name the file itself "
                "or another path")


def _starts_with_header(fd: int) -> bool:
    """Whether the file open as `fd` starts with a results file's header record
    (its first line, read without moving the offset, parses as one)."""
    line = os.pread(fd, 1 << 20, 0).split(b"\n", 1)[0]  # a header is far shorter than 1 MiB
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return False
    return (isinstance(obj, dict) and obj.get("type") == "header"
            and isinstance(obj.get("schema_version"), int) and isinstance(obj.get("run_id"), str))


class ResultStore:
    """Appends records to a results file, one synced line per record.

    A results file has one writer at a time: the store holds an exclusive
    ``flock`` on the file from opening to :meth:`close` (the operating system
    releases it on any exit, a crash or ``SIGKILL`` included). A second store
    on the same file raises :class:`ResultsFileBusyError` before touching it.

    Parameters
    ----------
    path : path
        The JSONL file (a regular file, or a path where one can be created).
    resume : bool
        Continue an existing file: validate it, cut a truncated last line, and
        append. An existing empty file is resumed as one with nothing done yet.
    overwrite : bool
        Replace an existing results file (one whose first line is a results
        header; an empty file too). Without `resume` or `overwrite` an existing
        file is an error, an empty one included (:class:`FileExistsError`).

    Raises
    ------
    ResultsFileBusyError
        Another store (another ``xlinalg bench`` run) holds the file.
    ResultsWriteError
        The file cannot be created or opened for writing (read-only file
        system, a directory, a path under a file, a device), `path` is a
        symbolic link (never written through), or `overwrite` would replace a
        file that is not a results file.
    ResultsFileError
        Resuming a file that cannot be read.
    FileExistsError
        The file exists and neither `resume` nor `overwrite` was given.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str], *, resume: bool = False,
                 overwrite: bool = False) -> None:
        self.path = Path(path)
        self.run_id = uuid.uuid4().hex
        self.previous: ResultsFile | None = None
        self._fh: IO[bytes] | None = None
        fd, created = self._open_locked()
        try:
            size = os.fstat(fd).st_size
            if not created and resume and size > 0:
                self.previous = read_results(self.path, warn=False)
                if self.previous.compressed:
                    raise ResultsWriteError(
                        self.path, None, f"is {self.previous.compressed}-compressed; --resume appends "
                        "lines to a plain JSON Lines file: decompress it first (e.g. `xz -dk FILE`)")
                if self.previous.good_bytes < size:  # a truncated last line: cut it
                    os.ftruncate(fd, self.previous.good_bytes)
                elif os.pread(fd, 1, size - 1) != b"\n":
                    os.pwrite(fd, b"\n", size)
            elif not created and not resume:
                if not overwrite:
                    empty = " (empty)" if size == 0 else ""
                    raise FileExistsError(
                        f"{self.path} already exists{empty}; pass --resume to continue it "
                        "or --overwrite to replace it"
                    )
                if size > 0 and not _starts_with_header(fd):
                    raise ResultsWriteError(
                        self.path, None, "is not an xlinalg results file (its first line is "
                        "not a results header); --overwrite replaces only results files: "
                        "move it away or choose another --out")
                os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError) and not isinstance(exc, FileExistsError):
                raise ResultsWriteError(self.path, None, _why(exc)) from None
            raise
        self._fh = os.fdopen(fd, "ab", buffering=0)

    def _open_locked(self) -> tuple[int, bool]:
        """Open (or create) the file and take its lock: (fd, created by us)."""
        p = self.path
        try:
            if not p.parent.is_dir():
                if p.parent.exists() or p.parent.is_symlink():
                    raise ResultsWriteError(p, None, f"{str(p.parent)!r} is not a directory")
                p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsWriteError(
                p, None, f"cannot create its directory {str(p.parent)!r}: {_why(exc)}"
            ) from None
        # O_NOFOLLOW: a link named --out is refused, never written through (it would
        # change, or with --overwrite empty, the file it points to)
        flags = (os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOFOLLOW", 0))
        try:
            if p.is_symlink():
                raise ResultsWriteError(p, None, LINK_REFUSED)
            try:
                fd, created = os.open(p, flags | os.O_CREAT | os.O_EXCL, 0o666), True
            except FileExistsError:
                fd, created = os.open(p, flags), False
        except OSError as exc:
            if p.is_symlink():  # made between the check and the open
                raise ResultsWriteError(p, None, LINK_REFUSED) from None
            raise ResultsWriteError(p, None, f"cannot open for writing: {_why(exc)}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ResultsWriteError(p, None, "is not a regular file (a results file must be "
                                                 "one); give the path of a file")
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            _lock(p, fd, wait=1.0 if created else 0.0)
        except BaseException:
            os.close(fd)
            raise
        return fd, created

    def check_settings(self, env: dict[str, Any], run: dict[str, Any]) -> None:
        """Raise :class:`ResumeMismatchError` when resuming a file whose cells were
        measured under other settings (:func:`settings_differences` against every
        header of the file); nothing when not resuming."""
        if self.previous is None:
            return
        diffs: list[str] = []
        for h in self.previous.headers:
            diffs += [d for d in settings_differences(h, run, env) if d not in diffs]
        if diffs:
            raise ResumeMismatchError(self.path, None, terminal(
                "its cells were measured with other settings; resuming would mix them: "
                + "; ".join(diffs) + ". Resume with the file's settings, or start a new "
                "--out", max_len=2000))

    def write_header(self, env: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
        """Append the header of this run (environment and options).

        Raises
        ------
        ResumeMismatchError
            Resuming a file whose cells were measured under other settings
            (:func:`settings_differences`); nothing is written.
        """
        self.check_settings(env, run)
        header = {
            "type": "header",
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "created": _now(),
            "resumed": self.previous is not None,
            "env": env,
            "run": run,
        }
        self._append(header)
        return header

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append one result record (fills type, schema_version, run_id, finished)."""
        rec = {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": self.run_id, **record}
        rec.setdefault("finished", _now())
        missing = [f for f in RESULT_REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"result record lacks field(s) {', '.join(missing)}")
        try:  # what a reader would refuse is never written
            _check_identity(self.path, None, rec)
        except ResultsFileError as exc:
            raise ValueError(f"result record not written: {exc.message}") from None
        self._append(rec)
        return rec

    def _append(self, obj: dict[str, Any]) -> None:
        if self._fh is None:
            raise ValueError(f"{self.path} is closed")
        data = (dumps_record(obj) + "\n").encode("utf-8")
        with _signals_deferred():  # Ctrl-C lands after the line, never inside it
            view = memoryview(data)
            try:
                while view:  # unbuffered: one write() per record, looped only if the OS splits it
                    n = self._fh.write(view)
                    view = view[n or 0 :]
                os.fsync(self._fh.fileno())  # a power cut keeps what was measured
            except OSError as exc:  # disk full, quota, I/O error: what was synced stays
                raise ResultsWriteError(self.path, None, f"cannot write: {_why(exc)}") from None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
