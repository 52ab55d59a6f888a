"""The run facts ``docs/question.md`` quotes must be what the committed files record.

The page describes each committed run it links (``benchmarks/results/*.jsonl.xz``): when it
ran and under what load. A load range that leaves out what the run recorded, or an
oversubscribed run described without saying so, misleads a reader about how far the
figures can be trusted. ``benchmarks/run_facts.py`` reads the facts from the files; this
test holds the page to them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "question.md"
_LINK = re.compile(r"benchmarks/results/([\w.-]+\.jsonl\.xz)")
_LOAD = re.compile(r"load\s+average\s+(\d+(?:\.\d+)?)\s*[-–]\s*(\d+(?:\.\d+)?)")


def _run_facts() -> Any:
    return benchmark_script("run_facts.py")


def statements(text: str) -> dict[str, list[str]]:
    """The text the page says about each linked results file.

    A paragraph's text after a link to a file, up to the next link to another file,
    speaks of that file.
    """
    out: dict[str, list[str]] = {}
    for para in re.split(r"\n\s*\n", text):
        links = list(_LINK.finditer(para))
        for i, m in enumerate(links):
            if i and links[i - 1].group(1) == m.group(1):
                continue  # a link's text and its target name the same file
            end = len(para)
            for later in links[i + 1:]:
                if later.group(1) != m.group(1):
                    end = later.start()
                    break
            out.setdefault(m.group(1), []).append(para[m.end():end])
    return out


def problems(name: str, said: list[str], facts: dict[str, Any]) -> list[str]:
    """What the page's text about one file gets wrong against the file's facts."""
    out = []
    text = " ".join(said)
    ranges = [(float(a), float(b)) for a, b in _LOAD.findall(text)]
    lo, hi = facts["load_range"]
    if not ranges:
        out.append(f"{name}: the page states no load range (the file records {lo:.2f}-{hi:.2f})")
    for a, b in ranges:
        # figures are rounded to one decimal: a range must cover the recorded one
        if a > lo + 0.05 or b < hi - 0.05:
            out.append(f"{name}: the page says load average {a:g}-{b:g}, "
                       f"the file records {lo:.2f}-{hi:.2f}")
    if facts["oversubscribed_at_a_start"] and "oversubscribed" not in text:
        out.append(f"{name}: a run of it started oversubscribed, the page does not say so")
    return out


def test_the_checker_catches_an_understated_range_and_a_hidden_oversubscription() -> None:
    facts = {"load_range": [0.79, 2.19], "oversubscribed_at_a_start": True}
    said = statements("A run, [x](../benchmarks/results/a.jsonl.xz), on a quiet machine "
                      "(load average 0.8-1.8).\n\nAnother, "
                      "[y](../benchmarks/results/b.jsonl.xz), load average 0.1-9.")
    assert said.keys() == {"a.jsonl.xz", "b.jsonl.xz"}
    found = problems("a.jsonl.xz", said["a.jsonl.xz"], facts)
    assert any("0.8-1.8" in p for p in found)
    assert any("oversubscribed" in p for p in found)
    assert problems("b.jsonl.xz", said["b.jsonl.xz"], {**facts, "oversubscribed_at_a_start": False}) == []
    assert problems("c", [" no figure "], facts)[0].startswith("c: the page states no load range")


def test_question_page_quotes_the_committed_runs_as_they_were() -> None:
    said = statements(PAGE.read_text(encoding="utf-8"))
    assert said, "docs/question.md links no committed results file"
    run_facts = _run_facts()
    found = []
    for name, text in sorted(said.items()):
        path = ROOT / "benchmarks" / "results" / name
        if not path.exists():
            pytest.fail(f"docs/question.md links {name}, which is not committed")
        found += problems(name, text, run_facts.facts(str(path)))
    assert not found, "\n".join(found)
