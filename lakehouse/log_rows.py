"""Log entries as rows of the lake's ``metadata_log`` shape (Arrow and Spark schemas, one definition).

Each row keeps the record twice: the Avro payload (exact, decodable by any Delta reader with
fastavro and the ``avro_schemas`` table; the replay reads it with spark-avro's ``from_avro``) and
Kafka's JSON form of its data, which Spark parses natively with ``from_json`` where spark-avro is
not there (``replay.core.shapes``) — per-row Python UDFs are not an option on the replay's hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakehouse.tables import METADATA_LOG, SCHEMAS
from records.avro_codec import encode_payload, schema_id
from records.kafka_json import dumps_compact, struct_to_json
from records.model import LogEntry, MetadataRecord
from records.redaction import redact

ROW_KIND_RECORD = "record"
ROW_KIND_ISSUE = "issue"  # a batch skipped with --skip-corrupt, a partial tail: goes to ingest_rejects
ROW_KIND_ERROR = "error"  # the file could not be read: the ingest stops with this message

# The metadata_log columns a decoded row fills (the ingest adds the rest as it commits), between the row's kind
# and, for an issue, its message: the registry's (``lakehouse.tables``) names and types.
_SET_AT_COMMIT = frozenset({"append_time", "notes", "ingest_id", "ingest_time"})
LOG_ROW_FIELDS: list[tuple[str, pa.DataType]] = [
    ("row_kind", pa.string()),
    *[(column.name, column.type) for column in SCHEMAS[METADATA_LOG] if column.name not in _SET_AT_COMMIT],
    ("message", pa.string()),
]
LOG_ROW_SCHEMA = pa.schema(LOG_ROW_FIELDS)

_SPARK_TYPES = {pa.string(): "STRING", pa.int64(): "BIGINT", pa.int32(): "INT", pa.bool_(): "BOOLEAN",
                pa.binary(): "BINARY"}
LOG_ROW_DDL = ", ".join(f"`{name}` {_SPARK_TYPES[kind]}" for name, kind in LOG_ROW_FIELDS)


@dataclass(frozen=True, slots=True)
class IssueRow:
    """Something read but not taken as a record (skipped batch, partial tail, unreadable file)."""

    kind: str
    source_file: str
    source_position: int | None
    offset: int | None
    message: str


def entry_row(entry: LogEntry, cluster_id: str | None, fingerprint_key: bytes | None = None) -> dict[str, object]:
    """The row of one entry, its secret redacted (always: no row holds one) and fingerprinted with the lake's key
    when one is given (``records.redaction``)."""
    entry = redact(entry, fingerprint_key)
    record = entry.record
    if isinstance(record, MetadataRecord):
        message = record.definition
        payload = encode_payload(record)
        payload_json = dumps_compact(struct_to_json(message.body, record.layout_version, record.data))
        api_key, control_type, sid = message.api_key, message.control_type, schema_id(record.type_name)
    else:
        payload, payload_json, sid = record.value, None, None
        api_key, control_type = record.api_key, record.control_type
    return {
        "row_kind": ROW_KIND_RECORD,
        "cluster_id": cluster_id if cluster_id is not None else entry.cluster_id,
        "offset": entry.offset,
        "batch_base_offset": entry.batch_base_offset,
        "raft_leader_epoch": entry.raft_leader_epoch,
        "append_time_ms": entry.append_time_ms,
        "api_key": api_key,
        "control_type": control_type,
        "record_version": record.version,
        "record_type": record.type_name,
        "control": record.is_control,
        "read_mode": str(entry.read_mode),
        "schema_id": sid,
        "payload": payload,
        "payload_json": payload_json,
        "source_file": entry.source,
        "source_position": entry.position,
        "secret_fingerprint": entry.secret_fingerprint,
        "message": "; ".join(entry.notes) if entry.notes else None,
    }


def issue_row(issue: IssueRow, cluster_id: str | None) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(LOG_ROW_SCHEMA.names)
    row.update(row_kind=issue.kind, cluster_id=cluster_id, offset=issue.offset, source_file=issue.source_file,
               source_position=issue.source_position, message=issue.message)
    return row


def to_record_batches(rows: Iterable[dict[str, object]], max_rows: int = 8192) -> Iterator[pa.RecordBatch]:
    """Rows → Arrow batches of at most ``max_rows``, so a task's memory stays bounded."""
    chunk: list[dict[str, object]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= max_rows:
            yield pa.RecordBatch.from_pylist(chunk, schema=LOG_ROW_SCHEMA)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=LOG_ROW_SCHEMA)


def entries_frame(spark: SparkSession, entries: Iterable[LogEntry], cluster_id: str | None,
                  fingerprint_key: bytes | None = None) -> DataFrame:
    """A small in-memory log as a ``metadata_log``-shaped DataFrame (tests, demos, one-off files).

    Built on the driver, so only for inputs that fit there; segment logs of any size decode on the
    executors through :mod:`lakehouse.spark_decode`.
    """
    table = pa.Table.from_batches(list(to_record_batches(entry_row(e, cluster_id, fingerprint_key) for e in entries)),
                                  schema=LOG_ROW_SCHEMA)
    return spark.createDataFrame(table).where(f"row_kind = '{ROW_KIND_RECORD}'")
