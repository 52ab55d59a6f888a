"""Untrusted text made safe for each place it is shown (one helper per sink).

Names and messages from case files and results files are data, never markup:
:func:`terminal` (control characters made visible), :func:`rich_markup` and
:func:`rich_text`, :func:`markdown`, :func:`filename`, :func:`plot_text`; the HTML
is the Jinja2 template with autoescape (docs/benchmark.md, "Nothing lost").
Only the standard library is imported here (rich on use).
"""

from __future__ import annotations

import hashlib
import html
import re
from typing import Any

__all__ = [
    "filename",
    "markdown",
    "plot_text",
    "rich_markup",
    "rich_text",
    "terminal",
]

# C0 and C1 controls, DEL, zero-width and bidirectional formatting characters,
# line/paragraph separators and the BOM: invisible or terminal-driving.
# Lone surrogates (bytes of a non-UTF-8 file name, decoded with surrogateescape)
# cannot be written to a UTF-8 file or terminal: shown as \udcXX too.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                      "\ud800-\udfff]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal(text: Any, max_len: int | None = None) -> str:
    """`text` as one line that cannot drive a terminal: every control character
    (ESC of ANSI/OSC sequences, CR, newline, bidi overrides) shown as ``\\xNN``
    or ``\\uNNNN``; cut to `max_len` characters (with ``...``) when given."""
    s = _CONTROL.sub(_visible, str(text))
    if max_len is not None and len(s) > max_len:
        s = s[: max(0, max_len - 3)] + "..."
    return s


def rich_markup(text: Any, max_len: int | None = None) -> str:
    """`text` for a rich markup string: :func:`terminal`, then square brackets
    escaped (``[/b]`` would raise, ``[big]`` would vanish)."""
    from rich.markup import escape

    return escape(terminal(text, max_len))


def rich_text(text: Any, style: str = "", max_len: int | None = None) -> Any:
    """A ``rich.text.Text`` of `text` (never parsed as markup), controls made visible."""
    from rich.text import Text

    return Text(terminal(text, max_len), style=style)


# Characters with a meaning in CommonMark/GFM (emphasis, code, links, tables,
# GitHub math `$`, strikethrough) anywhere in a line: backslash-escaped. HTML's
# `&`, `<` and `>` become entities (so no raw tag is left in the file at all).
_MD_INLINE = re.compile(r"([\\`*_\[\]|$~!{}])")
# ... and at the start of a line only (headings, lists, ordered lists).
_MD_START = re.compile(r"^(\s*)([#+=-]|\d+[.)])")


def markdown(text: Any) -> str:
    """`text` as literal Markdown inline text (one line): HTML as entities; links,
    emphasis, math and table pipes escaped with backslashes; controls made visible."""
    s = html.escape(terminal(text), quote=False)
    s = _MD_INLINE.sub(r"\\\1", s)
    m = _MD_START.match(s)
    if m:
        lead, mark = m.group(1), m.group(2)
        s = lead + mark[:-1] + "\\" + mark[-1] + s[m.end():]
    return s


_FILE_OK = re.compile(r"[^A-Za-z0-9._-]")


def filename(text: Any, max_bytes: int = 100) -> str:
    """A file-name component for `text`: ``[A-Za-z0-9._-]`` only, no leading dot,
    at most `max_bytes` bytes. When anything had to change, a hash of the
    original is appended, so two different names never map to one file."""
    s = str(text)
    safe = _FILE_OK.sub("_", s).lstrip(".") or "_"
    if safe == s and len(safe) <= max_bytes:
        return safe
    digest = hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe[: max(1, max_bytes - 13)]}-{digest}"


def plot_text(text: Any, max_len: int | None = None) -> str:
    """`text` for a matplotlib label or title: controls made visible, cut to
    `max_len`, and ``$`` escaped, so that it is never parsed as math text."""
    return terminal(text, max_len).replace("$", r"\$")
