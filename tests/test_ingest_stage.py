"""Staging an ingest (``lakehouse.ingest_stage``): decoded rows written once and profiled, by the driver as they pass
or by one Spark aggregate over the staged files, to the same profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from lakehouse.ingest import ingest
from lakehouse.ingest_plan import IngestOptions
from lakehouse.ingest_stage import StagedProfile, Staging, profile_of, staged_profile, write_rows
from lakehouse.lake import Lake
from lakehouse.log_rows import LOG_ROW_DDL, ROW_KIND_ERROR, ROW_KIND_ISSUE, IssueRow, entry_row, issue_row
from records.errors import RecordsError
from tests.test_lake_support import CLUSTER, simulated, write_jsonl_file


def _staged(spark: SparkSession, target: Path, rows: list[dict[str, object]]
            ) -> tuple[DataFrame, list[dict[str, Any]] | None]:
    """The staged rows and the groups the driver counted as it wrote them (None: left to Spark)."""
    groups = write_rows(str(target), iter(rows)).groups()
    return spark.read.schema(LOG_ROW_DDL).parquet(str(target)), groups


def _profiles(spark: SparkSession, target: Path, rows: list[dict[str, object]]) -> StagedProfile:
    """The driver's profile, checked equal to Spark's aggregate over the same staged files."""
    staged, groups = _staged(spark, target, rows)
    assert groups is not None
    passed = profile_of(groups, "src")
    assert passed == staged_profile(staged, "src")
    return passed


def test_staged_rows_profile_their_ranges_duplicates_and_issues(spark: SparkSession, tmp_path: Path) -> None:
    entries = simulated()[:10]
    rows = [entry_row(entry, CLUSTER) for entry in entries]
    offsets = [entry.offset for entry in entries]
    profile = _profiles(spark, tmp_path / "plain", rows)
    assert profile.ranges == {CLUSTER: (min(offsets), max(offsets))}
    assert (profile.records, profile.duplicates, profile.issues) == (10, False, 0)
    skipped = issue_row(IssueRow(ROW_KIND_ISSUE, "src", 7, None, "skipped-corrupt: bad CRC"), CLUSTER)
    other = [entry_row(entry, "other-cluster") for entry in entries[:3]]
    profile = _profiles(spark, tmp_path / "issue", [*rows, skipped, *other])
    assert profile.ranges == {CLUSTER: (min(offsets), max(offsets)), "other-cluster": (offsets[0], offsets[2])}
    assert (profile.records, profile.duplicates, profile.issues) == (13, False, 1)


def test_an_offset_seen_again_leaves_the_profile_to_spark(spark: SparkSession, tmp_path: Path) -> None:
    """Counting distinct offsets in the driver would hold them all: once one does not rise, Spark counts."""
    entries = simulated()[:10]
    rows = [entry_row(entry, CLUSTER) for entry in entries]
    skipped = issue_row(IssueRow(ROW_KIND_ISSUE, "src", 7, None, "skipped-corrupt: bad CRC"), CLUSTER)
    staged, groups = _staged(spark, tmp_path / "twice", [*rows, rows[3], skipped])
    assert groups is None
    profile = staged_profile(staged, "src")
    assert (profile.records, profile.duplicates, profile.issues) == (11, True, 1)


def test_an_unreadable_file_or_a_row_without_cluster_stops_before_any_commit(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    error = issue_row(IssueRow(ROW_KIND_ERROR, "src", 0, None, "src: not a log segment"), CLUSTER)
    orphan = entry_row(simulated()[0], None)
    for name, rows, expected in (("error", [error], "not a log segment"), ("orphan", [orphan], "carry no cluster id")):
        staged, groups = _staged(spark, tmp_path / name, rows)
        assert groups is not None
        with pytest.raises(RecordsError, match=expected):
            profile_of(groups, "src")
        with pytest.raises(RecordsError, match=expected):
            staged_profile(staged, "src")


def test_one_clusters_rising_records_are_staged_in_the_tables_order(spark: SparkSession, tmp_path: Path) -> None:
    """What the driver wrote in (cluster_id, offset) order is committed as staged, one file, without a sort; two
    clusters' records, or an offset seen again, are not in that order and are sorted (``lakehouse.ingest``)."""
    entries = simulated()[:40]
    staging = Staging(spark, IngestOptions(), str(tmp_path / "staging"))
    one = staging.stage_entries(write_jsonl_file(tmp_path / "one.jsonl", entries), "jsonl", CLUSTER)
    assert one.profile.in_order and one.profile.records == 40
    rows = [entry_row(entry, CLUSTER) for entry in entries]
    assert write_rows(str(tmp_path / "rows"), iter(rows)).in_order()
    assert not write_rows(str(tmp_path / "again"), iter([*rows, rows[3]])).in_order()
    two = [entry_row(entry, "other-cluster" if entry.offset % 2 else CLUSTER) for entry in entries]
    mixed = write_rows(str(tmp_path / "two"), iter(two))
    assert not mixed.in_order() and mixed.groups() is not None  # each cluster's offsets rise, but interleaved

    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, write_jsonl_file(tmp_path / "log.jsonl", entries[20:]), IngestOptions(cluster_id=CLUSTER))
    ingest(spark, lake, write_jsonl_file(tmp_path / "log2.jsonl", entries), IngestOptions(cluster_id=CLUSTER))
    files = DeltaTable(lake.path("metadata_log")).file_uris()
    offsets = [pq.read_table(uri.removeprefix("file://"), columns=["offset"]).column("offset").to_pylist()
               for uri in files]
    # the first commit as staged; the second's 20 new offsets once the 20 stored were joined away, sorted
    assert sorted(offsets) == [list(range(20)), list(range(20, 40))]
