"""The benchmark's correctness check: complex parts, non-finite values, case files."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from xlinalg.bench import (
    RunConfig,
    TimerConfig,
    check_result,
    read_results,
    run_benchmark,
    unregister_case,
)

NAN, INF = np.nan, np.inf


@pytest.mark.parametrize(("result", "reference"), [
    # a wrong imaginary part (was "ok": the check cast both sides to float64)
    (np.array([1 + 2j, 3 + 4j]), np.array([1 + 2j, 3 - 4j])),
    (np.array([1 + 0j]), np.array([1 + 1j])),
    # a complex result where the reference is real, with an imaginary part
    (np.array([1 + 1j, 2 + 0j]), np.array([1.0, 2.0])),
    # anything where the reference is NaN or inf (was "ok": those positions were skipped)
    (np.array([1.0, 5.0]), np.array([1.0, NAN])),
    (np.array([1.0, 5.0]), np.array([1.0, INF])),
    (np.array([1.0, -INF]), np.array([1.0, INF])),       # sign of an infinity
    (np.array([1.0, NAN]), np.array([1.0, INF])),        # NaN is not inf
    (np.array([INF, 1.0]), np.array([1.0, INF])),        # position
    (np.array([NAN, NAN]), np.array([NAN, NAN, NAN])),   # shape
    (np.array([1 + 1j * INF]), np.array([1 - 1j * INF])),  # sign of an imaginary inf
    (np.array([complex(NAN, 1)]), np.array([complex(1, NAN)])),  # which part is NaN
    (np.array([1.0, NAN]), np.array([1.0, 2.0])),        # non-finite where finite (as before)
    (np.array([1e308, -1e308]), np.array([-1e308, 1e308])),  # the difference overflows
])
def test_wrong_values_are_wrong(result, reference):
    out = check_result(result, reference, 1e-6)
    assert out["verdict"] == "wrong", out
    assert out["message"]


@pytest.mark.parametrize(("result", "reference"), [
    (np.array([1 + 2j, 3 - 4j]), np.array([1 + 2j, 3 - 4j])),
    (np.array([1 + 0j, 2 + 0j]), np.array([1.0, 2.0])),
    (np.array([1.0, NAN, INF, -INF]), np.array([1.0, NAN, INF, -INF])),
    (np.array([complex(INF, NAN)]), np.array([complex(INF, NAN)])),
    (np.array([NAN]), np.array([NAN])),
    (np.array([1.0, 2.0], dtype=np.float32), np.array([1.0, 2.0])),
])
def test_equal_values_are_ok(result, reference):
    out = check_result(result, reference, 1e-6)
    assert out["verdict"] == "ok", out


def test_complex_error_counts_the_imaginary_part():
    out = check_result(np.array([1 + 1.001j]), np.array([1 + 1j]), 1e-2)
    assert out["verdict"] == "ok"
    assert out["max_abs_err"] == pytest.approx(1e-3)
    assert out["reference"] == "numpy complex128"


CASES = textwrap.dedent('''
    import numpy as np
    from xlinalg.bench import Case, register_case

    def _setup(rng, n):
        return (rng.standard_normal(n),)

    # a complex output whose imaginary part has the wrong sign
    register_case(Case(name="t_conj", sizes={"quick": [8]}, setup=_setup,
                       op=lambda ctx, x: np.conj(np.fft.fft(np.asarray(x))),
                       reference=lambda x: np.fft.fft(x)), replace=True)
    # a finite output where the reference is inf
    register_case(Case(name="t_inf", sizes={"quick": [8]}, setup=_setup,
                       op=lambda ctx, x: np.asarray(x) * 0.0,
                       reference=lambda x: np.full_like(x, np.inf)), replace=True)
    # right: complex and non-finite values that match
    register_case(Case(name="t_right", sizes={"quick": [8]}, setup=_setup,
                       op=lambda ctx, x: np.fft.fft(np.asarray(x)) / np.float64(0.0),
                       reference=lambda x: np.fft.fft(x) / np.float64(0.0)), replace=True)
''')


def test_case_file_cells_are_checked_the_same_way(tmp_path):
    cf = tmp_path / "complex_cases.py"
    cf.write_text(CASES)
    out = tmp_path / "r.jsonl"
    fast = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                       min_samples=3, max_samples=5, max_run_time=1.0)
    names = ["t_conj", "t_inf", "t_right"]
    try:
        with np.errstate(all="ignore"):
            run_benchmark(RunConfig(backends=["numpy"], cases=names, scale="quick", out=out,
                                    case_files=[cf], timer=fast, isolate=False,
                                    calibrate=False, memory=False))
    finally:  # in-process: leave the registry as the other tests expect it
        for n in names:
            unregister_case(n)
    got = {r["case"]: r for r in read_results(out).records}
    assert got["t_conj"]["status"] == "wrong", got["t_conj"]
    assert got["t_inf"]["status"] == "wrong", got["t_inf"]
    assert got["t_right"]["status"] == "ok", got["t_right"]
