"""What a results file may hold: the JSON Schema of its records, in one place.

Results files are data from strangers (shared, downloaded, edited). Readers
(``report``, ``compare``, ``--resume``) parse every line with
:func:`parse_line` and check it with :func:`record_problem` before any other
code sees it, so that a wrong type (``"time": "fast"``, ``"case": 7``) is a
one-line ``file:line: what is wrong`` error, never a traceback further on.

Extending a record: add the field to :data:`RESULT_PROPERTIES` (or
:data:`HEADER_PROPERTIES`) with its type, and to :class:`ResultRecord` (or
:class:`HeaderRecord`), the same record as a type for the code that reads it
(tests/bench/test_bench_schema.py checks that the two agree, field by field). Unknown fields are allowed (a newer
writer may add some), known fields must have their declared type.
The validator is :mod:`jsonschema` (Draft 2020-12), imported on first use.

Parsing refuses what Python's :mod:`json` would accept but no writer of ours
produces: ``NaN``/``Infinity`` literals, numbers that overflow a float,
integer literals over :data:`MAX_INT_DIGITS` digits (Python's int-str limit
would raise deep inside), duplicate keys, and nesting deeper than
:data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal, TypedDict

__all__ = [
    "HEADER_PROPERTIES",
    "HeaderRecord",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_SAMPLES",
    "RESULT_PROPERTIES",
    "RESULT_STATUSES",
    "RecordError",
    "ResultRecord",
    "parse_line",
    "record_problem",
]

#: Nesting deeper than this is refused (records are about 5 deep).
MAX_DEPTH = 32
#: Integer literals longer than this are refused (seeds and byte counts are < 25).
MAX_INT_DIGITS = 40
#: Longest list of times a record may hold (raw_s, round_s, block_s): a run writes at
#: most a few hundred per cell (200 samples or rounds a pass); the statistics of a
#: shared file's record must not take gigabytes (a bootstrap draws 2000 x n).
MAX_SAMPLES = 100_000
#: Longest string kept in an error message.
_SHOWN = 80

RESULT_STATUSES = ("ok", "wrong", "unchecked", "skipped", "failed")


class RecordError(ValueError):
    """A line that is not an acceptable record; ``str()`` is one line."""


# ---------------------------------------------------------------------- types
_NAME = {"type": "string", "minLength": 1, "maxLength": 4096}
_TEXT = {"type": "string", "maxLength": 100_000}
_OPT_TEXT = {"type": ["string", "null"], "maxLength": 100_000}
_NUM = {"type": ["number", "null"]}
_NONNEG = {"type": ["number", "null"], "minimum": 0}
_COUNT = {"type": ["integer", "null"], "minimum": 0}
_BOOL = {"type": ["boolean", "null"]}
_OBJ = {"type": "object"}
_OPT_OBJ = {"type": ["object", "null"]}
_LIST = {"type": "array"}
_NUMS = {"type": "array", "items": _NONNEG, "maxItems": MAX_SAMPLES}
_SIZE = {"oneOf": [{"type": "integer", "minimum": 0}, _NAME,
                   {"type": "array", "items": {"type": "integer", "minimum": 0},
                    "minItems": 1, "maxItems": 8}]}

_TIME = {"type": "object", "properties": {
    **dict.fromkeys(("median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "mean_s",
                     "stdev_s", "iqr_over_median", "first_call_s", "warmup_s", "total_s"),
                    _NONNEG),
    **dict.fromkeys(("samples", "number", "total_calls", "warmup_calls",
                     "calibration_blocks"), _COUNT),
    "noisy": _BOOL,
    "stalled": _BOOL,
    "warnings": {"type": "array", "items": _TEXT},
    "clock": _OPT_TEXT,
    "raw_s": _NUMS,
    "device": {"type": "object", "properties": {
        "median_s": _NONNEG, "iqr_s": _NONNEG, "min_s": _NONNEG, "clock": _OPT_TEXT,
        "raw_s": _NUMS}},
}}
_CHECK = {"type": "object", "properties": {
    "verdict": {"enum": ["ok", "wrong", "unchecked"]},
    "rtol": _NONNEG, "max_rel_err": _NONNEG, "max_abs_err": _NONNEG,
    "message": _OPT_TEXT, "reference": _OPT_TEXT,
    "members": {"type": "array", "items": _OBJ},
}}
_ERROR = {"type": "object", "properties": {
    "kind": _TEXT, "type": _TEXT, "message": _TEXT, "where": _TEXT}}

#: Known fields of a ``result`` record and their types (unknown fields pass).
RESULT_PROPERTIES: dict[str, Any] = {
    "type": {"const": "result"},
    "schema_version": {"type": "integer", "minimum": 1},
    "run_id": _NAME,
    "key": _NAME,
    "case": _NAME,
    "backend": _NAME,
    "dtype": _NAME,
    "size": _SIZE,
    "size_label": _NAME,
    "status": {"enum": list(RESULT_STATUSES)},
    "finished": _OPT_TEXT,
    "seed": {"type": ["integer", "null"]},
    "params": {"type": ["object", "null"], "additionalProperties": _NUM},
    "case_doc": _OPT_TEXT,
    # what the case declares (bench/_cases.Case); older files lack them
    "section": _NAME,
    "tags": {"type": "array", "items": _NAME, "maxItems": 64},
    "units": {"enum": ["GFLOP/s", "GB/s"]},
    "peak": {"enum": ["arithmetic", "bandwidth", "none"]},
    "compute_dtype": _NAME,
    "skip_reason": _OPT_TEXT,
    "cell_wall_s": _NONNEG,
    "calibration": _BOOL,
    "time": _TIME,
    "throughput": {"type": ["object", "null"], "properties": {
        "flops": _NONNEG, "gflops": _NONNEG, "bytes": _NONNEG, "gbs": _NONNEG}},
    "check": _CHECK,
    "memory": {"type": ["object", "null"], "properties": {
        "measured": {"type": "array", "items": _TEXT}, "error": _ERROR,
        **dict.fromkeys(("tracemalloc_peak_bytes", "rss_peak_delta_bytes",
                         "cuda_max_allocated_bytes", "cupy_pool_peak_bytes",
                         "jax_peak_bytes_in_use"), _COUNT),
        "rss_method": _OPT_TEXT}},
    "error": _ERROR,
    "fairness": _OPT_OBJ,
    "backend_info": _OPT_OBJ,
    # side-by-side runs: the runner's verdict, paired ratios and stall flags
    "verdict": {"type": ["object", "null"], "properties": {
        "fastest": {"type": ["string", "null"]},
        "tie": {"type": ["array", "null"], "items": _NAME},
        "speedup": {"type": ["object", "null"], "properties": {
            "over": {"type": ["string", "null"]}, "ratio": _NONNEG, "lo": _NONNEG,
            "hi": _NONNEG}},
        "effective_cores": _OPT_OBJ,
        "parallelism_note": _OPT_TEXT}},
    "ratios": {"type": ["object", "null"], "additionalProperties": {
        "type": ["object", "null"],
        "properties": {"ratio": _NONNEG, "lo": _NONNEG, "hi": _NONNEG}}},
    "stall": {"type": ["object", "null"], "properties": {
        "stalled": _BOOL, "first_median_s": _NONNEG, "recheck_median_s": _NONNEG,
        "remeasured_median_s": _NONNEG, "factor": _NUM, "threshold": _NUM, "how": _OPT_TEXT}},
    "stalled": _BOOL,
    "side_by_side": {"type": ["object", "null"], "properties": {
        "backends": {"type": "array", "items": _NAME},
        "rounds": _COUNT,
        "order": {"type": "array", "items": {"type": "array", "items": _NAME}},
        "round_s": {"type": ["array", "null"], "items": _NONNEG, "maxItems": MAX_SAMPLES},
        "block_s": {"type": ["array", "null"], "maxItems": MAX_SAMPLES,
                    "items": {"type": ["array", "null"], "items": _NONNEG, "maxItems": MAX_SAMPLES}},
        "stop": _OPT_TEXT,
        "group_elapsed_s": _NONNEG, "wall_s": _NONNEG, "cpu_s": _NONNEG,
        "effective_cores": _NONNEG,
        "load_avg_1min": {"type": ["object", "null"], "properties": {
            "min": _NUM, "max": _NUM, "mean": _NUM, "samples": _COUNT}}}},
}
RESULT_REQUIRED = ("type", "schema_version", "run_id", "key", "case", "backend", "dtype",
                   "size", "size_label", "status")

#: Known fields of a ``header`` record and their types (unknown fields pass).
HEADER_PROPERTIES: dict[str, Any] = {
    "type": {"const": "header"},
    "schema_version": {"type": "integer", "minimum": 1},
    "run_id": _NAME,
    "created": _TEXT,
    "resumed": _BOOL,
    "env": {"type": "object", "properties": {
        "xlinalg": _OPT_TEXT,
        "python": _OPT_OBJ,
        "os": _OPT_OBJ,
        "host": _OPT_TEXT,
        "cpu": _OPT_OBJ,
        "memory_bytes": _NONNEG,
        "gpus": {"type": ["array", "null"], "items": _OBJ},
        "numpy": _OPT_TEXT,
        "packages": {"type": ["object", "null"], "additionalProperties": _OPT_TEXT},
        "blas": {"type": ["array", "null"], "items": _OBJ},
        "env_vars": {"type": ["object", "null"], "additionalProperties": _OPT_TEXT},
    }},
    "run": {"type": ["object", "null"], "properties": {
        "backends": {"type": ["array", "null"], "items": _NAME},
        "cases": {"type": ["array", "null"], "items": _NAME},
        "dtype": _OPT_TEXT,
        "scale": _OPT_TEXT,
        "sizes": {"type": ["array", "null"], "items": _TEXT},
        "threads": _COUNT,
        "allow_tf32": _BOOL,
        "time_limit": _NONNEG,
        "isolate": _BOOL,
        "seed": {"type": ["integer", "null"]},
        "case_files": {"type": ["array", "null"], "items": _TEXT},
        "memory_limit": _COUNT,
        "timer": _OPT_OBJ,
        "margin": _NONNEG,
        "recheck": _BOOL,
        "stall_factor": _NONNEG,
        "execution": _OPT_TEXT,
        "argv": {"type": ["array", "null"], "items": _TEXT},
        "check": _BOOL,
        "memory": _BOOL,
        "calibrate": _BOOL,
        "isolation": _OPT_TEXT,
        "fence_selfcheck": _OPT_OBJ,
    }},
}
HEADER_REQUIRED = ("type", "schema_version", "run_id", "created", "env")


# ---------------------------------------------------------------------- the types
# The records above as types for the code that reads them (store, report, plots,
# compare). total=False: a field may be absent (older files, skipped cells); the
# required fields are in the total=True bases. Keep each field's type the schema's.
Num = float | None
Count = int | None
Flag = bool | None
Text = str | None


class DeviceTime(TypedDict, total=False):
    median_s: Num
    iqr_s: Num
    min_s: Num
    clock: Text
    raw_s: list[Num]


class TimeStats(TypedDict, total=False):
    median_s: Num
    iqr_s: Num
    q1_s: Num
    q3_s: Num
    min_s: Num
    max_s: Num
    mean_s: Num
    stdev_s: Num
    iqr_over_median: Num
    first_call_s: Num
    warmup_s: Num
    total_s: Num
    samples: Count
    number: Count
    total_calls: Count
    warmup_calls: Count
    calibration_blocks: Count
    noisy: Flag
    stalled: Flag
    warnings: list[str]
    clock: Text
    raw_s: list[Num]
    device: DeviceTime


class CheckResult(TypedDict, total=False):
    verdict: Literal["ok", "wrong", "unchecked"]
    rtol: Num
    max_rel_err: Num
    max_abs_err: Num
    message: Text
    reference: Text
    members: list[dict[str, Any]]


class ErrorInfo(TypedDict, total=False):
    kind: str
    type: str
    message: str
    where: str


class Throughput(TypedDict, total=False):
    flops: Num
    gflops: Num
    bytes: Num
    gbs: Num


class MemoryInfo(TypedDict, total=False):
    measured: list[str]
    error: ErrorInfo
    tracemalloc_peak_bytes: Count
    rss_peak_delta_bytes: Count
    cuda_max_allocated_bytes: Count
    cupy_pool_peak_bytes: Count
    jax_peak_bytes_in_use: Count
    rss_method: Text


class Interval(TypedDict, total=False):
    ratio: Num
    lo: Num
    hi: Num


class Speedup(Interval, total=False):
    over: Text


class RecordedVerdict(TypedDict, total=False):
    fastest: Text
    tie: list[str] | None
    speedup: Speedup | None
    effective_cores: dict[str, Any] | None
    parallelism_note: Text


class Stall(TypedDict, total=False):
    stalled: Flag
    first_median_s: Num
    recheck_median_s: Num
    remeasured_median_s: Num
    factor: Num
    threshold: Num
    how: Text


class LoadAverage(TypedDict, total=False):
    min: Num
    max: Num
    mean: Num
    samples: Count


class SideBySide(TypedDict, total=False):
    backends: list[str]
    rounds: Count
    order: list[list[str]]
    round_s: list[Num] | None
    block_s: list[list[Num] | None] | None
    stop: Text
    group_elapsed_s: Num
    wall_s: Num
    cpu_s: Num
    effective_cores: Num
    load_avg_1min: LoadAverage | None


class _ResultRequired(TypedDict):
    type: Literal["result"]
    schema_version: int
    run_id: str
    key: str
    case: str
    backend: str
    dtype: str
    size: int | str | list[int]
    size_label: str
    status: Literal["ok", "wrong", "unchecked", "skipped", "failed"]


class ResultRecord(_ResultRequired, total=False):
    """One cell of a results file (a ``result`` line), as :data:`RESULT_PROPERTIES`
    declares it."""

    finished: Text
    seed: Count
    params: dict[str, Num] | None
    case_doc: Text
    section: str
    tags: list[str]
    units: Literal["GFLOP/s", "GB/s"]
    peak: Literal["arithmetic", "bandwidth", "none"]
    compute_dtype: str
    skip_reason: Text
    cell_wall_s: Num
    calibration: Flag
    time: TimeStats
    throughput: Throughput | None
    check: CheckResult
    memory: MemoryInfo | None
    error: ErrorInfo
    fairness: dict[str, Any] | None
    backend_info: dict[str, Any] | None
    verdict: RecordedVerdict | None
    ratios: dict[str, Interval | None] | None
    stall: Stall | None
    stalled: Flag
    side_by_side: SideBySide | None


class Env(TypedDict, total=False):
    xlinalg: Text
    python: dict[str, Any] | None
    os: dict[str, Any] | None
    host: Text
    cpu: dict[str, Any] | None
    memory_bytes: Num
    gpus: list[dict[str, Any]] | None
    numpy: Text
    packages: dict[str, Text] | None
    blas: list[dict[str, Any]] | None
    env_vars: dict[str, Text] | None


class RunSettings(TypedDict, total=False):
    backends: list[str] | None
    cases: list[str] | None
    dtype: Text
    scale: Text
    sizes: list[str] | None
    threads: Count
    allow_tf32: Flag
    time_limit: Num
    isolate: Flag
    seed: Count
    case_files: list[str] | None
    memory_limit: Count
    timer: dict[str, Any] | None
    margin: Num
    recheck: Flag
    stall_factor: Num
    execution: Text
    argv: list[str] | None
    check: Flag
    memory: Flag
    calibrate: Flag
    isolation: Text
    fence_selfcheck: dict[str, Any] | None


class _HeaderRequired(TypedDict):
    type: Literal["header"]
    schema_version: int
    run_id: str
    created: str
    env: Env


class HeaderRecord(_HeaderRequired, total=False):
    """The first line of a run in a results file, as :data:`HEADER_PROPERTIES`
    declares it."""

    resumed: Flag
    run: RunSettings | None


def _schema(props: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "properties": props, "required": list(required)}


_VALIDATORS: dict[str, Any] = {}


def _validator(kind: str) -> Any:
    v = _VALIDATORS.get(kind)
    if v is None:
        from jsonschema import Draft202012Validator

        schema = (_schema(RESULT_PROPERTIES, RESULT_REQUIRED) if kind == "result"
                  else _schema(HEADER_PROPERTIES, HEADER_REQUIRED))
        Draft202012Validator.check_schema(schema)
        v = _VALIDATORS.setdefault(kind, Draft202012Validator(schema))
    return v


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def record_problem(obj: dict[str, Any], kind: str) -> str | None:
    """What is wrong with record `obj` of `kind` ("result" or "header"), in one
    line naming the field, or None when it fits the schema."""
    from jsonschema.exceptions import best_match

    err = best_match(_validator(kind).iter_errors(obj))
    if err is None:
        return None
    field = ".".join(str(p) for p in err.absolute_path) or "record"
    if err.validator == "required":
        missing = [f for f in (RESULT_REQUIRED if kind == "result" else HEADER_REQUIRED)
                   if f not in obj]
        return f"{kind} record lacks field(s) {', '.join(missing)}"
    expected = err.schema.get("type") or err.schema.get("enum") or err.schema.get("const")
    if err.validator in ("type", "enum", "const", "oneOf"):
        what = {"oneOf": "an integer, a name or a list of integers"}.get(
            str(err.validator), f"{' or '.join(expected) if isinstance(expected, list) else expected}")
        return f"field {field}: expected {what}, got {_short(err.instance)}"
    return f"field {field}: {err.validator} {_short(err.validator_value)} not met by " \
           f"{_short(err.instance)}"


# ---------------------------------------------------------------------- parsing
def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise RecordError(f"an integer literal of {len(text)} digits (at most "
                          f"{MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise RecordError(f"the number {text[:_SHOWN]} is out of range (non-finite values are "
                          "stored as null)")
    return v


def _constant(text: str) -> Any:
    raise RecordError(f"{text} is not JSON (non-finite values are stored as null)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise RecordError(f"duplicate key {_short(k)} in one object")
            seen.add(k)
    return out


def _depth(obj: Any) -> int:
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                break
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return deepest


def parse_line(line: bytes) -> Any:
    """One line of a results file as a JSON value, strictly.

    Raises
    ------
    RecordError
        Not UTF-8 or not JSON (``.json_error`` is True), or JSON that no writer
        of results files produces (see the module docstring).
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise _syntax("not UTF-8") from None
    try:
        obj = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant,
                         object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise _syntax(exc.msg) from None
    except RecursionError:
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _depth(obj) > MAX_DEPTH:
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep")
    return obj


def _syntax(msg: str) -> RecordError:
    err = RecordError(msg)
    err.json_error = True  # type: ignore[attr-defined]
    return err
