"""Questions to the controller's state machines as the replay stored them (``partition_state_history``,
``replica_state_history``): each partition's and replica's state at an offset, and one partition's transitions."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import PARTITION_STATE_HISTORY, REPLICA_STATE_HISTORY
from replay.query.rules import MACHINE_STATE_NAMES, kafka_fields
from replay.query.state import QueryError, as_of, history_table, json_items, resolve_cluster

TRANSITION_COLUMNS = ("machine", "broker_id", "topic_name", "partition_id", "valid_from_offset", "step",
                      "valid_from_time_ms", "previous_state", "state", "valid_transition", "cause_type", "reason")


def machine_tables(spark: SparkSession, lake: Lake, cluster: str) -> tuple[DataFrame, DataFrame]:
    """``(partition_state_history, replica_state_history)`` of one cluster; a lake replayed before the state
    machines existed is told to replay again."""
    if not lake.table_exists(REPLICA_STATE_HISTORY):
        raise QueryError(f"no state-machine tables in {lake.root}: run `kraft-replay replay` again")
    return (history_table(spark, lake, PARTITION_STATE_HISTORY, cluster),
            history_table(spark, lake, REPLICA_STATE_HISTORY, cluster))


def machine_states_at(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str | None = None,
                      partition: int | None = None) -> tuple[DataFrame, DataFrame]:
    """Each partition's and each replica's controller state as of ``offset`` (OnlinePartition, OfflineReplica,
    …), optionally of one topic and partition id, sorted."""
    frames = []
    for df in machine_tables(spark, lake, cluster):
        df = as_of(df, offset)
        if topic is not None:
            df = df.where(F.col("topic_name") == topic)
        if partition is not None:
            df = df.where(F.col("partition_id") == partition)
        frames.append(df)
    partitions, replicas = frames
    return (partitions.orderBy("topic_name", "partition_id", "topic_id"),
            replicas.orderBy("topic_name", "partition_id", "broker_id", "topic_id"))


def machine_states_json(partitions: DataFrame, replicas: DataFrame) -> dict[str, Iterator[str]]:
    """``machine_states_at``'s two answers as Kafka JSON items, under the names `state --format json` gives them
    (``partitionStates``, ``replicaStates``)."""
    common = kafka_fields("topic_id", "topic_name", "partition_id")
    tail = kafka_fields("state", "previous_state", "valid_from_offset", "cause_offset", "cause_type", "reason",
                        names=MACHINE_STATE_NAMES)
    return {"partitionStates": json_items(partitions, (*common, *tail)),
            "replicaStates": json_items(replicas, (*common, *kafka_fields("broker_id"), *tail))}


def transitions(spark: SparkSession, lake: Lake, topic: str, partition: int, cluster_id: str | None = None
                ) -> DataFrame:
    """Every state-machine transition of partition ``topic``-``partition`` and its replicas, in log order
    (``TRANSITION_COLUMNS``; ``machine`` is partition or replica, ``broker_id`` null for the partition)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    columns = ("valid_from_offset", "step", "valid_from_time_ms", "previous_state", "state", "valid_transition",
               "cause_type", "reason")
    partitions, replicas = machine_tables(spark, lake, cluster)
    return (partitions.select(F.lit("partition").alias("machine"), F.lit(None).cast("int").alias("broker_id"),
                              "topic_name", "partition_id", *columns)
            .unionByName(replicas.select(F.lit("replica").alias("machine"), "broker_id", "topic_name",
                                         "partition_id", *columns))
            .where((F.col("topic_name") == topic) & (F.col("partition_id") == partition))
            .orderBy("valid_from_offset", "step", "machine", "broker_id"))


__all__ = ["TRANSITION_COLUMNS", "machine_states_at", "machine_states_json", "machine_tables", "transitions"]
