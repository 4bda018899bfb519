"""Gaps of an ingest (``lakehouse.ingest_gaps``): a log a snapshot covers has none, a hole inside it is one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.lake_read import cluster_column_range
from lakehouse.tables import INGEST_REJECTS, METADATA_LOG, SNAPSHOTS
from records.writer import write_snapshot
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
