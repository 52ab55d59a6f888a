"""Sphinx configuration of the xlinalg site.

Build it (warnings are errors; a broken link or cross-reference fails)::

    pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are MyST Markdown; the API reference comes from the numpydoc docstrings.
The capabilities tables, the bad-input matrix and the API reference's list of
operations are rendered from the operations' declarations at every build by the
extension ``_ext/xlinalg_generated.py``; none of it is committed or copied by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))  # the checkout's xlinalg, installed or not
sys.path.insert(0, str(DOCS / "_ext"))  # the site's own extension

import xlinalg  # noqa: E402

project = "xlinalg"
author = "xlinalg developers"
copyright = "xlinalg developers"
version = release = xlinalg.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "xlinalg_generated",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "conftest.py"]

# Every cross-reference must resolve (with -W, a dangling one fails the build).
nitpicky = True
nitpick_ignore_regex = [
    # numpydoc's plain-text types and the standard's "array" are not objects to link.
    ("py:class", r"array|array_like|optional|callable|object|module|Any|Backend"),
    # Other libraries' objects: the build runs offline (no intersphinx inventories).
    ("py:.*", r"(numpy|torch|jax|cupy|dask|array_api_strict|array_api_compat|scipy)\..*"),
]

# MyST: heading anchors for [text](page.md#anchor) links; links to files that are
# not pages (results, reports, scripts) become downloads and must exist.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
suppress_warnings: list[str] = []

# numpydoc renders the docstrings; signatures carry no type hints (the docstrings
# give the types), the members are listed by hand in api.md.
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autosummary_generate = False

html_theme = "pydata_sphinx_theme"
html_title = "xlinalg"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []


# ---------------------------------------------------------------------- links out of docs/
_OUTSIDE = re.compile(r"\]\((\.\./[^)\s#]+)\)")


def _link_outside_as_download(app: Any, docname: str, source: list[str]) -> None:
    """Links from a page to repository files outside docs/ (``../benchmarks/...``)
    read well on GitHub; on the site they become downloads (``path:``), which
    Sphinx still checks exist. Markdown targets among them are not pages here."""
    source[0] = _OUTSIDE.sub(r"](path:\1)", source[0])


def setup(app: Any) -> None:
    app.connect("source-read", _link_outside_as_download)
