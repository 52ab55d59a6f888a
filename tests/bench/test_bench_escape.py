"""Untrusted text at each sink: terminal, rich, Markdown, HTML, file names, plot text."""

from __future__ import annotations

import io

import pytest

from xlinalg._lib import _escape as E

HOSTILE = [
    "\x1b[2J\x1b]0;pwned\x07",          # ANSI clear screen, OSC window title
    "a\rb\nc\td\x00e\x7f\x9b",           # CR, newline, tab, NUL, DEL, C1 CSI
    "evil\u202etxt.exe\u200b\u2028",     # bidi override, zero width, line separator
    "[/b]", "[big]", "[bold red]x[/]", "x\\", "\\[b]",
    "$x^2$", "$$", "a$b", "<script>alert(1)</script>", "&amp;", "| a | b |",
    "**b** _i_ `c` [l](http://x) ![i](y) ~~s~~", "# h", "- item", "1. item", "> q",
    "名前", "😀" * 100, "x" * 1000, "", ".", "..", "../../etc/passwd", "a/b\\c:d*e?f",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_never_passes_control_characters(text):
    out = E.terminal(text)
    assert all(ord(c) >= 0x20 and not 0x7F <= ord(c) <= 0x9F for c in out)
    assert not any(c in out for c in "\u202e\u200b\u2028")
    assert "\n" not in out


def test_terminal_shows_what_it_replaced_and_cuts():
    assert E.terminal("a\x1b[31mb") == "a\\x1b[31mb"
    assert E.terminal("\u202e") == "\\u202e"
    assert E.terminal("abcdefgh", max_len=5) == "ab..."


@pytest.mark.parametrize("text", HOSTILE)
def test_rich_markup_and_text_print_the_name_itself(text):
    from rich.console import Console

    # inside markup, as the tables use it (a trailing backslash must not eat the tag)
    for renderable in (f"[bold]{E.rich_markup(text)}[/bold]", E.rich_text(text)):
        buf = io.StringIO()
        Console(file=buf, width=10_000, color_system=None).print(renderable)
        # what is printed is exactly the terminal-safe text: no tag vanished or raised
        assert buf.getvalue().rstrip("\n") == E.terminal(text).rstrip()


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_renders_to_the_text_itself(text):
    md = pytest.importorskip("markdown_it", reason="markdown-it-py (a rich dependency) "
                                                   "renders the Markdown")
    rendered = md.MarkdownIt("commonmark").enable(["table", "strikethrough"]).renderInline(E.markdown(text))
    import html

    # no HTML element, link, emphasis or code came out of the name: only its text
    assert html.unescape(rendered) == E.terminal(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_the_html_report_shows_the_text_itself(text):
    pytest.importorskip("jinja2")
    from markupsafe import escape

    from xlinalg.bench._report import render_html

    page = render_html([("p", text), ("table", [text], [[text]])])
    assert str(escape(E.terminal(text))) in page  # the text, controls shown, as text
    assert "<script>alert" not in page


def test_filename_is_safe_short_and_injective():
    names = HOSTILE + ["a b", "a_b", "a/b", "a_b-"]
    outs = [E.filename(n) for n in names]
    for n, o in zip(names, outs):
        assert len(o.encode()) <= 100, n
        assert o
        assert not o.startswith(".")
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in o)
    assert len(set(outs)) == len(set(names))  # distinct names never share a file
    assert E.filename("speedup_Q1") == "speedup_Q1"  # plain names are kept as they are


@pytest.mark.parametrize("text", ["$x^2$", "$$", "a$b$c", "\\$", "$\\frac{1}{0}$", "x\x1b"])
def test_plot_text_is_never_math_text(tmp_path, text):
    import matplotlib as mpl

    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.set_title(E.plot_text(text))
        ax.plot([1, 2], [1, 2], label=E.plot_text(text))
        ax.legend()
        fig.savefig(tmp_path / "p.png")
        assert ax.get_title().replace("\\$", "$") == E.terminal(text)
    finally:
        plt.close(fig)
