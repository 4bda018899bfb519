"""Starting the replay from a snapshot: the base ``replay.core.coverage`` chose for each cluster, as DataFrames.

A ``NNN-EEE.checkpoint`` snapshot with end offset E holds the whole metadata image as of offset E-1, and it
*replaces* the image: what it does not mention is gone. For a cluster whose history starts from one
(``replay.core.coverage.history_coverage``):

- the snapshot's records become base events, all visible at offset E-1 with no append time
  (``valid_from_time_ms`` null), applied in their order inside the snapshot (``seq`` = position);
- log records with an offset below E are not folded (the snapshot already holds their effect).

This is the reference fold's ``base_snapshot=(E, records)`` (``replay.reference.fold.fold``). Everything is DataFrame
operations; only each cluster's runs of offsets and its snapshots' (end offset, epoch) reach the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from replay.core.coverage import ClusterCoverage, LogRun, SnapshotId, history_coverage, runs_of
from replay.core.events import BASE_COLUMNS, STATE_TYPES, secret_fingerprint

SNAPSHOT_KEY = ("cluster_id", "snapshot_end_offset", "snapshot_epoch")


@dataclass(frozen=True)
class ReplayInput:
    """What ``replay.fold.engine.replay(log, base)`` takes: the log from each cluster's base on, and the base events."""

    log: DataFrame
    base: DataFrame | None


def stored_runs(log: DataFrame, known: Mapping[str, tuple[int, int, int]] | None = None
                ) -> dict[str, list[LogRun]]:
    """Cluster id → the runs of consecutive offsets the log holds. ``known``: cluster → (offsets, first, last)
    already known (the Delta log's statistics, ``lakehouse.lake_read.cluster_column_ranges``), else one small
    aggregate; the offsets of a cluster with a hole (fewer offsets than its range) are ordered once more to find
    where."""
    if known is None:
        rows = (log.where(F.col("offset").isNotNull()).groupBy("cluster_id")
                .agg(F.count("offset").alias("rows"), F.min("offset").alias("first"), F.max("offset").alias("last"))
                .collect())
        known = {row["cluster_id"]: (int(row["rows"]), int(row["first"]), int(row["last"])) for row in rows}
    holed = [cluster for cluster, (count, first, last) in known.items() if count != last - first + 1]
    gaps: dict[str, list[tuple[int, int]]] = {cluster: [] for cluster in known}
    if holed:
        previous = F.lag("offset").over(Window.partitionBy("cluster_id").orderBy("offset"))
        found = (log.where(F.col("cluster_id").isin(*holed)).select("cluster_id", "offset")
                 .withColumn("previous", previous).where(F.col("offset") > F.col("previous") + 1).collect())
        for row in found:
            gaps[row["cluster_id"]].append((int(row["previous"]) + 1, int(row["offset"]) - 1))
    return {cluster: runs_of(first, last, gaps[cluster]) for cluster, (_, first, last) in known.items()}


def stored_snapshots(snapshots: DataFrame | None, clusters: list[str],
                     known: Mapping[str, set[tuple[int, int]]] | None = None) -> dict[str, list[SnapshotId]]:
    """Cluster id → the (end offset, epoch) of each snapshot the lake holds. ``known``: every cluster's pairs
    already known (the Delta log's statistics, ``lakehouse.lake_read.cluster_distinct_values``), else read."""
    found: dict[str, list[SnapshotId]] = {cluster: [] for cluster in clusters}
    if known is not None:
        for cluster in clusters:
            found[cluster] = [SnapshotId(int(end), int(epoch)) for end, epoch in sorted(known.get(cluster, ()))]
        return found
    if snapshots is None or not clusters:
        return found
    for row in snapshots.where(F.col("cluster_id").isin(*clusters)).select(*SNAPSHOT_KEY).distinct().collect():
        found[row["cluster_id"]].append(SnapshotId(int(row["snapshot_end_offset"]), int(row["snapshot_epoch"])))
    return found


def coverages(log: DataFrame, snapshots: DataFrame | None,
              known_offsets: Mapping[str, tuple[int, int, int]] | None = None,
              known_snapshots: Mapping[str, set[tuple[int, int]]] | None = None) -> dict[str, ClusterCoverage]:
    """Each cluster's history: its base and what it answers (``replay.core.coverage.history_coverage``), from
    what the Delta logs' statistics tell (``known_offsets``, ``known_snapshots``: see ``stored_runs`` and
    ``stored_snapshots``) or else from the tables' rows."""
    runs = stored_runs(log, known_offsets)
    ids = stored_snapshots(snapshots, sorted(runs), known_snapshots)
    return {cluster: history_coverage(cluster, runs[cluster], ids[cluster]) for cluster in sorted(runs)}


def snapshot_rows(snapshots: DataFrame, chosen: Iterable[tuple[str, SnapshotId]], cluster: Column | None = None
                  ) -> DataFrame:
    """The records of the ``chosen`` snapshots ((cluster, snapshot) pairs), their ``cluster_id`` replaced by
    ``cluster`` when given (the checks fold each snapshot as a cluster of its own)."""
    spark = snapshots.sparkSession
    keys = spark.createDataFrame([(c, s.end_offset, s.epoch) for c, s in sorted(chosen)],
                                 "cluster_id STRING, snapshot_end_offset BIGINT, snapshot_epoch INT")
    rows = snapshots.join(F.broadcast(keys), list(SNAPSHOT_KEY))
    return rows if cluster is None else rows.withColumn("cluster_id", cluster)


def snapshot_events(rows: DataFrame) -> DataFrame:
    """Snapshot records as base events visible at their snapshot's E - 1, in snapshot order."""
    at = (F.col("snapshot_end_offset") - 1).cast("long")
    return rows.where(F.col("record_type").isin(*STATE_TYPES) & ~F.coalesce(F.col("control"), F.lit(False))).select(
        "cluster_id", at.alias("offset"), at.alias("visible_offset"), F.lit(None).cast("long").alias("visible_time_ms"),
        "record_type", "schema_id", "payload", "payload_json", F.col("offset").cast("long").alias("seq"),
        secret_fingerprint(rows)).select(*BASE_COLUMNS)


def first_folded(covered: Mapping[str, ClusterCoverage]) -> Column:
    """The row's cluster's first folded log offset, as a literal ``CASE`` (null for a cluster not covered)."""
    first: Column | None = None
    for cluster, coverage in sorted(covered.items()):
        test = F.col("cluster_id") == F.lit(cluster)
        offset = F.lit(coverage.log_first_offset).cast("long")
        first = F.when(test, offset) if first is None else first.when(test, offset)
    return F.lit(None).cast("long") if first is None else first


def with_snapshot_causes(history: DataFrame, covered: Mapping[str, ClusterCoverage]) -> DataFrame:
    """``history`` with the versions a base snapshot gave (caused at its image offset) naming the snapshot as their
    cause (``SnapshotId.cause``) instead of the record type inside it."""
    label: Column | None = None
    for cluster, coverage in sorted(covered.items()):
        if coverage.base is None:
            continue
        given = (F.col("cluster_id") == F.lit(cluster)) & (F.col("cause_offset") == coverage.base.image_offset)
        cause = F.lit(coverage.base.cause)
        label = F.when(given, cause) if label is None else label.when(given, cause)
    return history if label is None else history.withColumn("cause_type", F.coalesce(label, F.col("cause_type")))


def snapshot_input(log: DataFrame, snapshots: DataFrame | None, covered: Mapping[str, ClusterCoverage]
                   ) -> ReplayInput:
    """The replay input of ``log``: per cluster, the log from its first folded offset and its base's records."""
    tail = log.where(F.col("offset") >= first_folded(covered))
    bases = {cluster: c.base for cluster, c in covered.items() if c.base is not None}
    if not bases or snapshots is None:
        return ReplayInput(tail, None)
    return ReplayInput(tail, snapshot_events(snapshot_rows(snapshots, bases.items())))


__all__ = ["SNAPSHOT_KEY", "ReplayInput", "coverages", "first_folded", "snapshot_events",
           "snapshot_input", "snapshot_rows", "stored_runs", "stored_snapshots",
           "with_snapshot_causes"]
