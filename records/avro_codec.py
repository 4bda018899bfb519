"""Avro encoding of records with fastavro: schemaless payloads and object container files.

Payloads are written under the merged schema of their type (the shipped ``.avsc``); the record
version travels beside the payload (in the envelope or the lake's ``recordVersion`` column) and
decides which fields belong to the record when it is read back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import fastavro
import fastavro.schema

from records.definitions import StructDef, definitions
from records.errors import RecordsError
from records.kafka_codec import UNKNOWN_TAGGED
from records.model import LogEntry, MetadataRecord, RawRecord, ReadMode

Schema = dict[str, Any]


@cache
def schema_text(name: str) -> str:
    """The shipped ``.avsc`` text of a record type or of the envelope (``MetadataLogEntry``)."""
    entry = resources.files("schemas").joinpath(f"{name}.avsc")
    if not entry.is_file():
        raise RecordsError(f"no Avro schema for {name!r}: expected schemas/{name}.avsc")
    return entry.read_text(encoding="utf-8")


@cache
def parsed_schema(name: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text(name)))


@cache
def schema_id(name: str) -> int:
    """Signed 64-bit Avro fingerprint (CRC-64-AVRO) of the schema's parsing canonical form."""
    canonical = fastavro.schema.to_parsing_canonical_form(parsed_schema(name))
    unsigned = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
    return unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned


def trim_to_version(sdef: StructDef, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """Keep only the fields ``version`` has (nested structs too), as Kafka's message would."""
    out: dict[str, Any] = {}
    for fdef in sdef.fields_in(version):
        value = data.get(fdef.json_name, fdef.default)
        if fdef.struct is not None and value is not None:
            if fdef.is_array:
                value = [trim_to_version(fdef.struct, version, item) for item in value]
            else:
                value = trim_to_version(fdef.struct, version, value)
        out[fdef.json_name] = value
    unknown = data.get(UNKNOWN_TAGGED)
    if unknown:
        out[UNKNOWN_TAGGED] = [[int(t["tag"]), bytes(t["data"])] if isinstance(t, dict)
                               else [int(t[0]), bytes(t[1])] for t in unknown]
    return out


# (name, Kafka default, nested struct, is array) per struct, keyed by identity (definitions live forever).
_AVRO_PLANS: dict[int, list[tuple[str, Any, StructDef | None, bool]]] = {}


def _to_avro(sdef: StructDef, data: dict[str, Any]) -> dict[str, Any]:
    plan = _AVRO_PLANS.get(id(sdef))
    if plan is None:
        plan = [(f.json_name, f.default, f.struct, f.is_array) for f in sdef.fields]
        _AVRO_PLANS[id(sdef)] = plan
    out: dict[str, Any] = {}
    for name, default, struct, is_array in plan:
        value = data.get(name, default)
        if struct is not None and value is not None:
            value = [_to_avro(struct, item) for item in value] if is_array else _to_avro(struct, value)
        out[name] = value
    out[UNKNOWN_TAGGED] = [{"tag": t, "data": raw} for t, raw in data.get(UNKNOWN_TAGGED, ())]
    return out


def encode_payload(record: MetadataRecord) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed_schema(record.type_name),
                               _to_avro(record.definition.body, record.data))
    return buf.getvalue()


def decode_payload(type_name: str, version: int, payload: bytes,
                   writer_schema: Schema | None = None) -> MetadataRecord:
    """Decode a payload; ``writer_schema`` when it was written under another (older) schema."""
    message = definitions()[type_name]
    reader = parsed_schema(type_name)
    writer = fastavro.parse_schema(writer_schema) if writer_schema is not None else reader
    data = fastavro.schemaless_reader(io.BytesIO(payload), writer, reader)
    assert isinstance(data, dict)
    return MetadataRecord(type_name, version, trim_to_version(message.body, message.layout_version(version), data))


# ---------------------------------------------------------------------------------------------
# envelope and container files


def entry_to_avro(entry: LogEntry) -> dict[str, Any]:
    record = entry.record
    payload: Any
    if isinstance(record, RawRecord):
        payload = ("bytes", record.value)  # raw bytes branch of the payload union
        api_key, control_type = record.api_key, record.control_type
    else:
        message = record.definition
        payload = (f"{record_full_name(record.type_name)}", _to_avro(message.body, record.data))
        api_key, control_type = message.api_key, message.control_type
    return {
        "clusterId": entry.cluster_id,
        "offset": entry.offset,
        "batchBaseOffset": entry.batch_base_offset,
        "raftLeaderEpoch": entry.raft_leader_epoch,
        "appendTimeMs": entry.append_time_ms,
        "apiKey": api_key,
        "controlType": control_type,
        "recordVersion": record.version,
        "recordType": record.type_name,
        "control": record.is_control,
        "readMode": str(entry.read_mode),
        "notes": list(entry.notes),
        "payload": payload,
    }


def entry_from_avro(row: dict[str, Any]) -> LogEntry:
    payload = row["payload"]
    record: MetadataRecord | RawRecord
    if isinstance(payload, tuple):
        payload = payload[1]
    if isinstance(payload, (bytes, bytearray)):
        reason = row["notes"][0] if row["notes"] else "kept raw"
        record = RawRecord(row["apiKey"], row["controlType"], row["recordVersion"], bytes(payload),
                           reason)
    else:
        message = definitions()[row["recordType"]]
        version = row["recordVersion"]
        record = MetadataRecord(message.name, version,
                                trim_to_version(message.body, message.layout_version(version), payload))
    return LogEntry(
        offset=row["offset"],
        record=record,
        batch_base_offset=row["batchBaseOffset"],
        raft_leader_epoch=row["raftLeaderEpoch"],
        append_time_ms=row["appendTimeMs"],
        cluster_id=row["clusterId"],
        read_mode=ReadMode(row["readMode"]),
        notes=tuple(row["notes"]),
    )


def record_full_name(type_name: str) -> str:
    schema = json.loads(schema_text(type_name))
    return f"{schema['namespace']}.{schema['name']}"


def write_container(target: Path | BinaryIO, entries: Iterable[LogEntry], codec: str = "deflate") -> int:
    """Bulk export as an Avro object container file; returns the number of entries written."""
    count = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal count
        for entry in entries:
            count += 1
            yield entry_to_avro(entry)

    schema = parsed_schema("MetadataLogEntry")
    if isinstance(target, Path):
        with target.open("wb") as out:
            fastavro.writer(out, schema, rows(), codec=codec)
    else:
        fastavro.writer(target, schema, rows(), codec=codec)
    return count


def read_container(source: Path | BinaryIO) -> Iterator[LogEntry]:
    """Bulk import: streams entries back from a container file written by :func:`write_container`."""
    if isinstance(source, Path):
        with source.open("rb") as stream:
            yield from _read_stream(stream, str(source))
    else:
        yield from _read_stream(source, "<stream>")


def _read_stream(stream: BinaryIO, name: str) -> Iterator[LogEntry]:
    try:
        reader = fastavro.reader(stream, return_record_name=True)
    except (ValueError, fastavro.read.SchemaResolutionError) as exc:
        raise RecordsError(f"{name}: not an Avro container file of log entries: {exc}") from None
    for row in reader:
        assert isinstance(row, dict)
        yield entry_from_avro(row)
