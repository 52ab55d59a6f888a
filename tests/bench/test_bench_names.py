"""Case names are data: escaped at every sink (terminal table, progress, Markdown,
HTML, plot text, plot file names, compare), never interpreted."""

from __future__ import annotations

import contextlib
import io
import textwrap

import pytest

from xlinalg.bench import read_results, unregister_case
from xlinalg.cli import main

NAMES = {
    "math": "q3_$x^2$",                   # matplotlib math text in a sweep plot title
    "long": "q3_" + "é" * 200,            # > 255 bytes: too long for a plot file name
    "close_tag": "q3_[/b]",               # rich markup: raised MarkupError in the table
    "style_tag": "q3_[big]",              # rich markup: vanished from the table
    "html": "q3_<script>alert(1)</script>",
    "ansi": "q3_\x1b[2J\x1b]0;pwned\x07",  # clear screen, set the window title
}

CASES = textwrap.dedent('''
    import numpy as np
    from xlinalg.bench import Case, register_case

    NAMES = {names!r}

    def _setup(rng, n):
        return (rng.standard_normal((n, n)), rng.standard_normal(n))

    for name in NAMES.values():
        register_case(Case(name=name, doc="hostile <b>name</b> $x$ [red]doc[/]",
                           section="Q3", tags=("sweep",),
                           sizes={{"quick": [4, 8]}}, setup=_setup,
                           op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
                           reference=np.linalg.solve,
                           flops=lambda n: 2.0 * n ** 3 / 3), replace=True)
''')


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("names")
    cf = d / "hostile_cases.py"
    cf.write_text(CASES.format(names=NAMES))
    out = d / "r.jsonl"
    try:
        code, stdout, stderr = run_cli(
            "bench", "--quick", "--backends", "numpy", "--cases", ",".join(NAMES.values()),
            "--case-file", str(cf), "--no-calibrate", "--no-isolate", "--time-limit", "60",
            "--out", str(out))
        yield d, out, code, stdout, stderr
    finally:  # in-process: leave the registry as the other tests expect it
        for n in NAMES.values():
            unregister_case(n)


def test_bench_table_and_progress_show_names_as_text(hostile_run):
    _, out, code, stdout, stderr = hostile_run
    assert code == 0, stderr
    assert "Traceback" not in stderr + stdout
    assert "internal error" not in stderr
    assert "[/b]" in stdout
    assert "[big]" in stdout  # was swallowed as a style tag
    assert "\x1b" not in stdout + stderr  # no escape sequence reaches the terminal
    assert "\\x1b[2J" in stdout
    assert len(read_results(out).records) == 2 * len(NAMES)


def test_report_escapes_names_in_markdown_html_plots(hostile_run):
    d, out, _, _, _ = hostile_run
    rep = d / "rep"
    code, _, err = run_cli("report", str(out), "--out", str(rep))
    assert code == 0, err
    md = (rep / "report.md").read_text()
    html = (rep / "report.html").read_text()
    for text in (md, html):
        assert "<script>" not in text
        assert "<b>name</b>" not in text
        assert "\x1b" not in text
    assert "&lt;script&gt;" in html
    pngs = list(rep.glob("*.png"))
    assert pngs, "no plot: the hostile sweep cases were not plotted"
    assert all(len(p.name.encode()) <= 255 for p in rep.iterdir())


def test_compare_shows_names_without_terminal_control(hostile_run):
    _, out, _, _, _ = hostile_run
    code, stdout, err = run_cli("compare", str(out), str(out))
    assert code == 0, err
    assert "\x1b" not in stdout + err
    assert "\\x1b]0;pwned\\x07" in stdout
