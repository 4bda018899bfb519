"""The replay into the lake: ``metadata_log`` → the history tables, ``replay_anomalies`` and a checkpoint row.

Every table is written in one deterministic layout: sorted by its key and ``valid_from_offset`` into one
ordered partition (``orderBy(...).coalesce(1)``), at most ``ROWS_PER_FILE`` rows per file. The same input
therefore gives byte-identical Parquet data files whatever ``spark.sql.shuffle.partitions`` is (only the
generated file names differ).

Replaying one cluster (``cluster_id=...``) replaces only that cluster's rows: the rows of the other
clusters are read from the current version of each table and written back unchanged.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, MapType, StringType, StructField, StructType, TimestampType

from lakehouse.lake import Lake
from replay.engine import TABLE_KEYS, replay

METADATA_LOG = "metadata_log"
ANOMALIES = "replay_anomalies"
CHECKPOINTS = "replay_checkpoints"
HISTORY_TABLES: tuple[str, ...] = tuple(TABLE_KEYS)
ANOMALY_ORDER = ("cluster_id", "offset", "record_type", "kind", "reason")
ROWS_PER_FILE = 1_000_000
MAX_RECORDS_CONF = "spark.sql.files.maxRecordsPerFile"

CHECKPOINT_SCHEMA = StructType([
    StructField("cluster_id", StringType()),
    StructField("last_offset", LongType()),  # the last metadata_log offset of the cluster that was replayed
    StructField("metadata_log_version", LongType()),  # the Delta version of metadata_log that was read
    StructField("mode", StringType()),  # "full": every history table rebuilt from offset 0
    StructField("replayed_at", TimestampType()),
    StructField("tables", MapType(StringType(), LongType())),  # table → Delta version written
])


class ReplayError(ValueError):
    """The replay cannot run: no metadata_log, no records, an unknown cluster id."""


@dataclass(frozen=True)
class ReplaySummary:
    clusters: dict[str, int]  # cluster id → last offset replayed
    metadata_log_version: int
    rows: dict[str, int]  # table → rows (all clusters in the table)
    versions: dict[str, int]  # table → Delta version written
    anomalies: int
    seconds: float
    mode: str = "full"
    notes: list[str] = field(default_factory=list)

    @property
    def last_offset(self) -> int:
        return max(self.clusters.values())

    def lines(self) -> list[str]:
        clusters = ", ".join(f"{c} (offsets 0..{o})" for c, o in sorted(self.clusters.items()))
        out = [f"replayed {clusters} from metadata_log v{self.metadata_log_version} ({self.mode}) "
               f"in {self.seconds:.1f}s"]
        width = max(len(name) for name in self.rows)
        for name, rows in self.rows.items():
            out.append(f"  {name:<{width}}  {rows:>12,} rows  v{self.versions[name]}")
        out.append(f"  anomalies: {self.anomalies:,}")
        out.extend(f"  note: {note}" for note in self.notes)
        return out


@contextlib.contextmanager
def spark_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Set a runtime SQL setting for the block, then restore it (or unset it when it was unset)."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


def write_sorted(lake: Lake, df: DataFrame, name: str, order: tuple[str, ...]) -> int:
    """Overwrite ``name`` with ``df`` in the deterministic layout; returns the Delta version written."""
    ordered = df.orderBy(*order).coalesce(1)
    with spark_conf(df.sparkSession, MAX_RECORDS_CONF, str(ROWS_PER_FILE)):
        return lake.write(ordered, name, "overwrite")


def table_rows(lake: Lake, name: str) -> int:
    """Rows of the table's current version, from the Delta log's per-file statistics (no Spark job)."""
    files = pa.table(lake.delta_table(name).get_add_actions(flatten=True))
    if files.num_rows == 0:
        return 0
    return sum(n or 0 for n in files.column("num_records").to_pylist())


def _log_clusters(log: DataFrame) -> dict[str, int]:
    """Cluster id → last offset, one small aggregate over the log."""
    rows = log.where(F.col("offset").isNotNull()).groupBy("cluster_id").agg(F.max("offset").alias("last")).collect()
    return {row["cluster_id"]: int(row["last"]) for row in rows}


def _keep_other_clusters(spark: SparkSession, lake: Lake, name: str, new: DataFrame, cluster_id: str) -> DataFrame:
    """``new`` plus the current rows of every other cluster (for a one-cluster replay)."""
    if not lake.table_exists(name):
        return new
    table = lake.delta_table(name)
    current = lake.read(spark, name, version=table.version())
    if set(current.columns) != set(new.columns):
        return new  # a table of another layout (older release): rebuilt from this cluster only
    return new.unionByName(current.where(F.col("cluster_id") != cluster_id))


def run_replay(spark: SparkSession, lake: Lake, cluster_id: str | None = None) -> ReplaySummary:
    """Replay ``metadata_log`` (every cluster, or only ``cluster_id``) into the lake's history tables."""
    started = time.monotonic()
    if not lake.table_exists(METADATA_LOG):
        raise ReplayError(f"no metadata_log in the lake at {lake.root}: run `kraft-replay ingest` first")
    log_version = int(lake.delta_table(METADATA_LOG).version())
    log = lake.read(spark, METADATA_LOG, version=log_version)
    clusters = _log_clusters(log)
    if not clusters:
        raise ReplayError(f"metadata_log v{log_version} at {lake.root} holds no records")
    notes: list[str] = []
    if cluster_id is not None:
        if cluster_id not in clusters:
            raise ReplayError(f"no records of cluster {cluster_id!r} in metadata_log; clusters: "
                              f"{', '.join(sorted(clusters))}")
        clusters = {cluster_id: clusters[cluster_id]}
        log = log.where(F.col("cluster_id") == cluster_id)

    result = replay(log)
    outputs: dict[str, tuple[DataFrame, tuple[str, ...]]] = {
        name: (df, (*TABLE_KEYS[name], "valid_from_offset")) for name, df in result.tables.items()}
    outputs[ANOMALIES] = (result.anomalies, ANOMALY_ORDER)
    versions: dict[str, int] = {}
    for name, (df, order) in outputs.items():
        if cluster_id is not None:
            df = _keep_other_clusters(spark, lake, name, df, cluster_id)
        versions[name] = write_sorted(lake, df, name, order)

    replayed_at = datetime.now(UTC)
    checkpoint = spark.createDataFrame(
        [(c, last, log_version, "full", replayed_at, dict(versions)) for c, last in sorted(clusters.items())],
        CHECKPOINT_SCHEMA)
    versions[CHECKPOINTS] = lake.write(checkpoint, CHECKPOINTS, "append")
    rows = {name: table_rows(lake, name) for name in outputs}
    return ReplaySummary(clusters=clusters, metadata_log_version=log_version, rows=rows, versions=versions,
                         anomalies=rows[ANOMALIES], seconds=time.monotonic() - started, notes=notes)


__all__ = ["ANOMALIES", "CHECKPOINTS", "CHECKPOINT_SCHEMA", "HISTORY_TABLES", "METADATA_LOG", "ROWS_PER_FILE",
           "ReplayError", "ReplaySummary", "run_replay", "spark_conf", "table_rows", "write_sorted"]
