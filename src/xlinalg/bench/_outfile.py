"""Writing the report's files (report.md, report.html, the plots' PNGs) safely.

Each file is written whole to a new temporary file in the same directory and
then renamed over its name (``os.replace``): a reader never sees half a file, an
interrupted write leaves the old one, and the name is replaced, never the file
it led to. A name that is a symbolic link is refused with an error naming it
(a link placed in the output directory must not redirect the write to another
file), and so is one that is not a regular file (a directory, a FIFO).
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from pathlib import Path

from ._store import LINK_REFUSED

__all__ = ["OutputFileError", "write_output"]


class OutputFileError(OSError):
    """An output file's name cannot be written (a link, not a regular file);
    ``filename`` is the path and ``strerror`` says why, as for any OSError."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(0, why, os.fspath(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def write_output(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` through a temporary file renamed over it.

    Raises
    ------
    OutputFileError
        `path` is a symbolic link, or exists and is not a regular file.
    OSError
        The directory cannot be written (full, read-only, missing).
    """
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISLNK(st.st_mode):
            raise OutputFileError(p, LINK_REFUSED)
        if not stat.S_ISREG(st.st_mode):
            raise OutputFileError(p, "exists and is not a regular file (a directory?): "
                                     "move it away or choose another --out")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:12]}.tmp")
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    fd = os.open(tmp, flags, 0o666)  # the umask decides, as for any new file
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.replace(tmp, p)  # renames over the name: a link made meanwhile is replaced too
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p
