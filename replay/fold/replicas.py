"""Per-replica history: a topic-partition-broker's role, ISR/ELR membership and its broker's fencing.

A replica's state changes when its partition changes *or* when its broker is fenced, unfenced or
re-registered, so its versions are the intersections of the partition's intervals with the
broker's states (``replay.core.broker_timeline``; where the broker is not registered, ``broker_fenced`` is null).
A partition's versions are split into its replicas' in one pass in the JVM (``replay/jvm``:
``kraftreplay.fold.PartitionReplicas``), and each replica's are cut and merged in another
(``kraftreplay.fold.ReplicaVersions``), its broker's intervals beside them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import HISTORY_KEYS, PARTITION_KEY, REPLICA_HISTORY
from replay.core.broker_timeline import TIMELINE_KEY, broker_fenced, broker_timeline
from replay.core.jvm_functions import INTERVAL, JvmFunction, array_of_structs, jvm_call, sorted_structs, typed_fields
from replay.core.partition_edges import PARTITION_EDGE, SPANS

REPLICA_VALUES = ("topic_name", "is_leader", "in_isr", "in_elr", "adding", "removing", "directory", "broker_fenced")
REPLICA_KEY = HISTORY_KEYS[REPLICA_HISTORY]
# The structs the JVM pass reads, fields in its order and types: the interval first (``INTERVAL``), then a replica
# version's values, or a broker interval's fencing.
REPLICA_VERSION = (*INTERVAL, ("topic_name", "string"), ("is_leader", "boolean"), ("in_isr", "boolean"),
                   ("in_elr", "boolean"), ("adding", "boolean"), ("removing", "boolean"), ("directory", "string"))
BROKER_INTERVAL = (*INTERVAL, ("broker_fenced", "boolean"))
REPLICA_RESULT = (*REPLICA_VERSION, ("broker_fenced", "boolean"))
REPLICA_VERSIONS = JvmFunction("kraft_replica_versions", "kraftreplay.fold.ReplicaVersions",
                               array_of_structs(REPLICA_RESULT))
# A partition's version as its split into replicas reads it: the interval, then the partition's values.
PARTITION_VERSION = (*INTERVAL, ("topic_name", "string"), ("replicas", "array<int>"), ("leader", "int"),
                     ("isr", "array<int>"), ("eligible_leader_replicas", "array<int>"),
                     ("adding_replicas", "array<int>"), ("removing_replicas", "array<int>"),
                     ("directories", "array<string>"))
PARTITION_REPLICAS = JvmFunction(
    "kraft_partition_replicas", "kraftreplay.fold.PartitionReplicas",
    f"array<struct<broker_id:int,_versions:{array_of_structs(REPLICA_VERSION)},{SPANS}:"
    f"{array_of_structs(PARTITION_EDGE)}>>")


def replica_versions(partition_history: DataFrame, broker_history: DataFrame) -> DataFrame:
    """Each replica's versions (``REPLICA_KEY``, ``_versions``: an array of ``REPLICA_RESULT`` in offset order): its
    partition's versions cut at its broker's state changes (``broker_timeline``); with its partition's edges
    (``_spans``: ``replay.core.partition_edges``), what the replica states read of the partition's versions.

    Each partition's versions are split into its replicas' in the JVM (``kraftreplay.fold.PartitionReplicas``),
    grouped per partition: the fold's rows, distributed by partition and sorted by offset, are grouped without a
    shuffle or a sort (grouped per replica, the three times as many replica rows were sorted again, BENCHMARKS.md).
    Distributed as ``partition_history`` is; the replica states (``replay.audit.state_machines``) read the groups as
    they are."""
    spark = partition_history.sparkSession
    partitions = partition_history.groupBy(*PARTITION_KEY).agg(
        F.collect_list(F.struct(*typed_fields(PARTITION_VERSION))).alias("_versions"))
    split = partitions.select(*PARTITION_KEY, F.explode(
        jvm_call(spark, PARTITION_REPLICAS, F.col("_versions"))).alias("_replica"))
    versions = split.select(*PARTITION_KEY, F.col("_replica.broker_id").alias("broker_id"),
                            F.col("_replica._versions").alias("_versions"), F.col(f"_replica.{SPANS}").alias(SPANS))
    # The brokers' intervals are few next to the replicas' versions: one row per broker, broadcast to its replicas.
    timelines = (broker_timeline(broker_history).withColumn("broker_fenced", broker_fenced(F.col("state")))
                 .groupBy(*TIMELINE_KEY).agg(sorted_structs(BROKER_INTERVAL).alias("_timeline")))
    joined = versions.join(F.broadcast(timelines), list(TIMELINE_KEY), "left")
    return joined.select(*REPLICA_KEY, jvm_call(
        spark, REPLICA_VERSIONS, F.col("_versions"), F.col("_timeline")).alias("_versions"), SPANS)


def replica_rows(versions: DataFrame) -> DataFrame:
    """``replica_history``'s rows from each replica's versions (``replica_versions``)."""
    cut = versions.select(*REPLICA_KEY, F.explode("_versions").alias("_v"))
    return cut.select(*REPLICA_KEY, *[F.col(f"_v.{name}").alias(name) for name in REPLICA_VALUES],
                      *[F.col(f"_v.{name}").alias(name) for name, _ in INTERVAL])


def replica_history(partition_history: DataFrame, broker_history: DataFrame) -> DataFrame:
    """Every replica version: its partition's versions cut at its broker's state changes (``replica_versions``)."""
    return replica_rows(replica_versions(partition_history, broker_history))
