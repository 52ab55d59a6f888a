"""The benchmark's section beyond the documents (issue 38, part 3): inv, cholesky,
eigh, lstsq and det on a batch of small matrices and on one large matrix, opt-in
(``--cases linalg``), checked like every case and timed side by side."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import CPU_BACKENDS, require_backend
from xlinalg.bench import (
    Case,
    RunConfig,
    TimerConfig,
    execute_cell,
    get_case,
    make_cell,
    plan_cells,
)
from xlinalg.bench._cases import OPT_IN_GROUPS, case_names, default_case_names, group_case_names
from xlinalg.bench._fairness import backend_state, configure_backend
from xlinalg.bench._runner import validate_config
from xlinalg.cli import main

SECTION = ["linalg_inv", "linalg_cholesky", "linalg_eigh", "linalg_det", "linalg_lstsq"]
#: the default run's cases before the section existed (main at 41f70f9): it must not
#: change, nor its time
DEFAULT_RUN = [
    "q1_solve_loop", "q2_numba", "q3_solve_sweep", "q4_batched", "q4_loop", "q4_solve_many",
    "q4_unrolled", "a1_gemm", "a2_fc", "a3_attention", "a4_add", "a4_multiply", "a4_sigmoid",
    "a5_broadcast", "a6_broadcast_trap", "a7_svd", "a8_qr", "a9_batched_matmul", "a10_layout",
    "a11_transfer_h2d", "a11_transfer_d2h", "a11_transfer_dlpack", "a11_transfer_pipeline",
    "a12_precision_float32", "a12_precision_float16", "a12_precision_bfloat16",
    "a13_fusion_eager", "a13_fusion_compiled", "a14_einsum", "a15_conv",
]
FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.001, min_run_time=0.005,
                   min_samples=3, max_samples=5, max_run_time=1.0)


def run_cell(case: str, backend: str, size: object, **kw: object) -> dict:
    require_backend(backend)
    restore = configure_backend(backend)
    try:
        return execute_cell(make_cell(case, backend, size, timer=FAST, **kw),  # type: ignore[arg-type]
                            backend_state=backend_state(backend))
    finally:
        restore()


# ---------------------------------------------------------------------- what it is
def test_the_section_is_the_five_operations_beyond_the_documents() -> None:
    assert group_case_names("linalg") == SECTION
    for name in SECTION:
        c = get_case(name)
        assert c.section == "Extra", name
        assert c.group == "linalg", name
        assert c.reference is not None, name  # every cell is checked
        sizes = c.sizes_for("default")
        # a batch of small matrices and one large matrix, at every scale
        for scale in ("quick", "default", "full"):
            (batch, small), (one, large) = c.sizes_for(scale)
            assert batch > 1, (name, scale)
            assert one == 1, (name, scale)
            assert large > small, (name, scale)
        assert sizes == [(1000, 8), (1, 1024)], name


def test_it_is_opt_in_and_the_default_run_is_unchanged(tmp_path: Path) -> None:
    out = str(tmp_path / "r.jsonl")
    default = validate_config(RunConfig(backends=["numpy"], out=out)).cases
    assert default == DEFAULT_RUN
    assert not set(SECTION) & set(default_case_names())
    assert set(SECTION) <= set(case_names())  # registered (--list-cases shows them)
    # --cases linalg: exactly the section; a group mixed with names keeps the order, once each
    assert validate_config(RunConfig(backends=["numpy"], cases=["linalg"], out=out)).cases == SECTION
    mixed = validate_config(RunConfig(backends=["numpy"], cases=["linalg_det", "a1_gemm", "linalg"],
                                      out=out)).cases
    assert mixed == ["linalg_det", "a1_gemm", *[c for c in SECTION if c != "linalg_det"]]
    # the plan of the default run holds none of its cells
    planned = {c["case"] for c in plan_cells(RunConfig(backends=["numpy"], out=out))}
    assert not planned & set(SECTION)


def test_a_group_name_is_not_a_case_and_groups_are_checked() -> None:
    with pytest.raises(ValueError, match=r"'linalg' is a group of cases \(linalg_inv, .*--cases linalg"):
        get_case("linalg")
    with pytest.raises(ValueError, match="unknown case group 'nope'; groups: linalg"):
        group_case_names("nope")
    setup = lambda rng, n: (rng.standard_normal(n),)  # noqa: E731
    with pytest.raises(ValueError, match="group must be one of linalg"):
        Case(name="t_x", sizes={"quick": [1]}, setup=setup, op=lambda c, x: x, group="nope")
    with pytest.raises(ValueError, match="the name of an opt-in group"):
        Case(name="linalg", sizes={"quick": [1]}, setup=setup, op=lambda c, x: x)
    assert set(OPT_IN_GROUPS) == {"linalg"}


def test_dry_run_and_list_cases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--cases", "linalg", "--quick", "--backends", "numpy", "--dry-run"]) == 0
    out = capsys.readouterr().out
    # the run's two calibration cells, then 5 cases x 2 sizes
    assert "dry run: 12 cells (quick scale, float64) on numpy" in out
    for name in SECTION:
        assert f"  {name}" in out, out
        assert "64x4, 1x64" in out.split(name, 1)[1].splitlines()[0], out
    assert main(["bench", "--list-cases"]) == 0
    listed = capsys.readouterr().out
    for name in SECTION:
        line = next(x for x in listed.splitlines() if x.startswith(name))
        assert "[opt-in: --cases linalg; not in the default run]" in line
    assert "opt-in" not in next(x for x in listed.splitlines() if x.startswith("a1_gemm"))


# ---------------------------------------------------------------------- its cells run, checked
@pytest.mark.parametrize("case", SECTION)
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_a_quick_cell_is_timed_and_checked(case: str, backend: str) -> None:
    r = run_cell(case, backend, (64, 4), memory=False)
    assert r["status"] == "ok", r.get("error")
    assert r["check"]["verdict"] == "ok", r["check"]
    assert r["check"]["max_rel_err"] <= r["check"]["rtol"]
    assert r["time"]["median_s"] > 0
    assert r["section"] == "Extra"


@pytest.mark.parametrize("case", SECTION)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_large_matrix_on_numpy_is_checked(case: str, dtype: str) -> None:
    r = run_cell(case, "numpy", (1, 64), dtype=dtype, memory=False)
    assert r["status"] == "ok", r.get("error")
    assert r["check"]["verdict"] == "ok", r["check"]
    assert r["fairness"]["layout"][0]["shape"][:1] != [1]  # one matrix: no batch axis


def test_the_check_catches_a_wrong_result() -> None:
    """The section's references are real: a kernel off by a transpose is `wrong`."""
    from xlinalg.bench import register_case, unregister_case

    c = get_case("linalg_inv")
    register_case(Case(name="t_wrong_inv", sizes=c.sizes, setup=c.setup, reference=c.reference,
                       op=lambda ctx, a: ctx.xl.matrix_transpose(ctx.xl.inv(a))), replace=True)
    try:
        r = run_cell("t_wrong_inv", "numpy", (64, 4), memory=False)
    finally:
        unregister_case("t_wrong_inv")
    assert r["status"] == "wrong", r["check"]
    assert np.isfinite(r["check"]["max_rel_err"])
