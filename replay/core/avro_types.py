"""An Avro schema of a record type as Spark reads it: the reader schema (the registry's newest, narrowed to the
fields asked), its Spark type, and the conversion of a decoded struct into Kafka's JSON form (UUIDs as base64url
text, bytes as base64, no ``_unknownTaggedFields``). ``replay.core.shapes`` builds each record type's struct
column with these."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from records.avro_schema import UUID_NAME
from records.kafka_codec import UNKNOWN_TAGGED

_PRIMITIVES: dict[str, DataType] = {
    "int": IntegerType(), "long": LongType(), "boolean": BooleanType(), "string": StringType(),
    "bytes": StringType(), "double": DoubleType(), "float": FloatType(),
}

Schema = Any  # an Avro schema as parsed JSON: a name, a list (union) or a dict
Convert = Callable[[str], str]  # SQL text of a value -> SQL text of its Kafka form


def _full_name(schema: Mapping[str, Any], namespace: str | None) -> str:
    name = str(schema["name"])
    if "." in name:
        return name
    space = schema.get("namespace", namespace)
    return f"{space}.{name}" if space else name


def named_types(schema: Schema, namespace: str | None = None, out: dict[str, Schema] | None = None
                ) -> dict[str, Schema]:
    """Full name → definition of every named type (record, fixed, enum) the schema defines."""
    out = {} if out is None else out
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, namespace, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "fixed", "enum"):
            full = _full_name(schema, namespace)
            out[full] = schema
            namespace = full.rpartition(".")[0] or None
        if kind == "record":
            for field in schema["fields"]:
                named_types(field["type"], namespace, out)
        elif kind == "array":
            named_types(schema["items"], namespace, out)
        elif kind == "map":
            named_types(schema["values"], namespace, out)
        elif isinstance(kind, (dict, list)):
            named_types(kind, namespace, out)
    return out


def _resolve(name: str, names: Mapping[str, Schema], namespace: str | None) -> str | None:
    """The full name a type reference means (as written, else in the enclosing namespace); None: a primitive."""
    if name in names:
        return name
    full = f"{namespace}.{name}" if namespace else None
    return full if full in names else None


def _lookup(name: str, names: Mapping[str, Schema], namespace: str | None) -> Schema | None:
    full = _resolve(name, names, namespace)
    return None if full is None else names[full]


def reader_schema(schema: Mapping[str, Any], fields: Sequence[str] | None = None) -> dict[str, Any]:
    """The schema a replay reads with: without ``_unknownTaggedFields`` (Avro resolution skips them in the
    payload), only ``fields`` at the top when given (a projection: the rest is skipped too). Named types are
    written out where first used, so a kept field never refers to a definition that was dropped."""
    names = named_types(schema)
    defined: set[str] = set()

    def walk(node: Schema, namespace: str | None) -> Schema:
        if isinstance(node, str):
            full = _resolve(node, names, namespace)
            if full is None:
                return node  # a primitive
            if full in defined:
                return full
            return walk(names[full], full.rpartition(".")[0] or None)
        if isinstance(node, list):
            return [walk(branch, namespace) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in ("record", "fixed", "enum"):
            full = _full_name(node, namespace)
            if full in defined:
                return full
            defined.add(full)
            out = {key: value for key, value in node.items() if key in ("type", "name", "size", "symbols")}
            out["name"], out["namespace"] = full.rpartition(".")[2], full.rpartition(".")[0]
            if kind == "record":
                inner = full.rpartition(".")[0] or None
                out["fields"] = [{"name": f["name"], "type": walk(f["type"], inner),
                                  **({"default": f["default"]} if "default" in f else {})}
                                 for f in node["fields"] if f["name"] != UNKNOWN_TAGGED]
            return out
        if kind == "array":
            return {"type": "array", "items": walk(node["items"], namespace)}
        if kind == "map":
            return {"type": "map", "values": walk(node["values"], namespace)}
        return walk(kind, namespace)

    top = dict(schema)
    if fields is not None:
        wanted = set(fields)
        top["fields"] = [f for f in schema["fields"] if f["name"] in wanted]
    result = walk(top, None)
    assert isinstance(result, dict)
    return result


def _non_null(branches: list[Schema]) -> Schema:
    kept = [b for b in branches if b != "null"]
    if len(kept) != 1:
        raise ValueError(f"Avro union {branches!r}: only [null, T] unions have a Spark type here")
    return kept[0]


def spark_type(schema: Schema) -> DataType:
    """The Spark type of a reader schema (as :func:`reader_schema` writes it) in Kafka's JSON form: UUIDs
    (fixed) and bytes as strings, what ``from_json`` reads from ``payload_json``."""
    names = named_types(schema)

    def convert(node: Schema, namespace: str | None) -> DataType:
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return _PRIMITIVES[node]
            target = _lookup(node, names, namespace)
            if target is None:
                raise ValueError(f"Avro type {node!r} is not defined")
            return convert(target, namespace)
        if isinstance(node, list):
            return convert(_non_null(node), namespace)
        kind = node["type"]
        if kind == "record":
            inner = _full_name(node, namespace).rpartition(".")[0] or None
            return StructType([StructField(f["name"], convert(f["type"], inner)) for f in node["fields"]])
        if kind in ("fixed", "enum"):
            return StringType()
        if kind == "array":
            return ArrayType(convert(node["items"], namespace))
        if kind == "map":
            return MapType(StringType(), convert(node["values"], namespace))
        return convert(kind, namespace)

    return convert(schema, None)


def kafka_uuid(raw: str) -> str:
    """Kafka's ``Uuid.toString()`` of 16 bytes (``raw``: SQL text) as SQL text: base64url without its padding (22
    characters). Three plain replacements: Spark's ``translate`` (and ``substring``) cost twice as much per row, and 16
    bytes always end in exactly ``==``."""
    encoded = f"base64({raw})"
    for plain, url_safe in (("+", "-"), ("/", "_"), ("==", "")):
        encoded = f"replace({encoded}, '{plain}', '{url_safe}')"
    return encoded


def _base64(raw: str) -> str:
    return f"base64({raw})"


def kafka_form(schema: Schema) -> Convert | None:
    """How to turn ``from_avro``'s value of a reader schema into Kafka's JSON form (UUIDs and bytes as text,
    see :func:`spark_type`), as SQL text of the value's SQL text; None when it already is (no UUID, no bytes inside).
    SQL text, not ``F`` columns: ``shapes.typed`` builds one per record type it decodes, and a column built with ``F``
    costs a py4j round trip per field (``F.expr`` parses the text in one)."""
    names = named_types(schema)

    def build(node: Schema, namespace: str | None, depth: int) -> Convert | None:
        if isinstance(node, str):
            if node == "bytes":
                return _base64
            if node in _PRIMITIVES:
                return None
            target = _lookup(node, names, namespace)
            return None if target is None else build(target, namespace, depth)
        if isinstance(node, list):
            return build(_non_null(node), namespace, depth)
        kind = node["type"]
        if kind == "fixed":
            return kafka_uuid if _full_name(node, namespace) == UUID_NAME else _base64
        if kind == "array":
            item = build(node["items"], namespace, depth + 1)
            element = f"_e{depth}"  # the lambda's variable, one name per nesting level
            return None if item is None else (lambda array: f"transform({array}, {element} -> {item(element)})")
        if kind == "record":
            inner = _full_name(node, namespace).rpartition(".")[0] or None
            parts = [(f["name"], build(f["type"], inner, depth)) for f in node["fields"]]
            if all(convert is None for _, convert in parts):
                return None

            def record(struct: str) -> str:
                fields = ", ".join(f"'{name}', {convert(f'{struct}.`{name}`') if convert else f'{struct}.`{name}`'}"
                                   for name, convert in parts)
                return f"CASE WHEN {struct} IS NOT NULL THEN named_struct({fields}) END"

            return record
        if kind in ("enum", "map"):
            return None  # enum symbols are strings already; no map holds a UUID in Kafka's records
        return build(kind, namespace, depth)

    return build(schema, None, 0)


@cache
def json_struct_type(reader: str) -> StructType:
    """The struct type ``from_json`` parses ``payload_json`` with, derived once per reader schema."""
    dtype = spark_type(json.loads(reader))
    assert isinstance(dtype, StructType)
    return dtype


__all__ = [
    "Convert",
    "Schema",
    "json_struct_type",
    "kafka_form",
    "kafka_uuid",
    "named_types",
    "reader_schema",
    "spark_type",
]
