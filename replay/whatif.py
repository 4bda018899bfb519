"""What-if: the cluster as of an offset, after some brokers fail, by Kafka's election rules.

For every partition it does what ``ReplicationControlManager.generateLeaderAndIsrUpdates`` does for a
fenced broker: the failed brokers leave the ISR (the last member stays when the ISR would become empty and
ELR is off), and the leader is elected by Kafka's rule (``replay.election_rule``: ``electAnyLeader``, unclean
only with ``unclean``), a replica being acceptable when its broker is active as of the offset (the broker
timeline's state) and not failed. An unclean leader's ISR becomes just that leader.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay.broker_timeline import broker_state
from replay.election_rule import elect_any_leader, first_candidate, is_acceptable_leader, is_valid_new_leader
from replay.health import under_replicated_condition

OUTCOMES = ("unaffected", "isr-shrink", "leader-moved", "unclean-election", "offline", "still-offline")
SUMMARY_KEYS = ("partitions", "affected", "leaders_lost", "clean_elections", "unclean_elections",
                "offline_before", "offline_after", "under_replicated_before", "under_replicated_after")
KEY = ("cluster_id", "topic_id", "partition_id")


@dataclass(frozen=True)
class WhatIf:
    partitions: DataFrame  # every partition: before and after, with its outcome
    summary: dict[str, int]


def what_if(partitions: DataFrame, brokers: DataFrame, failed: list[int], unclean: bool = False) -> WhatIf:
    """``partitions``/``brokers``: ``partition_history``/``broker_history`` rows valid at one offset."""
    gone = F.array(*[F.lit(b) for b in sorted(set(failed))]).cast("array<int>")
    states = brokers.select("cluster_id", F.col("broker_id").alias("candidate"),
                            broker_state(F.col("fenced"), F.col("in_controlled_shutdown")).alias("state"))
    base = partitions.select(*KEY, "topic_name", "leader", "isr", "replicas", "eligible_leader_replicas",
                             F.filter("isr", lambda r: ~F.array_contains(gone, r)).alias("target_isr"),
                             F.filter(F.coalesce("eligible_leader_replicas", F.array().cast("array<int>")),
                                      lambda r: ~F.array_contains(gone, r)).alias("target_elr"))
    candidates = (base.select(*KEY, "leader", "target_isr", "target_elr",
                              F.posexplode("replicas").alias("pos", "candidate"))
                  .join(F.broadcast(states), ["cluster_id", "candidate"], "left")
                  .withColumn("acceptable", is_acceptable_leader(F.col("state"),
                                                                 F.array_contains(gone, F.col("candidate")))))
    acceptable = F.col("acceptable")
    valid = is_valid_new_leader(F.col("candidate"), F.col("target_isr"), F.col("target_elr"), acceptable)
    choice = candidates.groupBy(*KEY).agg(
        first_candidate(valid).alias("clean_choice"),
        first_candidate(acceptable).alias("unclean_choice"),
        (F.count(F.when((F.col("candidate") == F.col("leader")) & valid, 1)) > 0).alias("leader_valid"))
    joined = base.join(choice, list(KEY), "left").withColumn(
        "leader_valid", F.coalesce("leader_valid", F.lit(False)))
    leader_after, elected_unclean = elect_any_leader(F.col("leader"), F.col("leader_valid"), F.col("clean_choice"),
                                                     F.col("unclean_choice"), unclean)
    isr_after = (F.when(elected_unclean, F.array(F.col("unclean_choice")))
                 .when(F.size("target_isr") > 0, F.col("target_isr")).otherwise(F.col("isr")))
    touched = F.exists("replicas", lambda r: F.array_contains(gone, r))
    outcome = (F.when((F.col("leader") < 0) & (F.col("leader_after") < 0), F.lit("still-offline"))
               .when(~touched & (F.col("leader_after") == F.col("leader")), F.lit("unaffected"))
               .when(F.col("leader_after") < 0, F.lit("offline"))
               .when(elected_unclean, F.lit("unclean-election"))
               .when(F.col("leader_after") != F.col("leader"), F.lit("leader-moved"))
               .when(F.col("isr_after") != F.col("isr"), F.lit("isr-shrink"))
               .otherwise(F.lit("unaffected")))
    result = (joined.withColumn("leader_after", leader_after).withColumn("isr_after", isr_after)
              .withColumn("outcome", outcome)
              .withColumn("under_replicated_before", under_replicated_condition())
              .withColumn("under_replicated_after", under_replicated_condition("leader_after", "isr_after"))
              .select(*KEY, "topic_name", "replicas", "leader", "isr", "leader_after", "isr_after", "outcome",
                      "under_replicated_before", "under_replicated_after")
              .orderBy("topic_name", "partition_id", "topic_id"))
    row = result.agg(
        F.count(F.lit(1)).alias("partitions"),
        F.sum(F.when(F.col("outcome") != "unaffected", 1).otherwise(0)).alias("affected"),
        F.sum(F.when((F.col("leader") >= 0) & (F.col("leader_after") != F.col("leader")), 1).otherwise(0))
        .alias("leaders_lost"),
        F.sum(F.when(F.col("outcome") == "leader-moved", 1).otherwise(0)).alias("clean_elections"),
        F.sum(F.when(F.col("outcome") == "unclean-election", 1).otherwise(0)).alias("unclean_elections"),
        F.sum(F.when(F.col("leader") < 0, 1).otherwise(0)).alias("offline_before"),
        F.sum(F.when(F.col("leader_after") < 0, 1).otherwise(0)).alias("offline_after"),
        F.sum(F.col("under_replicated_before").cast("int")).alias("under_replicated_before"),
        F.sum(F.col("under_replicated_after").cast("int")).alias("under_replicated_after")).first()
    summary = {k: int((row[k] if row is not None else 0) or 0) for k in SUMMARY_KEYS}
    return WhatIf(result, summary)
