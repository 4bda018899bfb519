"""Hypothesis strategies for every record type and version, built from Kafka's definitions."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from records.definitions import INT_RANGES, FieldDef, MessageDef, StructDef, definitions
from records.kafka_codec import UNKNOWN_TAGGED


def _leaf(kind: str) -> st.SearchStrategy[Any]:
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, -2, -1, 0, 1]).filter(
            lambda v: low <= v <= high))
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=12)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16)
    raise AssertionError(kind)


def field_values(fdef: FieldDef, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if fdef.struct is not None:
        element = struct_values(fdef.struct, version, flexible)
    else:
        element = _leaf(fdef.element_type)
    value = st.lists(element, max_size=3) if fdef.is_array else element
    if fdef.nullable_in(version):
        value = st.one_of(st.none(), value)
    if fdef.tagged_in(version):
        value = st.one_of(st.just(fdef.default), value)
    return value


def struct_values(sdef: StructDef, version: int, flexible: bool) -> st.SearchStrategy[dict[str, Any]]:
    fields = {f.json_name: field_values(f, version, flexible) for f in sdef.fields_in(version)}
    base = st.fixed_dictionaries(fields)
    if not flexible:
        return base
    unknown = st.lists(st.tuples(st.integers(100, 300), st.binary(max_size=6)), max_size=2,
                       unique_by=lambda t: t[0]).map(lambda ts: sorted([list(t) for t in ts]))
    return st.tuples(base, unknown).map(
        lambda pair: pair[0] | ({UNKNOWN_TAGGED: pair[1]} if pair[1] else {}))


def record_data(message: MessageDef, version: int) -> st.SearchStrategy[dict[str, Any]]:
    values = struct_values(message.body, version, message.is_flexible(version))
    if message.is_control:
        # A raft control record starts with its own Version field: the record's version.
        values = values.map(lambda data: data | {"version": version})
    return values


def all_type_versions() -> list[tuple[str, int]]:
    return [(m.name, v) for m in sorted(definitions().values(), key=lambda m: m.name)
            for v in m.versions]
