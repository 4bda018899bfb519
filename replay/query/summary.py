"""What happened in a replayed cluster, as the operator's summary asks it (`demo`, `run`, `report`): brokers put into
controlled shutdown and fenced, partitions that went offline (from the replay's election audit), unclean elections,
elections against Kafka's rule, the worst moments of the cluster's health, and the first offline partition before
and during its incident. Every list is a query of ``replay.query.incidents`` (the ones ``kraft-replay incidents``
asks); only ``limit`` rows of each reach the driver, and the count of the whole list when it holds more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import cast

from pyspark.sql import DataFrame, Row, SparkSession

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.lake import Lake
from lakehouse.spark_settings import sized_for
from lakehouse.tables import BROKER_HISTORY, METADATA_LOG, PARTITION_HISTORY
from replay.audit.health import Peak, health_series, peaks
from replay.query.incidents import controlled_shutdowns, election_deviations, fences, offline_periods, unclean_elections
from replay.query.rules import OutsideHistory
from replay.query.state import history_table, resolve_cluster, state_at


@dataclass(frozen=True)
class Listed:
    """The first rows of a list (at most the ``limit`` asked), and its whole count when it holds more."""

    rows: list[Row]
    total: int | None  # None: ``rows`` is the whole list


@dataclass(frozen=True)
class FocusState:
    """The focus partition's rows as of ``offset``, ``before`` or ``during`` its incident."""

    label: str
    offset: int
    rows: list[Row]


@dataclass(frozen=True)
class ClusterSummary:
    """The lists of ``cluster_summary``, each in its order, and the incident to look at next."""

    cluster: str
    shutdowns: Listed
    fences: Listed
    offline: Listed
    unclean: Listed
    deviations: Listed
    peaks: dict[str, Peak]  # offline, under_replicated, fenced_brokers: ``replay.audit.health.peaks``
    focus: tuple[str, int, int] | None  # (topic, partition, offset it went offline): the first offline period
    focus_states: list[FocusState]


def listed(df: DataFrame, limit: int) -> Listed:
    """At most ``limit`` rows of ``df``, and its count when there are more."""
    rows = df.limit(limit + 1).collect()
    return Listed(rows[:limit], df.count() if len(rows) > limit else None)


def cluster_summary(spark: SparkSession, lake: Lake, cluster_id: str | None, limit: int) -> ClusterSummary:
    """The operator's summary of one cluster of the lake (``cluster_id`` needed only when it holds several)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    partitions = history_table(spark, lake, PARTITION_HISTORY, cluster)
    brokers = history_table(spark, lake, BROKER_HISTORY, cluster)
    # The election audit written by the replay (replay/audit/elections.py): periods with the broker event behind each.
    lists = {"shutdowns": controlled_shutdowns(brokers), "fences": fences(brokers),
             "unclean": unclean_elections(spark, lake, cluster),
             "deviations": election_deviations(spark, lake, cluster)}
    # small independent queries, each mostly fixed latency: asked at once, the longest first (the health peaks, then
    # the offline periods, whose first one's two lookups follow them on their thread)
    actions: dict[str, Callable[[], object]] = {
        "peaks": lambda: peaks(health_series(partitions, brokers)),
        "offline": partial(_offline_and_focus, spark, lake, cluster, limit),
        **{name: partial(listed, df, limit) for name, df in lists.items()}}
    # planned as the replay of the log these tables come from is: a small log's tables are small inputs
    with sized_for(spark, lake.rows(METADATA_LOG)):
        answers = run_concurrently(spark, actions)
    shutdowns, fenced, unclean, deviations = (
        cast(Listed, answers[name]) for name in ("shutdowns", "fences", "unclean", "deviations"))
    worst = cast("dict[str, Peak]", answers["peaks"])
    offline, focus, states = cast("tuple[Listed, tuple[str, int, int] | None, list[FocusState]]", answers["offline"])
    return ClusterSummary(cluster, shutdowns, fenced, offline, unclean, deviations, worst, focus, states)


def _offline_and_focus(spark: SparkSession, lake: Lake, cluster: str, limit: int
                       ) -> tuple[Listed, tuple[str, int, int] | None, list[FocusState]]:
    """The offline periods (at most ``limit``), the first one's partition and offset (the incident to look at next),
    and that partition's rows before and during it."""
    offline = listed(offline_periods(spark, lake, cluster), limit)
    if not offline.rows:
        return offline, None, []
    first = offline.rows[0]
    topic, pid, at = first["topic_name"], first["partition_id"], first["valid_from_offset"]
    offsets = {label: offset for label, offset in (("before", at - 1), ("during", at)) if offset >= 0}
    # the two lookups asked at once, as the lists are
    looked_up = run_concurrently(spark, {label: partial(_focus_rows, spark, lake, cluster, topic, pid, offset)
                                         for label, offset in offsets.items()})
    states = [FocusState(label, offsets[label], rows) for label, rows in looked_up.items() if rows is not None]
    return offline, (topic, pid, at), states


def _focus_rows(spark: SparkSession, lake: Lake, cluster: str, topic: str, partition_id: int, offset: int
                ) -> list[Row] | None:
    """The partition's rows as of ``offset``; None when the history does not hold ``offset`` (an incident at the
    start of the history, its base snapshot: no "before")."""
    try:
        return state_at(spark, lake, offset=offset, cluster_id=cluster).only(topic, partition_id).partitions.collect()
    except OutsideHistory:
        return None


__all__ = ["ClusterSummary", "FocusState", "Listed", "cluster_summary", "listed"]
