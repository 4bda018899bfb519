"""Starting the replay from a snapshot when the stored log no longer starts at offset 0.

Kafka deletes log segments a snapshot covers. A ``NNN-EEE.checkpoint`` snapshot with end offset E holds
the whole metadata image as of offset E-1, and it *replaces* the image: what it does not mention is gone.
So when a cluster's stored log starts after offset 0, its replay starts from the latest stored snapshot
whose end offset E is at or after the first stored log offset:

- the snapshot's records become base events, all visible at offset E-1 with no append time
  (``valid_from_time_ms`` null), applied in their order inside the snapshot (``seq`` = position);
- log records with an offset below E are ignored (the snapshot already holds their effect).

This is the reference fold's ``base_snapshot=(E, records)`` (``replay.reference.fold``). A cluster whose
log starts at offset 0, or for which no snapshot reaches its first offset, is replayed from its log only.
Everything is DataFrame operations; only the chosen (cluster, end offset, epoch) triples reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay.events import BASE_COLUMNS, STATE_TYPES, secret_fingerprint


@dataclass(frozen=True)
class SnapshotBase:
    cluster_id: str
    end_offset: int  # E: the snapshot holds the image as of E - 1
    epoch: int


@dataclass(frozen=True)
class ReplayInput:
    """What ``replay.engine.replay(log, base)`` takes: the log tail and the base events."""

    log: DataFrame
    base: DataFrame | None
    bases: tuple[SnapshotBase, ...] = ()


def choose_bases(first_offsets: dict[str, int], snapshots: DataFrame) -> list[SnapshotBase]:
    """Per cluster whose stored log starts after offset 0: the latest snapshot (highest end offset, then
    epoch) with end offset >= the first stored offset. ``first_offsets``: cluster → first log offset."""
    truncated = {c: first for c, first in first_offsets.items() if first > 0}
    if not truncated:
        return []
    ends = (snapshots.where(F.col("cluster_id").isin(*truncated))
            .select("cluster_id", "snapshot_end_offset", "snapshot_epoch").distinct().collect())
    chosen: dict[str, SnapshotBase] = {}
    for row in ends:
        cluster, end, epoch = row["cluster_id"], int(row["snapshot_end_offset"]), int(row["snapshot_epoch"])
        if end < truncated[cluster]:
            continue
        best = chosen.get(cluster)
        if best is None or (end, epoch) > (best.end_offset, best.epoch):
            chosen[cluster] = SnapshotBase(cluster, end, epoch)
    return [chosen[c] for c in sorted(chosen)]


def snapshot_events(snapshots: DataFrame, bases: list[SnapshotBase]) -> DataFrame:
    """The chosen snapshots' state records as base events visible at E - 1, in snapshot order."""
    spark = snapshots.sparkSession
    chosen = spark.createDataFrame([(b.cluster_id, b.end_offset, b.epoch) for b in bases],
                                   "cluster_id STRING, snapshot_end_offset BIGINT, snapshot_epoch INT")
    rows = snapshots.join(F.broadcast(chosen), ["cluster_id", "snapshot_end_offset", "snapshot_epoch"])
    at = (F.col("snapshot_end_offset") - 1).cast("long")
    return rows.where(F.col("record_type").isin(*STATE_TYPES) & ~F.coalesce(F.col("control"), F.lit(False))).select(
        "cluster_id", at.alias("offset"), at.alias("visible_offset"), F.lit(None).cast("long").alias("visible_time_ms"),
        "record_type", "schema_id", "payload", "payload_json", F.col("offset").cast("long").alias("seq"),
        secret_fingerprint(rows)).select(*BASE_COLUMNS)


def log_tail(log: DataFrame, bases: list[SnapshotBase]) -> DataFrame:
    """``log`` without the records a chosen snapshot covers (offset < E of their cluster)."""
    if not bases:
        return log
    spark = log.sparkSession
    starts = spark.createDataFrame([(b.cluster_id, b.end_offset) for b in bases], "cluster_id STRING, _start BIGINT")
    return (log.join(F.broadcast(starts), ["cluster_id"], "left")
            .where(F.col("_start").isNull() | (F.col("offset") >= F.col("_start"))).drop("_start"))


def snapshot_input(log: DataFrame, snapshots: DataFrame | None, first_offsets: dict[str, int]) -> ReplayInput:
    """The replay input of ``log``: from a snapshot for every cluster whose stored log was truncated."""
    bases = choose_bases(first_offsets, snapshots) if snapshots is not None else []
    if not bases:
        return ReplayInput(log, None)
    return ReplayInput(log_tail(log, bases), snapshot_events(snapshots, bases), tuple(bases))


def first_offsets(log: DataFrame) -> dict[str, tuple[int, int]]:
    """Cluster id → (first, last) stored offset, one small aggregate over the log."""
    rows = (log.where(F.col("offset").isNotNull()).groupBy("cluster_id")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last")).collect())
    return {row["cluster_id"]: (int(row["first"]), int(row["last"])) for row in rows}


__all__ = ["ReplayInput", "SnapshotBase", "choose_bases", "first_offsets", "log_tail", "snapshot_events",
           "snapshot_input"]
