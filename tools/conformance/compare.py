"""Run array-api-tests' test_linalg.py on a namespace twice, natively and with
xlinalg's linear algebra (xlinalg_namespace.py), and print the per-test outcomes
side by side: a test that fails with xlinalg and passes natively is xlinalg's defect.

Usage (docs/conformance.md)::

    python tools/conformance/compare.py SUITE_DIR NAMESPACE [--max-examples N] [--seed S]

SUITE_DIR: a checkout of data-apis/array-api-tests with its ``array-api`` submodule;
NAMESPACE: ``array_api_compat.numpy``, ``array_api_strict``, ``array_api_compat.torch``...
It needs pytest, hypothesis, ndindex and pytest-json-report (the suite's conftest).
Exit status 1 when some test fails with xlinalg only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent


def outcomes(junit: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "?")
        kinds = {child.tag for child in case}
        out[name] = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds
                     else "passed")
    return out


def run(suite: Path, namespace: str, native: bool, max_examples: int, seed: int, junit: Path) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    env["ARRAY_API_TESTS_MODULE"] = (
        f"exec('import xlinalg_namespace as m; xp = m.namespace(\"{namespace}\", native={native})')")
    cmd = [sys.executable, "-m", "pytest", "array_api_tests/test_linalg.py", "-q", "-p", "no:cacheprovider",
           f"--max-examples={max_examples}", f"--hypothesis-seed={seed}", f"--junitxml={junit}"]
    return subprocess.run(cmd, cwd=suite, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", type=Path)
    p.add_argument("namespace")
    p.add_argument("--max-examples", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        res = {}
        for native in (True, False):
            junit = Path(tmp) / f"{'native' if native else 'xlinalg'}.xml"
            run(args.suite, args.namespace, native, args.max_examples, args.seed, junit)
            res[native] = outcomes(junit)
    names = sorted(set(res[True]) | set(res[False]))
    worse = [n for n in names if res[False].get(n) == "failed" and res[True].get(n) == "passed"]
    print(f"\n{args.namespace}: {len(names)} tests, --max-examples={args.max_examples} "
          f"--hypothesis-seed={args.seed}")
    print(f"| test | {args.namespace} | with xlinalg |\n|---|---|---|")
    for n in names:
        print(f"| `{n}` | {res[True].get(n, '-')} | {res[False].get(n, '-')} |")
    print(f"\nfailing with xlinalg only: {', '.join(worse) or 'none'}")
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
