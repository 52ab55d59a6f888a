"""The JSONL results store: append, resume, schema, and files that are not intact."""

from __future__ import annotations

import json
import math
import pickle
import warnings
from pathlib import Path

import pytest

from xlinalg.bench import (
    SCHEMA_VERSION,
    ResultsFileError,
    ResultsFileWarning,
    ResultStore,
    cell_key,
    read_results,
)
from xlinalg.bench._cases import format_size


def rec(case="solve", backend="numpy", dtype="float64", size=5, status="ok", **extra):
    label = format_size(size)
    r = {"key": cell_key(case, backend, dtype, label), "case": case, "backend": backend,
         "dtype": dtype, "size": size, "size_label": label, "status": status}
    r.update(extra)
    return r


ENV = {"python": {"version": "3.x"}, "cpu": {"model": "test"}}


def write_file(path: Path, n: int = 3) -> None:
    with ResultStore(path) as store:
        store.write_header(ENV, {"scale": "quick"})
        for i in range(n):
            store.append(rec(size=5 + i, time={"median_s": 1e-6 * (i + 1)}))


def test_append_writes_one_synced_line_per_record(tmp_path):
    p = tmp_path / "r.jsonl"
    store = ResultStore(p)
    store.write_header(ENV, {})
    store.append(rec())
    # visible on disk before close: a crash now would keep it
    lines = p.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) == 3
    first, second = (json.loads(x) for x in lines[:2])
    assert first["type"] == "header"
    assert first["schema_version"] == SCHEMA_VERSION
    assert first["env"] == ENV
    assert second["type"] == "result"
    assert second["run_id"] == first["run_id"]
    assert second["finished"]
    store.append(rec(size=6))
    assert len(p.read_bytes().splitlines()) == 3
    store.close()


def test_round_trip(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 3)
    res = read_results(p)
    assert len(res.headers) == 1
    assert [r["size"] for r in res.records] == [5, 6, 7]
    assert res.warnings == []
    assert set(res.latest()) == {cell_key("solve", "numpy", "float64", s) for s in "567"}


def test_non_finite_floats_become_null_and_json_is_strict(tmp_path):
    p = tmp_path / "r.jsonl"
    with ResultStore(p) as store:
        store.write_header(ENV, {})
        store.append(rec(check={"max_rel_err": math.inf, "nan": math.nan}, size=(2, 3)))
    text = p.read_text()
    assert "NaN" not in text
    assert "Infinity" not in text
    r = read_results(p).records[0]
    assert r["check"] == {"max_rel_err": None, "nan": None}
    assert r["size"] == [2, 3]


def test_existing_file_needs_resume_or_overwrite(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 1)
    with pytest.raises(FileExistsError, match="--resume"):
        ResultStore(p)
    with ResultStore(p, overwrite=True) as store:
        store.write_header(ENV, {})
    assert read_results(p).records == []


def test_resume_appends_a_header_and_knows_the_done_cells(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 2)
    with ResultStore(p, resume=True) as store:
        assert store.previous.finished_keys() == {cell_key("solve", "numpy", "float64", s) for s in "56"}
        store.write_header(ENV, {"resumed": True})
        store.append(rec(size=5, status="failed", error={"kind": "oom"}))  # a re-run
        store.append(rec(size=9))
    res = read_results(p)
    assert len(res.headers) == 2
    assert res.headers[1]["resumed"] is True
    assert res.headers[0]["run_id"] != res.headers[1]["run_id"]
    latest = res.latest()
    assert latest[cell_key("solve", "numpy", "float64", "5")]["status"] == "failed"
    assert len(latest) == 3
    assert cell_key("solve", "numpy", "float64", "5") not in res.finished_keys(
        include_failed=False)
    # --retry-noisy: a cell whose latest record is flagged noisy is measured again
    with ResultStore(p, resume=True) as store:
        store.write_header(ENV, {})
        store.append(rec(size=6, time={"median_s": 1e-6, "noisy": True}))
    res = read_results(p)
    k6 = cell_key("solve", "numpy", "float64", "6")
    assert k6 in res.finished_keys()
    assert k6 not in res.finished_keys(include_noisy=False)
    assert cell_key("solve", "numpy", "float64", "9") in res.finished_keys(include_noisy=False)


def test_truncated_last_line_is_tolerated_with_a_warning(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 3)
    data = p.read_bytes()
    p.write_bytes(data[:-25])  # a crash in the middle of the last write
    with pytest.warns(ResultsFileWarning, match=r"r\.jsonl:4: last line is truncated"):
        res = read_results(p)
    assert len(res.records) == 2
    assert res.warnings
    assert "truncated" in res.warnings[0]

    # resuming cuts the partial line away and appends cleanly
    with ResultStore(p, resume=True) as store:
        assert len(store.previous.finished_keys()) == 2
        store.write_header(ENV, {})
        store.append(rec(size=7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = read_results(p)
    assert [r["size"] for r in res.records] == [5, 6, 7]


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 3)
    lines = p.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:30] + "\n"
    p.write_text("".join(lines))
    with pytest.raises(ResultsFileError) as info:
        read_results(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}:3: corrupt line")
    assert "\n" not in msg
    assert info.value.line == 3
    assert info.value.path == str(p)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"hello, this is not json\nsecond line\n", r":1: not an xlinalg results file"),
        (b"\x80\x04\x95\x00binary\n", r":1: not an xlinalg results file"),
        (b"[1, 2, 3]\n", r":1: not an xlinalg results file"),
        (b'{"type": "result", "schema_version": 1}\n', r":1: not an xlinalg results file"),
        (b"", r"is empty"),
    ],
    ids=["text", "binary", "json-array", "no-header", "empty"],
)
def test_not_a_results_file(tmp_path, content, expected):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    with pytest.raises(ResultsFileError, match=expected) as info:
        read_results(p)
    assert "\n" not in str(info.value)
    assert str(p) in str(info.value)


def test_newer_schema_is_refused(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 1)
    newer = {"type": "result", "schema_version": SCHEMA_VERSION + 1, "run_id": "x"}
    with open(p, "a") as f:
        f.write(json.dumps(newer) + "\n")
    with pytest.raises(ResultsFileError, match=r":3: schema_version 2 is newer .*upgrade"):
        read_results(p)


def test_record_missing_fields_is_refused(tmp_path):
    p = tmp_path / "r.jsonl"
    write_file(p, 1)
    with open(p, "a") as f:
        f.write(json.dumps({"type": "result", "schema_version": 1, "run_id": "x"}) + "\n")
    with pytest.raises(ResultsFileError, match=r":3: result record lacks field\(s\) key"):
        read_results(p)
    with pytest.raises(ValueError, match="lacks"):
        ResultStore(tmp_path / "new.jsonl").append({"case": "x"})


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ResultsFileError, match="no such file"):
        read_results(tmp_path / "nope.jsonl")
    with pytest.raises(ResultsFileError, match="directory"):
        read_results(tmp_path)


def test_resume_of_a_corrupt_file_raises(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("garbage\n")
    with pytest.raises(ResultsFileError):
        ResultStore(p, resume=True)
    assert p.read_text() == "garbage\n"  # left untouched


class _Payload:
    """Unpickling this would create a file: reading results must never do it."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (Path.touch, (self.target,))


def test_pickles_are_never_loaded(tmp_path):
    marker = tmp_path / "executed"
    p = tmp_path / "r.jsonl"
    p.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(ResultsFileError):
        read_results(p)
    # and a pickle smuggled in as a line of a valid file is just a corrupt line
    write_file(tmp_path / "ok.jsonl", 1)
    with open(tmp_path / "ok.jsonl", "ab") as f:
        f.write(pickle.dumps(_Payload(marker)).replace(b"\n", b" ") + b"\n")
    with pytest.raises(ResultsFileError):
        read_results(tmp_path / "ok.jsonl")
    assert not marker.exists()


def test_store_module_does_not_use_pickle():
    import xlinalg.bench._store as store

    src = Path(store.__file__).read_text()
    assert "import pickle" not in src
    assert "marshal" not in src


def test_resume_of_a_file_without_final_newline(tmp_path):
    p = tmp_path / "sub" / "r.jsonl"  # parent directories are created
    write_file(p, 2)
    p.write_bytes(p.read_bytes().rstrip(b"\n"))  # valid last record, newline lost
    assert len(read_results(p).records) == 2
    with ResultStore(p, resume=True) as store:
        store.write_header(ENV, {})
        store.append(rec(size=9))
    assert [r["size"] for r in read_results(p).records] == [5, 6, 9]
