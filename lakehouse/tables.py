"""The lake's table schemas, defined once in Arrow (delta-rs) and derived for Spark.

Every column is nullable: Spark reads Parquet back as nullable, and the commit layer refuses appends whose
nullability disagrees with the table, so NOT NULL would only add a way to fail.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

METADATA_LOG = "metadata_log"
SNAPSHOTS = "snapshots"
INGEST_REJECTS = "ingest_rejects"
AVRO_SCHEMAS = "avro_schemas"

_UTC = pa.timestamp("us", tz="UTC")

# One row per log record: identity, raft envelope, record header, payload (Avro + Kafka JSON), lineage.
_RECORD_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("offset", pa.int64()),
    ("batch_base_offset", pa.int64()),
    ("raft_leader_epoch", pa.int32()),
    ("append_time_ms", pa.int64()),
    ("append_time", _UTC),
    ("api_key", pa.int32()),
    ("control_type", pa.int32()),
    ("record_version", pa.int32()),
    ("record_type", pa.string()),
    ("control", pa.bool_()),
    ("read_mode", pa.string()),
    ("schema_id", pa.int64()),
    ("payload", pa.binary()),
    ("payload_json", pa.string()),
    ("notes", pa.string()),
    ("source_file", pa.string()),
    ("source_position", pa.int64()),
    ("ingest_id", pa.string()),
    ("ingest_time", _UTC),
]

SCHEMAS: dict[str, pa.Schema] = {
    METADATA_LOG: pa.schema([("cluster_id", pa.string()), *_RECORD_COLUMNS]),
    # `offset` is the record's position inside the snapshot file (from 0), not a log offset.
    SNAPSHOTS: pa.schema([("cluster_id", pa.string()), ("snapshot_end_offset", pa.int64()),
                          ("snapshot_epoch", pa.int32()), *_RECORD_COLUMNS]),
    INGEST_REJECTS: pa.schema([
        ("cluster_id", pa.string()),
        ("kind", pa.string()),  # conflict, gap, skipped-corrupt, truncated-tail, invalid, ...
        ("offset", pa.int64()),
        ("end_offset", pa.int64()),  # last offset of a gap (inclusive); else equal to offset or null
        ("record_type", pa.string()),
        ("record_version", pa.int32()),
        ("payload", pa.binary()),
        ("reason", pa.string()),
        ("source_file", pa.string()),
        ("source_position", pa.int64()),
        ("ingest_id", pa.string()),
        ("ingest_time", _UTC),
    ]),
    AVRO_SCHEMAS: pa.schema([
        ("schema_id", pa.int64()),
        ("record_type", pa.string()),
        ("api_key", pa.int32()),
        ("control_type", pa.int32()),
        ("kafka_versions", pa.string()),
        ("avsc", pa.string()),
        ("registered_time", _UTC),
    ]),
}

# Columns that identify a row: a second row with the same key is a duplicate (or a conflict).
KEYS: dict[str, tuple[str, ...]] = {
    METADATA_LOG: ("cluster_id", "offset"),
    SNAPSHOTS: ("cluster_id", "snapshot_end_offset", "snapshot_epoch", "offset"),
    INGEST_REJECTS: ("cluster_id", "kind", "offset", "end_offset", "source_file", "source_position"),
    AVRO_SCHEMAS: ("schema_id",),
}

# Range columns whose min/max statistics let a reader skip files (and the order the rows are written in).
SORT_COLUMNS: dict[str, tuple[str, ...]] = {
    METADATA_LOG: ("cluster_id", "offset"),
    SNAPSHOTS: ("cluster_id", "snapshot_end_offset", "snapshot_epoch", "offset"),
    INGEST_REJECTS: ("cluster_id", "offset"),
    AVRO_SCHEMAS: ("schema_id",),
}


def spark_schema(name: str) -> StructType:
    """The Spark schema of a lake table (timestamps as Spark TIMESTAMP, UTC)."""
    return from_arrow_schema(SCHEMAS[name])
