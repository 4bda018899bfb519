"""Offsets missing from `metadata_log`: the gaps an ingest reports (`lakehouse.ingest`)."""

from __future__ import annotations

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.lake import Lake, overlapping_files
from lakehouse.tables import METADATA_LOG, SNAPSHOTS, spark_schema

MAX_GAPS_REPORTED = 10_000


def find_gaps(spark: SparkSession, lake: Lake, cluster_id: str) -> list[tuple[int, int]]:
    """Ranges of offsets missing from `metadata_log` for one cluster (see `lakehouse.ingest._Ingest.report_gaps`)."""
    table = lake.delta_table(METADATA_LOG)
    uris = overlapping_files(table, {cluster_id: (0, 2**63 - 1)})
    if not uris:
        return []
    offsets = spark.read.schema(spark_schema(METADATA_LOG)).parquet(*uris).filter(
        F.col("cluster_id") == cluster_id).select("offset")
    stats = offsets.agg(F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"),
                        F.max("offset").alias("hi")).collect()[0]
    gaps: list[tuple[int, int]] = []
    if stats["n"] == 0:
        return gaps
    if stats["lo"] > 0:
        covered_from = _snapshot_reach(spark, lake, cluster_id, stats["lo"])
        if covered_from is not None:
            gaps.append((covered_from, stats["lo"] - 1))
    if stats["n"] != stats["hi"] - stats["lo"] + 1:
        window = Window.partitionBy("cluster_id").orderBy("offset")
        found = (offsets.withColumn("cluster_id", F.lit(cluster_id))
                 .withColumn("previous", F.lag("offset").over(window))
                 .filter(F.col("offset") - F.col("previous") > 1)
                 .select((F.col("previous") + 1).alias("first"), (F.col("offset") - 1).alias("last"))
                 .orderBy("first").limit(MAX_GAPS_REPORTED).collect())
        gaps += [(row["first"], row["last"]) for row in found]
    return gaps


def _snapshot_reach(spark: SparkSession, lake: Lake, cluster_id: str, first_offset: int) -> int | None:
    """Where a leading gap starts: None when a stored snapshot ends at or after the log's first offset."""
    if not lake.table_exists(SNAPSHOTS):
        return 0
    table = lake.delta_table(SNAPSHOTS)
    uris = overlapping_files(table, {cluster_id: (0, 2**63 - 1)})
    if not uris:
        return 0
    ends = [row[0] for row in spark.read.schema(spark_schema(SNAPSHOTS)).parquet(*uris)
            .filter(F.col("cluster_id") == cluster_id).select("snapshot_end_offset").distinct().collect()]
    if any(end >= first_offset for end in ends):
        return None
    return max(ends, default=0)

