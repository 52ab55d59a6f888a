"""The JSON Schema that checks results files is generated from the record types
(``ResultRecord``, ``HeaderRecord``): read back independently, both describe the same
records (same fields, same required fields, same types, nested objects included), so
the generator (``_schema.json_schema``) loses nothing a type says."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest

from xlinalg.bench import _schema as S

ANY = "any"


def _schema_shape(node: dict[str, Any]) -> frozenset:
    """The set of kinds a JSON Schema node accepts, nested objects and lists included."""
    if "const" in node:
        return frozenset({("lit", node["const"])})
    if "enum" in node:
        return frozenset(("lit", v) for v in node["enum"])
    if "oneOf" in node:
        return frozenset().union(*(_schema_shape(n) for n in node["oneOf"]))
    kinds = node.get("type")
    out: set = set()
    for t in [kinds] if isinstance(kinds, str) else kinds:
        if t in ("string", "integer", "number", "boolean", "null"):
            out.add({"string": "str", "integer": "int", "number": "float",
                     "boolean": "bool", "null": "None"}[t])
        elif t == "array":
            out.add(("list", _schema_shape(node["items"]) if "items" in node else ANY))
        elif t == "object":
            if "properties" in node:
                out.add(("obj", frozenset((k, _schema_shape(v))
                                          for k, v in node["properties"].items())))
            elif "additionalProperties" in node:
                out.add(("map", _schema_shape(node["additionalProperties"])))
            else:
                out.add(("map", ANY))
        else:  # pragma: no cover - a schema keyword this test does not know yet
            raise AssertionError(f"unknown schema type {t!r}")
    return frozenset(out)


def _type_shape(ann: Any) -> frozenset:
    """The same description for a Python annotation."""
    if ann is Any:
        return ANY  # type: ignore[return-value]
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        return frozenset().union(*(_type_shape(a) for a in typing.get_args(ann)))
    if origin is typing.Literal:
        return frozenset(("lit", v) for v in typing.get_args(ann))
    if origin is list:
        return frozenset({("list", _type_shape(typing.get_args(ann)[0]))})
    if origin is dict:
        key, value = typing.get_args(ann)
        assert key is str
        return frozenset({("map", _type_shape(value))})
    if typing.is_typeddict(ann):
        hints = typing.get_type_hints(ann)
        return frozenset({("obj", frozenset((k, _type_shape(v)) for k, v in hints.items()))})
    simple = {str: "str", int: "int", float: "float", bool: "bool", type(None): "None"}
    assert ann in simple, ann
    return frozenset({simple[ann]})


def _differences(schema: frozenset, typed: frozenset, path: str) -> list[str]:
    """Where the two shapes differ, one line each, naming the field."""
    if schema == typed:
        return []
    s_obj = [x for x in schema if isinstance(x, tuple) and x[0] == "obj"]
    t_obj = [x for x in typed if isinstance(x, tuple) and x[0] == "obj"]
    if len(s_obj) == 1 and len(t_obj) == 1 and (schema - set(s_obj)) == (typed - set(t_obj)):
        s_f, t_f = dict(s_obj[0][1]), dict(t_obj[0][1])
        out = [f"{path}.{k}: in the schema only" for k in sorted(s_f.keys() - t_f.keys())]
        out += [f"{path}.{k}: in the type only" for k in sorted(t_f.keys() - s_f.keys())]
        for k in sorted(s_f.keys() & t_f.keys()):
            out += _differences(s_f[k], t_f[k], f"{path}.{k}")
        return out
    return [f"{path}: schema {sorted(map(str, schema))} != type {sorted(map(str, typed))}"]


@pytest.mark.parametrize(("kind", "props", "required", "typed"), [
    ("result", S.RESULT_PROPERTIES, S.RESULT_REQUIRED, S.ResultRecord),
    ("header", S.HEADER_PROPERTIES, S.HEADER_REQUIRED, S.HeaderRecord),
])
def test_the_types_and_the_schema_agree(kind, props, required, typed):
    schema = _schema_shape({"type": "object", "properties": props})
    assert _differences(schema, _type_shape(typed), kind) == []
    assert set(typed.__required_keys__) == set(required)


def test_a_disagreement_is_named():
    class Broken(typing.TypedDict, total=False):
        median_s: float | None
        samples: str  # the schema says integer

    schema = _schema_shape({"type": "object", "properties": {
        "median_s": {"type": ["number", "null"]}, "samples": {"type": "integer"},
        "extra": {"type": "string"}}})
    diff = _differences(schema, _type_shape(Broken), "time")
    assert diff == ["time.extra: in the schema only",
                    "time.samples: schema ['int'] != type ['str']"]
