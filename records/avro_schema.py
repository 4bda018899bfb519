"""Avro schemas generated from Kafka's definitions, one per record type, plus the envelope.

One schema covers every version of a type: a field that only later versions have gets Kafka's
default as its Avro default, a field nullable in any version is a union with ``null``, so a
payload written with an older version's shape still decodes under the merged schema (Avro
schema resolution). Each field also carries Kafka's own facts (``kafkaType``, ``kafkaVersions``,
``kafkaNullableVersions``, ``kafkaTag``) so the ``.avsc`` alone says what Kafka says.

``python -m records.avro_schema`` rewrites ``schemas/*.avsc``; a test proves the committed files
are exactly what this module generates.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from records.definitions import (
    NO_VERSIONS,
    FieldDef,
    MessageDef,
    StructDef,
    definitions,
)
from records.kafka_codec import UNKNOWN_TAGGED

METADATA_NAMESPACE = "org.apache.kafka.common.metadata"
CONTROL_NAMESPACE = "org.apache.kafka.common.message"
UUID_NAME = "org.apache.kafka.common.Uuid"
TAGGED_FIELD_NAME = "org.apache.kafka.common.protocol.types.RawTaggedField"
ENVELOPE_NAME = "MetadataLogEntry"
ENVELOPE_NAMESPACE = "io.kraftreplay"

_PRIMITIVES: dict[str, str] = {
    "bool": "boolean",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "long",
    "int64": "long",
    "float64": "double",
    "string": "string",
    "bytes": "bytes",
    "records": "bytes",
}


def namespace_of(message: MessageDef) -> str:
    return CONTROL_NAMESPACE if message.is_control else METADATA_NAMESPACE


class _Builder:
    """Emits each named Avro type once per schema document, then refers to it by name."""

    def __init__(self, version: int | None) -> None:
        self.version = version
        self.defined: set[str] = set()

    def _named(self, full_name: str, build: Any) -> Any:
        if full_name in self.defined:
            return full_name
        self.defined.add(full_name)
        return build()

    def uuid(self) -> Any:
        return self._named(UUID_NAME, lambda: {
            "type": "fixed", "name": "Uuid", "namespace": "org.apache.kafka.common", "size": 16,
            "doc": "Kafka Uuid, 16 bytes (printed by Kafka as 22 characters of base64url)."})

    def tagged_fields(self) -> dict[str, Any]:
        items = self._named(TAGGED_FIELD_NAME, lambda: {
            "type": "record", "name": "RawTaggedField",
            "namespace": "org.apache.kafka.common.protocol.types",
            "doc": "A tagged field this schema does not know, kept byte for byte.",
            "fields": [{"name": "tag", "type": "int"}, {"name": "data", "type": "bytes"}]})
        return {"name": UNKNOWN_TAGGED, "type": {"type": "array", "items": items}, "default": [],
                "doc": "Tagged fields unknown to Kafka's definitions (newer Kafka), preserved."}

    def struct(self, sdef: StructDef, namespace: str, doc: str | None = None) -> Any:
        full_name = f"{namespace}.{sdef.name}"

        def build() -> dict[str, Any]:
            record: dict[str, Any] = {"type": "record", "name": sdef.name, "namespace": namespace}
            if doc:
                record["doc"] = doc
            inner = f"{namespace}.{sdef.name}"
            fields = [self.field(f, inner) for f in sdef.fields if self._included(f)]
            fields.append(self.tagged_fields())
            record["fields"] = fields
            return record

        return self._named(full_name, build)

    def _included(self, fdef: FieldDef) -> bool:
        return self.version is None or self.version in fdef.versions

    def _nullable(self, fdef: FieldDef) -> bool:
        if self.version is None:
            return fdef.nullable_versions != NO_VERSIONS
        return fdef.nullable_in(self.version)

    def element(self, fdef: FieldDef, namespace: str) -> Any:
        kind = fdef.element_type
        if fdef.struct is not None:
            return self.struct(fdef.struct, namespace)
        if kind == "uuid":
            return self.uuid()
        return _PRIMITIVES[kind]

    def field(self, fdef: FieldDef, namespace: str) -> dict[str, Any]:
        value_type = self.element(fdef, namespace)
        if fdef.is_array:
            value_type = {"type": "array", "items": value_type}
        default = avro_default(fdef)
        if self._nullable(fdef):
            value_type = ["null", value_type] if default is None else [value_type, "null"]
        out: dict[str, Any] = {"name": fdef.json_name, "type": value_type, "default": default}
        if fdef.about:
            out["doc"] = fdef.about
        out["kafkaType"] = fdef.type
        out["kafkaVersions"] = str(fdef.versions)
        if fdef.nullable_versions != NO_VERSIONS:
            out["kafkaNullableVersions"] = str(fdef.nullable_versions)
        if fdef.tagged_versions != NO_VERSIONS:
            out["kafkaTaggedVersions"] = str(fdef.tagged_versions)
            out["kafkaTag"] = fdef.tag
        if fdef.entity_type:
            out["kafkaEntityType"] = fdef.entity_type
        return out


def avro_default(fdef: FieldDef) -> Any:
    """Kafka's default in Avro's JSON notation for defaults (bytes and fixed as latin-1 text)."""
    value = fdef.default
    return _to_avro_default(fdef, value)


def _to_avro_default(fdef: FieldDef, value: Any) -> Any:
    if value is None:
        return None
    if fdef.is_array:
        return []
    if fdef.struct is not None:
        return {f.json_name: _to_avro_default(f, v) for f, v in
                ((f, value[f.json_name]) for f in fdef.struct.fields)} | {UNKNOWN_TAGGED: []}
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def record_schema(message: MessageDef, version: int | None = None) -> dict[str, Any]:
    """The Avro schema of ``message``: merged over every version, or of one version's shape."""
    builder = _Builder(version)
    doc = (f"Kafka {message.name} (" + (f"api key {message.api_key}, " if message.api_key is not None
                                        else f"raft control record type {message.control_type}, ")
           + f"versions {message.valid_versions}"
           + (", merged" if version is None else f", shape of version {version}") + ").")
    schema = builder.struct(message.body, namespace_of(message), doc)
    schema["kafkaApiKey"] = message.api_key
    if message.control_type is not None:
        schema["kafkaControlType"] = message.control_type
    schema["kafkaValidVersions"] = str(message.valid_versions)
    schema["kafkaRecordType"] = message.json_type_name
    return schema


def envelope_schema() -> dict[str, Any]:
    """One log entry: where it sits in the log and its payload (any record type, or raw bytes)."""
    builder = _Builder(None)
    payloads: list[Any] = ["bytes"]
    for message in sorted(definitions().values(), key=lambda m: m.name):
        payloads.append(builder.struct(message.body, namespace_of(message)))
    nullable_long = ["null", "long"]
    nullable_int = ["null", "int"]
    return {
        "type": "record",
        "name": ENVELOPE_NAME,
        "namespace": ENVELOPE_NAMESPACE,
        "doc": "One record of a KRaft __cluster_metadata log and its place in the log.",
        "fields": [
            {"name": "clusterId", "type": ["null", "string"], "default": None},
            {"name": "offset", "type": "long", "doc": "Log offset (in a snapshot: position)."},
            {"name": "batchBaseOffset", "type": nullable_long, "default": None},
            {"name": "raftLeaderEpoch", "type": nullable_int, "default": None,
             "doc": "Partition leader epoch of the batch: the raft epoch that wrote it."},
            {"name": "appendTimeMs", "type": nullable_long, "default": None},
            {"name": "apiKey", "type": nullable_int, "default": None,
             "doc": "Metadata record api key; null for raft control records."},
            {"name": "controlType", "type": nullable_int, "default": None,
             "doc": "Kafka ControlRecordType for control records, else null."},
            {"name": "recordVersion", "type": "int"},
            {"name": "recordType", "type": "string",
             "doc": "Kafka's class name of the record type, e.g. PartitionChangeRecord."},
            {"name": "control", "type": "boolean", "default": False},
            {"name": "readMode", "type": "string", "default": "exact",
             "doc": "exact, best-effort (newer version read with the newest known layout) or raw."},
            {"name": "notes", "type": {"type": "array", "items": "string"}, "default": [],
             "doc": "Why a record was read by best effort or kept raw, and other reader notes."},
            {"name": "payload", "type": payloads,
             "doc": "The record in its type's merged schema; bytes when kept raw."},
        ],
    }


def schema_json(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def generate_all() -> dict[str, str]:
    """File name → text of every ``.avsc`` the project ships."""
    files = {f"{m.name}.avsc": schema_json(record_schema(m)) for m in definitions().values()}
    files[f"{ENVELOPE_NAME}.avsc"] = schema_json(envelope_schema())
    return files


def schemas_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "schemas"


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``schemas/*.avsc`` from the bundled definitions (``--check`` only compares)."""
    args = sys.argv[1:] if argv is None else argv
    target = schemas_dir()
    stale = []
    for name, text in generate_all().items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
            if "--check" not in args:
                path.write_text(text, encoding="utf-8")
    if "--check" in args and stale:
        print("out of date: " + ", ".join(stale))
        return 1
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
