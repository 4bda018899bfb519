"""The lake's table registry: every table's name and schema (and key and sort order where it has one), defined
once, in Arrow (delta-rs), and derived for Spark.

The log tables (`SCHEMAS`) are written by the ingest to exactly these schemas. The replay's tables
(`REPLAY_SCHEMAS`) are written by ``replay.store.runs`` from the DataFrames the replay builds;
``tests/test_replay_store_query.py`` checks that what it writes is exactly what is declared here.

Every column is nullable: Spark reads Parquet back as nullable, and the commit layer refuses appends whose
nullability disagrees with the table, so NOT NULL would only add a way to fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

METADATA_LOG = "metadata_log"
SNAPSHOTS = "snapshots"
INGEST_REJECTS = "ingest_rejects"
AVRO_SCHEMAS = "avro_schemas"

# The replay's tables: history (a version per entity and offset range), derived (state machines, election audit),
# the anomalies it found and its checkpoints.
PARTITION_HISTORY = "partition_history"
BROKER_HISTORY = "broker_history"
TOPIC_HISTORY = "topic_history"
FEATURE_HISTORY = "feature_history"
CONTROLLER_HISTORY = "controller_history"
REPLICA_HISTORY = "replica_history"
REPLICA_STATE_HISTORY = "replica_state_history"
PARTITION_STATE_HISTORY = "partition_state_history"
ELECTIONS = "elections"
LEADERLESS_PERIODS = "leaderless_periods"
# the rest of Kafka's MetadataImage (issue 19): ConfigurationsImage, ClientQuotasImage, AclsImage, ScramImage,
# DelegationTokenImage, ProducerIdsImage
CONFIG_HISTORY = "config_history"
CLIENT_QUOTA_HISTORY = "client_quota_history"
ACL_HISTORY = "acl_history"
SCRAM_HISTORY = "scram_history"
DELEGATION_TOKEN_HISTORY = "delegation_token_history"
PRODUCER_ID_HISTORY = "producer_id_history"
REPLAY_ANOMALIES = "replay_anomalies"
REPLAY_CHECKPOINTS = "replay_checkpoints"
REPLAY_COVERAGE = "replay_coverage"
# the log tables' column with the keyed fingerprint of the secret a record's redaction took out (issue 19; null when
# nothing was redacted): the replay carries it to config_history.value_fingerprint and
# scram_history.credential_fingerprint, and reads it only where the table has it (a lake written before it has not)
SECRET_FINGERPRINT = "secret_fingerprint"

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
    # where the record held a secret: redacted in payload and payload_json, and this is its keyed fingerprint
    # (records.redaction); last, so a lake written before it gains it by schema evolution (`lake redact`)
    ("secret_fingerprint", pa.string()),
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


# --- the replay's tables -------------------------------------------------------------------------------------

# a topic partition of a cluster: the key of the partition-keyed tables, and the rows of each partition's derivation
PARTITION_KEY = ("cluster_id", "topic_id", "partition_id")
_REPLICA = (*PARTITION_KEY, "broker_id")

# The image parts issue 19 adds (Kafka's ConfigurationsImage, ClientQuotasImage, AclsImage, ScramImage,
# DelegationTokenImage, ProducerIdsImage), keyed like the others: part of HISTORY_KEYS and REPLAY_SCHEMAS.
_CLIENT_QUOTA_ENTITY = pa.list_(pa.struct([("entity_type", pa.string()), ("entity_name", pa.string())]))
IMAGE_HISTORY_KEYS: dict[str, tuple[str, ...]] = {
    CONFIG_HISTORY: ("cluster_id", "resource_type", "resource_name", "name"),
    CLIENT_QUOTA_HISTORY: ("cluster_id", "entity", "key"),
    ACL_HISTORY: ("cluster_id", "id"),
    SCRAM_HISTORY: ("cluster_id", "name", "mechanism"),
    DELEGATION_TOKEN_HISTORY: ("cluster_id", "token_id"),
    PRODUCER_ID_HISTORY: ("cluster_id",),
}

# history table → the key of its entity: one version per key and [valid_from_offset, valid_to_offset)
HISTORY_KEYS: dict[str, tuple[str, ...]] = {
    PARTITION_HISTORY: PARTITION_KEY,
    BROKER_HISTORY: ("cluster_id", "broker_id"),
    TOPIC_HISTORY: ("cluster_id", "topic_id"),
    FEATURE_HISTORY: ("cluster_id", "feature"),
    CONTROLLER_HISTORY: ("cluster_id", "controller_id"),
    REPLICA_HISTORY: _REPLICA,
    **IMAGE_HISTORY_KEYS,
}
HISTORY_TABLES: tuple[str, ...] = tuple(HISTORY_KEYS)

# derived table → the sort order it is written in (a unique key, so the layout is deterministic)
DERIVED_ORDER: dict[str, tuple[str, ...]] = {
    REPLICA_STATE_HISTORY: (*_REPLICA, "valid_from_offset", "step"),
    PARTITION_STATE_HISTORY: (*PARTITION_KEY, "valid_from_offset", "step"),
    ELECTIONS: (*PARTITION_KEY, "offset"),
    LEADERLESS_PERIODS: (*PARTITION_KEY, "valid_from_offset"),
}
DERIVED_TABLES: tuple[str, ...] = tuple(DERIVED_ORDER)

# the sort order of replay_anomalies
ANOMALY_ORDER = ("cluster_id", "offset", "record_type", "kind", "reason")

_INTS = pa.list_(pa.int32())
# [valid_from_offset, valid_to_offset) of a version, its times and the record that started it (replay.core.history)
_INTERVAL = [("valid_from_offset", pa.int64()), ("valid_to_offset", pa.int64()), ("valid_from_time_ms", pa.int64()),
             ("valid_to_time_ms", pa.int64()), ("cause_offset", pa.int64()), ("cause_type", pa.string())]
_ENDPOINTS = pa.list_(pa.struct([("name", pa.string()), ("host", pa.string()), ("port", pa.int32()),
                                 ("security_protocol", pa.int32())]))
_FEATURES = pa.list_(pa.struct([("name", pa.string()), ("min_supported_version", pa.int32()),
                                ("max_supported_version", pa.int32())]))
_PARTITION_COLUMNS = [("cluster_id", pa.string()), ("topic_id", pa.string()), ("partition_id", pa.int32())]
# a state machine's step: the state a transition left, the one it entered, whether Kafka allows it
_STATE_STEP = [("state", pa.string()), ("previous_state", pa.string()), ("step", pa.int32()), *_INTERVAL,
               ("reason", pa.string()), ("valid_transition", pa.bool_())]

# The image parts' history tables (IMAGE_HISTORY_KEYS); a secret never reaches them, only its fingerprint.
IMAGE_SCHEMAS: dict[str, pa.Schema] = {
    CONFIG_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("resource_type", pa.int32()), ("resource_name", pa.string()),
        ("name", pa.string()), ("value", pa.string()), ("value_fingerprint", pa.string()), *_INTERVAL]),
    CLIENT_QUOTA_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("entity", _CLIENT_QUOTA_ENTITY), ("key", pa.string()),
        ("value", pa.float64()), *_INTERVAL]),
    ACL_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("id", pa.string()), ("resource_type", pa.int32()),
        ("resource_name", pa.string()), ("pattern_type", pa.int32()), ("principal", pa.string()),
        ("host", pa.string()), ("operation", pa.int32()), ("permission_type", pa.int32()), *_INTERVAL]),
    SCRAM_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("name", pa.string()), ("mechanism", pa.int32()), ("iterations", pa.int32()),
        ("credential_fingerprint", pa.string()), *_INTERVAL]),
    DELEGATION_TOKEN_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("token_id", pa.string()), ("owner", pa.string()), ("requester", pa.string()),
        ("renewers", pa.list_(pa.string())), ("issue_timestamp", pa.int64()), ("max_timestamp", pa.int64()),
        ("expiration_timestamp", pa.int64()), *_INTERVAL]),
    PRODUCER_ID_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("next_producer_id", pa.int64()), ("broker_id", pa.int32()),
        ("broker_epoch", pa.int64()), *_INTERVAL]),
}

# The replay's tables, as written (every column nullable, as Spark writes them).
REPLAY_SCHEMAS: dict[str, pa.Schema] = {
    PARTITION_HISTORY: pa.schema([
        *_PARTITION_COLUMNS, ("leader", pa.int32()), ("leader_epoch", pa.int64()), ("partition_epoch", pa.int64()),
        ("replicas", _INTS), ("isr", _INTS), ("adding_replicas", _INTS), ("removing_replicas", _INTS),
        ("eligible_leader_replicas", _INTS), ("last_known_elr", _INTS), ("leader_recovery_state", pa.int32()),
        ("directories", pa.list_(pa.string())), *_INTERVAL, ("topic_name", pa.string())]),
    BROKER_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("broker_id", pa.int32()), ("broker_epoch", pa.int64()),
        ("incarnation_id", pa.string()), ("fenced", pa.bool_()), ("in_controlled_shutdown", pa.bool_()),
        ("rack", pa.string()), ("endpoints", _ENDPOINTS), ("features", _FEATURES),
        ("log_dirs", pa.list_(pa.string())), ("is_migrating_zk_broker", pa.bool_()), *_INTERVAL]),
    TOPIC_HISTORY: pa.schema([("cluster_id", pa.string()), ("topic_id", pa.string()), ("name", pa.string()),
                              *_INTERVAL]),
    FEATURE_HISTORY: pa.schema([("cluster_id", pa.string()), ("feature", pa.string()), ("level", pa.int32()),
                                *_INTERVAL]),
    CONTROLLER_HISTORY: pa.schema([
        ("cluster_id", pa.string()), ("controller_id", pa.int32()), ("incarnation_id", pa.string()),
        ("zk_migration_ready", pa.bool_()), ("endpoints", _ENDPOINTS), ("features", _FEATURES), *_INTERVAL]),
    REPLICA_HISTORY: pa.schema([
        *_PARTITION_COLUMNS, ("broker_id", pa.int32()), ("topic_name", pa.string()), ("is_leader", pa.bool_()),
        ("in_isr", pa.bool_()), ("in_elr", pa.bool_()), ("adding", pa.bool_()), ("removing", pa.bool_()),
        ("directory", pa.string()), ("broker_fenced", pa.bool_()), *_INTERVAL]),
    REPLICA_STATE_HISTORY: pa.schema([*_PARTITION_COLUMNS, ("broker_id", pa.int32()), ("topic_name", pa.string()),
                                      *_STATE_STEP]),
    PARTITION_STATE_HISTORY: pa.schema([*_PARTITION_COLUMNS, ("topic_name", pa.string()), *_STATE_STEP]),
    ELECTIONS: pa.schema([
        *_PARTITION_COLUMNS, ("topic_name", pa.string()), ("offset", pa.int64()), ("time_ms", pa.int64()),
        ("cause_offset", pa.int64()), ("cause_type", pa.string()), ("election_type", pa.string()),
        ("previous_leader", pa.int32()), ("leader", pa.int32()), ("leader_epoch", pa.int64()),
        ("previous_isr", _INTS), ("isr", _INTS), ("replicas", _INTS), ("leader_recovery_state", pa.int32()),
        ("lost_leader_cause", pa.string()), ("lost_leader_cause_offset", pa.int64()),
        ("lost_leader_cause_type", pa.string()), ("expected_leader", pa.int32()), ("deviation", pa.string()),
        # the configs in force at the offset as the controller resolved them (replay.audit.effective_configs), with
        # their ConfigEntry.ConfigSource; null when the lake has no config_history
        ("unclean_leader_election_enable", pa.bool_()), ("unclean_leader_election_enable_source", pa.string()),
        ("min_insync_replicas", pa.int32()), ("min_insync_replicas_source", pa.string()),
        ("unclean_verdict", pa.string())]),
    LEADERLESS_PERIODS: pa.schema([
        *_PARTITION_COLUMNS, ("topic_name", pa.string()), *_INTERVAL[:4], ("duration_ms", pa.int64()),
        ("previous_leader", pa.int32()), ("isr", _INTS), ("cause", pa.string()), ("cause_broker", pa.int32()),
        ("cause_offset", pa.int64()), ("cause_type", pa.string()), ("ended_by", pa.string()),
        ("new_leader", pa.int32()), ("reason", pa.string())]),
    REPLAY_ANOMALIES: pa.schema([("cluster_id", pa.string()), ("offset", pa.int64()), ("record_type", pa.string()),
                                 ("kind", pa.string()), ("reason", pa.string())]),
    REPLAY_CHECKPOINTS: pa.schema([
        ("cluster_id", pa.string()),
        ("last_offset", pa.int64()),  # the last metadata_log offset of the cluster that was replayed
        ("metadata_log_version", pa.int64()),  # the Delta version of metadata_log that was read
        ("mode", pa.string()),  # "full": the whole log folded, every table rebuilt (a small log's after new records:
        # but those of its small tables no new record is folded into, kept); "incremental": only offsets after the last
        # checkpoint folded in (`last_offset` is then a safe point: no metadata transaction open there)
        ("replayed_at", _UTC),
        ("tables", pa.map_(pa.string(), pa.int64())),  # table → Delta version written
    ]),
    # Which offsets each cluster's history answers, and from which base (replay.core.coverage): one row per cluster.
    REPLAY_COVERAGE: pa.schema([
        ("cluster_id", pa.string()),
        ("first_offset", pa.int64()),  # the first offset answered (the base snapshot's image offset, or the log's)
        ("last_offset", pa.int64()),  # the last offset answered
        ("log_first_offset", pa.int64()),  # the first log offset folded
        ("base_snapshot", pa.string()),  # the snapshot the history starts from (00000000000000128356-0000000020)
        ("base_end_offset", pa.int64()),
        # offsets missing from the stored log inside the history: folded across, not answered
        ("gaps", pa.list_(pa.struct([("first_offset", pa.int64()), ("last_offset", pa.int64())]))),
        ("stored_first_offset", pa.int64()),  # the first offset the lake's log holds
        ("snapshots_checked", pa.int32()),  # later snapshots whose image was checked against the fold
        ("snapshots_differing", pa.int32()),  # ... and found different (replay_anomalies: snapshot-differs)
    ]),
    **IMAGE_SCHEMAS,
}


def spark_schema(name: str) -> StructType:
    """The Spark schema of a lake table, the log's or the replay's (timestamps as Spark TIMESTAMP, UTC). Spark is
    imported here only: the names and Arrow schemas serve code without Spark (the reference fold)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(SCHEMAS[name] if name in SCHEMAS else REPLAY_SCHEMAS[name])
