"""The ``xlinalg`` command (placeholder until the benchmark CLI lands)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    from . import __version__, backends

    parser = argparse.ArgumentParser(prog="xlinalg", description="xlinalg command line")
    parser.add_argument("--version", action="version", version=f"xlinalg {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="list the backends and whether they are available")
    args = parser.parse_args(argv)
    if args.command in (None, "info"):
        for name in backends.BACKEND_NAMES:
            reason = backends.get_backend(name).unavailable_reason()
            print(f"{name:18s} {'available' if reason is None else 'unavailable: ' + reason}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
