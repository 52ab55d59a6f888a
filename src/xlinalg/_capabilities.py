"""What each public operation does on each backend, as data.

One table, function × backend: whether it is supported, *how* xlinalg computes
it there (which native kernel, or which standard operations), and the known
differences a user should expect. The cells are declared at each function
(:func:`xlinalg._lib._declare.declare`, SciPy's ``xp_capabilities`` is the
model); this module gathers them. The tests take their function lists from
:data:`OPERATIONS`, and the site renders ``docs/capabilities.md`` from
:func:`markdown` when it is built (``python -m xlinalg._capabilities`` prints it).

Nothing here imports an array library.
"""

from __future__ import annotations

import sys

from ._lib._declare import Capability, operations
from .backends import BACKEND_NAMES, get_backend

__all__ = ["CAPABILITIES", "ELEMENTWISE", "LINALG", "OPERATIONS", "Capability", "markdown"]

#: the array functions of the linear-algebra part, in documentation order
LINALG = tuple(op.name for op in operations("linalg"))
#: the elementwise functions
ELEMENTWISE = tuple(op.name for op in operations("elementwise"))
#: every public operation on arrays (the registry's own functions, ``backend_of``,
#: ``to``, ``synchronize``, ``available_backends``, are not operations)
OPERATIONS = tuple(op.name for op in operations())

#: operation -> backend -> :class:`Capability`
CAPABILITIES: dict[str, dict[str, Capability]] = {
    op.name: op.capabilities([get_backend(n) for n in BACKEND_NAMES]) for op in operations()
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def tables() -> str:
    """One table per operation (backend, how, differences), as MyST Markdown."""
    out: list[str] = []
    for op in OPERATIONS:
        out += ["", f"## `{op}`", "", "| backend | supported | how | differences |", "|---|---|---|---|"]
        for backend in BACKEND_NAMES:
            cap = CAPABILITIES[op][backend]
            out.append(f"| {backend} | {'yes' if cap.supported else 'no'} | {_cell(cap.how)} "
                       f"| {_cell(cap.notes) or '-'} |")
    return "\n".join(out[1:]) + "\n"


def markdown() -> str:
    """The tables under the page's title (``python -m xlinalg._capabilities``)."""
    return "# Capabilities: each operation on each backend\n\n" + tables()


if __name__ == "__main__":
    sys.stdout.write(markdown())
