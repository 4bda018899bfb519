"""Every field of every version of Kafka's definitions has its place in the shipped .avsc files.

The expectations are derived here straight from Kafka's JSON definitions in ../shared, not
through kraft-replay's own definition parser, so a bug there cannot hide itself.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from records.definitions import KAFKA_DEFINITIONS_VERSION

REPO = Path(__file__).resolve().parents[1]
AVRO_OF = {"bool": "boolean", "int8": "int", "int16": "int", "uint16": "int", "int32": "int",
           "uint32": "long", "int64": "long", "float64": "double", "string": "string",
           "bytes": "bytes", "records": "bytes"}
KAFKA_DEFAULT_OF = {"bool": False, "string": "", "bytes": "", "records": "", "float64": 0.0,
                    "uuid": "\u0000" * 16}


def _parse(path: Path) -> dict[str, Any]:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("//"))
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def _kafka_files(shared: Path) -> dict[str, Path]:
    """Kafka's definition files as of the bundled release: the October-2024 snapshot in ../shared, with the
    files that changed or came later (``kafka-message-schemas-latest``) in place of theirs."""
    files = {f"{p.parent.name}/{p.name}": p for p in (shared / "reference" / "kafka-message-schemas").glob("*/*.json")}
    latest = shared / "reference" / "kafka-message-schemas-latest"
    files.update({f"{p.parent.name}/{p.name}": p for p in latest.glob("*/*.json")})
    return dict(sorted(files.items()))


def _kafka_definitions(shared: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in _kafka_files(shared).values():
        raw = _parse(path)
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
    definitions = _kafka_definitions(shared_dir)
    assert len(definitions) == 32  # 27 metadata records (ClearElr, UnregisterController new) + 5 control
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
    # (field, version) pairs checked, nested struct fields included: 230 in the October-2024 snapshot, + 18 of
    # RegisterBrokerRecord v4, 6 of BrokerRegistrationChangeRecord v3, 1 of ClearElrRecord, 1 of UnregisterController
    assert total == 256


def _without_about(node: Any) -> Any:
    """A definition without its ``about`` texts (4.4.0 only reworded some of them against the snapshot)."""
    if isinstance(node, dict):
        return {k: _without_about(v) for k, v in node.items() if k != "about"}
    if isinstance(node, list):
        return [_without_about(v) for v in node]
    return node


def test_bundled_definitions_are_kafkas(shared_dir: Path) -> None:
    """The copy shipped in schemas/kafka holds every file of ../shared's references, and nothing else: the ones
    that changed after October 2024 byte for byte, the others with the same content (only comments and about
    texts differ in 4.4.0)."""
    files = _kafka_files(shared_dir)
    bundled = {f"{p.parent.name}/{p.name}": p for p in (REPO / "schemas" / "kafka").glob("*/*.json")}
    assert sorted(bundled) == sorted(files)
    latest = shared_dir / "reference" / "kafka-message-schemas-latest"
    for name, path in files.items():
        if path.is_relative_to(latest):
            assert bundled[name].read_bytes() == path.read_bytes(), name
        else:
            assert _without_about(_parse(bundled[name])) == _without_about(_parse(path)), name


def _release_jar(artifact: str) -> Path | None:
    jar = (Path.home() / ".m2" / "repository" / "org" / "apache" / "kafka" / artifact / KAFKA_DEFINITIONS_VERSION
           / f"{artifact}-{KAFKA_DEFINITIONS_VERSION}.jar")
    return jar if jar.is_file() else None


def test_bundled_definitions_are_the_release_jars() -> None:
    """Byte for byte what the release's jars carry, where they are in the local Maven repository."""
    sources = {"kafka-metadata": ("common/metadata/", "metadata"),
               "kafka-clients": ("common/message/", "raft-control"),
               "kafka-raft": ("common/message/", "raft-control")}
    jars = {artifact: _release_jar(artifact) for artifact in sources}
    missing = [a for a, jar in jars.items() if jar is None]
    if missing:
        pytest.skip(f"org.apache.kafka:{{{','.join(missing)}}}:{KAFKA_DEFINITIONS_VERSION} not in ~/.m2 "
                    "(schemas/kafka/README.md says how to fetch them)")
    compared = 0
    for artifact, (prefix, sub) in sources.items():
        jar = jars[artifact]
        assert jar is not None
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                bundled = REPO / "schemas" / "kafka" / sub / name.removeprefix(prefix)
                if name.startswith(prefix) and name.endswith(".json") and name.count("/") == 2 and (
                        sub == "metadata" or bundled.exists()):
                    assert bundled.read_bytes() == archive.read(name), bundled
                    compared += 1
    assert compared == len(list((REPO / "schemas" / "kafka").glob("*/*.json"))) == 33


