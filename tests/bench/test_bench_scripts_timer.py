"""``benchmarks/overhead.py`` and ``benchmarks/unrolled.py`` time with the project's
timer (:mod:`xlinalg.bench._timer`), not with timing loops of their own."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from conftest import benchmark_script
from xlinalg.bench import _timer

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("overhead.py", "overhead_against.py", "unrolled.py")
#: What a timing loop of its own would call.
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
          "time_ns", "timeit", "default_timer"}


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_clock_of_its_own(script: str) -> None:
    """No clock is read in the script's own code (the fresh-process snippets it runs
    are strings: they time one first call without importing the harness)."""
    tree = ast.parse((ROOT / "benchmarks" / script).read_text(encoding="utf-8"))
    reads = [n.lineno for n in ast.walk(tree)
             if (isinstance(n, ast.Attribute) and n.attr in CLOCKS)
             or (isinstance(n, ast.Name) and n.id in CLOCKS)
             or (isinstance(n, ast.alias) and n.name.split(".")[-1] in CLOCKS)]
    assert not reads, f"benchmarks/{script} reads a clock itself at lines {reads}"


def _load(script: str) -> Any:
    return benchmark_script(script)


def test_the_scripts_time_with_the_timer() -> None:
    pytest.importorskip("scipy")
    overhead = _load("overhead.py")
    assert overhead._calibrate is _timer.calibrate
    assert overhead._sample is _timer.time_block
    unrolled = _load("unrolled.py")
    assert unrolled.interleaved is _timer.interleaved
    assert unrolled.first_call is _timer.first_call


def test_the_plain_blocks_time_what_they_call() -> None:
    calls: list[int] = []
    number = _timer.calibrate(lambda: calls.append(1), 0.0)
    assert number == 1
    assert _timer.time_block(lambda: calls.append(1), 5) >= 0.0
    assert len(calls) == 6
    order: list[str] = []
    got = _timer.interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, 3, 0.0)
    assert {k: len(v) for k, v in got.items()} == {"a": 3, "b": 3}
    assert order[-6:] == ["a", "b", "b", "a", "a", "b"]  # the order rotates every round
