"""Gaps of an ingest (``lakehouse.ingest_gaps``): a log a snapshot covers has none, a hole inside it is one. The
Delta log's statistics that tell the offsets and snapshots without reading them (``lakehouse.lake_read``), and the
replay's coverage built from them (``replay.store.increment_plan.lake_coverages``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.lake_read import cluster_column_range, cluster_column_ranges, cluster_distinct_values
from lakehouse.tables import INGEST_REJECTS, METADATA_LOG, SNAPSHOTS
from records.writer import write_snapshot
from replay.core.coverage import LogRun, SnapshotId
from replay.store.increment_plan import lake_coverages
from replay.store.snapshots import coverages
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file, write_log_dir


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
    assert cluster_distinct_values(DeltaTable(lake.path(SNAPSHOTS)), ("snapshot_end_offset", "snapshot_epoch")) == {
        CLUSTER: {(500, 3)}}
    assert cluster_column_ranges(DeltaTable(lake.path(METADATA_LOG)), "offset") == {
        CLUSTER: (len(entries) - 500, 500, entries[-1].offset)}

    # A hole inside the log is a real gap: reported in the summary and in ingest_rejects.
    holed = write_jsonl_file(tmp_path / "holed.jsonl", [*entries[:100], *entries[130:200]])
    other = Lake(tmp_path / "lake2")
    gaps = ingest(spark, other, holed, IngestOptions(cluster_id="c")).gaps
    assert gaps == [("c", 100, 129)]
    rows = DeltaTable(other.path(INGEST_REJECTS)).to_pyarrow_table().to_pylist()
    assert [(r["kind"], r["offset"], r["end_offset"]) for r in rows] == [("gap", 100, 129)]


def test_a_leading_gap_without_a_snapshot_and_the_offsets_known_from_statistics(spark: SparkSession,
                                                                                 tmp_path: Path) -> None:
    """A log whose first segments are gone and no snapshot covers them: offsets 0..499 are a gap. The offsets'
    count and bounds come from the Delta log's statistics (an ingest writes a file per cluster)."""
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    late = write_jsonl_file(tmp_path / "late.jsonl", entries[500:600])
    assert ingest(spark, lake, late, IngestOptions(cluster_id="c")).gaps == [("c", 0, 499)]
    holed = write_jsonl_file(tmp_path / "holed.jsonl", [*entries[600:650], *entries[700:720]])
    # every gap of the cluster is reported again, the new hole with the old one
    assert ingest(spark, lake, holed, IngestOptions(cluster_id="c")).gaps == [("c", 0, 499), ("c", 650, 699)]
    log = DeltaTable(lake.path(METADATA_LOG))
    assert cluster_column_range(log, "c", "offset") == (170, 500, 719)
    assert cluster_column_range(log, "another", "offset") == (0, 0, 0)


def test_statistics_of_a_file_holding_two_clusters_tell_nothing(tmp_path: Path) -> None:
    """A file with rows of two clusters: its counts are not one cluster's, so the reader is asked instead."""
    write_deltalake(tmp_path / "t", pa.table({"cluster_id": ["a", "b"], "offset": pa.array([1, 7], pa.int64())}))
    assert cluster_column_range(DeltaTable(tmp_path / "t"), "a", "offset") is None
    assert cluster_column_range(DeltaTable(tmp_path / "t"), "c", "offset") == (0, 0, 0)


def test_statistics_of_nulls_and_of_files_holding_two_values(tmp_path: Path) -> None:
    """Null offsets are not offsets (a count with them would hide a hole); a file of two snapshots, or of two
    clusters, tells no distinct values and no per-cluster ranges."""
    write_deltalake(tmp_path / "nulls", pa.table({"cluster_id": ["a", "a", "a"],
                                                  "offset": pa.array([3, None, 5], pa.int64())}))
    assert cluster_column_ranges(DeltaTable(tmp_path / "nulls"), "offset") == {"a": (2, 3, 5)}
    assert cluster_column_range(DeltaTable(tmp_path / "nulls"), "a", "offset") == (2, 3, 5)
    write_deltalake(tmp_path / "two", pa.table({"cluster_id": ["a", "b"], "offset": pa.array([1, 7], pa.int64())}))
    assert cluster_column_ranges(DeltaTable(tmp_path / "two"), "offset") is None
    snapshots = {"cluster_id": ["a", "a"], "snapshot_end_offset": pa.array([10, 20], pa.int64()),
                 "snapshot_epoch": pa.array([1, 1], pa.int32())}
    write_deltalake(tmp_path / "snaps", pa.table(snapshots))
    assert cluster_distinct_values(DeltaTable(tmp_path / "snaps"), ("snapshot_end_offset", "snapshot_epoch")) is None


def test_coverage_from_statistics_equals_the_coverage_from_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    """The replay's coverage read from the Delta logs' statistics (no Spark job where they tell) is the one the rows
    give: a log with a hole (the statistics count fewer offsets than its range: Spark finds where), a later one
    whose first segments are gone and a snapshot covers them, and a second cluster."""
    entries = simulated()
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, write_jsonl_file(tmp_path / "holed.jsonl", [*entries[:100], *entries[130:200]]),
           IngestOptions(cluster_id="holed"))
    log = write_log_dir(tmp_path / "log", entries[500:])
    records = [e.record for e in entries[:500] if not e.is_control]
    write_snapshot(records, log / "__cluster_metadata-0", end_offset=500, epoch=3,
                   last_contained_log_timestamp=1_700_000_000_000)
    ingest(spark, lake, log)
    version = int(lake.delta_table(METADATA_LOG).version())
    from_statistics = lake_coverages(spark, lake, version)
    assert from_statistics == coverages(lake.read(spark, METADATA_LOG), lake.read(spark, SNAPSHOTS))
    assert from_statistics["holed"].gaps == (LogRun(100, 129),)
    assert from_statistics[CLUSTER].base == SnapshotId(500, 3)
    assert lake_coverages(spark, lake, version, ["holed"]).keys() == {"holed"}
