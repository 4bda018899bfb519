"""What-if: the cluster as of an offset, after some brokers fail, by Kafka's election rules.

For every partition it does what ``ReplicationControlManager.generateLeaderAndIsrUpdates`` does for a
fenced broker: the failed brokers leave the ISR (the last member stays when the ISR would become empty and
ELR is off); the leader stays if it is still acceptable; otherwise the first replica in replica order that
is in the ISR (the ELR when the ISR is empty) and acceptable leads; failing that, with ``unclean``, the first
acceptable replica outside the ISR (its ISR becomes just that leader); else the partition goes offline.
Acceptable = registered, unfenced, not in controlled shutdown as of the offset, and not failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay.elections import first_candidate
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
    active = brokers.where(~F.col("fenced") & ~F.col("in_controlled_shutdown")).select(
        "cluster_id", F.col("broker_id").alias("candidate"), F.lit(True).alias("up"))
    base = partitions.select(*KEY, "topic_name", "leader", "isr", "replicas", "eligible_leader_replicas",
                             F.filter("isr", lambda r: ~F.array_contains(gone, r)).alias("target_isr"),
                             F.filter(F.coalesce("eligible_leader_replicas", F.array().cast("array<int>")),
                                      lambda r: ~F.array_contains(gone, r)).alias("target_elr"))
    candidates = (base.select(*KEY, "target_isr", "target_elr", F.posexplode("replicas").alias("pos", "candidate"))
                  .join(F.broadcast(active), ["cluster_id", "candidate"], "left")
                  .withColumn("acceptable", F.coalesce("up", F.lit(False))
                              & ~F.array_contains(gone, F.col("candidate"))))
    in_target = F.when(F.size("target_isr") > 0, F.array_contains("target_isr", F.col("candidate"))).otherwise(
        F.array_contains("target_elr", F.col("candidate")))
    choice = candidates.groupBy(*KEY).agg(
        first_candidate(F.col("acceptable") & in_target).alias("clean_choice"),
        first_candidate(F.col("acceptable")).alias("unclean_choice"))
    # The leader stays while it is an acceptable replica still in the ISR.
    leader_acceptable = (candidates.where(F.col("acceptable")).select(*KEY, F.col("candidate").alias("leader"))
                         .withColumn("leader_acceptable", F.lit(True)))
    joined = (base.join(choice, list(KEY), "left").join(leader_acceptable, [*KEY, "leader"], "left")
              .withColumn("leader_acceptable", F.coalesce("leader_acceptable", F.lit(False))))
    keep = F.col("leader_acceptable") & F.array_contains("target_isr", F.col("leader"))
    elected_unclean = ~keep & F.col("clean_choice").isNull() & F.lit(unclean) & F.col("unclean_choice").isNotNull()
    leader_after = (F.when(keep, F.col("leader")).when(F.col("clean_choice").isNotNull(), F.col("clean_choice"))
                    .when(elected_unclean, F.col("unclean_choice")).otherwise(F.lit(-1)))
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
