"""What-if: the cluster as of an offset, after some brokers fail, by Kafka's election rules.

For every partition it does what ``ReplicationControlManager.generateLeaderAndIsrUpdates`` does for a
fenced broker: the failed brokers leave the ISR, and the leader is elected by Kafka's rule
(``replay.audit.election_rule``: ``electAnyLeader``), a replica being acceptable when its broker is active as of the
offset (the broker timeline's state) and not failed. ``Election.UNCLEAN`` where the topic's
``unclean.leader.election.enable`` in force at the offset allows it (``uncleanLeaderElectionEnabledForTopic``, read
from the log by ``replay.audit.effective_configs``), or everywhere / nowhere when the caller overrides it. An unclean
leader's ISR becomes just that leader.

With the ELR feature on (KIP-966, ``isElrFeatureEnabled``) ``maybePopulateTargetElr`` runs first: an ISR left with
at least ``min.insync.replicas`` members (the topic's, in force at the offset) clears the ELR, a smaller one keeps
the former members eligible, and the ISR may become empty; a leader elected from the ELR becomes the ISR. Without
it the last ISR member stays when the ISR would become empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import PARTITION_KEY
from records.kafka_topic_configs import MIN_IN_SYNC_REPLICAS, TOPIC_CONFIG_DEFAULTS
from replay.audit.election_configs import MIN_ISR_COLUMN, UNCLEAN_COLUMN
from replay.audit.election_rule import elect_any_leader, first_candidate, is_acceptable_leader, is_valid_new_leader
from replay.audit.health import under_replicated_condition
from replay.core.broker_timeline import broker_state

UNAFFECTED = "unaffected"  # the outcome of a partition the failure leaves as it was
OUTCOMES = (UNAFFECTED, "isr-shrink", "leader-moved", "unclean-election", "offline", "still-offline")
SUMMARY_KEYS = ("partitions", "affected", "leaders_lost", "clean_elections", "unclean_elections",
                "offline_before", "offline_after", "under_replicated_before", "under_replicated_after")


@dataclass(frozen=True)
class WhatIf:
    partitions: DataFrame  # every partition: before and after, with its outcome
    summary: dict[str, int]
    configs_known: bool = False  # the partitions carried the configs in force (the lake has config_history)

    def affected(self) -> DataFrame:
        """The partitions the failure changes (every outcome but ``unaffected``)."""
        return self.partitions.where(F.col("outcome") != UNAFFECTED)


def what_if(partitions: DataFrame, brokers: DataFrame, failed: list[int], unclean: bool | None = None,
            elr_enabled: bool = False) -> WhatIf:
    """``partitions``/``brokers``: ``partition_history``/``broker_history`` rows valid at one offset; the
    partitions may carry the configs in force (``UNCLEAN_COLUMN``, ``MIN_ISR_COLUMN``:
    ``replay.audit.election_configs``), else unclean election is off and ``min.insync.replicas`` Kafka's default.
    ``unclean``: override the configs (True: every partition may elect uncleanly; False: none). ``elr_enabled``: the ELR
    feature at the offset."""
    gone = F.array(*[F.lit(b) for b in sorted(set(failed))]).cast("array<int>")
    no_replicas = F.array().cast("array<int>")
    allowed = (F.lit(unclean) if unclean is not None else
               F.coalesce(F.col(UNCLEAN_COLUMN), F.lit(False)) if UNCLEAN_COLUMN in partitions.columns
               else F.lit(False))
    default_min_isr = F.lit(int(TOPIC_CONFIG_DEFAULTS[MIN_IN_SYNC_REPLICAS] or 1))
    min_isr = (F.coalesce(F.col(MIN_ISR_COLUMN), default_min_isr) if MIN_ISR_COLUMN in partitions.columns
               else default_min_isr)
    states = brokers.select("cluster_id", F.col("broker_id").alias("candidate"),
                            broker_state(F.col("fenced"), F.col("in_controlled_shutdown")).alias("state"))
    base = partitions.select(*PARTITION_KEY, "topic_name", "leader", "isr", "replicas",
                             F.coalesce("eligible_leader_replicas", no_replicas).alias("elr"),
                             allowed.alias("unclean_allowed"), min_isr.alias("min_insync_replicas"),
                             F.filter("isr", lambda r: ~F.array_contains(gone, r)).alias("target_isr"))
    # maybePopulateTargetElr: the former ISR members stay eligible while the ISR is below min.insync.replicas
    target_elr = (F.when(F.size("target_isr") >= F.col("min_insync_replicas"), no_replicas).otherwise(
        F.array_sort(F.array_except(F.array_union("elr", "isr"), "target_isr"))) if elr_enabled else F.col("elr"))
    base = base.withColumn("target_elr", target_elr)
    candidates = (base.select(*PARTITION_KEY, "leader", "target_isr", "target_elr",
                              F.posexplode("replicas").alias("pos", "candidate"))
                  .join(F.broadcast(states), ["cluster_id", "candidate"], "left")
                  .withColumn("acceptable", is_acceptable_leader(F.col("state"),
                                                                 F.array_contains(gone, F.col("candidate")))))
    acceptable = F.col("acceptable")
    valid = is_valid_new_leader(F.col("candidate"), F.col("target_isr"), F.col("target_elr"), acceptable)
    choice = candidates.groupBy(*PARTITION_KEY).agg(
        first_candidate(valid).alias("clean_choice"),
        first_candidate(acceptable).alias("unclean_choice"),
        (F.count(F.when((F.col("candidate") == F.col("leader")) & valid, 1)) > 0).alias("leader_valid"))
    joined = base.join(choice, list(PARTITION_KEY), "left").withColumn(
        "leader_valid", F.coalesce("leader_valid", F.lit(False)))
    leader_after, elected_unclean = elect_any_leader(F.col("leader"), F.col("leader_valid"), F.col("clean_choice"),
                                                     F.col("unclean_choice"), F.col("unclean_allowed"))
    # tryElection: a leader from the ELR becomes the ISR and leaves the ELR
    from_elr = ((F.col("leader_after") >= 0) & ~F.array_contains("target_isr", F.col("leader_after"))
                & F.array_contains("target_elr", F.col("leader_after")))
    isr_after = (F.when(elected_unclean, F.array(F.col("unclean_choice")))
                 .when(from_elr, F.array(F.col("leader_after")))
                 .when((F.size("target_isr") > 0) | F.lit(elr_enabled), F.col("target_isr")).otherwise(F.col("isr")))
    # maybeUpdateRecordElr: an unclean election, or the feature off, clears the ELR
    elr_after = (F.when(elected_unclean | ~F.lit(elr_enabled), no_replicas)
                 .when(from_elr, F.array_remove("target_elr", F.col("leader_after"))).otherwise(F.col("target_elr")))
    touched = F.exists("replicas", lambda r: F.array_contains(gone, r))
    outcome = (F.when((F.col("leader") < 0) & (F.col("leader_after") < 0), F.lit("still-offline"))
               .when(~touched & (F.col("leader_after") == F.col("leader")), F.lit(UNAFFECTED))
               .when(F.col("leader_after") < 0, F.lit("offline"))
               .when(elected_unclean, F.lit("unclean-election"))
               .when(F.col("leader_after") != F.col("leader"), F.lit("leader-moved"))
               .when(F.col("isr_after") != F.col("isr"), F.lit("isr-shrink"))
               .otherwise(F.lit(UNAFFECTED)))
    result = (joined.withColumn("leader_after", leader_after).withColumn("isr_after", isr_after)
              .withColumn("elr_after", elr_after).withColumn("outcome", outcome)
              .withColumn("under_replicated_before", under_replicated_condition())
              .withColumn("under_replicated_after", under_replicated_condition("leader_after", "isr_after"))
              .select(*PARTITION_KEY, "topic_name", "replicas", "leader", "isr", "leader_after", "isr_after", "outcome",
                      "under_replicated_before", "under_replicated_after",
                      F.col("elr").alias("eligible_leader_replicas"), "elr_after", "unclean_allowed",
                      "min_insync_replicas")
              .orderBy("topic_name", "partition_id", "topic_id"))
    row = result.agg(
        F.count(F.lit(1)).alias("partitions"),
        F.sum(F.when(F.col("outcome") != UNAFFECTED, 1).otherwise(0)).alias("affected"),
        F.sum(F.when((F.col("leader") >= 0) & (F.col("leader_after") != F.col("leader")), 1).otherwise(0))
        .alias("leaders_lost"),
        F.sum(F.when(F.col("outcome") == "leader-moved", 1).otherwise(0)).alias("clean_elections"),
        F.sum(F.when(F.col("outcome") == "unclean-election", 1).otherwise(0)).alias("unclean_elections"),
        F.sum(F.when(F.col("leader") < 0, 1).otherwise(0)).alias("offline_before"),
        F.sum(F.when(F.col("leader_after") < 0, 1).otherwise(0)).alias("offline_after"),
        F.sum(F.col("under_replicated_before").cast("int")).alias("under_replicated_before"),
        F.sum(F.col("under_replicated_after").cast("int")).alias("under_replicated_after")).first()
    summary = {k: int((row[k] if row is not None else 0) or 0) for k in SUMMARY_KEYS}
    return WhatIf(result, summary, UNCLEAN_COLUMN in partitions.columns)
