"""Every later snapshot is a check: the fold's image at its end offset - 1 must be the snapshot's image.

A node writes a snapshot of the image it holds; when the snapshot is the lake's, the log folded from the history's
base must give the same image at that offset, part by part. A difference means the node's image diverged from its
own log (or the fold from Kafka's rules): it is an anomaly in ``replay_anomalies`` (kind ``snapshot-differs``)
naming the snapshot, the image part (its history table) and the first differing key. The snapshot never replaces
the fold.

How, as set-based DataFrame steps: each checked snapshot is folded alone, as a cluster of its own (its records are
base events at its image offset: ``replay.store.snapshots``), by the same ``replay.fold.engine.replay``; every version
of that fold is the snapshot's image. The fold's versions valid at the image offset are the other side. Per history
table, the rows one side has and the other has not (``exceptAll`` both ways, on the columns Kafka's image holds) are
grouped by snapshot and table; only those few summaries reach the driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import (
    BROKER_HISTORY,
    CONTROLLER_HISTORY,
    HISTORY_KEYS,
    PRODUCER_ID_HISTORY,
    REPLAY_ANOMALIES,
    REPLAY_SCHEMAS,
    REPLICA_HISTORY,
    spark_schema,
)
from replay.core.coverage import SnapshotId
from replay.core.history import holds_at
from replay.core.shapes import RecordShapes
from replay.fold.engine import replay
from replay.reference.fold import VERSION_COLUMNS
from replay.store.snapshots import snapshot_events, snapshot_rows

CHECK_KIND = "snapshot-differs"  # replay_anomalies.kind of a snapshot whose image is not the fold's
CHECK_RECORD_TYPE = "snapshot"  # replay_anomalies.record_type of such a row
# The tables whose rows at an offset are Kafka's image. replica_history is read off partitions and brokers.
CHECKED_TABLES = tuple(name for name in HISTORY_KEYS if name != REPLICA_HISTORY)
# Columns of a history table that Kafka's image does not hold: ProducerIdsImage holds only nextProducerId (a
# snapshot's ProducerIdsRecord says broker -1, epoch -1).
NOT_IN_THE_IMAGE: dict[str, tuple[str, ...]] = {PRODUCER_ID_HISTORY: ("broker_id", "broker_epoch")}
# Lists Kafka's image holds as maps or sorted: a registration's listeners and supportedFeatures are maps by name
# (a snapshot writes them in the map's order, a broker registers them in its own), its directories are kept sorted.
UNORDERED: dict[str, tuple[str, ...]] = {BROKER_HISTORY: ("endpoints", "features", "log_dirs"),
                                         CONTROLLER_HISTORY: ("endpoints", "features")}
_SNAPSHOT = "_snapshot"
_SEPARATOR = "/"
_STEM_LENGTH = len(SnapshotId(0, 0).stem)


@dataclass(frozen=True)
class SnapshotChecks:
    """What checking the snapshots found: the anomalies and, per cluster, (checked, differing) snapshots."""

    anomalies: DataFrame
    counts: dict[str, tuple[int, int]]


def image_columns(table: str) -> tuple[str, ...]:
    """The columns of ``table`` that make an entity's state in Kafka's image (no interval, no cause)."""
    skipped = {*VERSION_COLUMNS, *NOT_IN_THE_IMAGE.get(table, ())}
    return tuple(name for name in REPLAY_SCHEMAS[table].names if name not in skipped)


def _image_state(rows: DataFrame, table: str) -> DataFrame:
    """``rows`` on the columns Kafka's image holds (``image_columns``), its unordered lists sorted."""
    unordered = UNORDERED.get(table, ())
    return rows.select(_SNAPSHOT, *[F.array_sort(name).alias(name) if name in unordered else F.col(name)
                                    for name in image_columns(table)])


def _checked_cluster() -> Column:
    """The id a checked snapshot is folded under: its cluster's, a separator and the snapshot's stem."""
    stem = F.format_string("%020d-%010d", F.col("snapshot_end_offset"), F.col("snapshot_epoch"))
    return F.concat(F.col("cluster_id"), F.lit(_SEPARATOR), stem)


def _split_checked(rows: DataFrame) -> DataFrame:
    """Rows of the snapshots' fold with ``cluster_id`` back to the cluster's and the stem in ``_snapshot``."""
    return (rows.withColumn(_SNAPSHOT, F.expr(f"right(cluster_id, {_STEM_LENGTH})"))
            .withColumn("cluster_id", F.expr(f"left(cluster_id, length(cluster_id) - {_STEM_LENGTH + 1})")))


def snapshot_checks(log: DataFrame, snapshots: DataFrame | None, tables: Mapping[str, DataFrame],
                    checks: Mapping[str, tuple[SnapshotId, ...]], shapes: RecordShapes) -> SnapshotChecks:
    """Check each cluster's ``checks`` against the fold's history ``tables`` (name → versions, every cluster).
    ``log``: the stored log (its schema only: the snapshots are folded without log records)."""
    spark = log.sparkSession
    pairs = [(cluster, snapshot) for cluster, found in sorted(checks.items()) for snapshot in found]
    empty = SnapshotChecks(spark.createDataFrame([], spark_schema(REPLAY_ANOMALIES)), {})
    if not pairs or snapshots is None:
        return empty
    events = snapshot_events(snapshot_rows(snapshots, pairs, _checked_cluster()))
    images = replay(log.where(F.lit(False)), events, shapes).tables
    at = spark.createDataFrame([(c, s.image_offset, s.stem) for c, s in pairs],
                               f"cluster_id STRING, _at BIGINT, {_SNAPSHOT} STRING")
    valid = holds_at(F.col("_at"))
    differences: DataFrame | None = None
    for table in CHECKED_TABLES:
        keys = [name for name in HISTORY_KEYS[table] if name != "cluster_id"]
        folded = _image_state(tables[table].join(F.broadcast(at), "cluster_id").where(valid), table)
        imaged = _image_state(_split_checked(images[table]), table)
        key = F.to_json(F.struct(*keys)) if keys else F.lit("{}")
        for side, rows in (("log", folded.exceptAll(imaged)), ("snapshot", imaged.exceptAll(folded))):
            found = rows.select("cluster_id", _SNAPSHOT, F.lit(table).alias("table"), F.lit(side).alias("side"),
                                key.alias("key"))
            differences = found if differences is None else differences.unionByName(found)
    assert differences is not None
    summary = (differences.groupBy("cluster_id", _SNAPSHOT, "table")
               .agg(F.min("key").alias("key"), F.count("*").alias("rows"),
                    F.min(F.when(F.col("side") == "log", F.col("key"))).alias("log_key"),
                    F.min(F.when(F.col("side") == "snapshot", F.col("key"))).alias("snapshot_key"))
               .orderBy("cluster_id", _SNAPSHOT, "table").collect())
    anomalies = []
    differing: dict[str, set[str]] = {}
    offsets = {(c, s.stem): s.image_offset for c, s in pairs}
    for row in summary:
        cluster, stem = row["cluster_id"], row[_SNAPSHOT]
        differing.setdefault(cluster, set()).add(stem)
        where = ("the values differ" if row["log_key"] == row["snapshot_key"] else
                 "only the fold has it" if row["log_key"] == row["key"] else "only the snapshot has it")
        anomalies.append((cluster, offsets[(cluster, stem)], CHECK_RECORD_TYPE, CHECK_KIND,
                          f"snapshot {stem} is not the log's fold at offset {offsets[(cluster, stem)]} in "
                          f"{row['table']}: {row['rows']} rows differ, the first at key {row['key']} ({where})"))
    counts = {cluster: (len(found), len(differing.get(cluster, ()))) for cluster, found in checks.items() if found}
    return SnapshotChecks(spark.createDataFrame(anomalies, spark_schema(REPLAY_ANOMALIES)), counts)


__all__ = ["CHECKED_TABLES", "CHECK_KIND", "CHECK_RECORD_TYPE", "NOT_IN_THE_IMAGE", "UNORDERED", "SnapshotChecks",
           "image_columns", "snapshot_checks"]
