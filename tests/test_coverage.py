"""replay/core/coverage.py (and its table, its checks): a log that starts after a snapshot, as long-running clusters
have it, answered at every stored offset from the right base.

Layouts are laid out as Kafka leaves them (segment files named by their base offset, ``NNN-EEE.checkpoint``
snapshots of the image at their end offset - 1, written by ``records.writer``) and ingested by the real ``ingest``:

- a log from offset S with snapshots at S (the base), at a later offset (a check that agrees) and at a third one
  edited to differ (an anomaly); then an archived copy of offsets 0..S-1 ingested beside it: the history then
  starts at 0 and is the whole log's;
- an increment that brings a later snapshot (checked), then segments and a snapshot after a gap (a new base);
- a log with a hole and no snapshot after it (a gap folded across, its offsets not answered), and the real logs
  of ../shared cut at an offset S, three clusters of one lake.

Every stored offset is compared through the history tables with the reference fold from the same base
(``reference_histories(tail, base_snapshot=...)``); offsets outside the history answer clearly (exit 3).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kraft_replay.cli import app
from lakehouse.fingerprint_key import fingerprint_key
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from records.kafka_constants import BEGIN, END
from records.model import LogEntry, MetadataRecord, uuid_to_str
from records.sources import read_entries
from records.writer import write_meta_properties, write_segments, write_snapshot
from replay.core.coverage import ClusterCoverage, LogRun, SnapshotId, history_coverage
from replay.query.rules import OutsideHistory
from replay.query.state import state_at
from replay.reference.fold import image_at, reference_histories
from replay.store.runs import ANOMALIES, run_replay
from replay.store.snapshot_checks import CHECK_KIND
from simulator import ScenarioOptions, run_scenario
from tests.image_snapshot_support import image_snapshot_records
from tests.replay_tables_support import REFERENCE_TABLES, _assert_same, _by_cluster, _lake_tables, as_ingested

pytestmark = pytest.mark.spark

CLUSTER = "cutClusterAAAAAAAAAAAA"
runner = CliRunner()
SNAPSHOT_TIME_MS = 1_700_000_000_000


# --- the rule, without Spark -------------------------------------------------------------------------------------


def test_the_base_is_the_snapshot_at_the_start_of_the_last_run() -> None:
    """The layout of a real Kafka 3.9 node: log 128356..149994, snapshots 128356, 135517, 142667, 149809."""
    ids = [SnapshotId(128356, 20), SnapshotId(135517, 21), SnapshotId(142667, 21), SnapshotId(149809, 21)]
    covered = history_coverage("c", [LogRun(128356, 149994)], ids)
    assert (covered.base, covered.first_offset, covered.log_first_offset, covered.checks) == (
        SnapshotId(128356, 20), 128355, 128356, tuple(ids[1:]))
    assert covered.outside(1200) == ("offset 1200 is before this lake's history (its log starts at 128356, from "
                                     "the snapshot ending at 128355)")
    assert covered.outside(128355) is None and covered.outside(130000) is None
    # an archived copy from offset 0 makes one run: no base, every snapshot a check
    whole = history_coverage("c", [LogRun(0, 149994)], ids)
    assert (whole.base, whole.first_offset, whole.checks) == (None, 0, tuple(ids))
    # a first segment that starts before the log start offset: the earliest snapshot inside the run is the base
    early = history_coverage("c", [LogRun(120000, 149994)], ids)
    assert (early.base, early.first_offset) == (ids[0], 128355)
    # a hole with no snapshot after it is folded across, its offsets not answered; one with a snapshot re-bases
    holed = history_coverage("c", [LogRun(0, 99), LogRun(130, 200)], [SnapshotId(60, 1)])
    assert (holed.base, holed.first_offset, holed.gaps, holed.checks) == (
        None, 0, (LogRun(100, 129),), (SnapshotId(60, 1),))
    assert holed.outside(120) == ("offset 120 is in a gap of this lake's log: offsets 100..129 were never stored "
                                  "(its log starts at offset 0)")
    rebased = history_coverage("c", [LogRun(0, 99), LogRun(130, 200)], [SnapshotId(130, 2)])
    assert (rebased.base, rebased.first_offset, rebased.gaps) == (SnapshotId(130, 2), 129, ())
    # a snapshot ahead of the whole log is the image the node loaded last
    ahead = history_coverage("c", [LogRun(0, 99)], [SnapshotId(50, 1), SnapshotId(150, 2)])
    assert (ahead.base, ahead.first_offset, ahead.last_offset) == (SnapshotId(150, 2), 149, 149)
    # the same offset written by two leaders: the higher epoch; no snapshot reaching a truncated log: partial
    assert history_coverage("c", [LogRun(10, 20)], [SnapshotId(10, 1), SnapshotId(10, 3)]).base == SnapshotId(10, 3)
    partial = history_coverage("c", [LogRun(10, 20)], [SnapshotId(5, 1)])
    assert (partial.base, partial.first_offset, partial.complete) == (None, 10, False)
    row = covered.row(3, 0)
    assert ClusterCoverage.from_row(row) == ClusterCoverage(
        "c", 128355, 149994, 128356, SnapshotId(128356, 20), (), (), 128356)
    assert SnapshotId(128356, 20).file_name == "00000000000000128356-0000000020.checkpoint"


# --- layouts as Kafka leaves them --------------------------------------------------------------------------------


def closed_ends(entries: Sequence[LogEntry]) -> list[int]:
    """The end offsets a controller could snapshot at: E with no metadata transaction open at E - 1."""
    ends, open_txn = [], False
    for entry in entries:
        if entry.type_name == BEGIN:
            open_txn = True
        elif entry.type_name == END:
            open_txn = False
        if not open_txn:
            ends.append(entry.offset + 1)
    return ends


def lay_out(directory: Path, entries: Sequence[LogEntry], snapshots: dict[int, list[MetadataRecord]],
            epoch: int = 1) -> Path:
    """A Kafka data dir holding ``entries`` as segments and a ``.checkpoint`` per end offset in ``snapshots``."""
    write_meta_properties(directory, cluster_id=CLUSTER, node_id=1)
    log_dir = directory / "__cluster_metadata-0"
    if entries:
        write_segments(entries, log_dir, segment_bytes=16_384)
    for end, records in snapshots.items():
        write_snapshot(records, log_dir, end_offset=end, epoch=epoch, last_contained_log_timestamp=SNAPSHOT_TIME_MS)
    return directory


def image_records(entries: Sequence[LogEntry], end: int) -> list[MetadataRecord]:
    """A snapshot's records: the image after every record before ``end``."""
    return image_snapshot_records(image_at(entries, end - 1))


def stored_entries(directory: Path, snapshot: SnapshotId, key: bytes) -> list[LogEntry]:
    """A snapshot file's entries as the lake keeps them (redacted, with their secrets' fingerprints), for the
    reference fold."""
    return as_ingested(read_entries(directory / "__cluster_metadata-0" / snapshot.file_name), key)


def reference(entries: Sequence[LogEntry], lake: Lake, base: tuple[Path, SnapshotId] | None, cluster: str = CLUSTER
              ) -> dict[str, list[dict[str, Any]]]:
    """The reference fold's tables of the stored log from ``base`` (a data dir and its snapshot), as the lake."""
    key = fingerprint_key(str(lake.root))
    ingested = as_ingested(entries, key)
    if base is None:
        return reference_histories(ingested, cluster)
    directory, snapshot = base
    tail = [e for e in ingested if e.offset >= snapshot.end_offset]
    return reference_histories(tail, cluster, base_snapshot=(snapshot.end_offset, stored_entries(
        directory, snapshot, key)), snapshot_epoch=snapshot.epoch)


def lake_tables(spark: SparkSession, lake: Lake) -> dict[str, list[dict[str, Any]]]:
    """The lake's tables, ``replay_anomalies`` without the snapshot checks' rows (the reference fold has none)."""
    tables = _lake_tables(spark, lake)
    tables[ANOMALIES] = [row for row in tables[ANOMALIES] if row["kind"] != CHECK_KIND]
    return tables


def coverage_row(spark: SparkSession, lake: Lake) -> dict[str, Any]:
    (row,) = [r.asDict(recursive=True) for r in lake.read(spark, "replay_coverage").collect()]
    return row


def state_cli(lake: Lake, offset: int, spark_path: bool = False, cluster: str | None = None) -> Any:
    env = {"KRAFT_REPLAY_QUERY_PATH": "spark"} if spark_path else {}
    chosen = [] if cluster is None else ["--cluster-id", cluster]
    return runner.invoke(app, ["state", "--lake", str(lake.root), "--offset", str(offset), "--format", "json",
                               *chosen], env=env)


@pytest.fixture(scope="module")
def simulated() -> list[LogEntry]:
    options = ScenarioOptions(seed=9, events=150, metadata_version="4.0", unclean=True, elr=True)
    return list(run_scenario("random", options).entries())


def test_a_log_that_starts_after_a_snapshot_then_its_archived_copy(spark: SparkSession, simulated: list[LogEntry],
                                                                  tmp_path: Path) -> None:
    ends = [e for e in closed_ends(simulated) if e > 10]
    start, later, edited = ends[len(ends) // 4], ends[len(ends) // 2], ends[3 * len(ends) // 4]
    bad = image_records(simulated, edited)
    changed = next(i for i, r in enumerate(bad) if r.type_name == "PartitionRecord")
    partition = bad[changed]
    bad[changed] = replace(partition, data={**partition.data, "leaderEpoch": partition.data["leaderEpoch"] + 7})
    current = lay_out(tmp_path / "current", [e for e in simulated if e.offset >= start], {
        start: image_records(simulated, start), later: image_records(simulated, later), edited: bad})
    bootstrap = write_snapshot([r for r in image_records(simulated, 3) if r.type_name == "FeatureLevelRecord"],
                               tmp_path / "bootstrap", end_offset=0, epoch=0, last_contained_log_timestamp=0)
    bootstrap.rename(current / "bootstrap.checkpoint")
    lake = Lake(tmp_path / "lake")
    summary = ingest(spark, lake, current, IngestOptions(cluster_id=CLUSTER))
    assert summary.notes == [
        f"{current / 'bootstrap.checkpoint'}: bootstrap snapshot not stored (the records the cluster was formatted "
        f"with, not the image at any stored offset; the log here starts at offset {start}: the history starts from a "
        "stored snapshot)"]
    replayed = run_replay(spark, lake)
    base = SnapshotId(start, 1)
    assert replayed.notes == [
        f"{CLUSTER}: history from offset {start - 1}: the snapshot {base.stem} (image at {start - 1}), then the log "
        f"from {start}; 1 of 2 later snapshots differ from the fold (replay_anomalies, kind {CHECK_KIND})"]
    row = coverage_row(spark, lake)
    assert (row["first_offset"], row["last_offset"], row["base_snapshot"], row["snapshots_checked"],
            row["snapshots_differing"]) == (start - 1, simulated[-1].offset, base.stem, 2, 1)

    # every stored offset: the reference fold from the same base; its values name the snapshot as their cause
    got = lake_tables(spark, lake)
    _assert_same(got, reference(simulated, lake, (current, base)), "from the base snapshot",
                 names=REFERENCE_TABLES)
    assert {r["cause_type"] for r in got["broker_history"] if r["valid_from_offset"] == start - 1} == {
        f"snapshot {base.stem}"}
    # the edited snapshot is found: its name, the part, the first differing key
    (anomaly,) = [r for r in _lake_tables(spark, lake)[ANOMALIES] if r["kind"] == CHECK_KIND]
    assert anomaly["offset"] == edited - 1
    assert anomaly["reason"] == (
        f"snapshot {SnapshotId(edited, 1).stem} is not the log's fold at offset {edited - 1} in partition_history: 2 "
        f"rows differ, the first at key {{\"topic_id\":\"{uuid_to_str(partition.data['topicId'])}\","
        f"\"partition_id\":{partition.data['partitionId']}}} (the values differ)")

    # before the base: a clear answer, exit 3, on both query paths and in the Python API; at the base: its image
    expected = (f"offset {start - 2} is before this lake's history (its log starts at {start}, from the snapshot "
                f"ending at {start - 1})")
    for spark_path in (False, True):
        refused = state_cli(lake, start - 2, spark_path)
        assert refused.exit_code == 3 and expected in refused.output, refused.output
    with pytest.raises(OutsideHistory, match="before this lake's history"):
        state_at(spark, lake, offset=0)
    at_base = json.loads(state_cli(lake, start - 1).stdout)
    assert at_base["offset"] == start - 1
    assert len(at_base["partitions"]) == len(image_at(simulated, start - 1).partitions) > 0

    # an archived copy of offsets 0..start-1 beside it: the history starts at 0 and is the whole log's
    archive = lay_out(tmp_path / "archive", [e for e in simulated if e.offset < start], {})
    ingest(spark, lake, archive, IngestOptions(cluster_id=CLUSTER))
    rebuilt = run_replay(spark, lake)
    assert rebuilt.mode == "full" and any("the history's base changed" in note for note in rebuilt.notes)
    row = coverage_row(spark, lake)
    assert (row["first_offset"], row["base_snapshot"], row["snapshots_checked"], row["snapshots_differing"]) == (
        0, None, 3, 1)
    _assert_same(lake_tables(spark, lake), reference(simulated, lake, None), "archived copy + current",
                 names=REFERENCE_TABLES)
    assert state_cli(lake, start - 2).exit_code == 0


def test_an_increment_checks_a_new_snapshot_and_a_gap_rebases(spark: SparkSession, simulated: list[LogEntry],
                                                              tmp_path: Path) -> None:
    ends = [e for e in closed_ends(simulated) if e > 10]
    start, middle, later, rebase = (ends[len(ends) * k // 10] for k in (2, 4, 6, 8))
    first = lay_out(tmp_path / "first", [e for e in simulated if start <= e.offset < middle],
                    {start: image_records(simulated, start)})
    lake = Lake(tmp_path / "lake")
    ingest(spark, lake, first, IngestOptions(cluster_id=CLUSTER))
    assert run_replay(spark, lake).mode == "full"
    # the node goes on: more records and a snapshot inside them
    second = lay_out(tmp_path / "second", [e for e in simulated if middle <= e.offset < rebase - 20],
                     {later: image_records(simulated, later)})
    ingest(spark, lake, second, IngestOptions(cluster_id=CLUSTER))
    increment = run_replay(spark, lake, incremental=True)
    assert increment.mode == "incremental", increment.notes
    row = coverage_row(spark, lake)
    assert (row["first_offset"], row["snapshots_checked"], row["snapshots_differing"]) == (start - 1, 1, 0)
    stored = [e for e in simulated if e.offset < rebase - 20]
    _assert_same(lake_tables(spark, lake), reference(stored, lake, (first, SnapshotId(start, 1))), "increment",
                 names=REFERENCE_TABLES)
    # then segments from `rebase` on and the snapshot there, after a gap: the history starts from it
    third = lay_out(tmp_path / "third", [e for e in simulated if e.offset >= rebase],
                    {rebase: image_records(simulated, rebase)}, epoch=2)
    ingest(spark, lake, third, IngestOptions(cluster_id=CLUSTER))
    rebased = run_replay(spark, lake)
    assert rebased.mode == "full" and any("the history's base changed" in note for note in rebased.notes)
    row = coverage_row(spark, lake)
    assert (row["first_offset"], row["base_snapshot"], row["stored_first_offset"]) == (
        rebase - 1, SnapshotId(rebase, 2).stem, start)
    _assert_same(lake_tables(spark, lake), reference(simulated, lake, (third, SnapshotId(rebase, 2))), "rebased",
                 names=REFERENCE_TABLES)
    refused = state_cli(lake, rebase - 10)
    assert refused.exit_code == 3 and "before this lake's history" in refused.output


def test_a_hole_and_real_logs_cut_at_a_snapshot(spark: SparkSession, simulated: list[LogEntry],
                                                 real_log: Callable[[str], Path], tmp_path: Path) -> None:
    """Three clusters of one lake, replayed at once: a simulated log with a hole and no snapshot after it (folded
    across, its offsets not answered), and the real logs of ../shared as Kafka would leave them after a snapshot at
    S (the segments before S removed; a later snapshot checked)."""
    lake = Lake(tmp_path / "lake")
    holed = [e for e in simulated if not 300 <= e.offset < 320]
    ingest(spark, lake, lay_out(tmp_path / "holed", holed, {}), IngestOptions(cluster_id=CLUSTER))
    cut: dict[str, tuple[list[LogEntry], Path, int]] = {}
    for name in ("ldi-poc", "gani-guru-kafka42"):
        entries = list(read_entries(real_log(name) / "__cluster_metadata-0"))
        ends = closed_ends(entries)
        start, later = ends[len(ends) // 2], ends[3 * len(ends) // 4]
        current = lay_out(tmp_path / name, [e for e in entries if e.offset >= start],
                          {start: image_records(entries, start), later: image_records(entries, later)})
        ingest(spark, lake, current, IngestOptions(cluster_id=name))
        cut[name] = (entries, current, start)
    summary = run_replay(spark, lake)
    assert any("offsets 300..319 are missing: folded across, not answered" in note for note in summary.notes)
    rows = {r["cluster_id"]: r.asDict(recursive=True) for r in lake.read(spark, "replay_coverage").collect()}
    assert rows[CLUSTER]["gaps"] == [{"first_offset": 300, "last_offset": 319}]
    for spark_path in (False, True):
        refused = state_cli(lake, 310, spark_path, CLUSTER)
        assert refused.exit_code == 3 and "offsets 300..319 were never stored" in refused.output, refused.output
    assert state_cli(lake, 299, cluster=CLUSTER).exit_code == 0 and state_cli(lake, 320, cluster=CLUSTER).exit_code == 0

    tables = lake_tables(spark, lake)
    for name, (entries, current, start) in cut.items():
        row = rows[name]
        assert (row["first_offset"], row["snapshots_checked"], row["snapshots_differing"]) == (start - 1, 1, 0)
        want = reference(entries, lake, (current, SnapshotId(start, 1)), name)
        _assert_same(_by_cluster(tables, name), want, name, names=REFERENCE_TABLES)
