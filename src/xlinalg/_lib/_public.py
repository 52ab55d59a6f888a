"""Public classes show their public module path (``xlinalg.LinAlgError``)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["publish"]


def publish(module: str, namespace: Mapping[str, object]) -> None:
    """Set ``__module__`` of every class in `namespace`'s ``__all__`` that lives in a
    private submodule of `module` to `module` itself.

    A traceback, ``repr`` of the class and ``pickle`` then name the path users
    import it from (``xlinalg.LinAlgError``, not ``xlinalg._lib._errors.LinAlgError``),
    and that path resolves: `module` exports the name.
    """
    for name in namespace["__all__"]:  # type: ignore[attr-defined]
        obj = namespace[name]
        if isinstance(obj, type) and obj.__module__.startswith(module + "._") and obj.__qualname__ == name:
            obj.__module__ = module
