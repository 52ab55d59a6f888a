"""Sphinx extension: the pages generated from the operations' declarations.

Replaces each marker in a page's source, as Sphinx reads it, with the text
:func:`xlinalg._pages.render` makes from the declarations (the capabilities
tables, the bad-input matrix, the API reference's list of operations). Markers:
a MyST fence ``{xlinalg-generated} NAME`` (Markdown) or a line
``.. xlinalg-generated:: NAME`` (inside an ``eval-rst`` block). The pages holding
markers are read again at every build, so an incremental build is current too.
"""

from __future__ import annotations

import re
from typing import Any

from xlinalg._pages import render

_MARKER = re.compile(
    r"^```\{xlinalg-generated\}[ \t]+(?P<md>[\w-]+)[ \t]*\n```[ \t]*$"
    r"|^\.\. xlinalg-generated::[ \t]+(?P<rst>[\w-]+)[ \t]*$",
    re.MULTILINE,
)


def _fill(app: Any, docname: str, source: list[str]) -> None:
    source[0] = _MARKER.sub(lambda m: render(m.group("md") or m.group("rst")), source[0])


def _always_outdated(app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    # the declarations live in the source code, not in the page: pages with a
    # marker are read again whenever the site is built
    out = []
    for docname in env.found_docs:
        path = env.doc2path(docname)
        with open(path, encoding="utf-8") as f:
            if _MARKER.search(f.read()):
                out.append(docname)
    return sorted(out)


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _fill)
    app.connect("env-get-outdated", _always_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
