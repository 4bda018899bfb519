"""Gaps of an ingest (``lakehouse.ingest_gaps``): a log a snapshot covers has none, a hole inside it is one."""

from __future__ import annotations

from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import SparkSession

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.tables import INGEST_REJECTS, SNAPSHOTS
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
