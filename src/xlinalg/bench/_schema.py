"""What a results file may hold: the record types, their JSON Schema, strict parsing.

The records are declared once, as typed dicts (:class:`ResultRecord`,
:class:`HeaderRecord`) with the constraints JSON adds as :data:`typing.Annotated`
metadata (:class:`JS`); the JSON Schema that checks a file is generated from them
at import (:func:`json_schema`) and checked with :mod:`jsonschema` on first use.
Extending a record: add the field to its type (unknown fields are allowed).
:func:`parse_line` refuses what no writer of ours produces: ``NaN`` literals,
overflowing numbers, integers over :data:`MAX_INT_DIGITS` digits, duplicate keys,
nesting over :data:`MAX_DEPTH` (docs/benchmark.md, "Nothing lost").
"""

from __future__ import annotations

import functools
import json
import math
import types
import typing
from typing import Annotated, Any, Literal, TypedDict

__all__ = [
    "HEADER_PROPERTIES",
    "HeaderRecord",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_SAMPLES",
    "RESULT_PROPERTIES",
    "RecordError",
    "ResultRecord",
    "SideBySide",
    "TimeStats",
    "conforms",
    "json_schema",
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

Status = Literal["ok", "wrong", "unchecked", "skipped", "failed"]


class RecordError(ValueError):
    """A line that is not an acceptable record; ``str()`` is one line. ``json_error``:
    the line is not UTF-8 or not JSON at all (rather than JSON no writer produces)."""

    def __init__(self, message: str, *, json_error: bool = False) -> None:
        super().__init__(message)
        self.json_error = json_error


class JS(tuple[tuple[str, Any], ...]):
    """JSON Schema keywords a type adds, as :data:`typing.Annotated` metadata
    (hashable, so that the annotated types can be members of unions)."""

    def __new__(cls, **keywords: Any) -> JS:
        return super().__new__(cls, sorted(keywords.items()))


# The one definition of a record. total=False: a field may be absent (older files,
# skipped cells); the required fields are in the total=True bases. Annotated
# metadata: JSON Schema keywords the type adds (:class:`JS`; they constrain only
# values of their kind: a "minimum" passes null).
Name = Annotated[str, JS(minLength=1, maxLength=4096)]
LongText = Annotated[str, JS(maxLength=100_000)]
Text = LongText | None
Num = float | None
NonNeg = Annotated[float, JS(minimum=0)] | None
Count = Annotated[int, JS(minimum=0)] | None
Flag = bool | None
Nums = Annotated[list[NonNeg], JS(maxItems=MAX_SAMPLES)]
Object = dict[str, Any]


class DeviceTime(TypedDict, total=False):
    median_s: NonNeg
    iqr_s: NonNeg
    min_s: NonNeg
    clock: Text
    raw_s: Nums


class TimeStats(TypedDict, total=False):
    median_s: NonNeg
    iqr_s: NonNeg
    q1_s: NonNeg
    q3_s: NonNeg
    min_s: NonNeg
    max_s: NonNeg
    mean_s: NonNeg
    stdev_s: NonNeg
    iqr_over_median: NonNeg
    first_call_s: NonNeg
    warmup_s: NonNeg
    total_s: NonNeg
    samples: Count
    number: Count
    total_calls: Count
    warmup_calls: Count
    calibration_blocks: Count
    noisy: Flag
    warnings: list[LongText]
    clock: Text
    raw_s: Nums
    device: DeviceTime


class CheckResult(TypedDict, total=False):
    verdict: Literal["ok", "wrong", "unchecked"]
    rtol: NonNeg
    max_rel_err: NonNeg
    max_abs_err: NonNeg
    message: Text
    reference: Text
    members: list[Object]


class ErrorInfo(TypedDict, total=False):
    kind: LongText
    type: LongText
    message: LongText
    where: LongText


class Throughput(TypedDict, total=False):
    flops: NonNeg
    gflops: NonNeg
    bytes: NonNeg
    gbs: NonNeg


class MemoryInfo(TypedDict, total=False):
    measured: list[LongText]
    error: ErrorInfo
    tracemalloc_peak_bytes: Count
    rss_peak_delta_bytes: Count
    cuda_max_allocated_bytes: Count
    cupy_pool_peak_bytes: Count
    jax_peak_bytes_in_use: Count
    rss_method: Text


class Interval(TypedDict, total=False):
    """A ratio of two times with its interval (:mod:`._verdict`)."""

    ratio: NonNeg
    lo: NonNeg
    hi: NonNeg


class Speedup(Interval, total=False):
    over: str | None


class RecordedVerdict(TypedDict, total=False):
    fastest: str | None
    tie: list[Name] | None
    speedup: Speedup | None
    effective_cores: Object | None
    parallelism_note: Text


class Stall(TypedDict, total=False):
    stalled: Flag
    first_median_s: NonNeg
    recheck_median_s: NonNeg
    remeasured_median_s: NonNeg
    factor: Num
    threshold: Num
    how: Text


class LoadAverage(TypedDict, total=False):
    min: float
    max: float
    mean: float
    samples: Count


class SideBySide(TypedDict, total=False):
    backends: list[Name]
    rounds: Count
    order: list[list[Name]]
    round_s: Nums | None
    block_s: Annotated[list[Nums | None], JS(maxItems=MAX_SAMPLES)] | None
    stop: Text
    group_elapsed_s: NonNeg
    wall_s: NonNeg
    cpu_s: NonNeg
    effective_cores: NonNeg
    settle_s: NonNeg
    load_avg_1min: LoadAverage | None


class _ResultRequired(TypedDict):
    type: Literal["result"]
    schema_version: Annotated[int, JS(minimum=1)]
    run_id: Name
    key: Name
    case: Name
    backend: Name
    dtype: Name
    size: (Annotated[int, JS(minimum=0)] | Name
           | Annotated[list[Annotated[int, JS(minimum=0)]], JS(minItems=1, maxItems=8)])
    size_label: Name
    status: Status


class ResultRecord(_ResultRequired, total=False):
    """One cell of a results file (a ``result`` line)."""

    finished: Text
    seed: int | None
    params: dict[str, Num] | None
    case_doc: Text
    # what the case declares (bench/_cases.Case)
    section: Name
    tags: Annotated[list[Name], JS(maxItems=64)]
    units: Literal["GFLOP/s", "GB/s"]
    peak: Literal["arithmetic", "bandwidth", "none"]
    compute_dtype: Name
    skip_reason: Text
    cell_wall_s: NonNeg
    time: TimeStats
    throughput: Throughput | None
    check: CheckResult
    memory: MemoryInfo | None
    error: ErrorInfo
    fairness: Object | None
    backend_info: Object | None
    # side-by-side runs: the runner's verdict, paired ratios and stall flags
    verdict: RecordedVerdict | None
    ratios: dict[str, Interval | None] | None
    stall: Stall | None
    side_by_side: SideBySide | None


class Env(TypedDict, total=False):
    xlinalg: Text
    python: Object | None
    os: Object | None
    host: Text
    cpu: Object | None
    memory_bytes: NonNeg
    gpus: list[Object] | None
    numpy: Text
    packages: dict[str, Text] | None
    blas: list[Object] | None
    env_vars: dict[str, Text] | None


class RunSettings(TypedDict, total=False):
    backends: list[Name] | None
    cases: list[Name] | None
    dtype: Text
    scale: Text
    sizes: list[LongText] | None
    threads: Count
    allow_tf32: Flag
    time_limit: NonNeg
    isolate: Flag
    seed: int | None
    case_files: list[LongText] | None
    memory_limit: Count
    timer: Object | None
    margin: NonNeg
    recheck: Flag
    stall_factor: NonNeg
    execution: Text
    argv: list[LongText] | None
    check: Flag
    memory: Flag
    calibrate: Flag
    isolation: Text
    fence_selfcheck: Object | None


class _HeaderRequired(TypedDict):
    type: Literal["header"]
    schema_version: Annotated[int, JS(minimum=1)]
    run_id: Name
    created: LongText
    env: Env


class HeaderRecord(_HeaderRequired, total=False):
    """The first line of a run in a results file."""

    resumed: Flag
    run: RunSettings | None


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}


def json_schema(ann: Any) -> dict[str, Any]:
    """The JSON Schema node of a record type (a typed dict, a union, a list...)."""
    origin = typing.get_origin(ann)
    if origin is Annotated:
        base, *meta = typing.get_args(ann)
        return {**json_schema(base), **{k: v for m in meta if isinstance(m, JS) for k, v in m}}
    if origin in (typing.Union, types.UnionType):
        members = [json_schema(a) for a in typing.get_args(ann)]
        real = [m for m in members if m != {"type": "null"}]
        if len(real) == 1:  # an optional: null joins the one type (constraints skip null)
            return {**real[0], "type": [real[0]["type"], "null"]}
        if all(set(m) == {"type"} for m in members):
            return {"type": [m["type"] for m in members]}
        return {"oneOf": members}
    if origin is Literal:
        values = list(typing.get_args(ann))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin is list:
        (item,) = typing.get_args(ann)
        return {"type": "array"} if item is Any else {"type": "array", "items": json_schema(item)}
    if origin is dict:
        _, value = typing.get_args(ann)
        return ({"type": "object"} if value is Any
                else {"type": "object", "additionalProperties": json_schema(value)})
    if typing.is_typeddict(ann):
        hints = typing.get_type_hints(ann, include_extras=True)
        out: dict[str, Any] = {"type": "object",
                               "properties": {k: json_schema(v) for k, v in hints.items()}}
        required = [k for k in hints if k in ann.__required_keys__]
        return {**out, "required": required} if required else out
    return {"type": _JSON_TYPES[ann]}


_RESULT, _HEADER = json_schema(ResultRecord), json_schema(HeaderRecord)
RESULT_PROPERTIES, RESULT_REQUIRED = _RESULT["properties"], tuple(_RESULT["required"])
HEADER_PROPERTIES, HEADER_REQUIRED = _HEADER["properties"], tuple(_HEADER["required"])


@functools.cache
def _validator(record_type: Any) -> Any:
    """The JSON Schema (draft 2020-12) validator of `record_type`, made once."""
    from jsonschema import Draft202012Validator

    schema = json_schema(record_type)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def conforms(value: Any, record_type: Any) -> bool:
    """Whether `value` is a valid `record_type` (a type of a record's part, e.g.
    :class:`SideBySide`), by the schema generated from it."""
    return bool(_validator(record_type).is_valid(value))


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def record_problem(obj: dict[str, Any], kind: str) -> str | None:
    """What is wrong with record `obj` of `kind` ("result" or "header"), in one
    line naming the field, or None when it fits the schema."""
    from jsonschema.exceptions import best_match

    err = best_match(_validator(ResultRecord if kind == "result" else HeaderRecord)
                     .iter_errors(obj))
    if err is None:
        return None
    field = ".".join(str(p) for p in err.absolute_path) or "record"
    if err.validator == "required":
        missing = [f for f in err.schema["required"] if f not in obj]
        return f"{kind} record lacks field(s) {', '.join(missing)}"
    expected = err.schema.get("type") or err.schema.get("enum") or err.schema.get("const")
    if err.validator in ("type", "enum", "const", "oneOf"):
        what = {"oneOf": "an integer, a name or a list of integers"}.get(
            str(err.validator), f"{' or '.join(expected) if isinstance(expected, list) else expected}")
        return f"field {field}: expected {what}, got {_short(err.instance)}"
    return f"field {field}: {err.validator} {_short(err.validator_value)} not met by " \
           f"{_short(err.instance)}"


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


def _too_deep(obj: Any) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            if d > MAX_DEPTH:
                return True
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return False


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
        raise RecordError("not UTF-8", json_error=True) from None
    try:
        obj = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant,
                         object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise RecordError(exc.msg, json_error=True) from None
    except RecursionError:
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _too_deep(obj):
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep")
    return obj
