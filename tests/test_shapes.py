"""The replay types records from the Avro schema registry: ``from_avro`` on the stored payload, or (without
spark-avro) ``from_json`` with the struct type derived from the same schema. Both give the folds the same
rows; payloads written under an older, narrower schema get the later fields at Kafka's defaults.

The rules are replay/core/shapes.py's (record shapes from the lake's Avro schema registry)."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro
import fastavro.schema
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import LOG_ROW_SCHEMA, ROW_KIND_RECORD, entries_frame, entry_row
from records.avro_codec import _to_avro, schema_id, schema_text
from records.avro_schema import UUID_NAME, record_schema
from records.definitions import definitions
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_to_str
from replay.core.avro_types import reader_schema
from replay.core.events import STATE_TYPES, visible
from replay.core.shapes import (
    RecordShapes,
    RegisteredSchema,
    has_spark_avro,
    lake_shapes,
    record_shapes,
    shipped_schemas,
)
from replay.fold.engine import TABLE_KEYS, replay
from replay.reference.fold import TABLES as REFERENCE_TABLES
from replay.reference.fold import reference_histories
from simulator import ScenarioOptions, run_scenario
from tests.replay_tables_support import as_ingested
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark

SCENARIOS = [
    ("random", ScenarioOptions(seed=21, events=150, metadata_version="3.0")),
    ("flapping-broker", ScenarioOptions(seed=22, metadata_version="3.3")),
    ("reassignment-under-failure", ScenarioOptions(seed=23, metadata_version="3.9")),
    ("random", ScenarioOptions(seed=24, events=200, metadata_version="4.0", unclean=True, elr=True)),
]


@pytest.fixture(scope="module")
def avro_shapes(spark: SparkSession) -> RecordShapes:
    shapes = record_shapes(spark)
    if not shapes.avro:
        pytest.skip("this Spark session has no spark-avro: `make setup` fetches the jars")
    return shapes


@pytest.fixture(scope="module")
def json_shapes(avro_shapes: RecordShapes) -> RecordShapes:
    """The air-gapped path: the same schemas, payload_json parsed with from_json."""
    return dataclasses.replace(avro_shapes, avro=False)


@pytest.fixture(scope="module")
def simulated() -> dict[str, list[LogEntry]]:
    return {f"sim-{i}": list(run_scenario(name, options).entries()) for i, (name, options) in enumerate(SCENARIOS)}


def _union(frames: Iterable[DataFrame]) -> DataFrame:
    frames = list(frames)
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def _typed_rows(log: DataFrame, shapes: RecordShapes, record_type: str) -> dict[tuple[str, int], dict[str, Any]]:
    events = visible(log, shapes).where(F.col("record_type") == record_type)
    rows = shapes.typed(events, record_type).select("cluster_id", "offset", "r").collect()
    return {(row["cluster_id"], row["offset"]): row["r"] and row["r"].asDict(recursive=True) for row in rows}


def _json_default(field: dict[str, Any]) -> Any:
    """An Avro field default in Kafka's JSON form (a UUID default is 16 latin-1 characters in the .avsc)."""
    kind, default = field["type"], field.get("default")
    if (isinstance(kind, dict) and kind.get("type") == "fixed") or kind == UUID_NAME:
        return uuid_to_str(default.encode("latin-1"))
    return default


def _log_of(spark: SparkSession, rows: list[dict[str, object]]) -> DataFrame:
    table = pa.Table.from_pylist(rows, schema=LOG_ROW_SCHEMA)
    return spark.createDataFrame(table).where(f"row_kind = '{ROW_KIND_RECORD}'")


# --- the struct types come from the schemas --------------------------------------------------------


def test_struct_types_are_derived_from_the_avro_schemas() -> None:
    shapes = RecordShapes.from_registry([], avro=False)
    assert shapes.json_type("PartitionChangeRecord").simpleString() == (
        "struct<partitionId:int,topicId:string,isr:array<int>,leader:int,replicas:array<int>,"
        "removingReplicas:array<int>,addingReplicas:array<int>,leaderRecoveryState:int,directories:array<string>,"
        "eligibleLeaderReplicas:array<int>,lastKnownElr:array<int>>")
    assert shapes.json_type("RegisterBrokerRecord").simpleString() == (
        "struct<brokerId:int,isMigratingZkBroker:boolean,incarnationId:string,brokerEpoch:bigint,"
        "endPoints:array<struct<name:string,host:string,port:int,securityProtocol:int>>,"
        "features:array<struct<name:string,minSupportedVersion:int,maxSupportedVersion:int>>,rack:string,"
        "fenced:boolean,inControlledShutdown:boolean,logDirs:array<string>,cordonedLogDirs:array<string>>")
    for record_type in definitions():
        assert "_unknownTaggedFields" not in shapes.json_type(record_type).simpleString()
    # a projection keeps a named type that only a dropped field defined (Uuid, defined by topicId)
    projected = reader_schema(json.loads(schema_text("PartitionRecord")), ["partitionId", "directories"])
    fastavro.parse_schema(projected)
    assert shapes.json_type("PartitionRecord", ["directories"]).simpleString() == "struct<directories:array<string>>"


def test_the_session_has_spark_avro_when_its_jars_are_there(spark: SparkSession) -> None:
    jars = spark.conf.get("spark.jars", "") or ""
    assert has_spark_avro(spark) == ("spark-avro" in jars)


# --- both paths type every record alike ----------------------------------------------------------


def test_from_avro_gives_the_json_fields_with_absent_ones_at_kafka_defaults(
        spark: SparkSession, avro_shapes: RecordShapes, json_shapes: RecordShapes,
        simulated: dict[str, list[LogEntry]]) -> None:
    log = _union(entries_frame(spark, entries, cluster) for cluster, entries in simulated.items()).cache()
    defaulted = 0
    for record_type in STATE_TYPES:
        fields = {f["name"]: f for f in json.loads(avro_shapes.readers[record_type])["fields"]}
        from_avro, from_json = _typed_rows(log, avro_shapes, record_type), _typed_rows(log, json_shapes, record_type)
        assert from_avro.keys() == from_json.keys(), record_type
        for key, avro_row in from_avro.items():
            json_row = from_json[key]
            for name, value in avro_row.items():
                if json_row[name] is None and value is not None:
                    # a tagged field Kafka's JSON leaves out at its default, or a field the version lacks
                    assert value == _json_default(fields[name]), (record_type, key, name)
                    defaulted += 1
                else:
                    assert value == json_row[name], (record_type, key, name)
    log.unpersist()
    assert defaulted > 100  # leaders -2, recovery states, directories of older versions...


def test_rows_without_a_readable_payload_are_parsed_from_their_json(spark: SparkSession,
                                                                   avro_shapes: RecordShapes) -> None:
    record = make_record("TopicRecord", 0, name="orders", topicId=b"\x07" * 16)
    entry = [LogEntry(offset=i, record=record, append_time_ms=1000) for i in range(4)]
    rows = [entry_row(e, "c") for e in entry]
    rows[1] |= {"payload": None}  # a seed of an incremental replay: Kafka JSON only
    rows[2] |= {"schema_id": 12345}  # a payload under a schema the registry does not hold
    rows[3] |= {"payload": b"\x00\x01raw", "schema_id": None, "payload_json": None}  # kept raw
    got = _typed_rows(_log_of(spark, rows), avro_shapes, "TopicRecord")
    expected = {"name": "orders", "topicId": uuid_to_str(b"\x07" * 16)}
    assert [got[("c", i)] for i in range(3)] == [expected] * 3
    assert got[("c", 3)] is None
    # the events carry payload_json only where the Avro payload cannot be read
    carried = visible(_log_of(spark, rows), avro_shapes).orderBy("offset").select("payload_json").collect()
    assert [row["payload_json"] is not None for row in carried] == [False, True, True, False]


# --- older writer schemas resolve through Avro schema evolution ---------------------------------------


def _version_schema(record_type: str, version: int) -> tuple[int, dict[str, Any]]:
    """The schema of one version's shape (fields of later versions absent) and its fingerprint."""
    schema = record_schema(definitions()[record_type], version)
    canonical = fastavro.schema.to_parsing_canonical_form(fastavro.parse_schema(schema))
    unsigned = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
    return (unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned), schema


def _older_shaped(entries: list[LogEntry], cluster: str, registry: dict[int, RegisteredSchema]
                  ) -> list[dict[str, object]]:
    """Rows whose payloads are written under their version's own (narrower) schema, as an older writer would."""
    rows = []
    for entry in entries:
        row = entry_row(entry, cluster)
        record = entry.record
        if isinstance(record, MetadataRecord):
            sid, schema = _version_schema(record.type_name, record.version)
            registry[sid] = RegisteredSchema(sid, record.type_name, json.dumps(schema),
                                             datetime(2020, 1, 1, tzinfo=UTC))
            buffer = io.BytesIO()  # fastavro writes the schema's fields and ignores the later ones
            fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema),
                                       _to_avro(record.definition.body, record.data))
            row |= {"payload": buffer.getvalue(), "schema_id": sid}
        rows.append(row)
    return rows


@pytest.mark.usefixtures("avro_shapes")  # needs from_avro
def test_a_writer_schema_with_quotes_and_backslashes_in_its_text_is_read(spark: SparkSession) -> None:
    """The typing hands each writer schema to ``from_avro`` as a SQL string literal: an apostrophe, a backslash and a
    double quote in its text (a doc string) must reach Avro as they are."""
    record = make_record("PartitionRecord", 0, partitionId=7, topicId=b"\x04" * 16, replicas=[3, 1], isr=[3],
                         leader=3, leaderEpoch=2, partitionEpoch=5)
    schema = json.loads(schema_text("PartitionRecord"))
    schema["doc"] = "a broker's \\ path, \"quoted\", \\' and \\\\ again"
    text = json.dumps(schema)
    assert "'" in text and "\\\\" in text and '\\"' in text
    sid = schema_id("PartitionRecord") + 1_000_003
    registry = {sid: RegisteredSchema(sid, "PartitionRecord", text, datetime(2020, 1, 1, tzinfo=UTC))}
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), _to_avro(record.definition.body, record.data))
    row = entry_row(LogEntry(offset=0, record=record, append_time_ms=1), "c") | {
        "payload": buffer.getvalue(), "schema_id": sid, "payload_json": None}
    shapes = RecordShapes.from_registry(registry.values(), avro=True)
    typed = _typed_rows(_log_of(spark, [row]), shapes, "PartitionRecord")[("c", 0)]
    assert {k: typed[k] for k in ("partitionId", "topicId", "replicas", "isr", "leader", "leaderEpoch")} == {
        "partitionId": 7, "topicId": uuid_to_str(b"\x04" * 16), "replicas": [3, 1], "isr": [3], "leader": 3,
        "leaderEpoch": 2}


@pytest.mark.usefixtures("avro_shapes")  # needs from_avro
def test_an_older_writer_schema_gives_the_later_fields_their_defaults(spark: SparkSession) -> None:
    records = [make_record("PartitionRecord", 0, partitionId=1, topicId=b"\x01" * 16, replicas=[1, 2], isr=[1],
                           leader=1, leaderEpoch=3, partitionEpoch=4),
               make_record("RegisterBrokerRecord", 0, brokerId=5, brokerEpoch=9, incarnationId=b"\x02" * 16,
                           endPoints=[{"name": "PLAINTEXT", "host": "b5", "port": 9092, "securityProtocol": 0}],
                           rack=None, fenced=False),
               make_record("RegisterBrokerRecord", 2, brokerId=6, brokerEpoch=10, incarnationId=b"\x03" * 16,
                           isMigratingZkBroker=True, inControlledShutdown=True)]
    registry: dict[int, RegisteredSchema] = {}
    rows = _older_shaped([LogEntry(offset=i, record=r, append_time_ms=1) for i, r in enumerate(records)], "c",
                         registry)
    assert all(row["schema_id"] != schema_id(row["record_type"]) for row in rows)  # not the shipped schemas
    shapes = RecordShapes.from_registry(registry.values(), avro=True)
    assert shapes.readers == RecordShapes.from_registry([], avro=True).readers  # the narrower ones never read
    log = _log_of(spark, rows)
    partition = _typed_rows(log, shapes, "PartitionRecord")[("c", 0)]
    assert partition == {
        "partitionId": 1, "topicId": uuid_to_str(b"\x01" * 16), "replicas": [1, 2], "isr": [1],
        "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 3,
        "partitionEpoch": 4, "directories": [], "eligibleLeaderReplicas": None, "lastKnownElr": None}
    brokers = _typed_rows(log, shapes, "RegisterBrokerRecord")
    assert {k: brokers[("c", 1)][k] for k in ("brokerId", "isMigratingZkBroker", "inControlledShutdown", "logDirs",
                                              "rack", "fenced")} == {
        "brokerId": 5, "isMigratingZkBroker": False, "inControlledShutdown": False, "logDirs": [], "rack": None,
        "fenced": False}
    assert {k: brokers[("c", 2)][k] for k in ("isMigratingZkBroker", "inControlledShutdown", "logDirs")} == {
        "isMigratingZkBroker": True, "inControlledShutdown": True, "logDirs": []}


def test_the_registry_defines_the_reader_schema(spark: SparkSession, avro_shapes: RecordShapes) -> None:
    later = json.loads(schema_text("PartitionRecord"))
    later["fields"].insert(-1, {"name": "futureField", "type": "int", "default": 7})
    older_sid, older = _version_schema("PartitionRecord", 0)
    registry = [RegisteredSchema(schema_id("PartitionRecord"), "PartitionRecord", schema_text("PartitionRecord"),
                                 datetime(2026, 1, 1, tzinfo=UTC)),
                RegisteredSchema(-42, "PartitionRecord", json.dumps(later), datetime(2026, 6, 1, tzinfo=UTC)),
                # registered last, but narrower than what this code reads: never the reader
                RegisteredSchema(older_sid, "PartitionRecord", json.dumps(older), datetime(2026, 9, 1, tzinfo=UTC))]
    shapes = RecordShapes.from_registry(registry, avro=True)
    assert shapes.fields("PartitionRecord")[-1] == "futureField"
    assert set(shapes.writers["PartitionRecord"]) == {schema_id("PartitionRecord"), -42, older_sid}
    record = make_record("PartitionRecord", 1, partitionId=0, topicId=b"\x05" * 16, replicas=[1], isr=[1], leader=1)
    log = entries_frame(spark, [LogEntry(offset=0, record=record)], "c")
    assert _typed_rows(log, shapes, "PartitionRecord")[("c", 0)]["futureField"] == 7
    # Kafka's JSON has no such field: the fallback parses it as absent
    assert _typed_rows(log, dataclasses.replace(shapes, avro=False), "PartitionRecord")[("c", 0)]["futureField"] is None


def test_lake_shapes_read_the_lakes_avro_schemas(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    shipped = RecordShapes.from_registry([], avro=has_spark_avro(spark))
    assert lake_shapes(spark, lake) == shipped  # no registry yet: the shipped schemas
    lake.register_schemas()
    assert lake_shapes(spark, lake) == shipped  # the registry holds exactly the shipped schemas
    assert {s.schema_id for s in shipped_schemas()} == {sid for ids in shipped.writers.values() for sid in ids}


def _pre_44_register_broker() -> dict[str, Any]:
    """RegisterBrokerRecord's merged schema as releases before Kafka 4.4's definitions shipped it (versions 0-3)."""
    schema = json.loads(schema_text("RegisterBrokerRecord"))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "cordonedLogDirs"]
    schema["kafkaValidVersions"] = "0-3"
    return schema


@pytest.mark.usefixtures("avro_shapes")  # needs from_avro
def test_a_lake_registered_before_kafka_44_stays_readable(spark: SparkSession, tmp_path: Path) -> None:
    """The registry keeps the older RegisterBrokerRecord schema beside the new one (v4, CordonedLogDirs): its
    payloads resolve against the new reader schema, the new field at its default (null)."""
    from deltalake import write_deltalake

    from lakehouse.tables import AVRO_SCHEMAS, SCHEMAS

    old = _pre_44_register_broker()
    parsed = fastavro.parse_schema(old)
    canonical = fastavro.schema.to_parsing_canonical_form(parsed)
    unsigned = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
    old_sid = unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned
    assert old_sid != schema_id("RegisterBrokerRecord")
    lake = Lake(tmp_path / "lake")
    lake.ensure_table(AVRO_SCHEMAS)
    write_deltalake(lake.path(AVRO_SCHEMAS), pa.Table.from_pylist([{
        "schema_id": old_sid, "record_type": "RegisterBrokerRecord", "api_key": 0, "control_type": None,
        "kafka_versions": "0-3", "avsc": json.dumps(old), "registered_time": datetime(2025, 1, 1, tzinfo=UTC)}],
        schema=SCHEMAS[AVRO_SCHEMAS]), mode="append")
    lake.register_schemas()
    stored = lake.read(spark, AVRO_SCHEMAS).where("record_type = 'RegisterBrokerRecord'")
    assert {r["schema_id"]: r["kafka_versions"] for r in stored.collect()} == {
        old_sid: "0-3", schema_id("RegisterBrokerRecord"): "0-4"}
    shapes = lake_shapes(spark, lake)
    assert "cordonedLogDirs" in shapes.fields("RegisterBrokerRecord")
    record = make_record("RegisterBrokerRecord", 3, brokerId=7, brokerEpoch=11, incarnationId=b"\x04" * 16,
                         fenced=False, logDirs=[b"\x05" * 16])
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, _to_avro(record.definition.body, record.data))
    new = make_record("RegisterBrokerRecord", 4, brokerId=8, brokerEpoch=12, incarnationId=b"\x06" * 16,
                      cordonedLogDirs=[b"\x05" * 16])
    rows = [entry_row(LogEntry(offset=0, record=record, append_time_ms=1), "c") | {
        "payload": buffer.getvalue(), "schema_id": old_sid},
        entry_row(LogEntry(offset=1, record=new, append_time_ms=2), "c")]
    brokers = _typed_rows(_log_of(spark, rows), shapes, "RegisterBrokerRecord")
    assert brokers[("c", 0)]["brokerEpoch"] == 11 and brokers[("c", 0)]["cordonedLogDirs"] is None
    assert brokers[("c", 0)]["logDirs"] == [uuid_to_str(b"\x05" * 16)]
    assert brokers[("c", 1)]["cordonedLogDirs"] == [uuid_to_str(b"\x05" * 16)]


# --- the replay: same rows out ----------------------------------------------------------------------


def _replayed(log: DataFrame, shapes: RecordShapes) -> dict[str, list[dict[str, Any]]]:
    result = replay(log, shapes=shapes)
    tables = {name: [row.asDict(recursive=True) for row in df.collect()] for name, df in result.tables.items()}
    tables["replay_anomalies"] = [{k: v for k, v in row.asDict().items() if k != "reason"}
                                  for row in result.anomalies.collect()]
    return tables


def _reference(logs: dict[str, list[LogEntry]]) -> dict[str, list[dict[str, Any]]]:
    expected: dict[str, list[dict[str, Any]]] = {name: [] for name in [*TABLE_KEYS, "replay_anomalies"]
                                                 if name in REFERENCE_TABLES}
    for cluster, entries in logs.items():
        for name, rows in reference_histories(as_ingested(entries), cluster).items():
            if name == "replay_anomalies":
                rows = [{k: v for k, v in r.items() if k != "reason"} for r in rows]
            expected[name].extend(rows)
    return expected


def test_the_json_fallback_replays_as_the_reference_fold(spark: SparkSession, json_shapes: RecordShapes,
                                                        simulated: dict[str, list[LogEntry]]) -> None:
    log = _union(entries_frame(spark, entries, cluster) for cluster, entries in simulated.items())
    got, want = _replayed(log, json_shapes), _reference(simulated)
    for table in want:
        assert sorted_rows(got[table]) == sorted_rows(want[table]), table


@pytest.mark.usefixtures("avro_shapes")  # needs from_avro
def test_payloads_of_older_schemas_replay_as_the_reference_fold(spark: SparkSession,
                                                               simulated: dict[str, list[LogEntry]]) -> None:
    """Every payload written under its version's own schema: each decodes through Avro schema resolution."""
    registry: dict[int, RegisteredSchema] = {}
    rows = [row for cluster, entries in simulated.items() for row in _older_shaped(entries, cluster, registry)]
    shapes = RecordShapes.from_registry(registry.values(), avro=True)
    assert len({sid for ids in shapes.writers.values() for sid in ids}) > len(shapes.writers)  # older ones too
    got, want = _replayed(_log_of(spark, rows), shapes), _reference(simulated)
    for table in want:
        assert sorted_rows(got[table]) == sorted_rows(want[table]), table
