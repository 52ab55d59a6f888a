"""Times at the ends of the float range in a results file (untrusted): 1e308,
1e-308, subnormals, a single huge sample among small ones. ``compare`` and the
report's ratios must give a number, an interval or a "not comparable" row, never
an exception (OverflowError from ``math.exp``, ValueError from ``log(0)``,
ZeroDivisionError from a quotient that underflowed)."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_bench_schema import result, run_cli, write
from xlinalg._lib._units import format_time
from xlinalg.bench._compare import compare_records
from xlinalg.bench._findings._verdicts import fmt_interval, fmt_ratio, ratio, verdict
from xlinalg.bench._stats import all_pairs, exp_or_limit, paired_ratio, ratio_interval
from xlinalg.study._findings._article import compare_text, fmt_ms

TINY = 5e-324  # the smallest subnormal
EXTREMES = [1e308, sys.float_info.max, 1e-308, sys.float_info.min, TINY, 2e-320, 1e-6, 1.0]
#: any positive float at all, subnormals included
POSITIVE = st.floats(min_value=TINY, max_value=sys.float_info.max, allow_nan=False,
                     allow_infinity=False)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _cell(median, raw=None, passes=None, size=64):
    r = result(size=size, median=median)
    r["time"]["raw_s"] = raw if raw is not None else [median] * 5
    r["time"]["iqr_s"] = median / 10
    if passes is not None:
        r["time"]["passes"] = [{"median_s": p} for p in passes]
    return r


def _check_rows(rows):
    for r in rows:
        if r["ratio"] is None:
            continue
        for k in ("ratio", "lo", "hi", "shift"):
            assert isinstance(r[k], float), (k, r)
            assert not math.isnan(r[k]), (k, r)
        assert 0 < r["ratio"] < math.inf, r
        assert r["lo"] <= r["ratio"] <= r["hi"], r


def _compare(old_cells, new_cells):
    old = {f"k{i}": c for i, c in enumerate(old_cells)}
    new = {f"k{i}": c for i, c in enumerate(new_cells)}
    rows = compare_records(old, new)
    _check_rows(rows)
    return rows


# six ordinary cells, so the between-run spread is estimated from the files
ORDINARY = [_cell(1e-3 * (1 + 0.01 * i)) for i in range(6)]


@pytest.mark.parametrize("old", EXTREMES)
@pytest.mark.parametrize("new", EXTREMES)
def test_compare_extreme_medians(old, new):
    """Every pair of extreme medians: a ratio with its interval, or "not comparable"
    when new/old is beyond the floats (1e308 over 5e-324) or below a normal one."""
    rows = _compare(ORDINARY + [_cell(old)], ORDINARY + [_cell(new)])
    row = rows[-1]
    log_ratio = math.log(new) - math.log(old)
    if abs(log_ratio) < -math.log(sys.float_info.min):
        assert row["ratio"] == pytest.approx(math.exp(log_ratio), rel=1e-9), row
    else:
        assert row["ratio"] is None, row
        assert row["flag"].startswith("not comparable"), row
        assert "out of range" in row["flag"]


def test_compare_samples_spanning_the_whole_range():
    """One side's samples from 1e-300 to 1e300: the bootstrap standard error of the
    log ratio is hundreds, the interval's exp overflowed (the fuzz test's
    OverflowError); now the interval is [0, inf] and the cell no regression."""
    wide = [1e-300, 1e300, 1e-300, 1e300, 1.0, 1e-300]
    rows = _compare(ORDINARY + [_cell(1.0, raw=[1.0] * 6)],
                    ORDINARY + [_cell(1.0, raw=wide)])
    row = rows[-1]
    assert row["lo"] == 0.0, row
    assert row["hi"] == math.inf, row
    assert row["flag"].startswith("~"), row  # no flag from such samples


def test_compare_passes_from_both_ends():
    """Pass medians 1e308 and 5e-324 in one cell: max/min overflowed to inf."""
    rows = _compare([_cell(1e-3, passes=[1e308, TINY])], [_cell(1e-3, passes=[1e-3, 1e-3])])
    # the between-pass variance of the old side alone: (log 1e308 - log TINY)^2 / 2 over 2 passes
    assert rows[0]["se_passes"] >= 0.5 * (math.log(1e308) - math.log(TINY))
    assert (rows[0]["lo"], rows[0]["hi"]) == (0.0, math.inf)


@SETTINGS
@given(st.lists(st.tuples(POSITIVE, st.lists(POSITIVE, min_size=0, max_size=6),
                          POSITIVE, st.lists(POSITIVE, min_size=0, max_size=6),
                          st.lists(POSITIVE, max_size=3)),
                min_size=1, max_size=8))
def test_fuzz_compare_any_positive_floats(cells):
    """Any positive floats as medians, samples and pass medians, on both sides."""
    old = [_cell(mo, raw=ro, passes=p, size=i) for i, (mo, ro, _, _, p) in enumerate(cells)]
    new = [_cell(mn, raw=rn, size=i) for i, (_, _, mn, rn, _) in enumerate(cells)]
    _compare(old, new)


def test_compare_cli_prints_extreme_figures_short(tmp_path):
    """The command itself: exit 0, no traceback, no 300-digit number in the table."""
    old = write(tmp_path / "old.jsonl", [_cell(1e308, size=1), _cell(TINY, size=2),
                                         _cell(1e-308, size=3), _cell(1e-3, size=4)])
    new = write(tmp_path / "new.jsonl", [_cell(TINY, size=1), _cell(1e308, size=2),
                                         _cell(1e300, size=3), _cell(1e-3, size=4)])
    code, out, err = run_cli("compare", str(old), str(new))
    assert code == 0, err
    assert "Traceback" not in err
    assert "not comparable (the ratio of the medians" in out
    assert max(len(line) for line in out.splitlines()) < 400, out


@SETTINGS
@given(st.lists(POSITIVE, min_size=0, max_size=8), st.lists(POSITIVE, min_size=0, max_size=8))
def test_fuzz_ratio_interval_and_paired_ratio(a, b):
    for r in (ratio_interval(a, b), paired_ratio(a, b)):
        if r is None:
            continue
        assert not any(math.isnan(r[k]) for k in ("ratio", "lo", "hi")), r
        assert 0 <= r["lo"] <= r["hi"] <= math.inf, r
    pairs = all_pairs({"x": a, "y": b})
    for r in pairs.values():
        assert 0 <= r["lo"] <= r["ratio"] <= r["hi"] <= math.inf, r


def test_paired_ratio_beyond_the_floats():
    """Rounds of 1e308 against 5e-324: the log ratio is ~1453, exp overflowed."""
    r = paired_ratio([1e308] * 4, [TINY] * 4)
    assert r is not None
    assert r["ratio"] == math.inf
    inv = all_pairs({"a": [1e308] * 4, "b": [TINY] * 4})[("b", "a")]
    assert inv["ratio"] == 0.0
    assert inv["hi"] == 0.0


def test_exp_or_limit():
    assert exp_or_limit(1000.0) == math.inf
    assert exp_or_limit(-1000.0) == 0.0
    assert exp_or_limit(0.0) == 1.0
    assert exp_or_limit(709.0) == pytest.approx(math.exp(709.0))


@pytest.mark.parametrize("slow", EXTREMES)
@pytest.mark.parametrize("fast", EXTREMES)
def test_report_ratio_of_extreme_cells(slow, fast):
    """The report's ratio from quartiles: a subnormal median whose q1 is 0 made
    ``slow q3 / fast q1`` a ZeroDivisionError; a quotient past the floats is no ratio."""
    a = result(backend="numpy", median=slow)
    b = result(backend="torch-cpu", median=fast)
    for r in (a, b):  # no quartiles, too few samples: the IQR fallback
        r["time"]["raw_s"] = [r["time"]["median_s"]]
        r["time"]["iqr_s"] = 3 * r["time"]["median_s"]
    rr = ratio(a, b)
    if rr is not None:
        assert all(0 < x < math.inf for x in rr), rr
        assert rr[0] <= rr[1] <= rr[2]
    v = verdict({"numpy": a, "torch-cpu": b})
    assert v is not None
    assert len(v["text"]) < 200, v


def test_formatting_of_extreme_numbers():
    assert format_time(1e308) == "1e+308 s"
    assert format_time(math.nan) == "-"
    assert format_time(math.inf) == "-"
    assert format_time(TINY) == "4.94e-315 ns"
    assert fmt_ratio(1e300) == "1e+300x"
    assert fmt_ratio(math.nan) == "?x"
    assert fmt_ratio(math.inf) == "?x"
    assert fmt_interval(1e-300, 1e300) == "[1e-300-1e+300]"


@pytest.mark.parametrize("np_time", [1e308, TINY, 1e-3])
@pytest.mark.parametrize("torch_time", [1e308, TINY, 1e-3])
def test_article_comparison_of_extreme_cells(np_time, torch_time):
    """The article's table: a quotient out of range is "not comparable", not an
    AssertionError (its ratio is None now) nor a ZeroDivisionError."""
    a = result(case="a1_gemm", backend="numpy", size=[128, 256, 512], median=np_time)
    b = result(case="a1_gemm", backend="torch-cpu", size=[128, 256, 512], median=torch_time)
    nums, text = compare_text(a, b, 2.31 / 1.98)
    assert len(nums) < 120, nums
    assert len(text) < 200, text
    if ratio(a, b) is None:
        assert text.startswith("not comparable"), text


def test_report_of_extreme_cells(tmp_path):
    """`xlinalg report` on a file of extreme times: exit 0, no traceback."""
    cells = [result(case="a1_gemm", backend=b, size=[128, 256, 512], median=t)
             for b, t in (("numpy", 1e308), ("torch-cpu", TINY))]
    cells += [result(backend=b, size=n, median=t) for b, n, t in
              (("numpy", 5, TINY), ("torch-cpu", 5, 1e308), ("numpy", 64, 1e-308),
               ("torch-cpu", 64, 2e-320))]
    f = write(tmp_path / "x.jsonl", cells)
    code, _, err = run_cli("report", str(f), "--out", str(tmp_path / "rep"), "--no-plots")
    assert code == 0, err
    assert "Traceback" not in err
    text = (tmp_path / "rep" / "report.md").read_text()
    assert max(len(line) for line in text.splitlines()) < 2000


def test_fmt_ms_of_extreme_times():
    assert fmt_ms(1e300) == "1e+303 ms"
    assert fmt_ms(2.5) == "2,500 ms"


@pytest.mark.parametrize(("lo", "hi", "shown"), [(0.0, 1.2, "[0.83-?]"), (0.0, 0.0, "[?-?]"),
                                                 (0.5, math.inf, "[0-2.00]")])
def test_a_reversed_tie_with_an_interval_end_of_0_or_inf_is_written(lo, hi, shown):
    # a tie whose paired ratio is below 1 is written from the other side (1/x): an
    # end of 0 (an underflowed ratio, or a shared file's) is "?" there, not a crash
    from xlinalg.bench._verdict import verdict_text

    text = verdict_text({"winner": "a", "runner_up": "b", "tie": ["a", "b"],
                         "speedup": {"ratio": 0.9, "lo": lo, "hi": hi}})
    assert text == f"tie within noise (b 1.11x {shown} vs a)"
