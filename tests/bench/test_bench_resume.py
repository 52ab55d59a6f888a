"""--resume refuses to mix cells measured under other settings into one file."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from conftest import solve_record
from xlinalg.bench import (
    ResultStore,
    ResumeMismatchError,
    read_results,
    settings_differences,
)
from xlinalg.cli import main

RUN = {"dtype": "float64", "scale": "quick", "threads": None, "seed": 0, "allow_tf32": False,
       "isolate": True, "memory_limit": None, "timer": {"min_samples": 3}, "check": True,
       "memory": True, "backends": ["numpy"], "cases": ["q3_solve_sweep"], "time_limit": 300.0}
ENV = {"xlinalg": "1.0", "python": {"version": "3.11.7", "implementation": "CPython"},
       "numpy": "2.0", "packages": {"numpy": "2.0", "torch": "2.13"}, "host": "h",
       "cpu": {"model": "m", "usable_cores": 2}}


def test_settings_differences_names_each_difference():
    assert settings_differences({"run": RUN, "env": ENV}, RUN, ENV) == []
    # what only picks cells may change: backends, cases, the time limit
    other_cells = {**RUN, "backends": ["torch-cpu"], "cases": ["a1_gemm"], "time_limit": 9.0}
    assert settings_differences({"run": RUN, "env": ENV}, other_cells, ENV) == []
    run = {**RUN, "threads": 1, "seed": 7, "scale": "full", "dtype": "float32",
           "allow_tf32": True, "timer": {"min_samples": 9}}
    env = {**ENV, "packages": {"numpy": "2.0", "torch": "2.3"},
           "python": {"version": "3.12.0", "implementation": "CPython"}}
    diffs = settings_differences({"run": RUN, "env": ENV}, run, env)
    text = "; ".join(diffs)
    for needle in ("threads: null in the file, 1 now", "seed: 0 in the file, 7 now",
                   "scale:", "dtype:", "allow_tf32:", "timer.min_samples: 3 in the file, 9 now",
                   'packages.torch: "2.13" in the file, "2.3" now', "python.version:"):
        assert needle in text, text
    # an older header without a setting is not compared on it
    assert settings_differences({"run": {"seed": 0}, "env": {}}, run, env) == [
        "seed: 0 in the file, 7 now"]


def test_store_refuses_a_resume_with_other_settings_and_writes_nothing(tmp_path):
    p = tmp_path / "r.jsonl"
    with ResultStore(p) as s:
        s.write_header(ENV, RUN)
        s.append(solve_record(5))
    before = p.read_bytes()
    with ResultStore(p, resume=True) as s, pytest.raises(ResumeMismatchError) as info:
        s.write_header(ENV, {**RUN, "seed": 1})
    assert "seed: 0 in the file, 1 now" in str(info.value)
    assert "\n" not in str(info.value)
    assert p.read_bytes() == before
    with ResultStore(p, resume=True) as s:  # the same settings resume
        s.write_header(ENV, RUN)
    assert len(read_results(p).headers) == 2


def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def test_cli_resume_with_other_settings_exits_2_naming_them(tmp_path):
    out = tmp_path / "r.jsonl"
    base = ["bench", "--backends", "numpy", "--cases", "q3_solve_sweep", "--sizes", "4",
            "--no-calibrate", "--no-progress", "--no-isolate", "--no-report", "--out", str(out)]
    code, err = _cli(*base, "--quick")
    assert code == 0, err
    n = len(read_results(out).records)
    for extra, needles in ((["--quick", "--seed", "3"], ["seed: 0 in the file, 3 now"]),
                           (["--quick", "--threads", "1"], ["threads: null in the file, 1 now"]),
                           (["--quick", "--dtype", "float32", "--tf32"],
                            ["dtype:", "allow_tf32:"]),
                           (["--full"], ["scale:", "timer."])):
        code, err = _cli(*base, "--resume", *extra)
        assert code == 2, err
        assert "Traceback" not in err
        assert len([ln for ln in err.strip().splitlines() if ": warning: " not in ln]) == 1, err
        assert "cannot resume" in err
        for needle in needles:
            assert needle in err, err
    assert len(read_results(out).headers) == 1  # nothing appended by a refused resume
    # a library upgraded since the file was written
    lines = out.read_text().splitlines()
    hdr = json.loads(lines[0])
    hdr["env"]["packages"]["numpy"] = "0.0.1"
    out.write_text("\n".join([json.dumps(hdr), *lines[1:]]) + "\n")
    code, err = _cli(*base, "--quick", "--resume")
    assert code == 2, err
    assert 'packages.numpy: "0.0.1" in the file' in err
    # the same settings: resumes (nothing left to run)
    hdr["env"]["packages"]["numpy"] = json.loads(lines[0])["env"]["packages"]["numpy"]
    out.write_text("\n".join([json.dumps(hdr), *lines[1:]]) + "\n")
    code, err = _cli(*base, "--quick", "--resume")
    assert code == 0, err
    assert len(read_results(out).records) == n
