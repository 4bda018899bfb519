"""replay/fold/replicas.py: per-replica history (a repeated replica id is one replica; a replica cut where its broker
changes, merged where nothing does; the same whatever the partitioning of its inputs), on hand-made histories and
on the one Spark replay compared with the reference fold (session fixtures ``compared`` and ``repeated`` of
tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.log_rows import entries_frame
from replay.fold.engine import replay
from replay.fold.replicas import replica_history
from tests.replica_inputs_support import BROKERS_SCHEMA, PARTITIONS_SCHEMA
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark


def test_a_repeated_replica_id_is_one_replica(repeated: dict[str, Any]) -> None:
    from tests import bad_inputs_support as bad

    assert bad.replica_versions(repeated["spark"]["replica_history"]) == bad.REPEATED_REPLICAS


def test_a_replica_is_cut_where_its_broker_changes_and_merged_where_nothing_does(spark: SparkSession) -> None:
    """Partition t-0 on brokers 1 and 2: created at 10 (leader 1), leader 2 with ISR [2] at 20, ISR [2, 1] at 30.
    Broker 1 registered at 5, fenced at 15; broker 2 never registered. Broker 1's replica is cut at 15 (the fence
    is its cause) and not merged where its values change; broker 2's is the partition's versions with
    ``broker_fenced`` null, the versions at 20 and 30 one (its role did not change: the version of 20 goes on)."""
    partitions = spark.createDataFrame([
        ("c", "T", "t", 0, [1, 2], 1, [1, 2], [], [], [], ["d1", "d2"], 10, 20, 100, 200, 10, "PartitionRecord"),
        ("c", "T", "t", 0, [1, 2], 2, [2], [], [], [], ["d1", "d2"], 20, 30, 200, 300, 20, "PartitionChangeRecord"),
        ("c", "T", "t", 0, [1, 2], 2, [2, 1], [], [], [], ["d1", "d2"], 30, None, 300, None, 31,
         "PartitionChangeRecord"),
    ], PARTITIONS_SCHEMA).repartition(3)
    brokers = spark.createDataFrame([
        ("c", 1, False, False, 5, 15, 50, 150, 5, "RegisterBrokerRecord"),
        ("c", 1, True, False, 15, None, 150, None, 15, "FenceBrokerRecord"),
    ], BROKERS_SCHEMA).repartition(2)
    got = [(r["broker_id"], r["valid_from_offset"], r["valid_to_offset"], r["valid_from_time_ms"],
            r["valid_to_time_ms"], r["cause_offset"], r["cause_type"], r["is_leader"], r["in_isr"], r["directory"],
            r["broker_fenced"], r["topic_name"])
           for r in replica_history(partitions, brokers).orderBy("broker_id", "valid_from_offset").collect()]
    assert got == [
        (1, 10, 15, 100, 150, 10, "PartitionRecord", True, True, "d1", False, "t"),
        (1, 15, 20, 150, 200, 15, "FenceBrokerRecord", True, True, "d1", True, "t"),
        (1, 20, 30, 200, 300, 20, "PartitionChangeRecord", False, False, "d1", True, "t"),
        (1, 30, None, 300, None, 31, "PartitionChangeRecord", False, True, "d1", True, "t"),
        (2, 10, 20, 100, 200, 10, "PartitionRecord", False, True, "d2", None, "t"),
        (2, 20, None, 200, None, 20, "PartitionChangeRecord", True, True, "d2", None, "t"),
    ]


def test_replica_history_does_not_depend_on_how_its_inputs_are_partitioned(
        spark: SparkSession, compared: dict[str, Any]) -> None:
    """Each replica's versions and its broker's intervals are gathered from wherever their rows are: the histories
    spread over many partitions in no order give exactly the reference fold's replica_history."""
    clusters = ["sim-2-lost-last-isr-unclean", "sim-4-reassignment-under-failure", "sim-8-random"]
    frames = [entries_frame(spark, compared["logs"][c], c) for c in clusters]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    tables = replay(log).tables
    scattered = replica_history(tables["partition_history"].repartition(13, F.rand(7)),
                                tables["broker_history"].repartition(5, F.rand(3)))
    got = [row.asDict(recursive=True) for row in scattered.collect()]
    want = [r for r in compared["expected"]["replica_history"] if r["cluster_id"] in clusters]
    assert len(want) > 500 and len(got) == len(want)
    assert sorted_rows(got) == sorted_rows(want)
