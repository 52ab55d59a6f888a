"""``xlinalg bench --tune``: the command; the measurements and the table are the unrolled
solver's tuning (:mod:`xlinalg.study._tune`), imported when it runs."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from ._common import RESULTS_DIR, ExitCode, UsageError, _results_dir

__all__ = ["cli_tune"]


def cli_tune(args: Any) -> ExitCode:
    """``xlinalg bench --tune``: measure, derive, write the table to ``--out``."""
    from .._kernels._numba import numba_problem
    from .._kernels._schedule import MAX_N
    from ..backends import get_backend
    from ..backends._tune_natives import BLOCKWISE_BACKENDS, TUNE_BACKENDS
    from ..study._tune import (
        NEVER,
        QUICK_BATCHES,
        TUNE_BATCHES,
        TUNE_DTYPES,
        tune,
        write_table,
    )

    def ints(text: str | None, default: Sequence[int], option: str, lo: int, hi: int) -> list[int]:
        if text is None:
            return list(default)
        try:
            vals = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            vals = []
        if not vals or not all(lo <= v <= hi for v in vals):
            raise UsageError(f"xlinalg bench: error: {option}: expected a comma-separated list of whole "
                              f"numbers from {lo} to {hi}, got {text[:60]!r}")
        return vals

    problem = numba_problem()
    backends = [b.strip() for b in args.backends.split(",")] if args.backends else list(TUNE_BACKENDS)
    if problem is not None and any(b in TUNE_BACKENDS for b in backends):
        raise UsageError(f"xlinalg bench: error: --tune measures NumPy's compiled kernel, and {problem}")
    out = args.out or os.path.join(RESULTS_DIR, "xlinalg-unrolled-selection.json")
    if os.path.exists(out) and not args.overwrite:
        raise UsageError(f"xlinalg bench: error: --out {out!r} exists; add --overwrite to replace it")
    bad = [b for b in backends if b not in TUNE_BACKENDS + BLOCKWISE_BACKENDS]
    if bad:
        raise UsageError(f"xlinalg bench: error: --tune measures the CPU backends "
                          f"{', '.join(TUNE_BACKENDS + BLOCKWISE_BACKENDS)}; got {', '.join(map(repr, bad))}")
    avail = [b for b in backends if get_backend(b).unavailable_reason() is None]
    if not avail:
        raise UsageError(f"xlinalg bench: error: --tune: none of {', '.join(backends)} is installed here")
    dtypes = [d.strip() for d in args.tune_dtypes.split(",")] if args.tune_dtypes else list(TUNE_DTYPES)
    if not dtypes or any(d not in TUNE_DTYPES for d in dtypes):
        raise UsageError(f"xlinalg bench: error: --tune-dtypes: expected some of {', '.join(TUNE_DTYPES)}, "
                          f"got {args.tune_dtypes[:60]!r}")
    ns = ints(args.tune_n, range(1, MAX_N + 1), "--tune-n", 1, MAX_N)
    quick = args.scale == "quick"
    batches = ints(args.tune_batches, QUICK_BATCHES if quick else TUNE_BATCHES, "--tune-batches", 1, 10**8)
    print(f"Tuning method='auto' on {', '.join(avail)} ({', '.join(dtypes)}), n = {ns}, batches {batches}: "
          "xl.solve(method='native') against the numba kernel", flush=True)
    if args.dry_run:
        print(f"  {len(avail) * len(dtypes) * len(set(ns)) * len(set(batches))} cells, then the first calls; "
              f"would write {out} (dry run: nothing timed)")
        return ExitCode.OK
    if not args.out:
        _results_dir()
    results = tune(avail, dtypes, sorted(set(ns)), sorted(set(batches)), repeats=2 if quick else 3,
                   progress=lambda s: print(s, flush=True))
    source = os.path.abspath(out)
    table = write_table(results, out, source)
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    doc["measurements"] = results  # the rows the rules came from, beside them
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    for (backend, dtype), rule in table.items():
        mins = ", ".join(f"n={i + 1}: " + ("never" if v == NEVER else f">= {v}") for i, v in enumerate(rule["batch_min"]))
        print(f"  {backend} {dtype}: {mins}")
    if not table:
        print("  the kernel won nowhere by 20%: method='auto' keeps the native path on the measured backends")
    print(f"wrote {out}; use it with:  export XLINALG_UNROLLED_SELECTION={source}")
    return ExitCode.OK
