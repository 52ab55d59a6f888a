"""``xlinalg bench``'s output while it runs (progress) and at the end (the table)."""

from __future__ import annotations

import sys
import time
from typing import Any

from ._common import _console, _fmt_time


class _Progress:
    """A rich progress bar on a terminal; one line per cell otherwise. Both show the
    time elapsed and an estimate of the time left (from the pace of the cells so far)."""

    def __init__(self, enabled: bool = True, clock: Any = time.monotonic) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None
        self.finished = 0
        self.total = 0
        self.clock = clock
        self.started = clock()

    def eta(self) -> str:
        """``"elapsed 2:05, about 7:40 left"`` (the pace so far times the cells left)."""
        elapsed = self.clock() - self.started
        text = f"elapsed {_clock_text(elapsed)}"
        if self.finished and self.total > self.finished:
            left = elapsed / self.finished * (self.total - self.finished)
            text += f", about {_clock_text(left)} left"
        return text

    def __call__(self, event: str, payload: dict[str, Any], index: int, total: int) -> None:
        if event == "plan":
            self.total = total
            self.started = self.clock()
            if payload.get("already_done"):
                owed = payload.get("second_pass") or 0
                print(f"resuming: {payload['already_done']} cell(s) already in the file"
                      + (f" ({owed} of them still owe their second pass)" if owed else "")
                      + f", {payload.get('cells', total)} to run", file=sys.stderr)
            if self.enabled and sys.stderr.isatty():
                try:
                    from rich.progress import (
                        BarColumn,
                        MofNCompleteColumn,
                        Progress,
                        TextColumn,
                        TimeElapsedColumn,
                        TimeRemainingColumn,
                    )
                except ImportError:  # pragma: no cover
                    return
                self.bar = Progress(
                    TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"),
                    TimeRemainingColumn(), console=_console(stderr=True), transient=True,
                )
                self.bar.start()
                self.task = self.bar.add_task("benchmark", total=total)
        elif event == "start":
            if self.bar is not None:
                from .._lib._escape import rich_markup

                desc = f"{payload['case']} {payload['backend']} {payload['size_label']}"
                self.bar.update(self.task, description=rich_markup(desc, max_len=120))
        elif event == "result":
            self.finished += 1
            if self.bar is not None:
                self.bar.advance(self.task)
            elif self.enabled:
                from .._lib._escape import terminal
                from ..bench._findings import compute_dtype, dtype_text

                # A12's cells compute in their own dtype whatever the run's
                dt_txt = dtype_text(str(payload.get("dtype")), [compute_dtype(payload)])
                print(terminal(f"[{index + 1}/{total}] {payload['case']} {payload['backend']} "
                               f"{dt_txt} {payload['size_label']}: "
                               f"{_cell_text(payload)} ({self.eta()})"), file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _clock_text(seconds: float) -> str:
    """``125.3`` -> ``"2:05"``; an hour or more: ``"1:02:05"``."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def _cell_text(r: dict[str, Any], rich_markup: bool = False) -> str:
    st = r.get("status")
    if st == "skipped":
        return "skipped"
    if st == "failed":
        kind = r.get("error", {}).get("kind", "error")
        label = {"oom": "OOM", "timeout": "timeout", "crash": "crashed"}.get(kind, "error")
        return f"[red]{label}[/]" if rich_markup else label
    from ..bench._findings import quartiles
    from ..bench._verdict import fmt_spread

    t = r.get("time", {})
    txt = _fmt_time(t.get("median_s")) + fmt_spread(quartiles(r))  # half the IQR / median
    if t.get("noisy"):
        txt += " !"
    if st == "wrong":
        txt += " WRONG"
        if rich_markup:
            txt = f"[red]{txt}[/]"
    return txt


def verdicts(records: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], str],
                                                      dict[tuple[str, str], str]]:
    """Per (case, size) row: the backend named fastest, and the verdict's words: the
    report's own (:func:`xlinalg.bench._findings.winners`, over the run's groups), its
    parallelism note shortened to a "*"."""
    from ..bench._findings import winners
    from ..bench._verdict import verdict_text

    fastest: dict[tuple[str, str], str] = {}
    said: dict[tuple[str, str], str] = {}
    for w in winners(records):
        if w["runner_up"] is None:
            continue
        said[(w["case"], w["size"])] = (w["text"] if not w.get("note") or w.get("fdr")
                                        else verdict_text({**w, "note": ""}) + " *")
        if not w["tie"] and not w.get("no_verdict"):
            fastest[(w["case"], w["size"])] = w["winner"]
    return fastest, said


def print_table(records: list[dict[str, Any]], config: Any) -> None:
    if not records:
        print("no cells ran")
        return
    backends = list(dict.fromkeys(r["backend"] for r in records))
    rows: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in records:
        rows.setdefault((r["case"], r["size_label"]), {})[r["backend"]] = r
    from .._lib._escape import rich_text, terminal

    console = _console()
    fastest, said = verdicts(records)
    title = (f"median time per call ({config.dtype}; ±: half the IQR; !: noisy; "
             "second line: GFLOP/s; bold *: fastest beyond the noise, unmarked: tie; "
             "verdict: the report's, the speed-up over the second with its interval; a * after it: the "
             "backends kept different numbers of cores busy)")
    if console is not None:
        from rich.table import Table

        t = Table(title=rich_text(title), title_justify="left")
        t.add_column("case")
        t.add_column("size")
        for b in backends:  # names are data (case files): rich Text, never markup
            t.add_column(rich_text(b), justify="right")
        t.add_column("verdict")
        for (case, size), by in rows.items():
            cells = []
            for b in backends:
                rb = by.get(b)
                if rb is None:
                    cells.append("")
                    continue
                txt = _cell_text(rb, rich_markup=True)
                if fastest.get((case, size)) == b:
                    txt = f"[bold green]*{txt}[/]"
                gf = (rb.get("throughput") or {}).get("gflops")
                if gf is not None and rb.get("status") in ("ok", "wrong", "unchecked"):
                    txt += f"\n[dim]{gf:.3g} GF/s[/]"
                cells.append(txt)
            t.add_row(rich_text(case), rich_text(size), *cells, rich_text(said.get((case, size), "")))
        console.print(t)
    else:
        print(terminal(title))
        print(terminal("  ".join(["case".ljust(10), "size".ljust(14)]
                                 + [b.rjust(18) for b in backends] + ["verdict"])))
        for (case, size), by in rows.items():
            print(terminal("  ".join([case.ljust(10), size.ljust(14)]
                                     + [(("*" if fastest.get((case, size)) == b else "")
                                         + (_cell_text(by[b]) if b in by else "")).rjust(18)
                                        for b in backends]
                                     + [said.get((case, size), "")])))
    for r in records:  # messages come from the libraries and from case files
        st = r.get("stall")
        if isinstance(st, dict) and st.get("stalled"):
            print(terminal(f"  {r['key']}: STALLED: median "
                           f"{_fmt_time(st.get('remeasured_median_s'))}, first "
                           f"{_fmt_time(st.get('first_median_s'))}, recheck "
                           f"{_fmt_time(st.get('recheck_median_s'))}"))
        if r.get("status") == "failed":
            e = r.get("error", {})
            print(terminal(f"  {r['key']}: {e.get('kind')}: {e.get('message')}"))
        elif r.get("status") == "wrong":
            print(terminal(f"  {r['key']}: WRONG: {r.get('check', {}).get('message')}"))
    skips: dict[str, int] = {}
    for r in records:
        if r.get("status") == "skipped":
            k = str(r.get("skip_reason") or "no reason recorded")
            skips[k] = skips.get(k, 0) + 1
    if skips:
        print(f"{sum(skips.values())} skipped cell(s), by reason:")
        for k, n in sorted(skips.items(), key=lambda kv: -kv[1]):
            print(terminal(f"  {n} x {k}"))


def conclusion_line(records: list[dict[str, Any]]) -> str | None:
    """The run's last word on its verdicts: how many groups (case, dtype, size on
    two or more backends) named a fastest backend, and why the others did not;
    "concluded nothing" when none did. None without such a group."""
    from ..bench._findings import winners

    named = ties = below = 0
    nov: list[str] = []
    for v in winners(records):
        if v["runner_up"] is None:
            continue
        if v.get("no_verdict"):
            nov.append(str(v["no_verdict"]))
        elif not v["tie"]:
            named += 1
        elif "below the margin" in v["text"] or v.get("fdr"):
            below += 1
        else:
            ties += 1
    total = named + ties + below + len(nov)
    if not total:
        return None
    why = "; ".join(x for x in (
        f"{len(nov)} no verdict ({nov[0]})" if nov else "",
        f"{ties} tie(s) within noise" if ties else "",
        f"{below} real difference(s) below the margin or the run's false-discovery rate"
        if below else "") if x)
    if not named:
        return f"concluded nothing: no group of {total} named a fastest backend ({why})"
    return f"verdicts: a fastest backend named in {named} of {total} groups" + (
        f" ({why})" if why else "")
