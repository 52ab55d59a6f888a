"""Environment variables: one parser for every flag xlinalg reads.

docs/environment.md lists each variable. A flag accepts the usual spellings,
case-insensitively: ``1/0``, ``true/false``, ``yes/no``, ``on/off``; unset or empty
means the default. Anything else raises a :class:`ValueError` naming the variable,
the value and the accepted spellings (environment variables are data from outside).
"""

from __future__ import annotations

import os

__all__ = ["FALSE", "TRUE", "env_flag", "parse_flag"]

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def parse_flag(name: str, raw: str | None, default: bool) -> bool:
    """The boolean value `raw` of environment variable `name` (None or blank: `default`)."""
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValueError(
        f"environment variable {name}={raw!r} is not a boolean: use 1/0, true/false, "
        "yes/no or on/off (any case), or unset it (see docs/environment.md)"
    )


def env_flag(name: str, default: bool = False) -> bool:
    """The boolean environment variable `name` (see :func:`parse_flag`)."""
    return parse_flag(name, os.environ.get(name), default)
