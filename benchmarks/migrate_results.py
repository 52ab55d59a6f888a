"""Rewrite results files of ``xlinalg bench`` to today's record schema, once.

Usage::

    python benchmarks/migrate_results.py benchmarks/results/*.jsonl.xz
    python benchmarks/migrate_results.py --check old.jsonl    # say what would change

Files written before the cases declared their fields lack, in each result
record, what the report places a cell by: ``section``, ``tags``, ``units``,
``peak``, ``compute_dtype`` (and ``case_doc``). The report no longer guesses
them; this tool writes them in, from the case of the same name as registered
today (:meth:`xlinalg.bench.Case.describe`). A field a record already holds is
kept. Records of a retired case (:data:`RETIRED`) are dropped, with the reason
printed: each repeated a document case that measures the same thing under its
own name. A record of a case that is neither registered nor retired gets the
fields of a case that declares nothing (section ``Other``).

Files written before the runner derived a record's rates from its own time hold,
in each record merged from several passes, the first pass's ``gflops``/``gbs``
beside a median over every pass: the two did not divide. Those rates are made
again from the record's time (:func:`xlinalg.bench._findings.rates_at`, what the
runner does today); the marks an older runner wrote against its own peak
(``above_peak``, ``cache_resident``) are dropped (the report judges every rate
against this machine's peak).

A file is rewritten only when something changes (aside, then renamed over it;
an xz file stays xz), so migrating a migrated file changes no byte. Exit
status: 0, or 1 with ``--check`` when a file would change, 2 when a file cannot
be read.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from xlinalg.bench._store import dumps_record

#: Cases removed because they repeated a document case: name -> (its successor, why).
RETIRED: dict[str, tuple[str, str]] = {
    "solve": ("q3_solve_sweep", "it repeated q3_solve_sweep's solves by matrix size"),
    "matmul": ("a1_gemm", "it repeated a1_gemm's square GEMMs"),
    "sigmoid": ("a4_sigmoid", "it repeated a4_sigmoid"),
}
#: The fields of a case that declares nothing (:class:`xlinalg.bench.Case`'s defaults).
UNDECLARED = {"section": "Other", "tags": [], "units": "GFLOP/s", "peak": "arithmetic"}
FIELDS = ("case_doc", "section", "tags", "units", "peak", "compute_dtype")


def declared(case: str, dtype: str) -> dict[str, Any]:
    """What a record of `case` run in `dtype` says about its case today."""
    from xlinalg.bench import get_case

    try:
        return get_case(case).describe(dtype)
    except ValueError:
        return {**UNDECLARED, "compute_dtype": dtype}


def _rerated(records: list[Any]) -> dict[int, dict[str, Any]]:
    """Each result record's ``throughput`` at its own time, by position in `records`
    (without the marks an older runner wrote against its own peak: the report judges
    rates against this machine's peak, ``_findings.rates_above_peak``)."""
    from xlinalg.bench._findings._fields import rates_at

    return {i: rates_at(rec["throughput"], rec["time"]) for i, rec in enumerate(records)
            if isinstance(rec, dict) and rec.get("type") == "result"
            and isinstance(rec.get("throughput"), dict) and isinstance(rec.get("time"), dict)}


def migrate_lines(lines: Iterable[str]) -> tuple[list[str], Counter[str]]:
    """The lines of a migrated file, and what changed (``"filled <case>"``,
    ``"dropped <case>"``, ``"re-rated <case>"``: counts of records)."""
    out: list[str] = []
    changed: Counter[str] = Counter()
    lines = list(lines)
    parsed = [json.loads(x) if x.strip() else None for x in lines]
    rates = _rerated(parsed)
    for pos, line in enumerate(lines):
        if not line.strip():
            out.append(line)
            continue
        rec = parsed[pos]
        if not isinstance(rec, dict) or rec.get("type") != "result":
            out.append(line)
            continue
        case = str(rec.get("case"))
        if case in RETIRED:
            changed[f"dropped {case}"] += 1
            continue
        missing = [k for k in FIELDS if k not in rec]
        add = {k: v for k, v in declared(case, str(rec.get("dtype"))).items() if k in missing}
        rerate = pos in rates and json.dumps(rates[pos]) != json.dumps(rec["throughput"])
        if not add and not rerate:  # (a case not registered here has no doc to write in)
            out.append(line)
            continue
        if add:
            rec.update(add)
            changed[f"filled {case}"] += 1
        if rerate:
            rec["throughput"] = rates[pos]
            changed[f"re-rated {case}"] += 1
        out.append(dumps_record(rec) + ("\n" if line.endswith("\n") else ""))
    return out, changed


def _read(path: Path) -> tuple[str, bool]:
    raw = path.read_bytes()
    xz = raw.startswith(b"\xfd7zXZ\x00")
    return (lzma.decompress(raw) if xz else raw).decode("utf-8"), xz


def migrate_file(path: Path, *, check: bool = False) -> Counter[str]:
    """Migrate `path` in place (not with `check`); what changed."""
    text, xz = _read(path)
    lines, changed = migrate_lines(text.splitlines(keepends=True))
    if changed and not check:
        data = "".join(lines).encode("utf-8")
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME) if xz else data)
        os.replace(tmp, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = p.parse_args(argv)
    import xlinalg.study.cases  # noqa: F401  (registers the documents' cases)

    would = False
    for path in args.files:
        try:
            changed = migrate_file(path, check=args.check)
        except (OSError, ValueError, lzma.LZMAError) as exc:
            print(f"migrate_results: error: {path}: {exc}", file=sys.stderr)
            return 2
        would = would or bool(changed)
        if not changed:
            print(f"{path}: already today's schema")
        for what, n in sorted(changed.items()):
            verb, case = what.split(" ", 1)
            why = {"dropped": f" ({RETIRED.get(case, ('', ''))[1]}; measure "
                              f"{RETIRED.get(case, ('', ''))[0]} instead)",
                   "filled": " (the case's declared fields written in)",
                   "re-rated": " (rates made again from the record's own time)"}[verb]
            print(f"{path}: {verb} {n} record(s) of {case}{why}")
    return 1 if args.check and would else 0


if __name__ == "__main__":
    sys.exit(main())
