"""Ingest into the Delta lake, in process with the shared SparkSession: real logs, overlap, conflicts,
several clusters, following a growing log. (Snapshots and gaps: test_ingest_gaps; time travel:
test_lake_read; the optimistic-commit retry: test_lake_commit; maintenance: test_lake_maintenance.)"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable
from pathlib import Path

import fastavro
import fastavro.schema
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.follow import Follower, complete_end
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.log_rows import LOG_ROW_SCHEMA, ROW_KIND_RECORD, entry_row
from lakehouse.tables import AVRO_SCHEMAS, INGEST_REJECTS, METADATA_LOG, spark_schema
from records.avro_codec import _to_avro, schema_text, trim_to_version
from records.batch import Compression
from records.definitions import definitions
from records.kafka_json import struct_to_json
from records.writer import encode_entries_batch, group_batches
from tests.test_lake_support import CLUSTER, simulated, stored_offsets, write_jsonl_file, write_log_dir

LDI_ROWS = 4929


def test_real_log_ingest_is_exactly_once_and_readable_without_spark(
        spark: SparkSession, real_log: Callable[[str], Path], tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    first = ingest(spark, lake, real_log("ldi-poc"))
    assert (first.records_read, first.records_added, first.records_skipped) == (LDI_ROWS, LDI_ROWS, 0)
    assert first.cluster_ids == ["q1w2e3r4t5y6u7i8o9p0"] and first.gaps == []
    again = ingest(spark, lake, real_log("ldi-poc"))
    assert (again.records_added, again.records_skipped, again.versions) == (0, LDI_ROWS, {})

    # delta-rs alone (no Spark) and Spark read the same rows.
    plain = DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table()
    assert plain.num_rows == LDI_ROWS
    assert sorted(plain.column("offset").to_pylist()) == list(range(LDI_ROWS))
    columns = ["cluster_id", "offset", "record_type", "record_version", "payload", "payload_json", "append_time_ms"]
    from_rs = sorted(tuple(r[c] for c in columns) for r in plain.select(columns).to_pylist())
    from_spark = sorted(tuple(r[c] if not isinstance(r[c], bytearray) else bytes(r[c]) for c in columns)
                        for r in lake.read(spark, METADATA_LOG).select(*columns).collect())
    assert from_rs == from_spark

    # Every payload decodes with fastavro and the avsc text stored in avro_schemas, nothing else.
    schemas = {row["schema_id"]: fastavro.parse_schema(json.loads(row["avsc"]))
               for row in DeltaTable(lake.path(AVRO_SCHEMAS)).to_pyarrow_table().to_pylist()}
    for row in plain.to_pylist():
        assert row["schema_id"] in schemas, row["record_type"]
        data = fastavro.schemaless_reader(io.BytesIO(row["payload"]), schemas[row["schema_id"]], None)
        body = definitions()[row["record_type"]].body
        version = row["record_version"]
        assert struct_to_json(body, version, trim_to_version(body, version, data)) == json.loads(row["payload_json"])

    # The incident at the end of the log, by SQL over the Spark read.
    shutdown = lake.read_offsets(spark, METADATA_LOG, "q1w2e3r4t5y6u7i8o9p0", 4871, 4926)
    kinds = {r["record_type"]: r["n"] for r in shutdown.groupBy("record_type").agg(F.count("*").alias("n")).collect()}
    assert kinds == {"BrokerRegistrationChangeRecord": 2, "PartitionChangeRecord": 54}


def test_overlapping_sources_add_only_new_offsets(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    n = len(entries)
    lake = Lake(tmp_path / "lake")
    first = write_jsonl_file(tmp_path / "a.jsonl", entries[: n * 2 // 3])
    second = write_jsonl_file(tmp_path / "b.jsonl", entries[n // 3:])
    options = IngestOptions(cluster_id=CLUSTER)
    assert ingest(spark, lake, first, options).records_added == n * 2 // 3
    summary = ingest(spark, lake, second, options)
    assert summary.records_added == n - n * 2 // 3
    assert summary.records_skipped == n * 2 // 3 - n // 3
    # The same log as segments (read by the executors here) only confirms what is stored.
    log_dir = write_log_dir(tmp_path / "log", entries, segment_bytes=64 * 1024)
    segments = ingest(spark, lake, log_dir, IngestOptions(spark_decode_min_bytes=0))
    assert (segments.records_added, segments.records_skipped, segments.conflicts) == (0, n, 0)
    assert stored_offsets(lake) == list(range(n))


def test_conflicting_record_is_rejected_not_written(spark: SparkSession, tmp_path: Path) -> None:
    entries = list(simulated())
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries[:100]), IngestOptions(cluster_id=CLUSTER))
    before = DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table().sort_by("offset")
    forged = dataclasses.replace(entries[50], record=entries[7].record)  # another record at offset 50
    source = write_jsonl_file(tmp_path / "b.jsonl", [*entries[40:50], forged, *entries[51:120]])
    summary = ingest(spark, lake, source, IngestOptions(cluster_id=CLUSTER))
    assert (summary.conflicts, summary.records_added, summary.records_skipped) == (1, 20, 59)
    after = DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table().sort_by("offset")
    assert after.slice(0, 100).select(["offset", "payload"]) == before.select(["offset", "payload"])
    rejects = DeltaTable(lake.path(INGEST_REJECTS)).to_pyarrow_table().to_pylist()
    assert [(r["kind"], r["offset"], r["record_type"]) for r in rejects] == [
        ("conflict", 50, entries[7].record.type_name)]
    assert rejects[0]["source_file"] == str(source) and "different record" in rejects[0]["reason"]
    # Reported once: re-running the same source reports the conflict again but does not duplicate it.
    again = ingest(spark, lake, source, IngestOptions(cluster_id=CLUSTER))
    assert (again.conflicts, again.records_added, again.rejects_added) == (1, 0, 0)


def test_payloads_of_an_older_schema_are_the_same_records(spark: SparkSession, tmp_path: Path) -> None:
    """A lake ingested before Kafka 4.4's definitions holds Register/BrokerRegistrationChange payloads under schemas
    without CordonedLogDirs: other bytes for the same records. Re-ingesting the log finds them stored, no conflict."""
    entries = simulated()
    older: dict[str, tuple[int, object]] = {}
    for name in ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord"):
        schema = json.loads(schema_text(name))
        schema["fields"] = [f for f in schema["fields"] if f["name"] != "cordonedLogDirs"]
        parsed = fastavro.parse_schema(schema)
        unsigned = int(fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(parsed), "CRC-64-AVRO"),
                       16)
        older[name] = (unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned, parsed)
    rows = []
    for entry in entries:
        row = entry_row(entry, CLUSTER)
        if entry.type_name in older:
            sid, parsed = older[entry.type_name]
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, parsed, _to_avro(entry.record.definition.body, entry.record.data))
            assert buffer.getvalue() != row["payload"]
            row |= {"payload": buffer.getvalue(), "schema_id": sid}
        rows.append(row)
    assert {r["record_type"] for r in rows if r["schema_id"] in {sid for sid, _ in older.values()}} == set(older)
    lake = Lake(tmp_path / "lake")
    lake.ensure_table(METADATA_LOG)
    stored = spark.createDataFrame(pa.Table.from_pylist(rows, schema=LOG_ROW_SCHEMA)).where(
        f"row_kind = '{ROW_KIND_RECORD}'").withColumn("notes", F.col("message"))
    lake.write(stored.select(*[(F.col(f.name) if f.name in stored.columns else F.lit(None)).cast(f.dataType)
                               .alias(f.name) for f in spark_schema(METADATA_LOG).fields]), METADATA_LOG, "append")
    summary = ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries), IngestOptions(cluster_id=CLUSTER))
    assert (summary.conflicts, summary.records_added, summary.records_skipped) == (0, 0, len(entries))


def test_several_clusters_share_a_lake(spark: SparkSession, real_log: Callable[[str], Path], tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, real_log("ldi-poc"))
    other = ingest(spark, lake, real_log("nurlan-3broker-pre33"))
    jsonl = write_jsonl_file(tmp_path / "sim.jsonl", simulated()[:300])
    ingest(spark, lake, jsonl, IngestOptions(cluster_id="third"))
    assert len(stored_offsets(lake, "q1w2e3r4t5y6u7i8o9p0")) == LDI_ROWS
    assert len(stored_offsets(lake, other.cluster_ids[0])) == other.records_added > 0
    assert stored_offsets(lake, "third") == list(range(300))
    with pytest.raises(Exception, match="cluster-id"):
        ingest(spark, lake, jsonl)  # JSON lines without cluster ids and no --cluster-id


def test_follower_takes_new_batches_of_a_growing_segment(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    log = write_log_dir(tmp_path / "log", entries[:200])
    segment = next((log / "__cluster_metadata-0").glob("*.log"))
    lake = Lake(tmp_path / "lake")
    follower = Follower(spark, lake, log, IngestOptions())
    assert follower.round() is not None and follower.round() is None
    batches = [encode_entries_batch(b, Compression.NONE) for b in group_batches(entries[200:260], 1000)]
    with segment.open("ab") as out:  # the broker appends, the last batch only half written so far
        for batch in batches[:-1]:
            out.write(batch)
        out.write(batches[-1][:20])
    grown = follower.round()
    expected = sum(len(b) for b in group_batches(entries[200:260], 1000)) - len(list(group_batches(
        entries[200:260], 1000))[-1])
    assert grown is not None and grown.records_added == expected and grown.records_skipped == 0
    with segment.open("ab") as out:
        out.write(batches[-1][20:])
    assert follower.round().records_added == 260 - 200 - expected  # type: ignore[union-attr]
    assert stored_offsets(lake) == list(range(260))
    assert DeltaTable(lake.path(INGEST_REJECTS)).to_pyarrow_table().num_rows == 0


def test_follower_retries_a_segment_kafka_deleted_after_the_listing(spark: SparkSession, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka deletes segments behind a snapshot at any moment: a round that listed one and finds it gone ingests
    nothing and does not stop the follower; the next round lists again and takes the segments still there."""
    import lakehouse.follow as follow_module
    from records import log_dir

    entries = simulated()
    log = write_log_dir(tmp_path / "log", entries[:300], segment_bytes=8 << 10)
    segments = sorted((log / "__cluster_metadata-0").glob("*.log"))
    assert len(segments) >= 3
    stale = log_dir.discover(log)
    segments[0].unlink()  # the cleaner, between the follower's listing and its read
    monkeypatch.setattr(follow_module.log_dir, "discover", lambda _directory: stale)
    lake = Lake(tmp_path / "lake")
    follower = Follower(spark, lake, log, IngestOptions())
    assert follower.round() is None
    monkeypatch.undo()
    summary = follower.round()
    first = int(segments[1].name[:20])
    assert summary is not None and summary.records_added == 300 - first
    assert stored_offsets(lake) == list(range(first, 300))



def test_follower_finishes_a_segment_kafka_renamed_for_deletion(spark: SparkSession, tmp_path: Path) -> None:
    """Kafka deletes a segment a snapshot covers by renaming it ``*.log.deleted`` first (removed a minute later):
    the batches the follower had not taken yet, and a segment it never saw, are read from the renamed files, and a
    round after that finds nothing new (seen on a real Kafka 3.9 cluster: the follower had lost two records)."""
    entries = simulated()
    log = write_log_dir(tmp_path / "log", entries[:300], segment_bytes=8 << 10)
    segments = sorted((log / "__cluster_metadata-0").glob("*.log"))
    assert len(segments) >= 3
    data = {path: path.read_bytes() for path in segments}
    segments[0].write_bytes(data[segments[0]][:len(data[segments[0]]) // 2])  # the broker still appending to it
    segments[0].write_bytes(data[segments[0]][:complete_end(segments[0], 0)])
    for path in segments[1:]:
        path.unlink()
    lake = Lake(tmp_path / "lake")
    follower = Follower(spark, lake, log, IngestOptions())
    first = follower.round()
    taken = len(stored_offsets(lake))
    assert first is not None and 0 < first.records_added == taken < int(segments[1].name[:20])
    # the broker finished the first segment and rolled the next ones; then its cleaner renamed the first two
    for path in segments:
        path.write_bytes(data[path])
    for path in segments[:2]:
        path.rename(path.with_name(path.name + ".deleted"))
    summary = follower.round()
    assert summary is not None and summary.records_added == 300 - taken
    assert stored_offsets(lake) == list(range(300))
    assert follower.round() is None
