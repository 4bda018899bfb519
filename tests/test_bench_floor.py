"""The replay's floor (bench/floor.py, issue 20): one sort of the replay's input, then each table written with
exactly as many rows as asked, fewer or more than the log has, or none."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench.floor import as_many_rows, measure_floor, sorted_events, stage_lines
from bench.logs import simulated_log, sizes_of
from lakehouse.ingest import ingest
from lakehouse.lake import Lake
from lakehouse.tables import METADATA_LOG, PARTITION_HISTORY, REPLAY_ANOMALIES, REPLICA_HISTORY, TOPIC_HISTORY
from replay.core.events import STATE_TYPES


@pytest.fixture(scope="module")
def lake(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """A lake holding the benchmark's log at a tiny size (1,500 records of the random scenario)."""
    out = tmp_path_factory.mktemp("bench-floor")
    simulated_log(out, sizes_of(1500, 4, 3, 4), reuse=False)
    tiny = Lake(out / "lake")
    ingest(spark, tiny, out / "log")
    return tiny


def test_the_floor_writes_exactly_the_rows_the_replay_wrote(spark: SparkSession, lake: Lake, tmp_path: Path
                                                             ) -> None:
    state_records = lake.read(spark, METADATA_LOG).where(F.col("record_type").isin(*STATE_TYPES)).count()
    wanted = {PARTITION_HISTORY: state_records * 2 + 17, REPLICA_HISTORY: state_records,
              TOPIC_HISTORY: 5, REPLAY_ANOMALIES: 0}

    floor = measure_floor(spark, lake, wanted, tmp_path / "floor")

    assert floor.events == state_records > 1000
    written = {name: Lake(tmp_path / "floor").read(spark, name).count() for name in wanted}
    assert written == wanted
    assert set(floor.write_seconds) == set(wanted)
    assert floor.seconds == floor.sort_seconds + sum(floor.write_seconds.values())
    lines = stage_lines([("folding the log into states (Spark window functions)", 2.0),
                         (f"computing and writing {TOPIC_HISTORY}", 1.0),
                         ("computing and writing a table the floor did not write", 1.0),
                         (f"computing and writing {TOPIC_HISTORY}, {REPLAY_ANOMALIES}", 1.0),
                         (f"computing and writing {TOPIC_HISTORY}, a table the floor did not write", 1.0)], floor, 4.0)
    assert lines[2].startswith("| folding the log into states (Spark window functions) | 2.0 | ")
    assert lines[2].endswith("(sort) | " + f"{2.0 / floor.sort_seconds:.1f}x |")
    assert lines[3].endswith(f"{floor.write_seconds[TOPIC_HISTORY]:.1f} (write) | "
                             f"{1.0 / floor.write_seconds[TOPIC_HISTORY]:.1f}x |")
    assert lines[4] == "| computing and writing a table the floor did not write | 1.0 | - | - |"
    together = floor.write_seconds[TOPIC_HISTORY] + floor.write_seconds[REPLAY_ANOMALIES]  # written at once
    assert lines[5].endswith(f"| 1.0 | {together:.1f} (write) | {1.0 / together:.1f}x |")
    assert lines[6].endswith("did not write | 1.0 | - | - |")


def test_the_sorted_events_are_numbered_densely_in_key_and_offset_order(spark: SparkSession, lake: Lake) -> None:
    events, total = sorted_events(spark, lake)

    numbers = events.agg(F.min("_floor_row").alias("low"), F.max("_floor_row").alias("high"),
                         F.countDistinct("_floor_row").alias("distinct")).first()
    assert (numbers["low"], numbers["high"], numbers["distinct"]) == (0, total - 1, total)
    partition_changes = events.where(F.col("record_type") == "PartitionChangeRecord")
    assert partition_changes.where(F.col("topic_id").isNull() | F.col("partition_id").isNull()).count() == 0
    assert events.where(~F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord")
                        & F.col("topic_id").isNotNull()).count() == 0
    # within each key, the row numbers follow the offsets
    by_key = events.groupBy("cluster_id", "record_type", "topic_id", "partition_id").agg(
        F.sort_array(F.collect_list(F.struct("_floor_row", "offset"))).alias("rows"))
    unordered = by_key.where(F.expr("rows != array_sort(rows, (a, b) -> CASE WHEN a.offset < b.offset THEN -1 "
                                    "WHEN a.offset > b.offset THEN 1 ELSE 0 END)"))
    assert unordered.count() == 0
    assert as_many_rows(events, total, 3 * total + 1).count() == 3 * total + 1
