"""Per-replica history: a topic-partition-broker's role, ISR/ELR membership and its broker's fencing.

A replica's state changes when its partition changes *or* when its broker is fenced, unfenced or
re-registered, so its versions are the intersections of the partition's intervals with the
broker's states (``replay.core.broker_timeline``; where the broker is not registered, ``broker_fenced`` is null).
Each replica's versions are cut and merged in one pass in the JVM (``replay/jvm``:
``kraftreplay.fold.ReplicaVersions``), its broker's intervals beside them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import HISTORY_KEYS, REPLICA_HISTORY
from replay.core.broker_timeline import TIMELINE_KEY, broker_fenced, broker_timeline
from replay.core.jvm_functions import INTERVAL, JvmFunction, array_of_structs, jvm_call, sorted_structs

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


def replica_versions(partition_history: DataFrame, broker_history: DataFrame) -> DataFrame:
    """Each replica's versions (``REPLICA_KEY``, ``_versions``: an array of ``REPLICA_RESULT`` in offset order): its
    partition's versions cut at its broker's state changes (``broker_timeline``). Grouped per replica, distributed as
    ``partition_history`` is: the fold's, distributed by partition, is grouped without a shuffle, and the replica
    states (``replay.audit.state_machines``) read the groups as they are."""
    replicas = partition_history.select(
        "cluster_id", "topic_id", "topic_name", "partition_id", F.posexplode("replicas").alias("pos", "broker_id"),
        "leader", "isr", "eligible_leader_replicas", "adding_replicas", "removing_replicas", "directories",
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type", "replicas",
    ).where(  # a replica id listed twice is one replica, at its first position (PartitionRegistration.directory)
        F.col("pos") == F.array_position("replicas", F.col("broker_id")) - 1
    ).select(
        *REPLICA_KEY, "topic_name",
        (F.col("leader") == F.col("broker_id")).alias("is_leader"),
        F.array_contains("isr", F.col("broker_id")).alias("in_isr"),
        F.array_contains("eligible_leader_replicas", F.col("broker_id")).alias("in_elr"),
        F.array_contains("adding_replicas", F.col("broker_id")).alias("adding"),
        F.array_contains("removing_replicas", F.col("broker_id")).alias("removing"),
        F.element_at("directories", F.col("pos") + 1).alias("directory"),
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type")
    versions = replicas.groupBy(*REPLICA_KEY).agg(sorted_structs(REPLICA_VERSION).alias("_versions"))
    # The brokers' intervals are few next to the replicas' versions: one row per broker, broadcast to its replicas.
    timelines = (broker_timeline(broker_history).withColumn("broker_fenced", broker_fenced(F.col("state")))
                 .groupBy(*TIMELINE_KEY).agg(sorted_structs(BROKER_INTERVAL).alias("_timeline")))
    joined = versions.join(F.broadcast(timelines), list(TIMELINE_KEY), "left")
    return joined.select(*REPLICA_KEY, jvm_call(
        partition_history.sparkSession, REPLICA_VERSIONS, F.col("_versions"), F.col("_timeline")).alias("_versions"))


def replica_rows(versions: DataFrame) -> DataFrame:
    """``replica_history``'s rows from each replica's versions (``replica_versions``)."""
    cut = versions.select(*REPLICA_KEY, F.explode("_versions").alias("_v"))
    return cut.select(*REPLICA_KEY, *[F.col(f"_v.{name}").alias(name) for name in REPLICA_VALUES],
                      *[F.col(f"_v.{name}").alias(name) for name, _ in INTERVAL])


def replica_history(partition_history: DataFrame, broker_history: DataFrame) -> DataFrame:
    """Every replica version: its partition's versions cut at its broker's state changes (``replica_versions``)."""
    return replica_rows(replica_versions(partition_history, broker_history))
