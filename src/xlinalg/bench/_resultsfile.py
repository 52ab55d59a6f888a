"""Reading a results file: :func:`read_results`, and what a file's records must be.

Readers reject, with a one-line :class:`ResultsFileError` naming the file and the
line: a file that is not a regular file or is over :data:`MAX_FILE_BYTES`, not JSON
Lines, a corrupt line in the middle, a record from a newer schema, and a record
that does not fit the schema of :mod:`._schema` (a missing field, or a known field of
the wrong type). A truncated last line is tolerated with a warning. Writing is
:mod:`._store` (:class:`~._store.ResultStore`).
"""

from __future__ import annotations

import os
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._lib._escape import terminal
from ._cases import format_size
from ._schema import HeaderRecord, RecordError, ResultRecord, parse_line, record_problem

__all__ = [
    "MAX_FILE_BYTES",
    "SCHEMA_VERSION",
    "ResultsFile",
    "ResultsFileBusyError",
    "ResultsFileError",
    "ResultsFileWarning",
    "ResultsWriteError",
    "ResumeMismatchError",
    "cell_key",
    "get_path",
    "read_results",
]

#: Version of the record layout. Readers refuse files with a larger number.
SCHEMA_VERSION = 1


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


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def get_path(d: Any, *path: str, default: Any = None) -> Any:
    """``d[path[0]][path[1]]...``, or `default` where a key is missing or a value on
    the way is not a dict (a record's or a header's field, tolerant of their shape)."""
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def cell_key(case: str, backend: str, dtype: str, size_label: str) -> str:
    """The identity of a cell in a results file (what ``--resume`` matches)."""
    return f"{case}|{backend}|{dtype}|{size_label}"


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
        return {r["key"]: r for r in self.records}

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


#: Largest results file a reader accepts (bytes): a full run is a few MiB.
MAX_FILE_BYTES = 512 * 2**20


def _read_bounded(p: Path) -> bytes:
    """The bytes of regular file `p`, at most :data:`MAX_FILE_BYTES` (a FIFO,
    ``/dev/zero`` or a directory is refused without reading, never waited on)."""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ResultsFileError(p, None, "no such file") from None
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
        while total <= MAX_FILE_BYTES and (  # bounded even if the file grows while read
                chunk := os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - total))):
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
    p = Path(path)
    raw, kind = _decompressed(p, _read_bounded(p))
    out = ResultsFile(path=str(p), compressed=kind)
    if not raw.strip():
        raise ResultsFileError(p, None, "is empty: not an xlinalg results file")
    record_lines: list[int] = []
    lines, end = raw.split(b"\n"), 0
    for lineno, line in enumerate(lines, 1):
        end = min(end + len(line) + 1, len(raw))  # where the line's newline ends
        if not line.strip():
            out.good_bytes = end
            continue
        try:
            obj = parse_line(line)
        except RecordError as exc:
            if exc.json_error and lineno == len(lines) and out.headers:  # no newline after it
                out.warnings.append(f"{p}:{lineno}: last line is truncated (an interrupted "
                                    "write?); ignored it")
                break
            if exc.json_error and lineno == 1:
                raise ResultsFileError(
                    p, 1, "not an xlinalg results file (the first line is not JSON)"
                ) from None
            raise ResultsFileError(p, lineno, f"corrupt line ({exc})" if exc.json_error
                                   else str(exc)) from None
        _validate(p, lineno, obj, out)
        if obj["type"] == "header":
            out.headers.append(obj)
        else:
            out.records.append(obj)
            record_lines.append(lineno)
        out.good_bytes = end
    _headerless_warnings(p, out, record_lines)
    if warn:
        for msg in out.warnings:
            warnings.warn(msg, ResultsFileWarning, stacklevel=2)
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
    if kind not in ("header", "result"):
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
        ids = sorted({rid for _, rid in orphans})
        out.warnings.append(terminal(
            f"{p}:{orphans[0][0]}: {len(orphans)} result record(s), the first on this "
            "line, carry a run_id that no header of the file has "
            f"({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}): how they were "
            "measured is unknown (a record copied from another file?); they are read, "
            "but compare them with care", 600))

