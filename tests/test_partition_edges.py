"""replay/core/partition_edges.py and the replicas' cut that gives them (replay/fold/replicas.py): a partition's
edges are the versions starting a life of it and those changing its replica set, in offset order, whichever order its
rows come in; the cut gives each replica its partition's edges, and each replica's role with Spark's null rules."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from replay.core.partition_edges import partition_edges
from replay.fold.replicas import replica_versions
from tests.replica_inputs_support import BROKERS_SCHEMA, PARTITIONS_SCHEMA

pytestmark = pytest.mark.spark


def _edges(spans: list) -> list[tuple[int, int | None, int, bool]]:
    return [(s["valid_from_offset"], s["valid_to_offset"], s["cause_offset"], s["starts_life"]) for s in spans]


def test_edges_start_lives_and_change_replica_sets_in_offset_order(spark: SparkSession) -> None:
    """Partition t-0: created at 10 on [1, 2], its ISR changed at 20 (same replicas: no edge), reassigned to [1, 3]
    at 30 (an edge of the same life), deleted at 40 and created again at 50 on [1, 3] (a new life: an edge although
    the replicas are the same). The rows come scattered over partitions, in no order."""
    partitions = spark.createDataFrame([
        ("c", "T", "t", 0, [1, 3], 1, [1, 3], None, None, None, None, 50, None, 500, None, 50, "PartitionRecord"),
        ("c", "T", "t", 0, [1, 2], 2, [2], [], [], [], None, 20, 30, 200, 300, 20, "PartitionChangeRecord"),
        ("c", "T", "t", 0, [1, 3], 1, [1], [], [], [], None, 30, 40, 300, 400, 30, "PartitionChangeRecord"),
        ("c", "T", "t", 0, [1, 2], 1, [1, 2], [], [], [], None, 10, 20, 100, 200, 10, "PartitionRecord"),
    ], PARTITIONS_SCHEMA).repartition(3)
    want = [(10, 20, 10, True), (30, 40, 30, False), (50, None, 50, True)]
    [edges] = partition_edges(partitions).collect()
    assert _edges(edges["_spans"]) == want
    brokers = spark.createDataFrame([("c", 1, False, False, 5, None, 50, None, 5, "RegisterBrokerRecord")],
                                    BROKERS_SCHEMA)
    replicas = {row["broker_id"]: row for row in replica_versions(partitions, brokers).collect()}
    assert sorted(replicas) == [1, 2, 3]
    assert all(_edges(row["_spans"]) == want for row in replicas.values())
    # broker 2 was a replica from 10 to 30 (leader from 20), broker 3 from 30 on: their versions in offset order
    assert [(v["valid_from_offset"], v["is_leader"], v["in_isr"]) for v in replicas[2]["_versions"]] == [
        (10, False, True), (20, True, True)]
    assert [(v["valid_from_offset"], v["valid_to_offset"]) for v in replicas[3]["_versions"]] == [
        (30, 40), (50, None)]


def test_a_replicas_role_is_null_where_the_partitions_field_is(spark: SparkSession) -> None:
    """A version without ELR, adding or removing lists (null, as before Kafka wrote them) gives null membership of
    them, as Spark's ``array_contains`` does, and an ISR that holds a null and not the broker gives null too;
    directories shorter than the replicas (which the fold refuses) give the replicas past their end no directory."""
    partitions = spark.createDataFrame([
        ("c", "T", "t", 0, [4, 5], 4, [4, None], None, None, [5], ["d4"], 10, None, 100, None, 10,
         "PartitionRecord"),
    ], PARTITIONS_SCHEMA)
    brokers = spark.createDataFrame([("c", 4, False, False, 5, None, 50, None, 5, "RegisterBrokerRecord")],
                                    BROKERS_SCHEMA)
    got = {row["broker_id"]: [(v["is_leader"], v["in_isr"], v["in_elr"], v["adding"], v["removing"], v["directory"])
                              for v in row["_versions"]]
           for row in replica_versions(partitions, brokers).collect()}
    assert got == {4: [(True, True, None, None, False, "d4")], 5: [(False, None, None, None, True, None)]}
