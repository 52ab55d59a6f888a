"""method="auto" from measurement: the derivation of the selection rules, the
first-call policy of the numba rules, and ``xlinalg bench --tune`` (tiny budget).

Nothing here depends on a timing: the derivation and the policy are fed fixed
numbers, and the command's test checks what it wrote, not what won."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import benchmark_script, require_backend
from xlinalg._kernels import _numba
from xlinalg._unrolled import _selection
from xlinalg.study import _tune as T

HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed (the optional extra 'fast')")


def _row(backend: str, n: int, batch: int, dtype: str, xl_native: float, unrolled: float,
         native: float | None = None) -> dict:
    return {"backend": backend, "n": n, "batch": batch, "dtype": dtype, "compiler": "numba",
            "native_s": native if native is not None else xl_native, "xl_native_s": xl_native,
            "unrolled_s": unrolled, "ratio": xl_native / unrolled, "native_first_s": 0.01,
            "unrolled_first_s": 0.5}


def _results() -> dict:
    rows = []
    for n in (1, 2, 3):
        for batch, xn, un in ((10, 1e-5, 2e-5), (1000, 1e-4, 5e-5), (100_000, 1e-2, 1e-3)):
            if n == 2:  # never wins by 20%: a gap, not the end of the rule
                un = xn / 1.1
            rows.append(_row("numpy", n, batch, "float64", xn, un, native=xn / 2))
    fc = [{"section": "first-call", "n": n, "dtype": "float64", "cache": c, "first_call_s": s}
          for n in (1, 2, 3) for c, s in (("cold", 9.0 + n), ("warm", 0.4 + n / 10))]
    return {"crossover": rows, "first-call": fc}


def test_derive_against_xl_native_with_gaps() -> None:
    table = T.derive(_results())
    rule = table[("numpy", "float64")]
    assert rule["compiler"] == "numba"
    assert rule["n_max"] == 3
    assert rule["batch_min"] == (1000, T.NEVER, 1000)  # n = 2 never: 1.1x is below the margin
    assert rule["extra_first_call_s"] == (10.0, 0.0, 12.0)  # the cold compile, per n
    assert rule["cached_first_call_s"] == (0.5, 0.0, 0.7)  # the warm-cache load, per n
    assert rule["saving_per_system_s"][0] == pytest.approx(5e-8)  # (1e-4 - 5e-5) / 1000
    assert not rule["warm_only"]
    # against the library's call instead (half the time here): n = 1 wins from 100000 only
    lib = T.derive(_results(), against="native")[("numpy", "float64")]
    assert lib["batch_min"][0] == 100_000


def test_derived_table_loads_and_never_means_never(tmp_path: pathlib.Path, monkeypatch) -> None:
    path = tmp_path / "sel.json"
    path.write_text(T.selection_json(T.derive(_results()), "test"))
    table = _selection._load_selection(str(path))
    if not HAS_NUMBA:
        assert ("numpy", "float64") not in table  # numba rules apply only where numba is
        return
    rule = table[("numpy", "float64")]
    assert rule.batch_min[1] == T.NEVER
    monkeypatch.setattr(_selection, "_SELECTION", table)
    monkeypatch.setattr(_numba, "is_compiled", lambda n, dt: True)
    assert _selection.prefer_unrolled("numpy", 1, 1000, "float64")
    assert not _selection.prefer_unrolled("numpy", 2, 10**9, "float64")
    assert not _selection.prefer_unrolled("numpy", 1, 999, "float64")
    assert not _selection.prefer_unrolled("numpy", 4, 10**6, "float64")


@needs_numba
def test_numba_rules_never_start_a_cold_compile(tmp_path: pathlib.Path, monkeypatch) -> None:
    """Not in the process and not in numba's disk cache: never, however many calls
    would amortize the compile. In the disk cache: after the calls that amortize
    loading it. In the process: at once."""
    path = tmp_path / "sel.json"
    path.write_text(T.selection_json(T.derive(_results()), "test"))
    monkeypatch.setattr(_selection, "_SELECTION", _selection._load_selection(str(path)))
    monkeypatch.setattr(_selection, "_ASKED", {})
    monkeypatch.setattr(_numba, "is_compiled", lambda n, dt: False)
    monkeypatch.setattr(_numba, "cached_on_disk", lambda n, dt: False)
    assert not any(_selection.prefer_unrolled("numpy", 1, 10**7, "float64") for _ in range(1000))
    # cached: the load (0.5 s) against a saving of 5e-8 s per system: 1000 systems
    # save 5e-5 s per call, 10000 calls amortize it; 10**7 systems: 1 call
    monkeypatch.setattr(_numba, "cached_on_disk", lambda n, dt: True)
    asked = [_selection.prefer_unrolled("numpy", 1, 10**7, "float64") for _ in range(3)]
    assert asked == [False, True, True]
    asked = [_selection.prefer_unrolled("numpy", 3, 1000, "float64") for _ in range(100)]
    assert not any(asked)
    monkeypatch.setattr(_numba, "is_compiled", lambda n, dt: True)
    assert _selection.prefer_unrolled("numpy", 3, 1000, "float64")


_CACHE_CHECK = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from xlinalg._kernels import _numba
    before = [_numba.cached_on_disk(1, "float64"), _numba.cached_on_disk(1, "float32")]
    if sys.argv[1] == "compile":
        _numba.make_kernel(1, np.float64)(np.ones((1, 1, 1)), np.ones((1, 1, 1)))
    print(json.dumps(before))
    """
)


@needs_numba
def test_cached_on_disk_reads_numbas_index(tmp_path: pathlib.Path) -> None:
    """Per (n, dtype), for the current source and numba only, where numba looks: only
    ``NUMBA_CACHE_DIR`` where it is set (the package's ``__pycache__`` may hold the
    kernel; numba would not read it); numba is not imported."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))

    def ask(what: str) -> list[bool]:
        out = subprocess.run([sys.executable, "-c", _CACHE_CHECK, what], env=env, check=True,
                             capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    got = ask("compile")
    assert got == [False, False]  # a fresh NUMBA_CACHE_DIR, whatever __pycache__ holds
    assert ask("look")[0] is True  # the kernel an earlier process compiled, float64 only
    # an index of another source (the stamp differs) does not count
    (idx,) = [p for p in tmp_path.rglob("*.nbi") if "solve_t_n1-" in p.name]
    data = idx.read_bytes()
    import hashlib

    stamp = hashlib.sha256(pathlib.Path(_numba.GENERATED_FILE).read_bytes()).digest()
    idx.write_bytes(data.replace(stamp, bytes(32)))
    assert ask("look")[0] is False
    code = "import sys, xlinalg._kernels._numba as m; m.cached_on_disk(1, 'float64'); print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@needs_numba
def test_bench_tune_writes_a_table_xlinalg_loads(tmp_path: pathlib.Path) -> None:
    """``xlinalg bench --tune`` with a tiny budget: one backend, n = 1, two batch
    sizes, float64. The table holds the measured rows and the shipped rules for
    other compilers, and XLINALG_UNROLLED_SELECTION makes xlinalg load it."""
    out = tmp_path / "sel.json"
    cmd = [sys.executable, "-m", "xlinalg", "bench", "--tune", "--backends", "numpy", "--tune-n", "1",
           "--tune-batches", "10,2000", "--tune-dtypes", "float64", "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"XLINALG_UNROLLED_SELECTION={out}" in run.stdout
    doc = json.loads(out.read_text())
    rows = doc["measurements"]["crossover"]
    assert [(r["backend"], r["n"], r["batch"], r["dtype"]) for r in rows] == [
        ("numpy", 1, 10, "float64"), ("numpy", 1, 2000, "float64")]
    assert all(r["xl_native_s"] > 0 and r["unrolled_s"] > 0 and r["native_s"] > 0 for r in rows)
    (fc,) = doc["measurements"]["first-call"]
    assert (fc["n"], fc["dtype"], fc["cache"]) == (1, "float64", "warm")
    shipped = json.loads(pathlib.Path(T.shipped_table_path()).read_text())["rules"]
    others = [r for r in shipped if r.get("compiler") != "numba"]
    assert [r for r in doc["rules"] if r.get("compiler") != "numba"] == others
    mine = [r for r in doc["rules"] if r.get("compiler") == "numba" and r["backend"] == "numpy"
            and r["dtype"] == "float64"]
    assert mine == ([{"backend": "numpy", "dtype": "float64", **json.loads(json.dumps(v))}
                     for v in T.derive(doc["measurements"]).values()])
    code = ("import json; from xlinalg._unrolled import _selection as s; "
            "print(json.dumps(sorted(f'{k[0]}/{k[1]}' for k in s.selection())))")
    env = dict(os.environ, XLINALG_UNROLLED_SELECTION=str(out))
    got = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    want = sorted(f"{k[0]}/{k[1]}" for k in _selection._load_selection(str(out)))
    assert json.loads(got.stdout) == want
    # a second run refuses to overwrite the table without --overwrite
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2
    assert "--overwrite" in again.stderr


def test_bench_tune_refuses_bad_options(tmp_path: pathlib.Path) -> None:
    base = [sys.executable, "-m", "xlinalg", "bench", "--tune", "--out", str(tmp_path / "t.json")]
    for extra, msg in ((["--backends", "cupy"], "--tune measures the CPU backends"),
                       (["--tune-n", "9"], "--tune-n"),
                       (["--tune-batches", "0"], "--tune-batches"),
                       (["--tune-dtypes", "float16"], "--tune-dtypes")):
        run = subprocess.run(base + extra, capture_output=True, text=True)
        assert run.returncode == 2, (extra, run.stdout, run.stderr)
        assert msg in run.stderr if HAS_NUMBA or extra[0] != "--backends" else "numba" in run.stderr
    assert not (tmp_path / "t.json").exists()


def test_interleaved_rotates_and_summarizes() -> None:
    calls: list[str] = []
    st = T.interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, 0.0)
    assert set(st) == {"a", "b"}
    assert all(len(v) == 3 for v in st.values())
    m, iqr = T.summary([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5
    assert iqr > 0
    assert T.summary([2.0]) == (2.0, 0.0)
    assert np.isfinite(T.first_call(lambda: None))


def test_auto_on_dask_takes_the_unrolled_kernel_per_block_where_the_rule_says(monkeypatch, rng,
                                                                             tmp_path: pathlib.Path) -> None:
    """A rule for Dask reads systems per block: blocks of 1000 systems take the
    unrolled kernel (NumPy's, in each block's task), blocks of 100 the native
    solve; both give NumPy's solutions, lazily."""
    require_backend("dask")
    import dask.array as da

    import xlinalg as xl
    from xlinalg._unrolled import _solve

    rows = [dict(_row("dask", n, batch, "float64", 1e-3, 1e-4 if batch >= 1000 and n == 3 else 2e-3),
                 compiler=None, unrolled_first_s=0.01)
            for n in (1, 2, 3) for batch in (100, 1000, 10_000)]
    table = T.derive({"crossover": rows})
    assert table[("dask", "float64")]["batch_min"] == (T.NEVER, T.NEVER, 1000)
    path = tmp_path / "sel.json"
    path.write_text(T.selection_json(table, "test"))
    monkeypatch.setattr(_selection, "_SELECTION", None)
    for name in ("_AUTO_MIN_BATCH", "_AUTO_MAX_N", "_LIBRARY_OF"):
        monkeypatch.setattr(_selection, name, {})
    for name in ("_WARM_ONLY", "_NOT_WARM_ONLY", "_BLOCKWISE"):
        monkeypatch.setattr(_selection, name, set())
    monkeypatch.setenv(_selection.ENV_VAR, str(path))
    blocks: list[int] = []
    real = _solve._block

    def counted(ab, bb, *args, **kw):
        blocks.append(ab.shape[0])
        return real(ab, bb, *args, **kw)

    monkeypatch.setattr(_solve, "_block", counted)
    a = rng.standard_normal((4000, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((4000, 3, 2))
    for chunk, want in ((1000, [1000] * 4), (100, [])):
        blocks.clear()
        x = xl.solve(da.from_array(a, chunks=(chunk, 3, 3)), da.from_array(b, chunks=(chunk, 3, 2)))
        assert isinstance(x, da.Array)
        assert blocks == []  # lazy: nothing ran yet
        np.testing.assert_allclose(x.compute(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
        assert blocks == want, chunk


def test_bench_tune_dry_run_times_nothing(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "sel.json"
    run = subprocess.run([sys.executable, "-m", "xlinalg", "bench", "--tune", "--backends", "numpy", "--quick",
                          "--out", str(out), "--dry-run"], capture_output=True, text=True)
    if not HAS_NUMBA:
        assert run.returncode == 2
        return
    assert run.returncode == 0, run.stderr
    assert "48 cells" in run.stdout  # 2 dtypes x 8 n x 3 batches (--quick)
    assert not out.exists()


def test_a_partial_tune_replaces_only_its_cells() -> None:
    """``benchmarks/unrolled.py --tune --tune-n ... --tune-batches ...`` re-measures a
    part of the grid: the rows of those (backend, dtype, n, systems) are replaced, the
    others keep their older measurement; a whole (backend, dtype) replaces all of its."""
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import unrolled as bench  # benchmarks/unrolled.py
    finally:
        sys.path.pop(0)
    old = _results()["crossover"] + [_row("torch-cpu", 2, 1000, "float64", 1e-4, 5e-5)]
    new = [dict(_row("numpy", 2, 1000, "float64", 1e-4, 2e-5), fresh=True),
           dict(_row("numpy", 3, 10, "float64", 1e-5, 2e-5), fresh=True)]
    merged = bench.merge_crossover(old, new, partial=True)
    assert len(merged) == len(old)
    cells = [(r["backend"], r["n"], r["batch"]) for r in merged]
    assert len(set(cells)) == len(cells)
    assert {c for r, c in zip(merged, cells) if r.get("fresh")} == {("numpy", 2, 1000), ("numpy", 3, 10)}
    whole = bench.merge_crossover(old, new, partial=False)
    assert [(r["backend"], r.get("fresh", False)) for r in whole] == [("torch-cpu", False)] + [("numpy", True)] * 2


def test_the_wall_pauses_before_every_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/unrolled.py --wall`` (issue 39) sleeps the same pause before every
    timed block of every call, so that no block is charged for the threads the previous
    call's library left spinning; the "right after native" figure is one call of the
    native, then at once (no pause) a block of the default call."""
    bench = benchmark_script("unrolled.py")
    events: list[str] = []
    monkeypatch.setattr(bench.time, "sleep", lambda s: events.append(f"sleep {s:g}"))
    fns = {k: (lambda k=k: events.append(k)) for k in ("native", "xl_native", "default")}
    got = bench.settled(fns, 3, 0.0, pause=0.25, after={"default_after_native": (fns["native"], "default")})
    assert {k: len(v) for k, v in got.items()} == {"native": 3, "xl_native": 3, "default": 3,
                                                   "default_after_native": 3}
    calibration, timed = events[:3], events[3:]
    assert calibration == ["native", "xl_native", "default"]  # (min_time 0: one call each)
    # every block is a pause then one call; each round ends with native then default at once
    rounds = [timed[i:i + 9] for i in range(0, len(timed), 9)]
    assert len(rounds) == 3
    for r, got_round in enumerate(rounds):
        keys = ["native", "xl_native", "default"]
        order = keys[r % 3:] + keys[:r % 3]
        assert got_round == [e for k in order for e in ("sleep 0.25", k)] + ["sleep 0.25", "native", "default"]
