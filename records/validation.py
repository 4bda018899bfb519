"""Checking record data against Kafka's definition of its type and version.

One walker serves two inputs: Kafka's JSON form (UUIDs and bytes arrive as base64 text) and
model values built in Python (UUIDs and bytes already raw). Each problem is reported with the
field's path and what Kafka expects there.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from typing import Any

from records.definitions import INT_RANGES, FieldDef, MessageDef, StructDef
from records.kafka_codec import UNKNOWN_TAGGED
from records.model import uuid_from_str


class FieldProblem(ValueError):
    """A value does not fit its field; ``path`` is like ``endPoints[1].port``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


LeafConverter = Callable[[str, Any, str], Any]


def _type_label(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_scalar(kind: str, value: Any, path: str) -> Any:
    """Type and range checks shared by both inputs, for every kind but uuid and bytes."""
    if kind in INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldProblem(path, f"expected {kind}, got {_type_label(value)} ({value!r})")
        low, high = INT_RANGES[kind]
        if not low <= value <= high:
            raise FieldProblem(path, f"expected {kind} in {low}..{high}, got {value}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise FieldProblem(path, f"expected a boolean, got {_type_label(value)} ({value!r})")
        return value
    if kind == "float64":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldProblem(path, f"expected float64, got {_type_label(value)} ({value!r})")
        if isinstance(value, float) and not math.isfinite(value):
            return value
        return float(value)
    if kind == "string":
        if not isinstance(value, str):
            # no value quoted: it may be a secret (a ConfigRecord value; records.redaction)
            raise FieldProblem(path, f"expected a string, got {_type_label(value)}")
        return value
    raise FieldProblem(path, f"unsupported field type {kind}")


def json_leaf(kind: str, value: Any, path: str) -> Any:
    """Kafka's JSON form → model value."""
    if kind == "uuid":
        if not isinstance(value, str):
            raise FieldProblem(path, f"expected a Kafka Uuid string, got {_type_label(value)}")
        try:
            return uuid_from_str(value)
        except ValueError as exc:
            raise FieldProblem(path, str(exc)) from None
    if kind in ("bytes", "records"):
        if not isinstance(value, str):
            raise FieldProblem(path, f"expected base64 bytes, got {_type_label(value)}")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            # no value quoted: it may be a secret (a SCRAM salt or key; records.redaction)
            raise FieldProblem(path, f"expected base64 bytes, got a string of {len(value)} characters that is not "
                                     "base64") from None
    return _check_scalar(kind, value, path)


def model_leaf(kind: str, value: Any, path: str) -> Any:
    """Model value → the same value, checked."""
    if kind == "uuid":
        if not isinstance(value, (bytes, bytearray)) or len(value) != 16:
            raise FieldProblem(path, f"expected a 16-byte Uuid, got {_type_label(value)}")
        return bytes(value)
    if kind in ("bytes", "records"):
        if not isinstance(value, (bytes, bytearray)):
            raise FieldProblem(path, f"expected bytes, got {_type_label(value)}")
        return bytes(value)
    return _check_scalar(kind, value, path)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _convert_field(fdef: FieldDef, version: int, value: Any, path: str, leaf: LeafConverter,
                   require_all: bool) -> Any:
    if value is None:
        if fdef.nullable_in(version):
            return None
        raise FieldProblem(path, f"is null, but {fdef.name} is not nullable in version {version}")
    if fdef.is_array:
        if not isinstance(value, list):
            raise FieldProblem(path, f"expected an array of {fdef.element_type}, "
                                     f"got {_type_label(value)}")
        return [_convert_element(fdef, version, item, f"{path}[{index}]", leaf, require_all)
                for index, item in enumerate(value)]
    return _convert_element(fdef, version, value, path, leaf, require_all)


def _convert_element(fdef: FieldDef, version: int, value: Any, path: str, leaf: LeafConverter,
                     require_all: bool) -> Any:
    if fdef.struct is not None:
        return convert_struct(fdef.struct, version, value, path, leaf, require_all)
    return leaf(fdef.element_type, value, path)


def _convert_unknown_tagged(value: Any, path: str, leaf: LeafConverter) -> list[list[Any]]:
    if not isinstance(value, list):
        raise FieldProblem(path, "expected a list of [tag, bytes] pairs")
    result: list[list[Any]] = []
    for index, item in enumerate(value):
        tag, raw = (item.get("tag"), item.get("data")) if isinstance(item, dict) else (
            item if isinstance(item, (list, tuple)) and len(item) == 2 else (None, None))
        if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
            raise FieldProblem(f"{path}[{index}]", "expected a tag number >= 0")
        result.append([tag, leaf("bytes", raw, f"{path}[{index}]")])
    return result


def convert_struct(sdef: StructDef, version: int, obj: Any, path: str, leaf: LeafConverter,
                   require_all: bool) -> dict[str, Any]:
    """Check ``obj`` against ``sdef`` at ``version``; return model data with defaults filled."""
    if not isinstance(obj, dict):
        raise FieldProblem(path or "data", f"expected an object for {sdef.name}, "
                                           f"got {_type_label(obj)}")
    result: dict[str, Any] = {}
    known: set[str] = set()
    for fdef in sdef.fields_in(version):
        name = fdef.json_name
        known.add(name)
        fpath = _join(path, name)
        if name in obj:
            result[name] = _convert_field(fdef, version, obj[name], fpath, leaf, require_all)
        elif require_all and not fdef.tagged_in(version):
            raise FieldProblem(fpath, f"missing: {name} is mandatory in {sdef.name} "
                                      f"version {version}")
        else:
            result[name] = fdef.default
    for name, value in obj.items():
        if name in known:
            continue
        fpath = _join(path, name)
        if name == UNKNOWN_TAGGED:
            tagged = _convert_unknown_tagged(value, fpath, leaf)
            if tagged:
                result[UNKNOWN_TAGGED] = tagged
            continue
        other = sdef.field_named(name)
        if other is not None:
            if value == other.default:
                continue  # Kafka accepts a field of another version at its default
            raise FieldProblem(fpath, f"{sdef.name} version {version} has no field {name} "
                                      f"(it exists in versions {other.versions})")
        expected = ", ".join(sorted(known)) or "no fields"
        raise FieldProblem(fpath, f"unknown field for {sdef.name} version {version} "
                                  f"(expected {expected})")
    return result


def check_version(message: MessageDef, version: Any, newer: bool = False) -> int:
    """``version`` when the definitions know it (``newer``: or it is newer than all they know)."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise FieldProblem("version", f"expected an integer version, got {_type_label(version)}")
    if newer and version > message.versions[-1]:
        return version
    if version not in message.valid_versions:
        raise FieldProblem("version", f"unsupported version {version} of {message.name} "
                                      f"(known versions {message.valid_versions})")
    return version
