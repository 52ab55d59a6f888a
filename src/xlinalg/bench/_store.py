"""The results file: JSON Lines, one record per line, appended and synced at once.

Layout::

    {"type": "header", "schema_version": 1, "run_id": ..., "created": ..., "env": {...}, "run": {...}}
    {"type": "result", "schema_version": 1, "run_id": ..., "key": "solve|numpy|float64|5", ...}
    ...

Each run (and each ``--resume`` of it) appends a header first, then one
``result`` line per finished cell, written with a single ``write`` call,
flushed and ``fsync``-ed before the next cell starts: a crash or Ctrl-C loses
nothing already measured, and at worst leaves a truncated last line, which
readers tolerate with a warning (and ``--resume`` cuts away).

Only JSON is written and read — no pickles, nothing that is executed. Non-finite
floats are stored as ``null``. Readers reject, with a one-line
:class:`ResultsFileError` naming the file and the line: a file that is not a
regular file or is over :data:`MAX_FILE_BYTES`, not JSON Lines, a corrupt line
in the middle, a record from a newer schema, and a record that does not fit the
schema of :mod:`._schema` (a missing field, or a known field of the wrong type).
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
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ._schema import HEADER_REQUIRED, RESULT_REQUIRED, HeaderRecord, ResultRecord

__all__ = [
    "RESULT_FIELDS",
    "SCHEMA_VERSION",
    "ResultStore",
    "ResultsFile",
    "ResultsFileBusyError",
    "ResultsFileError",
    "ResultsFileWarning",
    "ResultsWriteError",
    "ResumeMismatchError",
    "cell_key",
    "settings_differences",
    "read_results",
]

#: Version of the record layout. Readers refuse files with a larger number.
SCHEMA_VERSION = 1

#: Fields every result (header) record has; the schema is in :mod:`._schema`.
RESULT_FIELDS, HEADER_FIELDS = RESULT_REQUIRED, HEADER_REQUIRED


class ResultsFileError(ValueError):
    """A results file cannot be read. ``str()`` is one line: ``file:line: problem``."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ResultsFileWarning(UserWarning):
    """A results file was readable but not intact (a truncated last line)."""


class ResultsFileBusyError(ResultsFileError):
    """Another writer (another ``xlinalg bench`` run) holds the results file."""


class ResultsWriteError(ResultsFileError):
    """The results file cannot be created, opened for writing or written."""


class ResumeMismatchError(ResultsFileError):
    """``--resume`` with settings other than those the file's cells were measured with."""


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
    "xlinalg", "python.version", "python.implementation", "numpy", "packages", "host",
    "machine_id", "cpu.model", "cpu.usable_cores",
)


def _dig(d: Any, dotted: str) -> tuple[bool, Any]:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return False, None
        d = d[part]
    return True, d


def _flat(prefix: str, v: Any) -> dict[str, Any]:
    """{"packages.torch": "2.3", ...} for a dict value; {prefix: v} otherwise."""
    if isinstance(v, dict):
        out: dict[str, Any] = {}
        for k, x in v.items():
            out.update(_flat(f"{prefix}.{k}", x))
        return out
    return {prefix: v}


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
            had, old = _dig(header.get(part), key)
            has, new = _dig(now[part], key)
            if not (had and has):
                continue
            a, b = _flat(key, old), _flat(key, new)
            out.extend(f"{k}: {json.dumps(a.get(k))} in the file, {json.dumps(b.get(k))} now"
                       for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
    return out


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


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


def cell_key(case: str, backend: str, dtype: str, size_label: str) -> str:
    """The identity of a cell in a results file (what ``--resume`` matches)."""
    return f"{case}|{backend}|{dtype}|{size_label}"


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
    return json.dumps(_clean(record), allow_nan=False, separators=(",", ":"), sort_keys=False)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------- reading
@dataclass
class ResultsFile:
    """The parsed content of a results file.

    Attributes
    ----------
    path : str
    headers : list of HeaderRecord
        One per run or resumed run, in file order (each checked against the schema,
        so it has the types :class:`._schema.HeaderRecord` declares).
    records : list of ResultRecord
        Every result record, in file order (checked likewise).
    warnings : list of str
        Problems that were tolerated (a truncated last line).
    good_bytes : int
        Length of the file's intact prefix (what ``--resume`` keeps).
    compressed : str or None
        ``"xz"`` or ``"gzip"`` for a compressed file (read as its content;
        ``--resume`` refuses it), else None.
    """

    path: str
    headers: list[HeaderRecord] = field(default_factory=list)
    records: list[ResultRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    good_bytes: int = 0
    compressed: str | None = None

    def latest(self) -> dict[str, ResultRecord]:
        """The last record of each cell key (a resumed or re-run cell supersedes)."""
        out: dict[str, ResultRecord] = {}
        for r in self.records:
            out[r["key"]] = r
        return out

    def finished_keys(self, *, include_failed: bool = True, include_noisy: bool = True) -> set[str]:
        """Keys of cells that need not run again (``--resume``).

        ``include_failed=False`` leaves out failed cells (``--retry-failed``),
        ``include_noisy=False`` the cells flagged noisy (``--retry-noisy``).
        """
        return {
            k for k, r in self.latest().items()
            if (include_failed or r.get("status") not in ("failed",))
            and (include_noisy or not (r.get("time") or {}).get("noisy"))
        }


def _iter_lines(raw: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, end offset, line bytes, has newline) for each line."""
    pos = 0
    lineno = 0
    n = len(raw)
    while pos < n:
        lineno += 1
        nl = raw.find(b"\n", pos)
        if nl < 0:
            yield lineno, n, raw[pos:], False
            return
        yield lineno, nl + 1, raw[pos:nl], True
        pos = nl + 1


#: Largest results file a reader accepts (bytes): a full run is a few MiB.
MAX_FILE_BYTES = 512 * 2**20


def _read_bounded(p: Path) -> bytes:
    """The bytes of regular file `p`, at most :data:`MAX_FILE_BYTES` (a FIFO,
    ``/dev/zero`` or a directory is refused without reading, never waited on)."""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ResultsFileError(p, None, "no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(p, None, "is a directory, not a results file") from None
    except OSError as exc:
        raise ResultsFileError(p, None, f"cannot read: {_why(exc)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ResultsFileError(p, None, "is a directory, not a results file")
        if not stat.S_ISREG(st.st_mode):
            raise ResultsFileError(p, None, "is not a regular file (a FIFO or a device?), "
                                            "not a results file")
        if st.st_size > MAX_FILE_BYTES:
            raise ResultsFileError(p, None, f"is {st.st_size} bytes, over the "
                                            f"{MAX_FILE_BYTES // 2**20} MiB a results file "
                                            "may have")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= MAX_FILE_BYTES:  # bounded even if the file grows while read
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_FILE_BYTES:
            raise ResultsFileError(p, None, f"is over the {MAX_FILE_BYTES // 2**20} MiB a "
                                            "results file may have")
        return b"".join(chunks)
    except OSError as exc:
        raise ResultsFileError(p, None, f"cannot read: {_why(exc)}") from None
    finally:
        os.close(fd)


#: magic bytes -> the compression a results file may be stored in (the committed
#: runs are xz: a run's raw samples shrink about 9x)
_COMPRESSED = {b"\xfd7zXZ\x00": "xz", b"\x1f\x8b": "gzip"}


def _decompressed(p: Path, raw: bytes) -> tuple[bytes, str | None]:
    """`raw` itself, or its content when it is xz or gzip (by its magic bytes, not
    its name), at most :data:`MAX_FILE_BYTES` of it (a small bomb of zeros is
    refused, never inflated)."""
    kind = next((k for magic, k in _COMPRESSED.items() if raw.startswith(magic)), None)
    if kind is None:
        return raw, None
    import lzma
    import zlib

    out, data = [], raw
    total = 0
    try:
        while data:
            d: Any = lzma.LZMADecompressor() if kind == "xz" else zlib.decompressobj(wbits=31)
            chunk = d.decompress(data, MAX_FILE_BYTES + 1 - total)
            total += len(chunk)
            out.append(chunk)
            if total > MAX_FILE_BYTES:
                raise ResultsFileError(p, None, f"holds over the {MAX_FILE_BYTES // 2**20} MiB "
                                                "a results file may have, compressed")
            if not d.eof:
                raise ResultsFileError(p, None, f"is a truncated {kind} file")
            data = d.unused_data  # a second stream (concatenated files)
    except (lzma.LZMAError, zlib.error, EOFError) as exc:
        raise ResultsFileError(p, None, f"is a corrupt {kind} file ({exc})") from None
    return b"".join(out), kind


def read_results(path: str | os.PathLike[str], *, warn: bool = True) -> ResultsFile:
    """Read and validate a results file (JSON Lines, or JSON Lines compressed
    with xz or gzip, recognised by content).

    Every line is parsed strictly and checked against the schema of its record
    type (:mod:`._schema`: types of known fields, not only their presence). A
    truncated last line (no final newline and not valid JSON: a write cut by a
    crash) is dropped with a :class:`ResultsFileWarning`.

    Raises
    ------
    ResultsFileError
        One line, ``file:line: what is wrong``: the file is missing, unreadable,
        not a regular file, too large, not JSON Lines, has a corrupt line, a
        record from a newer schema, or a record that does not fit the schema.
    """
    from ._schema import RecordError, parse_line

    p = Path(path)
    raw, kind = _decompressed(p, _read_bounded(p))
    out = ResultsFile(path=str(p), compressed=kind)
    if not raw.strip():
        raise ResultsFileError(p, None, "is empty: not an xlinalg results file")
    record_lines: list[int] = []
    for lineno, end, line, has_nl in _iter_lines(raw):
        if not line.strip():
            out.good_bytes = end
            continue
        try:
            obj = parse_line(line)
        except RecordError as exc:
            syntax = getattr(exc, "json_error", False)
            if syntax and not has_nl and out.headers:
                msg = (f"{p}:{lineno}: last line is truncated (an interrupted write?); "
                       "ignored it")
                out.warnings.append(msg)
                if warn:
                    warnings.warn(msg, ResultsFileWarning, stacklevel=2)
                break
            if syntax and lineno == 1:
                raise ResultsFileError(
                    p, 1, "not an xlinalg results file (the first line is not JSON)"
                ) from None
            raise ResultsFileError(p, lineno, f"corrupt line ({exc})" if syntax
                                   else str(exc)) from None
        _validate(p, lineno, obj, out)
        if obj["type"] == "header":
            out.headers.append(obj)
        else:
            out.records.append(obj)
            record_lines.append(lineno)
        out.good_bytes = end
    n_before = len(out.warnings)
    _headerless_warnings(p, out, record_lines)
    if warn:
        for msg in out.warnings[n_before:]:
            warnings.warn(msg, ResultsFileWarning, stacklevel=2)
    return out


def _validate(p: Path, lineno: int, obj: Any, out: ResultsFile) -> None:
    from ._schema import record_problem

    if not isinstance(obj, dict):
        if lineno == 1:
            raise ResultsFileError(p, 1, "not an xlinalg results file (the first line is not "
                                         "a JSON object)")
        raise ResultsFileError(p, lineno, f"expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("type")
    if (lineno == 1 and kind != "header") or (kind == "result" and not out.headers):
        raise ResultsFileError(p, lineno, "not an xlinalg results file (no header record first)")
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultsFileError(p, lineno, "record has no integer schema_version")
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            p, lineno,
            f"schema_version {version} is newer than this xlinalg reads ({SCHEMA_VERSION}); "
            "upgrade xlinalg",
        )
    if version < 1:
        raise ResultsFileError(p, lineno, f"invalid schema_version {version}")
    if kind not in ("header", "result"):
        from ._escape import terminal

        raise ResultsFileError(p, lineno, f"unknown record type {terminal(repr(kind), 80)}")
    try:
        problem = record_problem(obj, kind)
    except ImportError:
        raise ResultsFileError(p, lineno, "reading results files needs jsonschema: "
                                          "pip install 'xlinalg[bench]'") from None
    if problem is not None:
        raise ResultsFileError(p, lineno, problem)
    if kind == "result":
        _check_identity(p, lineno, obj)


def _check_identity(p: Path, lineno: int | None, rec: dict[str, Any]) -> None:
    """A result's ``key`` and ``size_label`` are what its own fields make them.

    Every reader (``report``, ``compare``, ``--resume``) files a record under its
    key; a key that names another cell (an edited or spliced file) would pin this
    record's numbers on that cell, so the record is refused rather than trusted.
    """
    from ._cases import format_size
    from ._escape import terminal

    size = rec["size"]
    if isinstance(size, int) or (isinstance(size, list) and size):
        label = format_size(size)
        if rec["size_label"] != label:
            raise ResultsFileError(p, lineno, terminal(
                f"the record's size_label {rec['size_label']!r} disagrees with its size "
                f"{size!r} (which reads {label!r}): the file was edited or damaged; fix or "
                "delete this line", 400))
    key = cell_key(rec["case"], rec["backend"], rec["dtype"], rec["size_label"])
    if rec["key"] != key:
        raise ResultsFileError(p, lineno, terminal(
            f"the record's key {rec['key']!r} disagrees with its own case, backend, dtype "
            f"and size_label ({key!r}): the file was edited or damaged; fix or delete "
            "this line", 400))


def _headerless_warnings(p: Path, out: ResultsFile, lines: list[int]) -> None:
    """A warning for the records whose ``run_id`` no header of the file has: what
    they were measured with (environment, settings) is unknown."""
    runs = {h["run_id"] for h in out.headers}
    orphans = [(ln, r["run_id"]) for ln, r in zip(lines, out.records) if r["run_id"] not in runs]
    if orphans:
        from ._escape import terminal

        ids = sorted({rid for _, rid in orphans})
        out.warnings.append(terminal(
            f"{p}:{orphans[0][0]}: {len(orphans)} result record(s), the first on this "
            "line, carry a run_id that no header of the file has "
            f"({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}): how they were "
            "measured is unknown (a record copied from another file?); they are read, "
            "but compare them with care", 600))


# ---------------------------------------------------------------------- writing
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

#: How much of a file's first line :func:`_starts_with_header` reads.
_HEADER_PROBE_BYTES = 1 << 20


def _starts_with_header(fd: int) -> bool:
    """Whether the file open as `fd` starts with a results file's header record
    (its first line, read without moving the offset, parses as one)."""
    head = os.pread(fd, _HEADER_PROBE_BYTES, 0)
    line = head.split(b"\n", 1)[0]
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
    fsync : bool
        ``os.fsync`` after every record (default True: a power cut keeps what
        was measured).

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

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        resume: bool = False,
        overwrite: bool = False,
        fsync: bool = True,
    ) -> None:
        self.path = Path(path)
        self.fsync = fsync
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
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, FileExistsError):
                raise
            raise ResultsWriteError(self.path, None, _why(exc)) from None
        except BaseException:
            os.close(fd)
            raise
        self._fh = os.fdopen(fd, "ab", buffering=0)

    def _open_locked(self) -> tuple[int, bool]:
        """Open (or create) the file and take its lock: (fd, created by us)."""
        p = self.path
        try:
            if p.parent and not p.parent.is_dir():
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
        created = False
        try:
            if p.is_symlink():
                raise ResultsWriteError(p, None, LINK_REFUSED)
            try:
                fd = os.open(p, flags | os.O_CREAT | os.O_EXCL, 0o666)
                created = True
            except FileExistsError:
                fd = os.open(p, flags)
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

    @property
    def done_keys(self) -> set[str]:
        """Cell keys already in the file when it was opened for resuming."""
        return self.previous.finished_keys() if self.previous else set()

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
            from ._escape import terminal

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
        rec = {"type": "result", "schema_version": SCHEMA_VERSION, "run_id": self.run_id}
        rec.update(record)
        rec.setdefault("finished", _now())
        missing = [f for f in RESULT_FIELDS if f not in rec]
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
                if self.fsync:
                    os.fsync(self._fh.fileno())
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
