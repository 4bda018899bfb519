"""Incremental replay gives exactly what a full replay and the reference fold give.

Three simulated clusters ingested in three steps, split inside metadata transactions and right after topic
deletions; a full replay of the first part then two incremental replays leave every table row for row equal to a
full replay of the whole log, and to the reference fold. (Replaying from a snapshot: tests/test_snapshots.py.)
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from lakehouse import spark_settings
from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from lakehouse.spark import SHUFFLE_PARTITIONS
from lakehouse.spark_settings import ADAPTIVE_EXECUTION
from records.model import MetadataRecord
from replay.fold.incremental import FOLDED_FROM
from replay.reference.fold import reference_histories
from replay.store.derived import GROWING_HISTORY
from replay.store.increment_plan import WHOLE_UP_TO
from replay.store.runs import ANOMALIES, CHECKPOINTS, run_replay
from simulator import ScenarioOptions, run_scenario
from tests.replay_tables_support import (
    REFERENCE_TABLES,
    WITH_DERIVED,
    _assert_same,
    _by_cluster,
    _collect,
    _lake_tables,
    as_ingested,
)

pytestmark = pytest.mark.spark


INCREMENTAL_CASES = {  # cluster → (scenario, options, split offsets: each step ingests up to the next one)
    # 481, 725, 921 and 934: topic deletions; 1002..11003: an aborted transaction
    "inc-random": ("random", ScenarioOptions(seed=9, events=400, metadata_version="4.0", unclean=True, elr=True),
                   (921, 5000)),
    # 43..10044 aborted, 10058..20061 committed: splits inside both
    "inc-abort": ("aborted-transaction", ScenarioOptions(seed=8, metadata_version="3.9"), (50, 15000)),
    # 111: the topic is deleted, then re-created
    "inc-recreate": ("topic-recreate", ScenarioOptions(seed=7), (111, 120)),
    # ELRs set at 91..98; 162: ClearElrRecord "topic-0" and 224: ClearElrRecord "" each in a later increment, where
    # only the stored versions say which topic has that name and which partitions have an ELR to clear
    "inc-min-isr": ("min-isr-change", ScenarioOptions(seed=11, metadata_version="4.0", elr=True), (100, 200)),
}
ADAPTIVE_STEP = 1  # the step (0: the full replay, 1 and 2: increments) replayed as a larger log's, adaptively


@pytest.fixture(scope="module")
def incremental(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    logs = {c: list(run_scenario(name, options).entries()) for c, (name, options, _) in INCREMENTAL_CASES.items()}
    lake = Lake(tmp_path_factory.mktemp("incremental-lake"))
    bounds = {c: (-1, *splits, logs[c][-1].offset) for c, (_, _, splits) in INCREMENTAL_CASES.items()}
    summaries = []
    layouts: list[dict[str, dict[str, tuple[int, int]]]] = []
    kinds: list[set[str]] = []  # record types ingested by each step
    tables: list[dict[str, tuple[int, int]]] = []  # table → (version, rows) after each step
    partitions: list[set[str | None]] = []  # the shuffle partitions each step's stages ran at
    adaptive: list[set[str | None]] = []  # whether each step's stages were planned adaptively
    for step in range(3):
        parts = {c: [e for e in logs[c] if b[step] < e.offset <= b[step + 1]] for c, b in bounds.items()}
        kinds.append({e.record.type_name for part in parts.values() for e in part
                      if isinstance(e.record, MetadataRecord)})
        frames = [entries_frame(spark, part, c) for c, part in parts.items()]
        part = frames[0]
        for frame in frames[1:]:
            part = part.unionByName(frame)
        lake.write(part, "metadata_log", "append")
        partitions.append(set())
        adaptive.append(set())
        with pytest.MonkeyPatch.context() as patch:
            if step == ADAPTIVE_STEP:  # as an increment of a larger log runs: adaptive execution on
                patch.setattr(spark_settings, "PLANNED_AHEAD_UP_TO", 0)
            summaries.append(run_replay(spark, lake, incremental=True, progress=lambda _: (
                partitions[-1].add(spark.conf.get(SHUFFLE_PARTITIONS)),
                adaptive[-1].add(spark.conf.get(ADAPTIVE_EXECUTION)))))
        layouts.append({name: _files(lake, name) for name in GROWING_HISTORY})
        tables.append({name: (int(lake.delta_table(name).version()), lake.read(spark, name).count())
                       for name in (*FOLDED_FROM, ANOMALIES)})
    after_increments = _lake_tables(spark, lake)
    checkpoints = _collect(lake.read(spark, CHECKPOINTS))
    full = _cli_replay(lake, "--full")  # the command's flag: a full rebuild though a checkpoint exists
    return {"logs": logs, "summaries": summaries, "layouts": layouts, "kinds": kinds, "tables": tables,
            "incremental": after_increments, "partitions": partitions, "adaptive": adaptive,
            "full": _lake_tables(spark, lake), "full_summary": full, "checkpoints": checkpoints}


def test_incremental_replays_equal_a_full_replay(incremental: dict[str, Any]) -> None:
    assert [s.mode for s in incremental["summaries"]] == ["full", "incremental", "incremental"]
    clusters = ", ".join(f"{c} (offsets 0..{log[-1].offset})" for c, log in sorted(incremental["logs"].items()))
    assert incremental["full_summary"].startswith(f"replayed {clusters} from metadata_log v2 (full) in ")
    _assert_same(incremental["incremental"], incremental["full"], "incremental vs full", names=WITH_DERIVED)


def test_small_replays_and_increments_run_in_one_shuffle_partition(spark: SparkSession,
                                                                    incremental: dict[str, Any]) -> None:
    """Each step replays fewer than 50,000 records (``lakehouse.spark_settings.RECORDS_PER_TASK_AT_LEAST``): its stages
    run at 1 shuffle partition, not the session's 4, which is back after each."""
    assert incremental["partitions"] == [{"1"}, {"1"}, {"1"}], incremental["partitions"]
    assert spark.conf.get(SHUFFLE_PARTITIONS) == "4"


def test_a_small_logs_replays_are_planned_ahead(spark: SparkSession, incremental: dict[str, Any]) -> None:
    """A log of at most ``PLANNED_AHEAD_UP_TO`` records is replayed without adaptive execution, full or increment (the
    second step here ran as a larger log's increment does, adaptively: its tables are checked equal to a full
    replay's with the others'); the session's setting is back after each."""
    assert incremental["adaptive"] == [{"false"}, {"true"}, {"false"}], incremental["adaptive"]
    assert spark.conf.get(ADAPTIVE_EXECUTION) == "true"


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
    for name in GROWING_HISTORY:
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
        want = reference_histories(as_ingested(entries), cluster)
        _assert_same(_by_cluster(incremental["incremental"], cluster), want,
                     f"incremental vs reference ({cluster})", names=REFERENCE_TABLES)


def test_checkpoints_are_safe_points(incremental: dict[str, Any]) -> None:
    """A checkpoint never sits inside an open metadata transaction: the run after it starts at its Begin."""
    by_step: dict[str, list[int]] = {}
    for row in sorted(incremental["checkpoints"], key=lambda r: r["replayed_at"]):
        by_step.setdefault(row["cluster_id"], []).append(row["last_offset"])
    assert by_step["inc-abort"] == [42, 10057, 20062]  # 50 is inside 43..10044, 15000 inside 10058..20061
    assert by_step["inc-random"] == [921, 1001, 11387]  # 5000 is inside 1002..11003
    assert by_step["inc-recreate"] == [111, 120, 126]
    assert by_step["inc-min-isr"] == [100, 200, 273]


def _cli_replay(lake: Lake, *extra: str, exit_code: int = 0) -> str:
    """`kraft-replay replay --lake LAKE EXTRA…` in this process (the test session's Spark), exiting ``exit_code``;
    what it printed (its errors too, for a command that is to fail)."""
    from typer.testing import CliRunner

    from kraft_replay.replay_commands import standalone_app

    result = CliRunner().invoke(standalone_app(), ["replay", "--lake", str(lake.root), *extra])
    assert result.exit_code == exit_code, result.output
    return result.stdout if exit_code == 0 else result.output


def test_cli_replay_of_a_small_log_is_whole_unless_incremental(spark: SparkSession, tmp_path: Path,
                                                                incremental: dict[str, Any]) -> None:
    """`kraft-replay replay --incremental` folds in only the new offsets; without it, new records of a log of at most
    ``WHOLE_UP_TO`` records are replayed whole, the output saying why (`--full` rebuilds: the fixture's last
    replay; with `--incremental` it is refused). The tables equal the full replay of the same cluster's log."""
    cluster = "inc-recreate"
    entries = incremental["logs"][cluster]
    last = entries[-1].offset
    middle = max(e.offset for e in entries if e.offset <= (111 + last) // 2)
    lake = Lake(tmp_path / "cli-lake")
    lake.write(entries_frame(spark, [e for e in entries if e.offset <= 111], cluster), "metadata_log", "append")
    assert "(offsets 0..111) from metadata_log v0 (full)" in _cli_replay(lake)
    lake.write(entries_frame(spark, [e for e in entries if 111 < e.offset <= middle], cluster), "metadata_log",
               "append")
    assert f"(offsets 0..{middle}) from metadata_log v1 (incremental)" in _cli_replay(lake, "--incremental")
    lake.write(entries_frame(spark, [e for e in entries if e.offset > middle], cluster), "metadata_log", "append")
    versions = {name: int(lake.delta_table(name).version()) for name in FOLDED_FROM}
    printed = _cli_replay(lake).splitlines()
    assert f"(offsets 0..{last}) from metadata_log v2 (full)" in printed[0]
    assert (f"  note: {len(entries):,} records in metadata_log: replayed whole, which costs less than an increment "
            f"up to {WHOLE_UP_TO:,} records (`replay --incremental` extends the history instead)") in printed
    # the small tables folded from none of the records after the checkpoint (a safe point: here the last offset) keep
    # their version; the others are written again
    came = {e.record.type_name for e in entries if e.offset > middle and isinstance(e.record, MetadataRecord)}
    kept = sorted(name for name, kinds in FOLDED_FROM.items() if not came & set(kinds))
    assert kept and len(kept) < len(FOLDED_FROM), came
    assert f"  note: kept as stored, no record they are folded from after the checkpoint: {', '.join(kept)}" in printed
    assert sorted(name for name in FOLDED_FROM if int(lake.delta_table(name).version()) == versions[name]) == kept
    tables = _lake_tables(spark, lake)
    _assert_same(tables, _by_cluster(incremental["full"], cluster), "CLI replays vs full", names=WITH_DERIVED)
    assert "give one of them" in _cli_replay(lake, "--full", "--incremental", exit_code=2)
    # the topic deleted at 111 and re-created after it: two topic ids under one name, one of them closed
    topics = sorted((r["name"], r["valid_from_offset"], r["valid_to_offset"]) for r in tables["topic_history"])
    assert [t for t in topics if t[2] == 111] and [t for t in topics if t[1] > 111 and t[2] is None]


def test_the_image_parts_replayed_in_two_increments_equal_a_full_replay(spark: SparkSession) -> None:
    """The hand-built logs of every image part (tests/image_parts_support.py) split after C, each right before a
    record that needs the stored state: a topic removal that deletes stored configs, a quota or token removal, an
    ACL removal (applied, then refused), a credential, block or ZK state set again unchanged. The increment folds
    the records after C into the first part's tables: every table and the anomalies equal a full replay."""
    from replay.fold.engine import replay
    from replay.fold.incremental import incremental_replay
    from tests.image_parts_support import LOGS, collected, log_frame

    splits = {"configs": 8, "quotas": 3, "acls": 2, "scram": 2, "tokens": 1, "producer-ids": 1, "zk-migration": 1}
    first = replay(log_frame(spark, {c: [e for e in log if e.offset <= splits[c]] for c, log in LOGS.items()}))
    stored = {name: df.localCheckpoint(eager=True) for name, df in first.tables.items()}
    new_log = log_frame(spark, {c: [e for e in log if e.offset > splits[c]] for c, log in LOGS.items()})
    result = incremental_replay(spark, new_log, splits, stored, first.anomalies.localCheckpoint(eager=True))
    full = replay(log_frame(spark, LOGS))
    got, want = collected(result.tables, result.anomalies), collected(full.tables, full.anomalies)
    _assert_same(got, want, "image parts: incremental vs full")
    assert len(want["config_history"]) == 10 and len(want["acl_history"]) == 4  # what the increment had to match
