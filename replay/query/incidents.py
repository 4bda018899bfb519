"""Incident questions over the derived tables: offline periods, unclean elections, invalid transitions,
election deviations between two offsets, brokers fenced and put into controlled shutdown, and what-if failures
at an offset. ``kraft-replay incidents`` and the operator's summary ask the same functions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import (
    BROKER_HISTORY,
    ELECTIONS,
    FEATURE_HISTORY,
    LEADERLESS_PERIODS,
    PARTITION_HISTORY,
    PARTITION_STATE_HISTORY,
    REPLICA_STATE_HISTORY,
    spark_schema,
)
from records.kafka_constants import ELIGIBLE_LEADER_REPLICAS_VERSION, ELRV_1
from replay.audit.effective_configs import ConfigsInForce, configs_in_force
from replay.audit.election_configs import CONFIG_COLUMNS, with_configs_in_force
from replay.audit.whatif import WhatIf, what_if
from replay.core.history import lives_after
from replay.query.state import QueryError, as_of, history_table, resolve_cluster, resolve_offset

_MAX = 1 << 62
ELECTION_TYPES = [(f.name, f.dataType.simpleString()) for f in spark_schema(ELECTIONS).fields]


@dataclass(frozen=True)
class Incidents:
    cluster_id: str
    from_offset: int
    to_offset: int | None
    offline: DataFrame  # leaderless_periods overlapping the range
    unclean: DataFrame  # elections of type unclean in the range
    invalid: DataFrame  # replica and partition transitions Kafka's state machines do not allow
    deviations: DataFrame  # elections that differ from Kafka's rule


def _audit_table(spark: SparkSession, lake: Lake, name: str, cluster: str) -> DataFrame:
    if not lake.table_exists(name):
        raise QueryError(f"no {name} table in {lake.root}: run `kraft-replay replay` (it builds the "
                         "state machines and the election audit)")
    return history_table(spark, lake, name, cluster)


def _within(column: str, lo: int, hi: int) -> Column:
    return (F.col(column) >= lo) & (F.col(column) <= hi)


def offline_periods(spark: SparkSession, lake: Lake, cluster: str, lo: int = 0, hi: int = _MAX) -> DataFrame:
    """The leaderless periods (the election audit's) overlapping offsets ``lo..hi``, in log order."""
    return (_audit_table(spark, lake, LEADERLESS_PERIODS, cluster)
            .where((F.col("valid_from_offset") <= hi) & lives_after(F.lit(lo)))
            .orderBy("valid_from_offset", "topic_name", "partition_id", "topic_id"))


def _elections(spark: SparkSession, lake: Lake, cluster: str) -> DataFrame:
    """The election audit; one written before it judged elections by the configs has their columns null."""
    audit = _audit_table(spark, lake, ELECTIONS, cluster)
    types = dict(ELECTION_TYPES)
    return audit.select("*", *[F.lit(None).cast(types[c]).alias(c) for c in CONFIG_COLUMNS if c not in audit.columns])


def unclean_elections(spark: SparkSession, lake: Lake, cluster: str, lo: int = 0, hi: int = _MAX) -> DataFrame:
    """Elections of a leader outside the previous ISR at offsets ``lo..hi``, in log order, with whether
    ``unclean.leader.election.enable`` allowed each (``unclean_verdict``)."""
    audit = _elections(spark, lake, cluster)
    return audit.where((F.col("election_type") == "unclean") & _within("offset", lo, hi)).orderBy(
        "offset", "topic_name", "partition_id", "topic_id")


def election_deviations(spark: SparkSession, lake: Lake, cluster: str, lo: int = 0, hi: int = _MAX
                        ) -> DataFrame:
    """Elections at offsets ``lo..hi`` whose leader differs from the one Kafka's rule picks, or that the configs
    in force did not allow, in log order."""
    audit = _elections(spark, lake, cluster)
    return audit.where(F.col("deviation").isNotNull() & _within("offset", lo, hi)).orderBy(
        "offset", "topic_name", "partition_id", "topic_id")


def invalid_transitions(spark: SparkSession, lake: Lake, cluster: str, lo: int = 0, hi: int = _MAX
                        ) -> DataFrame:
    """Replica and partition transitions at offsets ``lo..hi`` that Kafka's state machines do not allow."""
    columns = ("topic_id", "topic_name", "partition_id", "state", "previous_state", "valid_from_offset", "step",
               "valid_from_time_ms", "cause_offset", "cause_type", "reason")
    replicas = _audit_table(spark, lake, REPLICA_STATE_HISTORY, cluster).where(
        ~F.col("valid_transition") & _within("valid_from_offset", lo, hi))
    partitions = _audit_table(spark, lake, PARTITION_STATE_HISTORY, cluster).where(
        ~F.col("valid_transition") & _within("valid_from_offset", lo, hi))
    return (replicas.select(F.lit("replica").alias("machine"), *columns, "broker_id")
            .unionByName(partitions.select(F.lit("partition").alias("machine"), *columns,
                                           F.lit(None).cast("int").alias("broker_id")))
            .orderBy("valid_from_offset", "step", "machine", "topic_name", "partition_id", "broker_id"))


def incidents(spark: SparkSession, lake: Lake, from_offset: int | None = None, to_offset: int | None = None,
              cluster_id: str | None = None) -> Incidents:
    """What went wrong between two offsets (inclusive; open ends = the whole log)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    lo, hi = from_offset or 0, _MAX if to_offset is None else to_offset
    if hi < lo:
        raise QueryError(f"--from {lo} is after --to {hi}")
    return Incidents(cluster, lo, to_offset, offline_periods(spark, lake, cluster, lo, hi),
                     unclean_elections(spark, lake, cluster, lo, hi), invalid_transitions(spark, lake, cluster, lo, hi),
                     election_deviations(spark, lake, cluster, lo, hi))


def _turned_on(brokers: DataFrame, flag: str, before_registration: bool) -> DataFrame:
    """The broker versions where ``flag`` became true; ``before_registration`` is the flag's value assumed
    before a broker's first version (a registration that starts fenced is not a fence)."""
    broker_versions = Window.partitionBy("cluster_id", "broker_id").orderBy("valid_from_offset")
    return (brokers.withColumn("_was", F.lag(flag).over(broker_versions))
            .where(F.col(flag) & ~F.coalesce(F.col("_was"), F.lit(before_registration)))
            .select("broker_id", "broker_epoch", "valid_from_offset", "valid_from_time_ms", "cause_type")
            .orderBy("valid_from_offset", "broker_id"))


def fences(brokers: DataFrame) -> DataFrame:
    """Every time a registered, unfenced broker became fenced (``broker_history`` rows in)."""
    return _turned_on(brokers, "fenced", before_registration=True)


def controlled_shutdowns(brokers: DataFrame) -> DataFrame:
    """Every time a broker asked for a controlled shutdown (its leaderships move away, or go to -1)."""
    return _turned_on(brokers, "in_controlled_shutdown", before_registration=False)


def what_if_at(spark: SparkSession, lake: Lake, brokers: list[int], offset: int | None = None,
               time: datetime | str | None = None, unclean: bool | None = None, cluster_id: str | None = None,
               static: dict[str, str] | None = None) -> tuple[int, WhatIf]:
    """``what_if`` on the state as of an offset (or time): (the offset used, the answer). Each partition's
    ``unclean.leader.election.enable`` and ``min.insync.replicas`` are those in force at the offset
    (``replay.audit.effective_configs``; ``static``: the controller's server.properties as the user knows them), and the
    ELR feature its finalized level then; ``unclean`` overrides the configs. A lake without ``config_history``
    answers with Kafka's defaults (the answer's ``unclean_allowed`` column says what was used)."""
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
    configs = configs_in_force(spark, lake, static=static)
    if configs is not None:
        configs = ConfigsInForce(configs.history.where(F.col("cluster_id") == cluster), configs.controllers,
                                 configs.static)
        partitions = with_configs_in_force(partitions.withColumn("offset", F.lit(at)), configs)
    elr = as_of(history_table(spark, lake, FEATURE_HISTORY, cluster), at).where(
        (F.col("feature") == ELIGIBLE_LEADER_REPLICAS_VERSION) & (F.col("level") >= ELRV_1))
    return at, what_if(partitions, live, brokers, unclean, elr_enabled=not elr.isEmpty())
