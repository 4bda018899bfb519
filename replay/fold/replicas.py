"""Per-replica history: a topic-partition-broker's role, ISR/ELR membership and its broker's fencing.

A replica's state changes when its partition changes *or* when its broker is fenced, unfenced or
re-registered, so its versions are the intersections of the partition's intervals with the
broker's states (``replay.core.broker_timeline``; where the broker is not registered, ``broker_fenced`` is null).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay.core.broker_timeline import broker_fenced, broker_timeline, open_end
from replay.core.history import collapse

REPLICA_VALUES = ("topic_name", "is_leader", "in_isr", "in_elr", "adding", "removing", "directory", "broker_fenced")
MIN_BUCKET = 1 << 12


def _buckets(partition_history: DataFrame, timeline: DataFrame, last_offset: int | None) -> tuple[int, int]:
    """(offsets per bucket, last bucket) of the replica-broker range join: about 16 buckets over the
    offsets in play, so a replica version usually falls in one or two and a broker's few intervals spread
    over all of them. Open intervals reach the last bucket. ``last_offset``: the last offset replayed, when the
    caller knows it (no interval starts or ends after it); else read from the intervals (two Spark jobs)."""
    def last(intervals: DataFrame) -> int:
        row = intervals.agg(F.max(F.greatest("valid_from_offset", F.coalesce("valid_to_offset", F.lit(0))))
                            .alias("m")).first()
        return int(row["m"]) if row is not None and row["m"] is not None else 0

    top = last_offset if last_offset is not None else max(last(partition_history), last(timeline))
    size = max(MIN_BUCKET, 1 << max(top // 16, 1).bit_length())
    return size, top // size


def _explode_buckets(intervals: DataFrame, size: int, last_bucket: int) -> DataFrame:
    """One row per offset bucket an interval touches (column ``bucket``)."""
    first = F.floor(F.col("valid_from_offset") / size)
    through = F.least(F.floor((open_end("valid_to_offset") - 1) / size), F.lit(last_bucket))
    return intervals.withColumn("bucket", F.explode(F.sequence(first, F.greatest(first, through))))


def _overlapping(replicas: DataFrame, timeline: DataFrame, partition_history: DataFrame, last_offset: int | None
                 ) -> DataFrame:
    """Each replica version with every broker interval overlapping it (left join: null when the broker
    never registered). An equi-join on (cluster, broker, offset bucket) with the overlap as condition,
    instead of comparing every replica version of a broker with every interval of that broker: each side
    is exploded into the buckets it touches, and a pair is kept only in the bucket holding the later of
    the two starts, so it comes out once. The timeline covers every offset of a registered broker, so
    only a never-registered broker gives null (kept in the version's own first bucket)."""
    size, last_bucket = _buckets(partition_history, timeline, last_offset)
    replica_side = _explode_buckets(replicas, size, last_bucket).alias("r")
    broker_side = _explode_buckets(timeline, size, last_bucket).alias("b")
    overlap = ((F.col("r.cluster_id") == F.col("b.cluster_id")) & (F.col("r.broker_id") == F.col("b.broker_id"))
               & (F.col("r.bucket") == F.col("b.bucket"))
               & (F.col("b.valid_from_offset") < open_end("r.valid_to_offset"))
               & (F.col("r.valid_from_offset") < open_end("b.valid_to_offset")))
    later_start = F.greatest(F.col("r.valid_from_offset"), F.col("b.valid_from_offset"))
    keep_in = F.when(F.col("b.broker_id").isNull(), F.col("r.valid_from_offset")).otherwise(later_start)
    # The broker side is small (a broker's fencing changes are few next to its replicas' versions): broadcast,
    # so the replica rows keep the partitioning they come in with and the collapse needs no shuffle.
    return replica_side.join(F.broadcast(broker_side), overlap, "left").where(
        F.col("r.bucket") == F.floor(keep_in / size))


def replica_history(partition_history: DataFrame, broker_history: DataFrame, last_offset: int | None = None
                    ) -> DataFrame:
    """Every replica version: its partition's version cut at its broker's state changes (``broker_timeline``).
    ``last_offset``: the last offset replayed, if known (``_buckets``)."""
    replicas = partition_history.select(
        "cluster_id", "topic_id", "topic_name", "partition_id", F.posexplode("replicas").alias("pos", "broker_id"),
        "leader", "isr", "eligible_leader_replicas", "adding_replicas", "removing_replicas", "directories",
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type", "replicas",
    ).where(  # a replica id listed twice is one replica, at its first position (PartitionRegistration.directory)
        F.col("pos") == F.array_position("replicas", F.col("broker_id")) - 1
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
    joined = _overlapping(replicas, broker_timeline(broker_history), partition_history, last_offset)
    broker_starts_later = F.col("b.valid_from_offset").isNotNull() & (
        F.col("b.valid_from_offset") > F.col("r.valid_from_offset"))
    broker_ends_first = F.col("b.valid_from_offset").isNotNull() & (
        open_end("b.valid_to_offset") < open_end("r.valid_to_offset"))
    pieces = joined.select(
        "r.cluster_id", "r.topic_id", "r.partition_id", "r.broker_id", "r.topic_name", "r.is_leader", "r.in_isr",
        "r.in_elr", "r.adding", "r.removing", "r.directory", broker_fenced(F.col("b.state")).alias("broker_fenced"),
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
