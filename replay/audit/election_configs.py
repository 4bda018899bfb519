"""The election audit's judgement by the configs in force (issue 19): was an unclean election allowed by
``unclean.leader.election.enable`` at its offset, and does the ELR agree with the effective
``min.insync.replicas`` (KIP-966)?

What the log can and cannot tell. Kafka's controller elects uncleanly on its own only when
``uncleanLeaderElectionEnabledForTopic`` is true (``generateLeaderAndIsrUpdates``,
``maybeTriggerUncleanLeaderElectionForLeaderlessPartitions``, ``cancelPartitionReassignment``). An admin's
``ElectLeaders`` with ``ElectionType.UNCLEAN`` (``ReplicationControlManager.electLeader``) elects with
``Election.UNCLEAN`` whatever the config says, and writes the same PartitionChangeRecord (leader, ISR of just that
leader, ``leaderRecoveryState`` RECOVERING): the log cannot tell the two apart. Nor does it hold the controller's
static ``server.properties``. So an unclean election the log's configs did not allow reads "not allowed by the
configs in the log: an admin election (ElectLeaders UNCLEAN) or a static server.properties setting".

The ELR (``PartitionChangeBuilder.maybePopulateTargetElr``, run on every change while the ELR feature is on):
an ISR of at least ``min.insync.replicas`` members (``getTopicEffectiveMinIsr``: at most the replication factor)
clears the ELR; a smaller ISR keeps the former ISR members eligible. Only an election from the ELR (the new
leader becomes the ISR, the rest stay eligible) or an unclean one (the ELR is cleared) leaves other shapes.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from records.kafka_topic_configs import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    KAFKA_VERSION,
    MIN_IN_SYNC_REPLICAS,
    STATIC_BROKER_CONFIG,
    UNCLEAN_LEADER_ELECTION_ENABLE,
)
from replay.audit.effective_configs import (
    SOURCE_SUFFIX,
    ConfigsInForce,
    config_column,
    effective_min_isr,
    unclean_allowed,
    with_effective_configs,
)
from replay.audit.election_rule import UNCLEAN

UNCLEAN_COLUMN = config_column(UNCLEAN_LEADER_ELECTION_ENABLE)
MIN_ISR_COLUMN = config_column(MIN_IN_SYNC_REPLICAS)
CONFIG_COLUMNS = (UNCLEAN_COLUMN, UNCLEAN_COLUMN + SOURCE_SUFFIX, MIN_ISR_COLUMN, MIN_ISR_COLUMN + SOURCE_SUFFIX,
                  "unclean_verdict")
# how each ConfigEntry.ConfigSource reads in the audit's sentences
SOURCE_WORDS = {
    DYNAMIC_TOPIC_CONFIG: "the topic's config",
    DYNAMIC_BROKER_CONFIG: "the active controller's node config",
    DYNAMIC_DEFAULT_BROKER_CONFIG: "the cluster default (BROKER \"\")",
    STATIC_BROKER_CONFIG: "the static server.properties passed",
    DEFAULT_CONFIG: f"Kafka {KAFKA_VERSION}'s default",
}
NOT_ALLOWED = ("not allowed by the configs in the log: an admin election (ElectLeaders UNCLEAN) or a static "
               "server.properties setting")


def source_words(source: Column) -> Column:
    """A ConfigEntry.ConfigSource name in words."""
    words = F.create_map(*[F.lit(part) for pair in SOURCE_WORDS.items() for part in pair])
    return F.coalesce(words[source], source)


def with_configs_in_force(rows: DataFrame, configs: ConfigsInForce | None) -> DataFrame:
    """``rows`` (``cluster_id``, ``topic_name``, ``offset``, ``replicas``) plus what the controller reads at the
    offset: ``UNCLEAN_COLUMN`` (``uncleanLeaderElectionEnabledForTopic``), ``MIN_ISR_COLUMN``
    (``getTopicEffectiveMinIsr``) and their sources; null without ``configs`` (unknown)."""
    resolved = with_effective_configs(
        rows, None if configs is None else configs.history, None if configs is None else configs.controllers,
        None if configs is None else configs.static)
    unclean_value, min_isr_value = F.col(UNCLEAN_COLUMN), F.col(MIN_ISR_COLUMN)
    return (resolved.withColumn(UNCLEAN_COLUMN, F.when(unclean_value.isNotNull(), unclean_allowed(unclean_value)))
            .withColumn(MIN_ISR_COLUMN, F.when(min_isr_value.isNotNull(),
                                               effective_min_isr(min_isr_value, F.col("replicas")))))


def judged_by_configs(audit: DataFrame, configs: ConfigsInForce | None) -> DataFrame:
    """``audit`` (election rows: ``topic_name``, ``offset``, ``replicas``, ``isr``, ``eligible_leader_replicas``,
    ``previous_elr``, ``election_type``, ``deviation``) plus ``CONFIG_COLUMNS``, the deviation completed by them.
    Without ``configs`` (no config_history in the lake) the new columns are null and nothing is judged."""
    typed = with_configs_in_force(audit, configs)
    allowed, unclean_source = F.col(UNCLEAN_COLUMN), F.col(UNCLEAN_COLUMN + SOURCE_SUFFIX)
    unclean = F.col("election_type") == UNCLEAN
    verdict = F.when(unclean & allowed, F.concat(
        F.lit(f"allowed by {UNCLEAN_LEADER_ELECTION_ENABLE}=true in "), source_words(unclean_source))).when(
        unclean & ~allowed, F.lit(NOT_ALLOWED))
    min_isr, min_isr_source = F.col(MIN_ISR_COLUMN), F.col(MIN_ISR_COLUMN + SOURCE_SUFFIX)
    elr = F.coalesce(F.col("eligible_leader_replicas"), F.array().cast("array<int>"))
    from_elr = F.coalesce(F.array_contains(F.col("previous_elr"), F.col("leader")), F.lit(False))
    elr_kept = ((F.size(elr) > 0) & (F.size("isr") > 0) & (F.size("isr") >= min_isr) & ~unclean & ~from_elr)
    deviation = F.coalesce(
        F.col("deviation"),
        F.when(unclean & ~allowed, F.concat(
            F.lit(f"unclean election although {UNCLEAN_LEADER_ELECTION_ENABLE} was false ("),
            source_words(unclean_source), F.lit("): an admin election (ElectLeaders UNCLEAN) or a static config"))),
        F.when(elr_kept, F.concat(
            F.lit("ELR ["), F.array_join(elr, ", "), F.lit("] kept although the ISR ["), F.array_join("isr", ", "),
            F.lit(f"] has at least {MIN_IN_SYNC_REPLICAS} ("), min_isr.cast("string"), F.lit(", "),
            source_words(min_isr_source), F.lit(") members: Kafka clears the ELR"))))
    return typed.withColumn("unclean_verdict", verdict).withColumn("deviation", deviation)


__all__ = [
    "CONFIG_COLUMNS",
    "MIN_ISR_COLUMN",
    "NOT_ALLOWED",
    "SOURCE_WORDS",
    "UNCLEAN_COLUMN",
    "judged_by_configs",
    "source_words",
    "with_configs_in_force",
]
