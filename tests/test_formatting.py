"""kraft_replay.formatting: the exact text of the ingest and replay summaries (the dataclasses built directly, no
Spark)."""

from __future__ import annotations

from kraft_replay.formatting import format_ingest_summary, format_replay_summary
from lakehouse.ingest import IngestSummary
from replay.store.runs import ReplaySummary


def test_ingest_summary_lines() -> None:
    summary = IngestSummary(ingest_id="i-1", source="/logs/c1", cluster_ids=["c1"], records_read=12345,
                            records_added=12000, records_skipped=345, conflicts=0, rejects_added=2, issues=1,
                            snapshot_records_added=10, snapshot_records_skipped=3, gaps=[("c1", 100, 104)],
                            commit_retries=1, versions={"metadata_log": [4], "batches": [2, 3]}, notes=["n1"])
    assert format_ingest_summary(summary) == [
        "ingest i-1 of /logs/c1 (cluster c1)",
        "  records read:              12,345",
        "  records added:             12,000",
        "  skipped (already present): 345",
        "  conflicts:                 0",
        "  batch/record issues:       1",
        "  gaps:                      1",
        "  rejects added:             2",
        "  snapshot records added:    10 (skipped 3)",
        "  gap: cluster c1 offsets 100..104 missing",
        "  new table versions:        batches v2/3, metadata_log v4",
        "  commit retries:            1 (another writer committed first)",
        "  note: n1",
    ]


def test_empty_ingest_summary_omits_the_optional_lines() -> None:
    assert format_ingest_summary(IngestSummary(ingest_id="i-2", source="x")) == [
        "ingest i-2 of x (cluster ?)",
        "  records read:              0",
        "  records added:             0",
        "  skipped (already present): 0",
        "  conflicts:                 0",
        "  batch/record issues:       0",
        "  gaps:                      0",
        "  rejects added:             0",
        "  new table versions:        none",
    ]


def test_ingest_summary_lists_at_most_20_gaps_and_notes() -> None:
    summary = IngestSummary(ingest_id="i-3", source="x", gaps=[("c", 10 * i, 10 * i + 1) for i in range(25)],
                            notes=[f"note {i}" for i in range(25)])
    lines = format_ingest_summary(summary)
    assert "  gaps:                      25" in lines
    assert sum(line.startswith("  gap: ") for line in lines) == 20
    assert sum(line.startswith("  note: ") for line in lines) == 20
    assert "  gap: cluster c offsets 190..191 missing" in lines and "  note: note 19" in lines
    assert "  gap: cluster c offsets 200..201 missing" not in lines and "  note: note 20" not in lines


def test_replay_summary_lines() -> None:
    summary = ReplaySummary(clusters={"c2": 99, "c1": 4928}, metadata_log_version=3,
                            rows={"partition_history": 1234567, "anomalies": 0},
                            versions={"partition_history": 7, "anomalies": 2}, anomalies=0, seconds=12.345,
                            mode="incremental", notes=["n"])
    assert format_replay_summary(summary) == [
        "replayed c1 (offsets 0..4928), c2 (offsets 0..99) from metadata_log v3 (incremental) in 12.3s",
        "  partition_history     1,234,567 rows  v7",
        "  anomalies                     0 rows  v2",
        "  anomalies: 0",
        "  note: n",
    ]
