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
:class:`ResultsFileError` naming the file and the line: a file that is not
JSON Lines, a corrupt line in the middle, a record from a newer schema, and a
record missing a required field.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import signal
import threading
import uuid
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = [
    "RESULT_FIELDS",
    "SCHEMA_VERSION",
    "ResultStore",
    "ResultsFile",
    "ResultsFileError",
    "ResultsFileWarning",
    "cell_key",
    "read_results",
]

#: Version of the record layout. Readers refuse files with a larger number.
SCHEMA_VERSION = 1

#: Fields every result record has.
RESULT_FIELDS: tuple[str, ...] = (
    "type", "schema_version", "run_id", "key", "case", "backend", "dtype", "size",
    "size_label", "status",
)
HEADER_FIELDS: tuple[str, ...] = ("type", "schema_version", "run_id", "created", "env")


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


def dumps_record(record: dict[str, Any]) -> str:
    """One JSON line (no newline), strict JSON (no NaN)."""
    return json.dumps(_clean(record), allow_nan=False, separators=(",", ":"), sort_keys=False)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------- reading
@dataclass
class ResultsFile:
    """The parsed content of a results file.

    Attributes
    ----------
    path : str
    headers : list of dict
        One per run or resumed run, in file order.
    records : list of dict
        Every result record, in file order.
    warnings : list of str
        Problems that were tolerated (a truncated last line).
    good_bytes : int
        Length of the file's intact prefix (what ``--resume`` keeps).
    """

    path: str
    headers: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    good_bytes: int = 0

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last record of each cell key (a resumed or re-run cell supersedes)."""
        out: dict[str, dict[str, Any]] = {}
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


def read_results(path: str | os.PathLike[str], *, warn: bool = True) -> ResultsFile:
    """Read and validate a results file.

    A truncated last line (no final newline and not valid JSON: a write cut by a
    crash) is dropped with a :class:`ResultsFileWarning`.

    Raises
    ------
    ResultsFileError
        The file is missing, unreadable, not JSON Lines, has a corrupt line, a
        record from a newer schema, or a record without required fields.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ResultsFileError(p, None, "no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(p, None, "is a directory, not a results file") from None
    except OSError as exc:
        raise ResultsFileError(p, None, f"cannot read: {exc.strerror or exc}") from None
    out = ResultsFile(path=str(p))
    if not raw.strip():
        raise ResultsFileError(p, None, "is empty: not an xlinalg results file")
    for lineno, end, line, has_nl in _iter_lines(raw):
        if not line.strip():
            out.good_bytes = end
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if not has_nl and out.headers:
                msg = (f"{p}:{lineno}: last line is truncated (an interrupted write?); "
                       "ignored it")
                out.warnings.append(msg)
                if warn:
                    warnings.warn(msg, ResultsFileWarning, stacklevel=2)
                break
            if lineno == 1:
                raise ResultsFileError(
                    p, 1, "not an xlinalg results file (the first line is not JSON)"
                ) from None
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
            raise ResultsFileError(p, lineno, f"corrupt line ({detail})") from None
        _validate(p, lineno, obj, out)
        if obj["type"] == "header":
            out.headers.append(obj)
        else:
            out.records.append(obj)
        out.good_bytes = end
    return out


def _validate(p: Path, lineno: int, obj: Any, out: ResultsFile) -> None:
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
    if kind == "header":
        required = HEADER_FIELDS
    elif kind == "result":
        required = RESULT_FIELDS
    else:
        raise ResultsFileError(p, lineno, f"unknown record type {kind!r}")
    missing = [f for f in required if f not in obj]
    if missing:
        raise ResultsFileError(p, lineno, f"{kind} record lacks field(s) {', '.join(missing)}")


# ---------------------------------------------------------------------- writing
@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Block SIGINT/SIGTERM in the main thread while a record is written (POSIX)."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class ResultStore:
    """Appends records to a results file, one synced line per record.

    Parameters
    ----------
    path : path
        The JSONL file.
    resume : bool
        Continue an existing file: validate it, cut a truncated last line, and
        append. Without it an existing non-empty file is an error (``overwrite``
        replaces it).
    overwrite : bool
        Replace an existing file.
    fsync : bool
        ``os.fsync`` after every record (default True: a power cut keeps what
        was measured).

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
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists and resume:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ResultsFileWarning)
                self.previous = read_results(self.path, warn=False)
            size = self.path.stat().st_size
            if self.previous.good_bytes < size:  # a truncated last line: cut it
                with open(self.path, "r+b") as f:
                    f.truncate(self.previous.good_bytes)
            elif size and self.path.read_bytes()[-1:] != b"\n":
                with open(self.path, "ab") as f:
                    f.write(b"\n")
        elif exists and not overwrite:
            raise FileExistsError(
                f"{self.path} already exists; pass --resume to continue it "
                "or --overwrite to replace it"
            )
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = "ab" if (exists and resume) else "wb"
        self._fh = open(self.path, mode, buffering=0)  # noqa: SIM115 - closed in close()

    @property
    def done_keys(self) -> set[str]:
        """Cell keys already in the file when it was opened for resuming."""
        return self.previous.finished_keys() if self.previous else set()

    def write_header(self, env: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
        """Append the header of this run (environment and options)."""
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
        self._append(rec)
        return rec

    def _append(self, obj: dict[str, Any]) -> None:
        if self._fh is None:
            raise ValueError(f"{self.path} is closed")
        data = (dumps_record(obj) + "\n").encode("utf-8")
        with _signals_deferred():  # Ctrl-C lands after the line, never inside it
            view = memoryview(data)
            while view:  # unbuffered: one write() per record, looped only if the OS splits it
                n = self._fh.write(view)
                view = view[n or 0 :]
            if self.fsync:
                os.fsync(self._fh.fileno())

    def extend(self, records: Iterable[dict[str, Any]]) -> None:
        for r in records:
            self.append(r)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
