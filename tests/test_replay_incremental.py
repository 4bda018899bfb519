"""Replaying from a snapshot, and incremental replay, give exactly what a full replay / the reference fold give.

- Snapshot base: a simulated log whose segments before offset E are gone, plus a snapshot of the image at
  E-1 written the way Kafka writes images; Spark (``replay()`` and ``run_replay``) equals
  ``reference_histories(tail, cluster, base_snapshot=(E, records))``.
- Incremental: three simulated clusters ingested in three steps, split inside metadata transactions and
  right after topic deletions; a full replay of the first part then two incremental replays leave
  every table row for row equal to a full replay of the whole log, and to the reference fold.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from lakehouse.tables import DERIVED_TABLES
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_from_str
from replay.engine import TABLE_KEYS, replay
from replay.incremental import FOLDED_FROM
from replay.reference import Image, image_at, reference_histories
from replay.snapshots import first_offsets, snapshot_input
from replay.store import ANOMALIES, CHECKPOINTS, GROWING_TABLES, run_replay
from simulator import ScenarioOptions, run_scenario
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark

TABLES = (*TABLE_KEYS, ANOMALIES)
WITH_DERIVED = (*TABLES, *DERIVED_TABLES)  # the state machines and the audit, rebuilt after every replay


def _collect(df: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


def _assert_same(got: dict[str, list[dict[str, Any]]], want: dict[str, list[dict[str, Any]]], what: str,
                 drop_reason: bool = False, names: tuple[str, ...] = TABLES) -> None:
    for name in names:
        drop = ("reason",) if drop_reason and name == ANOMALIES else ()
        assert len(got[name]) == len(want[name]), f"{what}: {name}: {len(got[name])} vs {len(want[name])} rows"
        assert sorted_rows(got[name], drop) == sorted_rows(want[name], drop), f"{what}: {name} differs"


def _lake_tables(spark: SparkSession, lake: Lake) -> dict[str, list[dict[str, Any]]]:
    return {name: _collect(lake.read(spark, name)) for name in WITH_DERIVED if lake.table_exists(name)}


def _by_cluster(tables: dict[str, list[dict[str, Any]]], cluster: str) -> dict[str, list[dict[str, Any]]]:
    return {name: [r for r in rows if r["cluster_id"] == cluster] for name, rows in tables.items()}


# --- snapshot base -------------------------------------------------------------------------------

def _uuid(text: str) -> bytes:
    return uuid_from_str(text)


def image_records(image: Image) -> list[MetadataRecord]:
    """The image as Kafka's ``MetadataImage.write`` emits it: features, brokers, controllers, topics with
    their partitions (a snapshot replaces the whole image)."""
    records = [make_record("FeatureLevelRecord", 0, name=n, featureLevel=level)
               for n, level in sorted(image.features.items())]
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        records.append(make_record(
            "RegisterBrokerRecord", 3, brokerId=b.broker_id, isMigratingZkBroker=b.is_migrating_zk_broker,
            incarnationId=_uuid(b.incarnation_id), brokerEpoch=b.broker_epoch,
            endPoints=[{"name": n, "host": h, "port": p, "securityProtocol": s} for n, h, p, s in b.endpoints],
            features=[{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in b.features],
            rack=b.rack, fenced=b.fenced, inControlledShutdown=b.in_controlled_shutdown,
            logDirs=[_uuid(d) for d in b.log_dirs]))
    for c in sorted(image.controllers.values(), key=lambda c: c.controller_id):
        records.append(make_record(
            "RegisterControllerRecord", 0, controllerId=c.controller_id, incarnationId=_uuid(c.incarnation_id),
            zkMigrationReady=c.zk_migration_ready,
            endPoints=[{"name": n, "host": h, "port": p, "securityProtocol": s} for n, h, p, s in c.endpoints],
            features=[{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in c.features]))
    for tid, name in sorted(image.topics.items()):
        records.append(make_record("TopicRecord", 0, name=name, topicId=_uuid(tid)))
        for pid, p in sorted(image.topic_partitions(tid).items()):
            records.append(make_record(
                "PartitionRecord", 2, partitionId=pid, topicId=_uuid(tid), replicas=list(p.replicas),
                isr=list(p.isr), removingReplicas=list(p.removing_replicas), addingReplicas=list(p.adding_replicas),
                leader=p.leader, leaderRecoveryState=p.leader_recovery_state, leaderEpoch=p.leader_epoch,
                partitionEpoch=p.partition_epoch, directories=[_uuid(d) for d in p.directories],
                eligibleLeaderReplicas=list(p.eligible_leader_replicas), lastKnownElr=list(p.last_known_elr)))
    return records


def _snapshot_frame(spark: SparkSession, cluster: str, end: int, records: list[MetadataRecord]) -> DataFrame:
    entries = [LogEntry(offset=i, record=r) for i, r in enumerate(records)]
    return (entries_frame(spark, entries, cluster).withColumn("snapshot_end_offset", F.lit(end).cast("long"))
            .withColumn("snapshot_epoch", F.lit(1)))


SNAPSHOT_CASES = [  # (cluster, scenario, options, E)
    ("snap-random", "random", ScenarioOptions(seed=9, events=120, metadata_version="4.0", unclean=True, elr=True),
     None),
    ("snap-recreate", "topic-recreate", ScenarioOptions(seed=7), 112),  # right after the topic deletion at 111
    ("snap-reassign", "reassignment-under-failure", ScenarioOptions(seed=5, metadata_version="3.9"), 60),
]


@pytest.fixture(scope="module")
def snapshot_logs() -> dict[str, tuple[list[LogEntry], int, list[MetadataRecord]]]:
    cases = {}
    for cluster, name, options, end in SNAPSHOT_CASES:
        entries = list(run_scenario(name, options).entries())
        e = end if end is not None else entries[len(entries) * 2 // 3].offset
        records = image_records(image_at(entries, e - 1))
        cases[cluster] = ([x for x in entries if x.offset >= e], e, records)
    return cases


def test_replay_from_a_snapshot_equals_the_reference_fold(spark: SparkSession, snapshot_logs, tmp_path: Path
                                                           ) -> None:
    frames = [entries_frame(spark, tail, c) for c, (tail, _, _) in snapshot_logs.items()]
    snaps = [_snapshot_frame(spark, c, e, records) for c, (_, e, records) in snapshot_logs.items()]
    log, snapshots = frames[0], snaps[0]
    for frame, snap in zip(frames[1:], snaps[1:], strict=True):
        log, snapshots = log.unionByName(frame), snapshots.unionByName(snap)
    bounds = first_offsets(log)
    replay_input = snapshot_input(log, snapshots, {c: f for c, (f, _) in bounds.items()})
    assert {b.cluster_id: b.end_offset for b in replay_input.bases} == {
        c: e for c, (_, e, _) in snapshot_logs.items()}
    result = replay(replay_input.log, replay_input.base)
    got = {name: _collect(df) for name, df in result.tables.items()}
    got[ANOMALIES] = _collect(result.anomalies)
    want: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for cluster, (tail, e, records) in snapshot_logs.items():
        for name, rows in reference_histories(tail, cluster, base_snapshot=(e, records)).items():
            want[name].extend(rows)
    _assert_same(got, want, "replay() from snapshots", drop_reason=True)
    # the snapshot's versions start at E-1 with no append time
    first = [r for r in got["partition_history"] if r["cluster_id"] == "snap-recreate"]
    assert min(r["valid_from_offset"] for r in first) == 111
    assert all(r["valid_from_time_ms"] is None for r in first if r["valid_from_offset"] == 111)
    assert len(want["partition_history"]) > 100

    # the same through the store: metadata_log + snapshots tables in a lake, and an older snapshot
    # (before the first stored offset) that must not be chosen
    lake = Lake(tmp_path / "snap-lake")
    lake.write(log, "metadata_log", "overwrite")
    old = _snapshot_frame(spark, "snap-recreate", 50, snapshot_logs["snap-recreate"][2])
    lake.write(snapshots.unionByName(old), "snapshots", "overwrite")
    summary = run_replay(spark, lake)
    assert summary.mode == "full" and any("snapshot ending at 112" in n for n in summary.notes)
    _assert_same(_lake_tables(spark, lake), got, "run_replay from snapshots")


# --- incremental ---------------------------------------------------------------------------------

INCREMENTAL_CASES = {  # cluster → (scenario, options, split offsets: each step ingests up to the next one)
    # 994 and 1399: topic deletions; 1530..11531 and 12413..22414: aborted transactions
    "inc-random": ("random", ScenarioOptions(seed=9, events=400, metadata_version="4.0", unclean=True, elr=True),
                   (994, 12500)),
    # 43..10044 aborted, 10058..20061 committed: splits inside both
    "inc-abort": ("aborted-transaction", ScenarioOptions(seed=8, metadata_version="3.9"), (50, 15000)),
    # 111: the topic is deleted, then re-created
    "inc-recreate": ("topic-recreate", ScenarioOptions(seed=7), (111, 120)),
    # ELRs set at 91..98; 162: ClearElrRecord "topic-0" and 224: ClearElrRecord "" each in a later increment, where
    # only the stored versions say which topic has that name and which partitions have an ELR to clear
    "inc-min-isr": ("min-isr-change", ScenarioOptions(seed=11, metadata_version="4.0", elr=True), (100, 200)),
}


@pytest.fixture(scope="module")
def incremental(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    logs = {c: list(run_scenario(name, options).entries()) for c, (name, options, _) in INCREMENTAL_CASES.items()}
    lake = Lake(tmp_path_factory.mktemp("incremental-lake"))
    bounds = {c: (-1, *splits, logs[c][-1].offset) for c, (_, _, splits) in INCREMENTAL_CASES.items()}
    summaries = []
    layouts: list[dict[str, dict[str, tuple[int, int]]]] = []
    kinds: list[set[str]] = []  # record types ingested by each step
    tables: list[dict[str, tuple[int, int]]] = []  # table → (version, rows) after each step
    for step in range(3):
        parts = {c: [e for e in logs[c] if b[step] < e.offset <= b[step + 1]] for c, b in bounds.items()}
        kinds.append({e.record.type_name for part in parts.values() for e in part
                      if isinstance(e.record, MetadataRecord)})
        frames = [entries_frame(spark, part, c) for c, part in parts.items()]
        part = frames[0]
        for frame in frames[1:]:
            part = part.unionByName(frame)
        lake.write(part, "metadata_log", "append")
        summaries.append(run_replay(spark, lake))
        layouts.append({name: _files(lake, name) for name in GROWING_TABLES})
        tables.append({name: (int(lake.delta_table(name).version()), lake.read(spark, name).count())
                       for name in (*FOLDED_FROM, ANOMALIES)})
    after_increments = _lake_tables(spark, lake)
    checkpoints = _collect(lake.read(spark, CHECKPOINTS))
    full = run_replay(spark, lake, full=True)
    return {"logs": logs, "summaries": summaries, "layouts": layouts, "kinds": kinds, "tables": tables,
            "incremental": after_increments,
            "full": _lake_tables(spark, lake), "full_summary": full, "checkpoints": checkpoints}


def test_incremental_replays_equal_a_full_replay(incremental: dict[str, Any]) -> None:
    assert [s.mode for s in incremental["summaries"]] == ["full", "incremental", "incremental"]
    assert incremental["full_summary"].mode == "full"
    _assert_same(incremental["incremental"], incremental["full"], "incremental vs full", names=WITH_DERIVED)


def _files(lake: Lake, name: str) -> dict[str, tuple[int, int]]:
    """path → (rows, rows with an open version) of each file of the table's current version."""
    files = pa.table(lake.delta_table(name).get_add_actions(flatten=True))
    return {path: (rows, nulls) for path, rows, nulls in zip(
        files.column("path").to_pylist(), files.column("num_records").to_pylist(),
        files.column("null_count.valid_to_offset").to_pylist(), strict=True)}


def test_increments_replace_only_the_files_of_open_versions(incremental: dict[str, Any]) -> None:
    """Open and closed versions live in separate files; an increment removes only files of open versions
    and keeps every file of closed ones (they never change again), adding the versions it closed as new
    files."""
    layouts = incremental["layouts"]
    for name in GROWING_TABLES:
        for layout in layouts:
            files = layout[name].values()
            assert files and all(nulls in (0, rows) for rows, nulls in files), name
            assert any(nulls == 0 for _, nulls in files) and any(nulls for _, nulls in files)
        for before, after in itertools.pairwise(layouts):
            closed_before = {path for path, (_, nulls) in before[name].items() if nulls == 0}
            assert closed_before <= set(after[name]), f"{name}: a file of closed versions was rewritten"
            removed = set(before[name]) - set(after[name])
            assert removed and all(before[name][path][1] > 0 for path in removed)
            added_closed = [rows for path, (rows, nulls) in after[name].items() if path not in before[name]
                            and nulls == 0]
            assert added_closed, f"{name}: the versions the increment closed were not added"


def test_increments_write_a_small_table_only_when_records_of_its_kinds_came(incremental: dict[str, Any]) -> None:
    """Without a record it is folded from (or, for replay_anomalies, without a new anomaly) a table keeps its
    version: an increment does not rewrite rows it cannot change. Both cases happen in these increments."""
    seen = set()
    for step in (1, 2):
        before, after = incremental["tables"][step - 1], incremental["tables"][step]
        for name, kinds in FOLDED_FROM.items():
            came = bool(incremental["kinds"][step] & set(kinds))
            assert (after[name][0] != before[name][0]) == came, (step, name)
            seen.add(came)
        grew = after[ANOMALIES][1] > before[ANOMALIES][1]
        assert after[ANOMALIES][1] >= before[ANOMALIES][1]
        assert (after[ANOMALIES][0] != before[ANOMALIES][0]) == grew, step
    assert seen == {True, False}


def test_increments_clear_the_elrs_of_stored_partitions(incremental: dict[str, Any]) -> None:
    """Both ClearElrRecords came in increments and cleared ELRs only the stored open versions held."""
    rows = _by_cluster(incremental["incremental"], "inc-min-isr")["partition_history"]
    cleared = sorted((r["valid_from_offset"], r["topic_name"]) for r in rows if r["cause_type"] == "ClearElrRecord")
    assert [offset for offset, _ in cleared] == [162, 162, 224, 224, 224]
    assert {name for offset, name in cleared if offset == 162} == {"topic-0"}
    assert {name for offset, name in cleared if offset == 224} == {"topic-1", "topic-2"}


def test_incremental_replays_equal_the_reference_fold(incremental: dict[str, Any]) -> None:
    for cluster, entries in incremental["logs"].items():
        _assert_same(_by_cluster(incremental["incremental"], cluster), reference_histories(entries, cluster),
                     f"incremental vs reference ({cluster})", drop_reason=True)


def test_checkpoints_are_safe_points(incremental: dict[str, Any]) -> None:
    """A checkpoint never sits inside an open metadata transaction: the run after it starts at its Begin."""
    by_step: dict[str, list[int]] = {}
    for row in sorted(incremental["checkpoints"], key=lambda r: r["replayed_at"]):
        by_step.setdefault(row["cluster_id"], []).append(row["last_offset"])
    assert by_step["inc-abort"] == [42, 10057, 20062]  # 50 is inside 43..10044, 15000 inside 10058..20061
    assert by_step["inc-random"] == [994, 12412, 22959]  # 12500 is inside 12413..22414
    assert by_step["inc-recreate"] == [111, 120, 126]
    assert by_step["inc-min-isr"] == [100, 200, 273]


def test_cli_replay_is_incremental_unless_full(spark: SparkSession, tmp_path: Path) -> None:
    """`kraft-replay replay` folds in only the new offsets; `--full` rebuilds; both leave the same tables."""
    from typer.testing import CliRunner

    from kraft_replay.replay_commands import standalone_app

    entries = list(run_scenario("topic-recreate", ScenarioOptions(seed=7)).entries())
    lake = Lake(tmp_path / "cli-lake")
    runner, app = CliRunner(), standalone_app()

    def cli_replay(*extra: str) -> str:
        result = runner.invoke(app, ["replay", "--lake", str(lake.root), *extra])
        assert result.exit_code == 0, result.output
        return result.stdout

    lake.write(entries_frame(spark, [e for e in entries if e.offset <= 111], "cli"), "metadata_log", "append")
    assert "(offsets 0..111) from metadata_log v0 (full)" in cli_replay()
    lake.write(entries_frame(spark, [e for e in entries if e.offset > 111], "cli"), "metadata_log", "append")
    last = entries[-1].offset
    assert f"(offsets 0..{last}) from metadata_log v1 (incremental)" in cli_replay()
    incremental = _lake_tables(spark, lake)
    assert f"(offsets 0..{last}) from metadata_log v1 (full)" in cli_replay("--full")
    _assert_same(incremental, _lake_tables(spark, lake), "CLI incremental vs --full", names=WITH_DERIVED)
    # the topic deleted at 111 and re-created after it: two topic ids under one name, one of them closed
    topics = sorted((r["name"], r["valid_from_offset"], r["valid_to_offset"]) for r in incremental["topic_history"])
    assert [t for t in topics if t[2] == 111] and [t for t in topics if t[1] > 111 and t[2] is None]
