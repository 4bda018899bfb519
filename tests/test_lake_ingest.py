"""Ingest into the Delta lake, in process with the shared SparkSession: real logs, overlap, conflicts,
several clusters, snapshots, gaps, time travel, the optimistic-commit retry, maintenance."""

from __future__ import annotations

import dataclasses
import io
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import fastavro
import fastavro.schema
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

import lakehouse.ingest as ingest_module
from kraft_replay.lake_commands import standalone_app
from lakehouse.delta_commit import commit_at_version
from lakehouse.follow import Follower
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake, LakeError, read_table
from lakehouse.log_rows import LOG_ROW_SCHEMA, ROW_KIND_RECORD, entry_row
from lakehouse.tables import AVRO_SCHEMAS, INGEST_REJECTS, METADATA_LOG, SCHEMAS, SNAPSHOTS, spark_schema
from records.avro_codec import _to_avro, schema_text, trim_to_version
from records.batch import Compression
from records.definitions import definitions
from records.kafka_json import struct_to_json
from records.writer import encode_entries_batch, group_batches, write_snapshot
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file, write_log_dir

LDI_ROWS = 4929


def _offsets(lake: Lake, cluster_id: str | None = None) -> list[int]:
    table = pa.table(DeltaTable(lake.path(METADATA_LOG)).to_pyarrow_table(columns=["cluster_id", "offset"]))
    return sorted(o for c, o in zip(table.column("cluster_id").to_pylist(), table.column("offset").to_pylist(),
                                    strict=True) if cluster_id is None or c == cluster_id)


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
    assert _offsets(lake) == list(range(n))


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
    assert len(_offsets(lake, "q1w2e3r4t5y6u7i8o9p0")) == LDI_ROWS
    assert len(_offsets(lake, other.cluster_ids[0])) == other.records_added > 0
    assert _offsets(lake, "third") == list(range(300))
    with pytest.raises(Exception, match="cluster-id"):
        ingest(spark, lake, jsonl)  # JSON lines without cluster ids and no --cluster-id


def test_snapshots_table_and_expected_versus_real_gaps(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    log = write_log_dir(tmp_path / "log", entries[500:])  # the log starts at offset 500 ...
    records = [e.record for e in entries[:500] if not e.is_control]
    write_snapshot(records, log / "__cluster_metadata-0", end_offset=500, epoch=3,
                   last_contained_log_timestamp=1_700_000_000_000)  # ... and a snapshot covers 0..499
    lake = Lake(tmp_path / "lake")
    summary = ingest(spark, lake, log)
    assert summary.gaps == [] and summary.snapshot_records_added == len(records) + 2
    snap = DeltaTable(lake.path(SNAPSHOTS)).to_pyarrow_table().sort_by("offset").to_pylist()
    assert {(r["cluster_id"], r["snapshot_end_offset"], r["snapshot_epoch"]) for r in snap} == {(CLUSTER, 500, 3)}
    assert [r["offset"] for r in snap] == list(range(len(records) + 2))
    assert snap[0]["record_type"] == "SnapshotHeaderRecord" and snap[-1]["record_type"] == "SnapshotFooterRecord"
    assert ingest(spark, lake, log).snapshot_records_added == 0

    # A hole inside the log is a real gap: reported in the summary and in ingest_rejects.
    holed = write_jsonl_file(tmp_path / "holed.jsonl", [*entries[:100], *entries[130:200]])
    other = Lake(tmp_path / "lake2")
    gaps = ingest(spark, other, holed, IngestOptions(cluster_id="c")).gaps
    assert gaps == [("c", 100, 129)]
    rows = DeltaTable(other.path(INGEST_REJECTS)).to_pyarrow_table().to_pylist()
    assert [(r["kind"], r["offset"], r["end_offset"]) for r in rows] == [("gap", 100, 129)]


def test_time_travel_by_version_and_timestamp(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", entries[:100]), IngestOptions(cluster_id=CLUSTER))
    time.sleep(1.1)
    between = datetime.now(UTC)
    time.sleep(1.1)
    ingest(spark, lake, write_jsonl_file(tmp_path / "b.jsonl", entries[:250]), IngestOptions(cluster_id=CLUSTER))
    assert read_table(spark, lake, METADATA_LOG, version=1).count() == 100
    assert read_table(spark, lake, METADATA_LOG, version=2).count() == 250
    assert read_table(spark, lake.root, METADATA_LOG, timestamp=between).count() == 100
    assert read_table(spark, lake, METADATA_LOG, timestamp=between.isoformat()).count() == 100
    assert read_table(spark, lake, METADATA_LOG).count() == 250
    history = lake.history(METADATA_LOG)
    assert [(h.version, h.operation, h.rows_added) for h in history] == [
        (2, "ingest", 150), (1, "ingest", 100), (0, "CREATE TABLE", None)]
    with pytest.raises(LakeError):
        lake.read(spark, METADATA_LOG, version=9)


def test_commit_is_refused_when_another_writer_committed_first(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    lake.ensure_table(METADATA_LOG)
    stale = DeltaTable(lake.path(METADATA_LOG))
    ingest(spark, lake, write_jsonl_file(tmp_path / "a.jsonl", simulated()[:10]), IngestOptions(cluster_id=CLUSTER))
    with pytest.raises(CommitFailedError):
        commit_at_version(stale, [], SCHEMAS[METADATA_LOG])


def test_ingest_retries_and_deduplicates_after_losing_a_commit_race(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other writer commits between our read (dedup) and our commit: we must re-read and re-dedup."""
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    ours = write_jsonl_file(tmp_path / "ours.jsonl", entries[:300])
    theirs = write_jsonl_file(tmp_path / "theirs.jsonl", entries[200:400])
    real = ingest_module.overlapping_files
    raced: list[int] = []

    def racing(table: DeltaTable, ranges: dict[str, tuple[int, int]]) -> list[str]:
        files = real(table, ranges)
        if not raced and table.table_uri.rstrip("/").endswith(METADATA_LOG):
            raced.append(table.version())
            ingest(spark, lake, theirs, IngestOptions(cluster_id=CLUSTER))  # commits the next version
        return files

    monkeypatch.setattr(ingest_module, "overlapping_files", racing)
    summary = ingest(spark, lake, ours, IngestOptions(cluster_id=CLUSTER))
    assert raced == [0]
    assert (summary.records_added, summary.records_skipped, summary.conflicts) == (200, 100, 0)
    assert _offsets(lake) == list(range(400))
    assert [h.operation for h in lake.history(METADATA_LOG)][:2] == ["ingest", "ingest"]


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
    assert _offsets(lake) == list(range(260))
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
    assert _offsets(lake) == list(range(first, 300))


def test_lake_commands_history_tables_optimize_vacuum(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    for end in (100, 200, 300):
        ingest(spark, lake, write_jsonl_file(tmp_path / f"{end}.jsonl", entries[:end]),
               IngestOptions(cluster_id=CLUSTER))
    assert len(DeltaTable(lake.path(METADATA_LOG)).file_uris()) == 3
    runner = CliRunner()
    app = standalone_app()
    result = runner.invoke(app, ["lake", "history", METADATA_LOG, "--lake", lake.root])
    assert result.exit_code == 0, result.output
    assert "ingest" in result.output and "CREATE TABLE" in result.output
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:  # the command calls get_spark(), which resets the shared session's runtime defaults
        result = runner.invoke(app, ["lake", "optimize", "--lake", lake.root, "--table", METADATA_LOG,
                                     "--master", "local[2]"])
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    assert result.exit_code == 0, result.output
    table = DeltaTable(lake.path(METADATA_LOG))
    files = pa.table(table.get_add_actions(flatten=True))
    assert files.num_rows == 1 and files.column("min.offset")[0].as_py() == 0
    assert files.column("max.offset")[0].as_py() == 299
    assert _offsets(lake) == list(range(300))
    assert read_table(spark, lake, METADATA_LOG, version=2).count() == 200  # time travel still works
    assert list((Path(lake.path(METADATA_LOG)) / "_delta_log").glob("*.checkpoint.parquet"))
    result = runner.invoke(app, ["lake", "tables", "--lake", lake.root])
    assert result.exit_code == 0 and "metadata_log" in result.output and "300" in result.output
    result = runner.invoke(app, ["lake", "vacuum", "--lake", lake.root])  # 7 days: nothing is old enough
    assert result.exit_code == 0 and "metadata_log: 0 file(s) deleted" in result.output
    deleted = lake.vacuum(retention_hours=0)
    assert len(deleted[METADATA_LOG]) == 3  # the compacted-away files; the current one stays
    assert _offsets(lake) == list(range(300))
    result = runner.invoke(app, ["lake", "history", "nope", "--lake", lake.root])
    assert result.exit_code != 0
