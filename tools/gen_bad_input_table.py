"""Render docs/bad-input-matrix.md from the spec in tests/test_bad_input.py.

Usage::

    python tools/gen_bad_input_table.py          # write the file
    python tools/gen_bad_input_table.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DOC = ROOT / "docs" / "bad-input-matrix.md"


def render() -> str:
    sys.path.insert(0, str(TESTS))  # the test module imports its conftest helpers
    spec = importlib.util.spec_from_file_location("_bad_input_spec", TESTS / "test_bad_input.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return str(mod.render_markdown())


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text(encoding="utf-8") != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run python tools/gen_bad_input_table.py", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
