"""Staging an ingest (``lakehouse.ingest_stage``): decoded rows written once, then profiled in one aggregate."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from lakehouse.ingest_stage import staged_profile, write_rows
from lakehouse.log_rows import LOG_ROW_DDL, ROW_KIND_ERROR, ROW_KIND_ISSUE, IssueRow, entry_row, issue_row
from records.errors import RecordsError
from tests.test_lake_support import CLUSTER, simulated


def _staged(spark: SparkSession, target: Path, rows: list[dict[str, object]]) -> DataFrame:
    write_rows(str(target), iter(rows))
    return spark.read.schema(LOG_ROW_DDL).parquet(str(target))


def test_staged_rows_profile_their_ranges_duplicates_and_issues(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()[:10]
    rows = [entry_row(entry, CLUSTER) for entry in entries]
    offsets = [entry.offset for entry in entries]
    profile = staged_profile(_staged(spark, tmp_path / "plain", rows), "src")
    assert profile.ranges == {CLUSTER: (min(offsets), max(offsets))}
    assert (profile.records, profile.duplicates, profile.issues) == (10, False, 0)
    skipped = issue_row(IssueRow(ROW_KIND_ISSUE, "src", 7, None, "skipped-corrupt: bad CRC"), CLUSTER)
    profile = staged_profile(_staged(spark, tmp_path / "twice", [*rows, rows[3], skipped]), "src")
    assert (profile.records, profile.duplicates, profile.issues) == (11, True, 1)


def test_an_unreadable_file_or_a_row_without_cluster_stops_before_any_commit(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    error = issue_row(IssueRow(ROW_KIND_ERROR, "src", 0, None, "src: not a log segment"), CLUSTER)
    with pytest.raises(RecordsError, match="not a log segment"):
        staged_profile(_staged(spark, tmp_path / "error", [error]), "src")
    orphan = entry_row(simulated()[0], None)
    with pytest.raises(RecordsError, match="carry no cluster id"):
        staged_profile(_staged(spark, tmp_path / "orphan", [orphan]), "src")
