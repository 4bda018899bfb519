"""Per-replica history: a topic-partition-broker's role, ISR/ELR membership and its broker's fencing.

A replica's state changes when its partition changes *or* when its broker is fenced, unfenced or
re-registered, so its versions are the intersections of the partition's intervals with the
broker's (gaps where the broker is not registered count as "broker unknown", fenced = null).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from replay.history import collapse

REPLICA_VALUES = ("topic_name", "is_leader", "in_isr", "in_elr", "adding", "removing", "directory", "broker_fenced")
_INFINITY = 1 << 62


def _end(column: str) -> Column:
    return F.coalesce(F.col(column), F.lit(_INFINITY))


def broker_timeline(broker_history: DataFrame) -> DataFrame:
    """Broker intervals plus the gaps between them (fenced null: not registered), covering offsets 0 to
    infinity: what a replica, an election or a what-if needs to know about its broker at any offset."""
    w = Window.partitionBy("cluster_id", "broker_id").orderBy("valid_from_offset")
    known = broker_history.select(
        "cluster_id", "broker_id", F.col("fenced").alias("broker_fenced"), "in_controlled_shutdown",
        "valid_from_offset", "valid_to_offset",
        "valid_from_time_ms", "valid_to_time_ms", "cause_offset", "cause_type")
    after = (known.withColumn("next_from", F.lead("valid_from_offset").over(w))
             .withColumn("next_from_time", F.lead("valid_from_time_ms").over(w))
             .where(F.col("valid_to_offset").isNotNull()
                    & (F.col("next_from").isNull() | (F.col("next_from") > F.col("valid_to_offset"))))
             .select("cluster_id", "broker_id", F.lit(None).cast("boolean").alias("broker_fenced"),
                     F.lit(None).cast("boolean").alias("in_controlled_shutdown"),
                     F.col("valid_to_offset").alias("valid_from_offset"), F.col("next_from").alias("valid_to_offset"),
                     F.col("valid_to_time_ms").alias("valid_from_time_ms"),
                     F.col("next_from_time").alias("valid_to_time_ms"),
                     F.col("valid_to_offset").alias("cause_offset"),
                     F.lit("UnregisterBrokerRecord").alias("cause_type")))
    first = (known.withColumn("rank", F.row_number().over(w)).where(
        (F.col("rank") == 1) & (F.col("valid_from_offset") > 0))
        .select("cluster_id", "broker_id", F.lit(None).cast("boolean").alias("broker_fenced"),
                F.lit(None).cast("boolean").alias("in_controlled_shutdown"),
                F.lit(0).cast("long").alias("valid_from_offset"), F.col("valid_from_offset").alias("valid_to_offset"),
                F.lit(None).cast("long").alias("valid_from_time_ms"),
                F.col("valid_from_time_ms").alias("valid_to_time_ms"),
                F.lit(None).cast("long").alias("cause_offset"), F.lit(None).cast("string").alias("cause_type")))
    return known.unionByName(after).unionByName(first)


def replica_history(partition_history: DataFrame, broker_history: DataFrame) -> DataFrame:
    replicas = partition_history.select(
        "cluster_id", "topic_id", "topic_name", "partition_id", F.posexplode("replicas").alias("pos", "broker_id"),
        "leader", "isr", "eligible_leader_replicas", "adding_replicas", "removing_replicas", "directories",
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type",
    ).select(
        "cluster_id", "topic_id", "topic_name", "partition_id", "broker_id",
        (F.col("leader") == F.col("broker_id")).alias("is_leader"),
        F.array_contains("isr", F.col("broker_id")).alias("in_isr"),
        F.array_contains("eligible_leader_replicas", F.col("broker_id")).alias("in_elr"),
        F.array_contains("adding_replicas", F.col("broker_id")).alias("adding"),
        F.array_contains("removing_replicas", F.col("broker_id")).alias("removing"),
        F.element_at("directories", F.col("pos") + 1).alias("directory"),
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type")
    r, b = replicas.alias("r"), broker_timeline(broker_history).alias("b")
    overlap = ((F.col("r.cluster_id") == F.col("b.cluster_id")) & (F.col("r.broker_id") == F.col("b.broker_id"))
               & (F.col("b.valid_from_offset") < _end("r.valid_to_offset"))
               & (F.col("r.valid_from_offset") < _end("b.valid_to_offset")))
    joined = r.join(b, overlap, "left")
    broker_starts_later = F.col("b.valid_from_offset").isNotNull() & (
        F.col("b.valid_from_offset") > F.col("r.valid_from_offset"))
    broker_ends_first = F.col("b.valid_from_offset").isNotNull() & (
        _end("b.valid_to_offset") < _end("r.valid_to_offset"))
    pieces = joined.select(
        "r.cluster_id", "r.topic_id", "r.partition_id", "r.broker_id", "r.topic_name", "r.is_leader", "r.in_isr",
        "r.in_elr", "r.adding", "r.removing", "r.directory", F.col("b.broker_fenced").alias("broker_fenced"),
        F.when(broker_starts_later, F.col("b.valid_from_offset")).otherwise(F.col("r.valid_from_offset"))
        .alias("valid_from_offset"),
        F.when(broker_ends_first, F.col("b.valid_to_offset")).otherwise(F.col("r.valid_to_offset"))
        .alias("valid_to_offset"),
        F.when(broker_starts_later, F.col("b.valid_from_time_ms")).otherwise(F.col("r.valid_from_time_ms"))
        .alias("valid_from_time_ms"),
        F.when(broker_ends_first, F.col("b.valid_to_time_ms")).otherwise(F.col("r.valid_to_time_ms"))
        .alias("valid_to_time_ms"),
        F.when(broker_starts_later, F.col("b.cause_offset")).otherwise(F.col("r.cause_offset")).alias("cause_offset"),
        F.when(broker_starts_later, F.col("b.cause_type")).otherwise(F.col("r.cause_type")).alias("cause_type"))
    return collapse(pieces, ("cluster_id", "topic_id", "partition_id", "broker_id"), REPLICA_VALUES)
