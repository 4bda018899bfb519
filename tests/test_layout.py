"""The replay's file layout (replay/store/layout.py): topic ranges written by their own tasks, open versions apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake, LakeError
from lakehouse.log_rows import entries_frame
from lakehouse.spark import DELTA_RS, DELTA_SPARK, DELTA_STATS_SKIPPING
from lakehouse.tables import HISTORY_KEYS, REPLICA_HISTORY
from replay.core.safe_points import SafePoints
from replay.store import layout
from replay.store.derived import refreshed_rows
from replay.store.layout import _ALPHABET, AS_OF_SORTED, RANGED_TABLES, TOPIC_RANGES, task_keys, topic_ranges
from replay.store.runs import run_replay
from simulator import ScenarioOptions, run_scenario


def _range_of(topic_id: str) -> int:
    return _ALPHABET.index(topic_id[0]) * TOPIC_RANGES // len(_ALPHABET)


@pytest.mark.parametrize("tasks", [2, 3, TOPIC_RANGES, 2 * TOPIC_RANGES])
def test_each_task_key_lands_in_its_own_partition(spark: SparkSession, tasks: int) -> None:
    """The assumption the layout rests on: ``repartition(n, key)`` sends key i's rows to partition i (the keys
    computed with Spark's hash outside Spark, for every task count a layout uses: its ranges, and twice that
    when the open rows are split off)."""
    keys = task_keys(tasks)
    assert len(set(keys)) == tasks
    rows = (spark.createDataFrame([(k,) for k in keys for _ in range(3)], "key INT")
            .repartition(tasks, "key").select("key", F.spark_partition_id().alias("task")).collect())
    assert {(r["key"], r["task"]) for r in rows} == {(k, i) for i, k in enumerate(keys)}


def test_the_topic_ranges_grow_with_the_records_replayed() -> None:
    assert [topic_ranges(n) for n in (0, 1, 30_000, 100_000, 100_001, 250_000, 799_999, 800_001, 10_000_000)] == [
        1, 1, 1, 1, 2, 3, 8, 8, 8]


def _lake_of_a_random_log(spark: SparkSession, tmp_path: Path) -> Lake:
    run = run_scenario("random", ScenarioOptions(seed=3, topics=24, partitions_per_topic=3, events=150))
    lake = Lake(tmp_path / "lake")
    lake.write(entries_frame(spark, list(run.entries()), "layout"), "metadata_log", "overwrite")
    return lake


def _skipping_seen(spark: SparkSession, lake: Lake) -> set[str | None]:
    """Replay ``lake``; Delta's data skipping as each of the replay's stages saw it."""
    seen: set[str | None] = set()
    run_replay(spark, lake, progress=lambda _stage: seen.add(spark.conf.get(DELTA_STATS_SKIPPING)))
    return seen


def test_a_small_replay_writes_each_large_table_in_one_file_per_split(spark: SparkSession, tmp_path: Path) -> None:
    """One file per split, so Delta's data skipping would have nothing to skip: the replay runs without it."""
    lake = _lake_of_a_random_log(spark, tmp_path)
    assert _skipping_seen(spark, lake) == {"false"}
    for name in RANGED_TABLES:
        files = pa.table(lake.delta_table(name).get_add_actions(flatten=True)).to_pylist()
        assert 1 <= len(files) <= 2, f"{name}: {len(files)} files for a replay of a few hundred records"
        if "null_count.valid_to_offset" in files[0]:  # one file of open versions, one of settled ones
            assert sorted(f["null_count.valid_to_offset"] == f["num_records"] for f in files) == [False, True], name


def test_large_tables_are_cut_into_topic_ranges_and_open_versions(spark: SparkSession, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A large replay's cut, shown on a small one: one range per record here, so all TOPIC_RANGES of them."""
    monkeypatch.setattr(layout, "RECORDS_PER_TOPIC_RANGE", 1)
    lake = _lake_of_a_random_log(spark, tmp_path)
    assert _skipping_seen(spark, lake) == {"true"}  # files to skip: the reads pick them by their statistics
    for name in RANGED_TABLES:
        files = pa.table(lake.delta_table(name).get_add_actions(flatten=True)).to_pylist()
        ranges = {(_range_of(f["min.topic_id"]), _range_of(f["max.topic_id"])) for f in files}
        assert all(low == high for low, high in ranges), f"{name}: a file spans two topic ranges"
        assert len(ranges) >= 4, f"{name}: {len(ranges)} ranges for 24 random topic ids"
        if "null_count.valid_to_offset" in files[0]:
            assert all(f["null_count.valid_to_offset"] in (0, f["num_records"]) for f in files), name
    rows = lake.read(spark, "partition_history").count()
    assert rows == sum(f["num_records"] for f in pa.table(
        lake.delta_table("partition_history").get_add_actions(flatten=True)).to_pylist())
    _assert_file_orders(lake)


def test_an_increment_of_a_table_cut_into_ranges_finds_its_open_versions_by_their_nulls(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """partition_history cut into topic ranges keeps its open versions apart by writing task, in files without a split
    directory: an increment finds them by their null ``valid_to_offset``, replaces only those and keeps every file of
    settled versions; its rows are a full replay's."""
    monkeypatch.setattr(layout, "RECORDS_PER_TOPIC_RANGE", 1)
    run = run_scenario("random", ScenarioOptions(seed=5, topics=24, partitions_per_topic=3, events=150))
    entries = list(run.entries())
    lake, full = Lake(tmp_path / "lake"), Lake(tmp_path / "full")
    lake.write(entries_frame(spark, entries[:len(entries) // 2], "layout"), "metadata_log", "overwrite")
    run_replay(spark, lake)
    files = pa.table(lake.delta_table("partition_history").get_add_actions(flatten=True)).to_pylist()
    assert not any("/open=" in f"/{f['path']}" for f in files)
    opened = {f["path"] for f in files if f["null_count.valid_to_offset"] == f["num_records"]}
    assert set(lake.files_with_nulls("partition_history", "valid_to_offset")) == opened
    settled = {f["path"] for f in files} - opened
    assert opened and settled
    lake.write(entries_frame(spark, entries[len(entries) // 2:], "layout"), "metadata_log", "append")
    assert run_replay(spark, lake, incremental=True).mode == "incremental"
    after = set(lake.file_paths("partition_history"))
    assert settled <= after and not opened & after
    full.write(entries_frame(spark, entries, "layout"), "metadata_log", "overwrite")
    run_replay(spark, full)
    for name in (*AS_OF_SORTED, REPLICA_HISTORY):
        assert sorted(map(str, lake.read(spark, name).collect())) == sorted(map(str, full.read(spark, name).collect()))
    _assert_file_orders(lake)


def _assert_file_orders(lake: Lake) -> None:
    """In each file of partition_history (AS_OF_SORTED) the settled versions run by length class (the bit length
    of valid_to - valid_from), then valid_from_offset; the open ones by valid_from_offset; replica_history's rows
    by key."""
    settled = 0
    for name in (*AS_OF_SORTED, REPLICA_HISTORY):
        for uri in lake.delta_table(name).file_uris():
            rows = pq.read_table(uri).to_pylist()
            keys = [(*(r[key] for key in HISTORY_KEYS[name]), r["valid_from_offset"]) for r in rows]
            if name not in AS_OF_SORTED:
                assert keys == sorted(keys), uri
            elif rows[0]["valid_to_offset"] is None:
                assert [(r["valid_from_offset"], key) for r, key in zip(rows, keys, strict=True)] == sorted(
                    (r["valid_from_offset"], key) for r, key in zip(rows, keys, strict=True)), uri
            else:
                settled += len(rows)
                classes = [((r["valid_to_offset"] - r["valid_from_offset"]).bit_length(), r["valid_from_offset"], key)
                           for r, key in zip(rows, keys, strict=True)]
                assert classes == sorted(classes), uri
                assert len({c[0] for c in classes}) > 1, uri
    assert settled > 0


@pytest.mark.parametrize("engine", [DELTA_RS, DELTA_SPARK])
def test_replace_files_swaps_only_the_named_files_and_refuses_a_moved_table(spark: SparkSession, tmp_path: Path,
                                                                           engine: str) -> None:
    """Either engine: the replay's writes are committed by delta-rs (files by name), Change Data Feed kept."""
    lake = Lake(tmp_path / "lake", engine=engine)
    rows = spark.createDataFrame([(i, i >= 5) for i in range(10)], "offset BIGINT, open BOOLEAN").repartition(1)
    version = lake.write(rows, "t", "overwrite", split_by="open", change_data_feed=True)
    before = {f["path"]: f for f in pa.table(lake.delta_table("t").get_add_actions(flatten=True)).to_pylist()}
    opened = [path for path in before if "/open=true/" in path]
    assert opened and len(opened) < len(before)
    assert lake.read(spark, "t").columns == ["offset"]  # the split column only sorts rows into files

    replacement = spark.createDataFrame([(i, i >= 7) for i in (5, 6, 7, 8, 9, 10)], "offset BIGINT, open BOOLEAN")
    lake.replace_files(replacement.repartition(1), "t", opened, version, split_by="open")
    after = {f["path"] for f in pa.table(lake.delta_table("t").get_add_actions(flatten=True)).to_pylist()}
    assert set(before) - set(opened) <= after and not set(opened) & after
    assert sorted(r["offset"] for r in lake.read(spark, "t").collect()) == list(range(11))
    commit = lake.history("t", limit=1)[0]
    assert commit.operation == "replace files" and "delta-rs" in (commit.engine_info or "")
    assert lake.delta_table("t").metadata().configuration.get("delta.enableChangeDataFeed") == "true"
    with pytest.raises(LakeError, match="another writer committed"):
        lake.replace_files(replacement, "t", opened, version, split_by="open")


def test_a_table_written_before_change_data_feed_gets_it_with_its_next_write(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    """A history table of an older release (no Change Data Feed) gets the property in a commit of its own, then the
    overwrite: delta-spark's ``table_changes`` answers from that commit on."""
    lake = Lake(tmp_path / "lake")
    first = lake.write(spark.createDataFrame([(1,)], "offset BIGINT"), "t", "overwrite")
    assert "delta.enableChangeDataFeed" not in lake.delta_table("t").metadata().configuration
    second = lake.write(spark.createDataFrame([(2,), (3,)], "offset BIGINT"), "t", "overwrite",
                        change_data_feed=True)
    assert (first, second) == (0, 2)  # version 1: the property set
    assert lake.delta_table("t").metadata().configuration.get("delta.enableChangeDataFeed") == "true"
    assert sorted(r["offset"] for r in lake.read(spark, "t").collect()) == [2, 3]


def test_split_files_and_the_files_a_replacement_adds(spark: SparkSession, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake", engine=DELTA_RS)  # files by name, as the replay commits on either engine
    rows = spark.createDataFrame([(i, i >= 5) for i in range(10)], "offset BIGINT, open BOOLEAN").repartition(1)
    first = lake.write(rows, "split", "overwrite", split_by="open")
    opened = lake.split_files("split", "open")
    assert opened and all("/open=true/" in f"/{path}" for path in opened)
    assert sorted(r["offset"] for r in lake.read_files(spark, "split", opened).collect()) == [5, 6, 7, 8, 9]
    # a table written without the split (delta-spark, an older layout): every file may hold such rows
    lake.write(rows.drop("open"), "plain", "overwrite")
    assert lake.split_files("plain", "open") is None and lake.file_paths("plain")

    second = lake.replace_files(spark.createDataFrame([(5, False), (10, True)], "offset BIGINT, open BOOLEAN"),
                                "split", opened, first, split_by="open")
    added = sorted(set(lake.file_paths("split", second)) - set(lake.file_paths("split", first)))
    assert added and not set(added) & set(lake.file_paths("split", first))
    assert sorted(r["offset"] for r in lake.read_files(spark, "split", added).collect()) == [5, 10]
    assert sorted(r["offset"] for r in lake.read(spark, "split").collect()) == [0, 1, 2, 3, 4, 5, 10]


def test_a_refresh_writes_the_rows_it_removes_and_no_settled_row_twice(spark: SparkSession) -> None:
    """``refreshed_rows`` for one table: the stored mutable rows of partitions not affected stay; of the affected
    partition only rows that are still open or end after the checkpoint C = 7 are written (the settled one is
    in a file that stays). When the replaced files held settled rows too (a table not written split), those
    are written again as they were, not recomputed."""
    schema = "cluster_id STRING, topic_id STRING, partition_id INT, valid_from_offset BIGINT, valid_to_offset BIGINT"
    mutable_only = [("c", "t", 1, 5, None), ("c", "t", 2, 3, None)]
    settled = [("c", "t", 1, 0, 5), ("c", "t", 2, 0, 3)]
    # the recomputed row before C is wrong on purpose: a resumed recompute does not know the rows before C
    recomputed = spark.createDataFrame([("c", "t", 1, 0, 4), ("c", "t", 1, 5, 9), ("c", "t", 1, 9, None)], schema)
    affected = spark.createDataFrame([("c", "t", 1)], "cluster_id STRING, topic_id STRING, partition_id INT")
    checkpoints = SafePoints({"c": 7})

    def rows(stored: list[tuple[Any, ...]]) -> list[tuple[int, int, int | None]]:
        out = refreshed_rows("partition_state_history", spark.createDataFrame(stored, schema), recomputed,
                             affected, checkpoints, recomputed.columns)
        return sorted((r["partition_id"], r["valid_from_offset"], r["valid_to_offset"]) for r in out.collect())

    assert rows(mutable_only) == [(1, 5, 9), (1, 9, None), (2, 3, None)]
    assert rows(mutable_only + settled) == [(1, 0, 5), (1, 5, 9), (1, 9, None), (2, 0, 3), (2, 3, None)]
