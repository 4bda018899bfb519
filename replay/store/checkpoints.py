"""What the replay checkpoints say about a lake: is its metadata_log already replayed?"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from replay.store.runs import CHECKPOINTS, HISTORY_TABLES, METADATA_LOG


def replayed_version(spark: SparkSession, lake: Lake) -> int | None:
    """The metadata_log version the lake's history tables were last replayed from, when it is the current one
    (a re-run with nothing new then skips the replay); None when a replay is needed."""
    if not all(lake.table_exists(name) for name in (METADATA_LOG, CHECKPOINTS, *HISTORY_TABLES)):
        return None
    current = int(lake.delta_table(METADATA_LOG).version())
    row = lake.read(spark, CHECKPOINTS).agg(F.max("metadata_log_version").alias("v")).first()
    done = None if row is None or row["v"] is None else int(row["v"])
    return current if done == current else None


__all__ = ["replayed_version"]
