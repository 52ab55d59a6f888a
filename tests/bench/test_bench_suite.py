"""The built-in benchmark cases cover every part of the documents (docs/sources.md, issue 4)."""

from __future__ import annotations

import pytest

from xlinalg.bench import SCALES, TimerConfig, case_names, execute_cell, get_case, make_cell

#: the documents' part ids (docs/sources.md) and the case-name prefix that covers each
IDS = [f"q{i}" for i in range(1, 5)] + [f"a{i}" for i in range(1, 16)]

#: tiny timing: this tests the cases, not the timer
FAST = TimerConfig(warmup_time=0.0, min_sample_time=0.0, min_run_time=0.0,
                   min_samples=2, max_samples=2, max_run_time=1.0)


def _suite_cases() -> list[str]:
    return [n for n in case_names() if n.split("_")[0] in IDS]


def test_every_cases_md_id_has_a_case() -> None:
    names = case_names()
    for i in IDS:
        assert any(n.startswith(i + "_") for n in names), f"no case for {i.upper()}"


ZERO_COPY = {"a11_transfer_dlpack"}


@pytest.mark.parametrize("name", _suite_cases())
def test_case_declares_sizes_flops_bytes(name: str) -> None:
    c = get_case(name)
    for scale in SCALES:
        assert c.sizes.get(scale), f"{name}: no {scale} sizes"
    assert c.doc
    assert c.flops is not None
    assert c.bytes is not None
    for s in c.sizes_for("full"):
        assert c.flops(s) >= 0.0
        # zero-copy wrapping moves no bytes (no GB/s figure); every other case moves data
        assert c.bytes(s, 8) > 0.0 or name in ZERO_COPY


@pytest.mark.parametrize("name", _suite_cases())
def test_quick_cell_runs_on_numpy(name: str) -> None:
    c = get_case(name)
    size = c.sizes_for("quick")[0]
    rec = execute_cell(make_cell(c, "numpy", size, timer=FAST, memory=False))
    if rec["status"] == "skipped":
        assert rec.get("skip_reason")
    else:
        assert rec["status"] == "ok", rec.get("error") or rec.get("check")
        assert rec["throughput"]["bytes"] > 0


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("q1_solve_loop", (1000, 5)),
        ("q3_solve_sweep", 500),
        ("q3_solve_sweep", 5),
        ("q4_batched", (1000, 100)),
        ("q4_loop", (1000, 2)),
        ("a1_gemm", (2048, 4096, 8192)),
        ("a2_fc", (512, 2048, 4096)),
        ("a3_attention", (32, 512, 256)),
        ("a4_add", (4096, 4096)),
        ("a4_sigmoid", (4096, 4096)),
        ("a5_broadcast", (128, 1024, 1)),
        ("a6_broadcast_trap", 10000),
        ("a7_svd", 512),
        ("a8_qr", 512),
        ("a9_batched_matmul", (1024, 256)),
        ("a10_layout", (1024, 0)),
        ("a11_transfer_pipeline", (2048, 4096, 8192)),
        ("a12_precision_bfloat16", (2048, 4096, 8192)),
        ("a13_fusion_compiled", (4096, 4096)),
        ("a14_einsum", (2048, 4096, 8192)),
    ],
)
def test_full_scale_has_document_sizes(name: str, size: object) -> None:
    c = get_case(name)
    assert c.normalize(size) in c.sizes_for("full")


def test_q3_full_sweeps_both_document_grids() -> None:
    full = set(get_case("q3_solve_sweep").sizes_for("full"))
    assert set(range(10, 501, 10)) <= full
    assert set(range(5, 501, 5)) <= full


def test_numba_skips_with_reason_when_absent() -> None:
    import importlib.util

    c = get_case("q2_numba")
    if importlib.util.find_spec("numba") is None:
        assert c.skip_reason("numpy", "float64", (100, 5)) == "numba not installed"
    assert c.skip_reason("torch-cpu", "float64", (100, 5))


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "jax-cpu"])
def test_conv_runs_each_librarys_own_convolution(backend: str) -> None:
    pytest.importorskip({"numpy": "numpy", "torch-cpu": "torch", "jax-cpu": "jax"}[backend])
    c = get_case("a15_conv")
    assert c.skip_reason(backend, "float64", (8, 3, 7, 7)) is None
    rec = execute_cell(make_cell(c, backend, (8, 3, 7, 7), timer=FAST, memory=False))
    assert rec["status"] == "ok", rec.get("error") or rec.get("check")


def test_conv_skips_say_why_and_sizes_are_the_articles() -> None:
    c = get_case("a15_conv")
    assert "no convolution" in (c.skip_reason("dask", "float64", (32, 3, 3, 3)) or "")
    assert "no convolution" in (c.skip_reason("array-api-strict", "float64", (32, 3, 3, 3)) or "")
    assert [s[1:] for s in c.sizes_for("full")] == [(3, 3, 3), (3, 7, 7), (3, 11, 11)]
    assert [s[0] for s in c.sizes_for("full")] == [32, 128, 512]


def test_every_builtin_case_declares_its_section_and_units() -> None:
    for name in case_names():
        c = get_case(name)
        assert c.section, name
        assert c.units in ("GFLOP/s", "GB/s"), name
        if name.split("_")[0] in IDS:
            assert c.section == name.split("_")[0].upper(), name


def test_layout_on_jax_says_why_there_is_no_strided_cell() -> None:
    c = get_case("a10_layout")
    assert "no layout" in (c.skip_reason("jax-cpu", "float64", (1024, 0)) or "")
    assert c.skip_reason("jax-cpu", "float64", (1024, 1)) is None
    assert c.skip_reason("array-api-strict", "float64", (1024, 0)) is None


def test_torch_compile_runs_on_cpu() -> None:
    assert get_case("a13_fusion_compiled").skip_reason("torch-cpu", "float64", (256, 256)) is None


def test_records_carry_what_the_case_declares() -> None:
    # a skipped cell and a run cell: both records say section, tags, units, peak, dtype
    c = get_case("a12_precision_bfloat16")
    skipped = execute_cell(make_cell(c, "numpy", c.sizes_for("quick")[0], timer=FAST,
                                     memory=False))
    assert skipped["status"] == "skipped"
    assert {k: skipped[k] for k in ("section", "tags", "units", "peak", "compute_dtype")} == {
        "section": "A12", "tags": ["gemm"], "units": "GFLOP/s", "peak": "arithmetic",
        "compute_dtype": "bfloat16"}
    add = get_case("a4_add")
    rec = execute_cell(make_cell(add, "numpy", add.sizes_for("quick")[0], dtype="float32",
                                 timer=FAST, memory=False))
    assert rec["status"] == "ok"
    assert (rec["section"], rec["units"], rec["peak"], rec["compute_dtype"]) == (
        "A4", "GB/s", "bandwidth", "float32")
    assert rec["tags"] == ["stream"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("section", "a10", "section must be"), ("section", "Q0", "section must be"),
     ("tags", ("gemm", "fast"), "unknown tags"), ("units", "ms", "units must be"),
     ("peak", "gpu", "peak must be"), ("compute_dtype", "int8", "compute_dtype must be")],
)
def test_case_fields_are_checked_when_declared(field: str, value: object, message: str) -> None:
    from xlinalg.bench import Case

    kw = {"name": "t_fields", "sizes": {"quick": [2]}, "setup": lambda rng, n: (),
          "op": lambda ctx: None, field: value}
    with pytest.raises(ValueError, match=message):
        Case(**kw)
    ok = Case(name="t_fields", sizes={"quick": [2]}, setup=lambda rng, n: (),
              op=lambda ctx: None, units="GB/s")
    assert (ok.section, ok.tags, ok.peak) == ("Other", (), "bandwidth")
