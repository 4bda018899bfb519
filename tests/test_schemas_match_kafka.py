"""Every field of every version of Kafka's definitions has its place in the shipped .avsc files.

The expectations are derived here straight from Kafka's JSON definitions in ../shared, not
through kraft-replay's own definition parser, so a bug there cannot hide itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from records.avro_schema import main as regenerate_schemas

REPO = Path(__file__).resolve().parents[1]
AVRO_OF = {"bool": "boolean", "int8": "int", "int16": "int", "uint16": "int", "int32": "int",
           "uint32": "long", "int64": "long", "float64": "double", "string": "string",
           "bytes": "bytes", "records": "bytes"}
KAFKA_DEFAULT_OF = {"bool": False, "string": "", "bytes": "", "records": "", "float64": 0.0,
                    "uuid": "\u0000" * 16}


def _kafka_definitions(reference: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(reference.glob("*/*.json")):
        text = "\n".join(line for line in path.read_text().splitlines()
                         if not line.strip().startswith("//"))
        raw = json.loads(text)
        if raw["name"] != "QuorumStateData":  # the quorum-state file's format, not a log record
            found.append((path, raw))
    return found


def _versions(text: str | None) -> set[int]:
    if text is None or text == "none":
        return set()
    if text.endswith("+"):
        return set(range(int(text[:-1]), 64))
    if "-" in text:
        low, high = text.split("-")
        return set(range(int(low), int(high) + 1))
    return {int(text)}


def _field_map(avro_record: dict[str, Any], named: dict[str, Any]) -> dict[str, Any]:
    return {f["name"]: f for f in avro_record["fields"]}


def _collect_named(node: Any, named: dict[str, Any], namespace: str = "") -> None:
    if isinstance(node, dict):
        if node.get("type") in ("record", "fixed") and "name" in node:
            ns = node.get("namespace", namespace)
            named[f"{ns}.{node['name']}"] = node
            named.setdefault(node["name"], node)
            namespace = ns
        for value in node.values():
            _collect_named(value, named, namespace)
    elif isinstance(node, list):
        for value in node:
            _collect_named(value, named, namespace)


def _resolve(avro_type: Any, named: dict[str, Any]) -> Any:
    if isinstance(avro_type, str) and avro_type in named:
        return named[avro_type]
    return avro_type


def _check_struct(fields: list[dict[str, Any]], avro_record: dict[str, Any], named: dict[str, Any],
                  common: dict[str, Any], valid: set[int], where: str) -> int:
    checked = 0
    avro_fields = _field_map(avro_record, named)
    for kafka_field in fields:
        name = kafka_field["name"][0].lower() + kafka_field["name"][1:]
        assert name in avro_fields, f"{where}: field {name} has no place in the .avsc"
        avro_field = avro_fields[name]
        field_versions = _versions(kafka_field.get("versions")) & valid
        nullable = _versions(kafka_field.get("nullableVersions")) & field_versions
        ktype = kafka_field["type"]
        assert avro_field["kafkaType"] == ktype, f"{where}.{name}"
        avro_type = avro_field["type"]
        branches = avro_type if isinstance(avro_type, list) else [avro_type]
        assert ("null" in branches) == bool(nullable), f"{where}.{name}: nullability"
        value_type = _resolve(next(b for b in branches if b != "null"), named)
        is_array = ktype.startswith("[]")
        element = ktype[2:] if is_array else ktype
        if is_array:
            assert isinstance(value_type, dict) and value_type["type"] == "array", f"{where}.{name}"
            value_type = _resolve(value_type["items"], named)
        default = kafka_field.get("default")
        if element in AVRO_OF:
            assert value_type == AVRO_OF[element], f"{where}.{name}: type {value_type}"
        elif element == "uuid":
            assert value_type["type"] == "fixed" and value_type["size"] == 16, f"{where}.{name}"
        else:
            struct = kafka_field if "fields" in kafka_field else common[element]
            assert value_type["type"] == "record" and value_type["name"] == element
            checked += _check_struct(struct["fields"], value_type, named, common, field_versions,
                                     f"{where}.{name}")
        # Kafka's default, exactly (no-change markers such as -2 and null included).
        if default == "null":
            expected: Any = None
        elif is_array:
            expected = []
        elif element in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            expected = int(default, 0) if isinstance(default, str) and default else int(default or 0)
        elif element == "bool":
            expected = str(default).lower() == "true" if default is not None else False
        elif element == "float64":
            expected = float(default) if default else 0.0
        elif element == "string":
            expected = default if default is not None else ""
        elif element in KAFKA_DEFAULT_OF:
            expected = KAFKA_DEFAULT_OF[element]
        else:
            expected = avro_field["default"]  # struct: checked field by field above
        assert avro_field["default"] == expected, f"{where}.{name}: default {avro_field['default']!r}"
        # Either the field exists in every version, or it is optional with Kafka's default.
        assert "default" in avro_field
        if kafka_field.get("taggedVersions"):
            assert avro_field["kafkaTag"] == int(kafka_field["tag"])
        checked += len(field_versions)
    return checked


def test_every_field_of_every_version_has_its_place(shared_dir: Path) -> None:
    reference = shared_dir / "reference" / "kafka-message-schemas"
    definitions = _kafka_definitions(reference)
    assert len(definitions) == 30
    total = 0
    for path, raw in definitions:
        avsc = REPO / "schemas" / f"{raw['name']}.avsc"
        assert avsc.exists(), f"{path.name}: no schemas/{avsc.name}"
        schema = json.loads(avsc.read_text())
        named: dict[str, Any] = {}
        _collect_named(schema, named)
        common = {c["name"]: c for c in raw.get("commonStructs", [])}
        assert schema["kafkaApiKey"] == raw.get("apiKey")
        assert schema["kafkaValidVersions"] == raw["validVersions"]
        total += _check_struct(raw["fields"], schema, named, common, _versions(raw["validVersions"]),
                               raw["name"])
    assert total == 230  # (field, version) pairs checked, nested struct fields included


def test_bundled_definitions_are_kafkas(shared_dir: Path) -> None:
    """The copy shipped in schemas/kafka is byte-identical to Kafka's definitions."""
    reference = shared_dir / "reference" / "kafka-message-schemas"
    for path in sorted(reference.glob("*/*.json")):
        bundled = REPO / "schemas" / "kafka" / path.parent.name / path.name
        assert bundled.read_bytes() == path.read_bytes(), bundled


def test_committed_avsc_files_are_generated() -> None:
    assert regenerate_schemas(["--check"]) == 0, "run: python -m records.avro_schema"


@pytest.mark.parametrize("name", ["PartitionChangeRecord", "RegisterBrokerRecord"])
def test_no_change_defaults_in_avsc(name: str) -> None:
    schema = json.loads((REPO / "schemas" / f"{name}.avsc").read_text())
    fields = {f["name"]: f for f in schema["fields"]}
    if name == "PartitionChangeRecord":
        assert fields["leader"]["default"] == -2
        assert fields["isr"]["default"] is None and fields["isr"]["type"][0] == "null"
        assert fields["leaderRecoveryState"]["default"] == -1
        assert fields["eligibleLeaderReplicas"]["kafkaVersions"] == "2+"
    else:
        assert fields["fenced"]["default"] is True
        assert fields["inControlledShutdown"]["default"] is False
        assert fields["logDirs"]["kafkaTag"] == 0
        assert fields["rack"]["type"] == ["string", "null"] and fields["rack"]["default"] == ""
