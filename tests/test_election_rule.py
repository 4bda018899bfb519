"""Kafka's election rule (``PartitionChangeBuilder.electAnyLeader``), as the audit and the what-if apply it."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from records.kafka_constants import NO_LEADER
from replay.audit.election_rule import (
    elect_any_leader,
    first_candidate,
    is_acceptable_leader,
    is_valid_new_leader,
    was_unclean,
)
from replay.core.broker_timeline import ACTIVE, CONTROLLED_SHUTDOWN, FENCED

pytestmark = pytest.mark.spark


def _elect(spark: SparkSession, leader: int, isr: list[int], elr: list[int], states: dict[int, str | None],
           removed: int, unclean: bool, replicas: list[int] | None = None) -> tuple[int, bool]:
    """One partition's election over ``replicas`` (default: the brokers of ``states``), ``removed`` being removed."""
    order = replicas if replicas is not None else list(states)
    rows = [(pos, broker, states.get(broker)) for pos, broker in enumerate(order)]
    candidates = spark.createDataFrame(rows, "pos INT, candidate INT, state STRING").select(
        "*", F.lit(leader).alias("leader"), F.array(*[F.lit(b) for b in isr]).cast("array<int>").alias("isr"),
        F.array(*[F.lit(b) for b in elr]).cast("array<int>").alias("elr"))
    acceptable = is_acceptable_leader(F.col("state"), F.col("candidate") == removed)
    valid = is_valid_new_leader(F.col("candidate"), F.col("isr"), F.col("elr"), acceptable)
    choice = candidates.agg(first_candidate(valid).alias("online"), first_candidate(acceptable).alias("unclean"),
                            (F.count(F.when((F.col("candidate") == leader) & valid, 1)) > 0).alias("valid"))
    elected, elected_unclean = elect_any_leader(F.lit(leader), F.col("valid"), F.col("online"), F.col("unclean"),
                                                unclean)
    row = choice.select(elected.alias("leader"), elected_unclean.alias("unclean")).first()
    assert row is not None
    return int(row["leader"]), bool(row["unclean"])


def test_the_leader_stays_while_it_is_a_valid_new_leader(spark: SparkSession) -> None:
    states = {1: ACTIVE, 2: ACTIVE, 3: ACTIVE}
    assert _elect(spark, 2, [1, 2, 3], [], states, removed=-1, unclean=False) == (2, False)


def test_the_first_active_isr_replica_in_replica_order_leads(spark: SparkSession) -> None:
    # 1 is removed, 3 shuts down, 4 is fenced, 5 is not registered: 2 is the first acceptable ISR member
    states = {1: ACTIVE, 3: CONTROLLED_SHUTDOWN, 4: FENCED, 5: None, 2: ACTIVE, 6: ACTIVE}
    assert _elect(spark, 1, [1, 3, 4, 5, 2], [], states, removed=1, unclean=False) == (2, False)


def test_the_elr_counts_only_when_the_isr_is_empty(spark: SparkSession) -> None:
    states = {1: ACTIVE, 2: ACTIVE, 3: ACTIVE}
    assert _elect(spark, 1, [], [3], states, removed=1, unclean=False) == (3, False)
    assert _elect(spark, 1, [2], [3], states, removed=1, unclean=False) == (2, False)


def test_unclean_only_when_allowed_and_no_valid_leader(spark: SparkSession) -> None:
    states = {1: FENCED, 2: ACTIVE}
    assert _elect(spark, 1, [1], [], states, removed=1, unclean=False) == (NO_LEADER, False)
    assert _elect(spark, 1, [1], [], states, removed=1, unclean=True) == (2, True)
    assert _elect(spark, 1, [1], [], {1: FENCED, 2: FENCED}, removed=1, unclean=True) == (NO_LEADER, False)


def test_an_unclean_election_as_the_records_show_it(spark: SparkSession) -> None:
    cases = [  # leader, previous ISR, previous ELR, ISR → unclean
        (2, [1], [], [2], True),
        (2, [1, 2], [], [2], False),  # a member of the previous ISR
        (3, [], [3], [3], False),  # elected from the ELR
        (3, [1], [], [1, 3], False),  # joins the ISR with a previous member (a reassignment completing)
    ]
    frame = spark.createDataFrame(cases, "leader INT, previous_isr ARRAY<INT>, previous_elr ARRAY<INT>, "
                                  "isr ARRAY<INT>, expected BOOLEAN")
    got = frame.select(was_unclean(F.col("leader"), F.col("previous_isr"), F.col("previous_elr"), F.col("isr"))
                       .alias("got"), "expected").collect()
    assert [r["got"] for r in got] == [r["expected"] for r in got]
