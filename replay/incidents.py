"""Incident questions over the derived tables: offline periods, unclean elections, invalid transitions,
election deviations between two offsets, and what-if failures at an offset."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import (
    BROKER_HISTORY,
    ELECTIONS,
    LEADERLESS_PERIODS,
    PARTITION_HISTORY,
    PARTITION_STATE_HISTORY,
    REPLICA_STATE_HISTORY,
)
from replay.query import QueryError, as_of, history_table, resolve_cluster, resolve_offset
from replay.whatif import WhatIf, what_if

_MAX = 1 << 62


@dataclass(frozen=True)
class Incidents:
    cluster_id: str
    from_offset: int
    to_offset: int | None
    offline: DataFrame  # leaderless_periods overlapping the range
    unclean: DataFrame  # elections of type unclean in the range
    invalid: DataFrame  # replica and partition transitions Kafka's state machines do not allow
    deviations: DataFrame  # elections that differ from Kafka's rule


def incidents(spark: SparkSession, lake: Lake, from_offset: int | None = None, to_offset: int | None = None,
              cluster_id: str | None = None) -> Incidents:
    """What went wrong between two offsets (inclusive; open ends = the whole log)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    lo, hi = from_offset or 0, _MAX if to_offset is None else to_offset
    if hi < lo:
        raise QueryError(f"--from {lo} is after --to {hi}")

    def table(name: str) -> DataFrame:
        if not lake.table_exists(name):
            raise QueryError(f"no {name} table in {lake.root}: run `kraft-replay replay` (it builds the "
                             "state machines and the election audit)")
        return history_table(spark, lake, name, cluster)

    def within(column: str) -> F.Column:
        return (F.col(column) >= lo) & (F.col(column) <= hi)

    offline = (table(LEADERLESS_PERIODS)
               .where((F.col("valid_from_offset") <= hi)
                      & (F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") > lo)))
               .orderBy("valid_from_offset", "topic_name", "partition_id", "topic_id"))
    audit = table(ELECTIONS)
    unclean = audit.where((F.col("election_type") == "unclean") & within("offset")).orderBy(
        "offset", "topic_name", "partition_id", "topic_id")
    deviations = audit.where(F.col("deviation").isNotNull() & within("offset")).orderBy(
        "offset", "topic_name", "partition_id", "topic_id")
    columns = ("topic_id", "topic_name", "partition_id", "state", "previous_state", "valid_from_offset", "step",
               "valid_from_time_ms", "cause_offset", "cause_type", "reason")
    replicas = table(REPLICA_STATE_HISTORY).where(~F.col("valid_transition") & within("valid_from_offset"))
    partitions = table(PARTITION_STATE_HISTORY).where(~F.col("valid_transition") & within("valid_from_offset"))
    invalid = (replicas.select(F.lit("replica").alias("machine"), *columns, "broker_id")
               .unionByName(partitions.select(F.lit("partition").alias("machine"), *columns,
                                              F.lit(None).cast("int").alias("broker_id")))
               .orderBy("valid_from_offset", "step", "machine", "topic_name", "partition_id", "broker_id"))
    return Incidents(cluster, lo, to_offset, offline, unclean, invalid, deviations)


def what_if_at(spark: SparkSession, lake: Lake, brokers: list[int], offset: int | None = None,
               time: datetime | str | None = None, unclean: bool = False, cluster_id: str | None = None
               ) -> tuple[int, WhatIf]:
    """``what_if`` on the state as of an offset (or time): (the offset used, the answer)."""
    if not brokers:
        raise QueryError("name at least one broker to fail (--fail-brokers 3,5)")
    cluster = resolve_cluster(spark, lake, cluster_id)
    at = resolve_offset(spark, lake, cluster, offset, time)
    partitions = as_of(history_table(spark, lake, PARTITION_HISTORY, cluster), at)
    live = as_of(history_table(spark, lake, BROKER_HISTORY, cluster), at)
    known = {r["broker_id"] for r in live.select("broker_id").collect()}
    unknown = sorted(set(brokers) - known)
    if unknown:
        raise QueryError(f"broker(s) {', '.join(map(str, unknown))} not registered as of offset {at} "
                         f"(registered: {', '.join(map(str, sorted(known))) or 'none'})")
    return at, what_if(partitions, live, brokers, unclean)
