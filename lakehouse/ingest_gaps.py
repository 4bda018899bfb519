"""Offsets missing from `metadata_log`: the gaps an ingest reports (`lakehouse.ingest`)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.lake import Lake, overlapping_files
from lakehouse.lake_read import cluster_column_range
from lakehouse.tables import METADATA_LOG, SNAPSHOTS, spark_schema

MAX_GAPS_REPORTED = 10_000


def find_gaps(spark: SparkSession, lake: Lake, cluster_id: str) -> list[tuple[int, int]]:
    """Ranges of offsets missing from `metadata_log` for one cluster (see `lakehouse.ingest._Ingest.report_gaps`).
    The count and bounds of its offsets come from the Delta log's file statistics where they tell (its files hold
    one cluster each, as an ingest writes them): a log without holes is then known to have none without a Spark
    job, and only a log with holes is read to find where they are."""
    known = cluster_column_range(lake.delta_table(METADATA_LOG), cluster_id, "offset")
    if known is None:
        offsets = _offsets(spark, lake, cluster_id)
        if offsets is None:
            return []
        stats = offsets.agg(F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"),
                            F.max("offset").alias("hi")).collect()[0]
        known = (int(stats["n"]), stats["lo"], stats["hi"])
    count, lo, hi = known
    gaps: list[tuple[int, int]] = []
    if count == 0:
        return gaps
    if lo > 0:
        covered_from = _snapshot_reach(spark, lake, cluster_id, lo)
        if covered_from is not None:
            gaps.append((covered_from, lo - 1))
    if count != hi - lo + 1:
        offsets = _offsets(spark, lake, cluster_id)
        assert offsets is not None  # the statistics counted rows of the cluster
        window = Window.partitionBy("cluster_id").orderBy("offset")
        found = (offsets.withColumn("cluster_id", F.lit(cluster_id))
                 .withColumn("previous", F.lag("offset").over(window))
                 .filter(F.col("offset") - F.col("previous") > 1)
                 .select((F.col("previous") + 1).alias("first"), (F.col("offset") - 1).alias("last"))
                 .orderBy("first").limit(MAX_GAPS_REPORTED).collect())
        gaps += [(row["first"], row["last"]) for row in found]
    return gaps


def _offsets(spark: SparkSession, lake: Lake, cluster_id: str) -> DataFrame | None:
    """The cluster's offsets in `metadata_log` (None: no file may hold them)."""
    uris = overlapping_files(lake.delta_table(METADATA_LOG), {cluster_id: (0, 2**63 - 1)})
    if not uris:
        return None
    return spark.read.schema(spark_schema(METADATA_LOG)).parquet(*uris).filter(
        F.col("cluster_id") == cluster_id).select("offset")


def _snapshot_reach(spark: SparkSession, lake: Lake, cluster_id: str, first_offset: int) -> int | None:
    """Where a leading gap starts: None when a stored snapshot ends at or after the log's first offset."""
    if not lake.table_exists(SNAPSHOTS):
        return 0
    table = lake.delta_table(SNAPSHOTS)
    known = cluster_column_range(table, cluster_id, "snapshot_end_offset")
    if known is not None:
        count, _, last_end = known
        ends = [last_end] if count else []
    else:
        uris = overlapping_files(table, {cluster_id: (0, 2**63 - 1)})
        if not uris:
            return 0
        ends = [row[0] for row in spark.read.schema(spark_schema(SNAPSHOTS)).parquet(*uris)
                .filter(F.col("cluster_id") == cluster_id).select("snapshot_end_offset").distinct().collect()]
    if any(end >= first_offset for end in ends):
        return None
    return max(ends, default=0)
