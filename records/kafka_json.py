"""Kafka's JSON form of a record, as ``kafka-dump-log --cluster-metadata-decoder`` prints it.

``{"type": "PARTITION_CHANGE_RECORD", "version": 0, "data": {...}}`` with camelCase fields,
UUIDs as Kafka's base64url strings and bytes as base64. Like Kafka's generated JSON converters,
a tagged field is printed only when it differs from its default, and a field the version does
not have is never printed.
"""

from __future__ import annotations

import base64
import copy
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from records.definitions import FieldDef, MessageDef, StructDef, by_json_type_name, definitions
from records.errors import RecordValidationError
from records.kafka_codec import UNKNOWN_TAGGED
from records.model import MetadataRecord, RawRecord, uuid_to_str
from records.validation import (
    FieldProblem,
    check_version,
    convert_struct,
    json_leaf,
    model_leaf,
)

_MISSING = object()
Converter = Callable[[Any], Any] | None
# (json name, tagged in this version, Kafka default, converter or None for plain JSON values),
# per (struct, version); keyed by identity because the definitions live for the whole process.
_PLANS: dict[tuple[int, int], list[tuple[str, bool, Any, Converter]]] = {}


def _leaf_converter(kind: str) -> Converter:
    if kind == "uuid":
        return uuid_to_str
    if kind in ("bytes", "records"):
        return lambda value: base64.b64encode(value).decode("ascii")
    return None


def _converter(fdef: FieldDef, version: int) -> Converter:
    struct = fdef.struct
    element: Converter = (
        (lambda value: struct_to_json(struct, version, value)) if struct is not None
        else _leaf_converter(fdef.element_type))
    if element is None or not fdef.is_array:
        return element
    convert = element
    return lambda values: [convert(v) for v in values]


def _plan(sdef: StructDef, version: int) -> list[tuple[str, bool, Any, Converter]]:
    key = (id(sdef), version)
    plan = _PLANS.get(key)
    if plan is None:
        plan = [(f.json_name, f.tagged_in(version), f.default, _converter(f, version)) for f in sdef.fields_in(version)]
        _PLANS[key] = plan
    return plan


def struct_to_json(sdef: StructDef, version: int, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, tagged, default, convert in _plan(sdef, version):
        value = data.get(name, _MISSING)
        if value is _MISSING:
            value = copy.deepcopy(default)
        if tagged and value == default:
            continue
        out[name] = value if convert is None or value is None else convert(value)
    unknown = data.get(UNKNOWN_TAGGED)
    if unknown:
        out[UNKNOWN_TAGGED] = [
            {"tag": tag, "data": base64.b64encode(raw).decode("ascii")} for tag, raw in unknown
        ]
    return out


def record_to_json(record: MetadataRecord | RawRecord) -> dict[str, Any]:
    """The ``{"type", "version", "data"}`` object; a raw record carries its bytes as ``raw``."""
    if isinstance(record, RawRecord):
        out: dict[str, Any] = {"type": raw_type_name(record), "version": record.version}
        if record.api_key is not None:
            out["apiKey"] = record.api_key
        if record.control_type is not None:
            out["controlType"] = record.control_type
        out["raw"] = base64.b64encode(record.value).decode("ascii")
        out["reason"] = record.reason
        return out
    message = record.definition
    return {
        "type": message.json_type_name,
        "version": record.version,
        "data": struct_to_json(message.body, record.layout_version, record.data),
    }


def raw_type_name(record: RawRecord) -> str:
    known = definitions().get(record.type_name)
    if known is not None:
        return known.json_type_name
    if record.control_type is not None:
        return f"UNKNOWN_CONTROL_RECORD_{record.control_type}"
    return f"UNKNOWN_RECORD_{record.api_key}"


def message_for_json_type(type_name: Any) -> MessageDef:
    if not isinstance(type_name, str):
        raise FieldProblem("type", f"expected a record type name, got {type_name!r}")
    message = by_json_type_name().get(type_name)
    if message is None:
        known = ", ".join(sorted(by_json_type_name()))
        raise FieldProblem("type", f"unknown record type {type_name!r} (expected one of {known})")
    return message


def record_from_json(obj: Any, *, best_effort: bool = False) -> MetadataRecord:
    """Kafka's JSON form → model; raises :class:`FieldProblem` naming the field. ``best_effort``: a version newer
    than the definitions is accepted, its data checked against the newest layout (a record read that way)."""
    if not isinstance(obj, dict):
        raise FieldProblem("", "expected a JSON object with type, version and data")
    message = message_for_json_type(obj.get("type"))
    if "version" not in obj:
        raise FieldProblem("version", "missing: every record needs its version")
    version = check_version(message, obj["version"], newer=best_effort)
    if "data" not in obj:
        raise FieldProblem("data", "missing: every record needs its data object")
    data = convert_struct(message.body, message.layout_version(version), obj["data"], "", json_leaf,
                          require_all=True)
    return MetadataRecord(message.name, version, data)


def make_record(type_name: str, version: int, /, **fields: Any) -> MetadataRecord:
    """Build a record in Python: missing fields take Kafka's defaults; values are checked."""
    message = definitions().get(type_name)
    if message is None:
        raise RecordValidationError(f"unknown record type {type_name!r}")
    if message.is_control:
        fields.setdefault("version", version)  # a control record carries its version in its body too
    try:
        check_version(message, version)
        data = convert_struct(message.body, version, fields, "", model_leaf, require_all=False)
    except FieldProblem as exc:
        raise RecordValidationError(exc.problem, path=exc.path or None,
                                    source=f"{type_name} v{version}") from None
    return MetadataRecord(message.name, version, data)


def java_double(value: float) -> str:
    """Java's ``Double.toString``, which Kafka's JSON converters (Jackson) print a float64 field with: ``1.048576E7``
    where Python says ``10485760.0``, ``1.0E-4`` for ``0.0001``; plain decimals from 10^-3 to 10^7. The digits are
    the shortest that read back to the value, as JDK 19+ prints them; JDK 17 prints one or two more for about 3 % of
    arbitrary 17-digit doubles (never for quota-like values below 2^55): the same value either way. (Non-finite
    values keep Python's spelling: Kafka quotes them, ``"NaN"``, which no metadata record holds.)"""
    if not math.isfinite(value):
        return repr(value)
    magnitude = abs(value)
    if magnitude == 0.0 or 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's shortest repr is the same fixed notation in this range
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


def _records_with_floats() -> frozenset[str]:
    """The ``type`` of every record with a float64 field somewhere (ClientQuotaRecord's value)."""
    def has_float(sdef: StructDef) -> bool:
        return any(f.element_type == "float64" or (f.struct is not None and has_float(f.struct)) for f in sdef.fields)

    return frozenset(m.json_type_name for m in definitions().values() if has_float(m.body))


_FLOAT_TYPES: frozenset[str] | None = None


def _placeholders(obj: Any, found: list[float]) -> Any:
    """``obj`` with every float replaced by a string naming its place in ``found``."""
    if isinstance(obj, float):
        found.append(obj)
        return f"\x00float{len(found) - 1}\x00"
    if isinstance(obj, dict):
        return {k: _placeholders(v, found) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_placeholders(v, found) for v in obj]
    return obj


def dumps_compact(obj: Any) -> str:
    """The JSON text Kafka's Jackson writer produces: no spaces, non-ASCII kept, and for a record (an object with
    its ``type``) whose type holds a float64 field, the float as Java prints it (:func:`java_double`)."""
    global _FLOAT_TYPES
    if _FLOAT_TYPES is None:
        _FLOAT_TYPES = _records_with_floats()
    if isinstance(obj, dict) and obj.get("type") in _FLOAT_TYPES:
        found: list[float] = []
        text = json.dumps(_placeholders(obj, found), separators=(",", ":"), ensure_ascii=False)
        for index, value in enumerate(found):
            text = text.replace(f'"\\u0000float{index}\\u0000"', java_double(value), 1)
        return text
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
