"""The lake: Delta tables under one root, on one of two engines.

`Lake` is the one entry point for every table of kraft-replay (the ingest's tables here, the replay's
state tables later): where a table lives, reading it as of a version or a time, appending rows exactly once
under optimistic concurrency, and maintenance (history, compaction, vacuum, checkpoints).

Engines (``lakehouse.spark.lake_engine``):
- **delta-spark**, where its jars are (the default after `make setup`): Spark reads the tables with
  ``format("delta")`` (time travel, data skipping), and ``OPTIMIZE``, ``VACUUM`` and ``DESCRIBE HISTORY`` are
  Delta's SQL, its own engine committing them (``commitInfo.engineInfo`` names it).
- **delta-rs**, the fallback without jars (or ``KRAFT_REPLAY_ENGINE=delta-rs``): Spark reads Parquet files delta-rs
  lists, and delta-rs compacts and vacuums.
On either engine Spark writes every table's Parquet files and delta-rs commits them (``lakehouse.delta_commit``):
through delta-spark each commit was mostly fixed latency (issue 42).
The tables are the same Delta tables either way: either engine continues what the other wrote.

Concurrency: see ``lakehouse.lake_commit``. The class is assembled by job from ``lakehouse.lake_root`` (where
tables are, creating and loading them), ``lakehouse.lake_read`` (reading, time travel), ``lakehouse.lake_commit``
(every write, the optimistic-commit retry) and ``lakehouse.lake_maintenance`` (history, optimize, vacuum).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from lakehouse.lake_commit import MAX_COMMIT_ATTEMPTS, ROWS_PER_FILE, CommitOutcome, writer_id
from lakehouse.lake_maintenance import DEFAULT_RETENTION_HOURS, HistoryEntry, LakeMaintenance
from lakehouse.lake_read import LakeReads, overlapping_files
from lakehouse.lake_root import DATABASE, DEFAULT_LAKE, LAKE_ENV, LakeError, resolve_lake_root
from lakehouse.parquet_files import arrow_filesystem


class Lake(LakeReads, LakeMaintenance):
    """Delta tables under one root (a local directory or an object-store URI).

    ``engine``: delta-spark or delta-rs; by default the session's (``lakehouse.spark.lake_engine``)."""


def read_table(spark: SparkSession, lake: Lake | str | Path | None, name: str, version: int | None = None,
               timestamp: datetime | str | None = None) -> DataFrame:
    """A lake table as of a version or a timestamp: `read_table(spark, "./kraft-lake", "metadata_log", 3)`."""
    target = lake if isinstance(lake, Lake) else Lake(lake)
    return target.read(spark, name, version=version, timestamp=timestamp)


__all__ = ["DATABASE", "DEFAULT_LAKE", "DEFAULT_RETENTION_HOURS", "LAKE_ENV", "MAX_COMMIT_ATTEMPTS", "ROWS_PER_FILE",
           "CommitOutcome", "HistoryEntry", "Lake", "LakeError", "arrow_filesystem", "overlapping_files", "read_table",
           "resolve_lake_root", "writer_id"]
