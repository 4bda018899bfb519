"""The replay's file layout (replay/layout.py): topic ranges written by their own tasks, open versions apart."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake, LakeError
from lakehouse.log_rows import entries_frame
from replay.layout import _ALPHABET, RANGED_TABLES, TOPIC_RANGES, task_keys
from replay.store import run_replay
from simulator import ScenarioOptions, run_scenario


def _range_of(topic_id: str) -> int:
    return _ALPHABET.index(topic_id[0]) * TOPIC_RANGES // len(_ALPHABET)


def test_each_task_key_lands_in_its_own_partition(spark: SparkSession) -> None:
    """The assumption the layout rests on: ``repartition(n, key)`` sends key i's rows to partition i."""
    keys = task_keys(spark, TOPIC_RANGES)
    assert len(set(keys)) == TOPIC_RANGES
    rows = (spark.createDataFrame([(k,) for k in keys for _ in range(3)], "key INT")
            .repartition(TOPIC_RANGES, "key").select("key", F.spark_partition_id().alias("task")).collect())
    assert {(r["key"], r["task"]) for r in rows} == {(k, i) for i, k in enumerate(keys)}


def test_large_tables_are_cut_into_topic_ranges_and_open_versions(spark: SparkSession, tmp_path: Path) -> None:
    run = run_scenario("random", ScenarioOptions(seed=3, topics=24, partitions_per_topic=3, events=150))
    lake = Lake(tmp_path / "lake")
    lake.write(entries_frame(spark, list(run.entries()), "layout"), "metadata_log", "overwrite")
    run_replay(spark, lake)
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


def test_replace_files_swaps_only_the_named_files_and_refuses_a_moved_table(spark: SparkSession,
                                                                           tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    rows = spark.createDataFrame([(i, i >= 5) for i in range(10)], "offset BIGINT, open BOOLEAN").repartition(1)
    version = lake.write(rows, "t", "overwrite", split_by="open")
    before = {f["path"]: f for f in pa.table(lake.delta_table("t").get_add_actions(flatten=True)).to_pylist()}
    opened = [path for path in before if "/open=true/" in path]
    assert opened and len(opened) < len(before)
    assert lake.read(spark, "t").columns == ["offset"]  # the split column only sorts rows into files

    replacement = spark.createDataFrame([(i, i >= 7) for i in (5, 6, 7, 8, 9, 10)], "offset BIGINT, open BOOLEAN")
    lake.replace_files(replacement.repartition(1), "t", opened, version, split_by="open")
    after = {f["path"] for f in pa.table(lake.delta_table("t").get_add_actions(flatten=True)).to_pylist()}
    assert set(before) - set(opened) <= after and not set(opened) & after
    assert sorted(r["offset"] for r in lake.read(spark, "t").collect()) == list(range(11))
    with pytest.raises(LakeError, match="another writer committed"):
        lake.replace_files(replacement, "t", opened, version, split_by="open")
