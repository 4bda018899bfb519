"""Questions to the stored ``metadata_log`` about its offsets: the span of a cluster's log, and when an offset
was appended (what the state, report and summary print beside an offset)."""

from __future__ import annotations

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import METADATA_LOG
from replay.query.state import QueryError, history_table


def record_at(spark: SparkSession, lake: Lake, cluster: str, offset: int) -> Row | None:
    """``append_time_ms`` and ``record_type`` of the record at ``offset`` of the lake's ``metadata_log``; None when
    the offset is not in the stored log."""
    return (lake.read(spark, METADATA_LOG)
            .where((F.col("cluster_id") == cluster) & (F.col("offset") == offset))
            .select("append_time_ms", "record_type").first())


def offset_bounds(spark: SparkSession, lake: Lake, cluster: str) -> tuple[int, int]:
    """The first and last offset of a cluster's stored log."""
    log = history_table(spark, lake, METADATA_LOG, cluster)
    row = log.agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).first()
    if row is None or row["lo"] is None:
        raise QueryError(f"metadata_log holds no record of cluster {cluster}: run `kraft-replay ingest` first")
    return int(row["lo"]), int(row["hi"])


def append_times(spark: SparkSession, lake: Lake, cluster: str, offsets: list[int]) -> list[tuple[int, int]]:
    """``(offset, append_time_ms)`` of those of ``offsets`` that are in the log with a time."""
    rows = (history_table(spark, lake, METADATA_LOG, cluster).where(F.col("offset").isin(offsets))
            .select("offset", "append_time_ms").collect())
    return [(int(r["offset"]), int(r["append_time_ms"])) for r in rows if r["append_time_ms"] is not None]


__all__ = ["append_times", "offset_bounds", "record_at"]
