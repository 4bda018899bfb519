"""Maintenance of the lake's tables: their history, compaction (optimize) and vacuum."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction
from pyspark.sql import SparkSession

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.delta_commit import commit_at_version, removed_file, stage_parquet
from lakehouse.lake_commit import (
    CONFLICT,
    INGEST_KEY,
    OPERATION_KEY,
    ROWS_KEY,
    ROWS_PER_FILE,
    Conflict,
    LakeCommits,
    user_metadata,
)
from lakehouse.lake_root import STAGING_DIR, LakeError
from lakehouse.spark_settings import listed_in_session_tasks, spark_conf
from lakehouse.tables import AVRO_SCHEMAS, SCHEMAS, SORT_COLUMNS, spark_schema

DEFAULT_RETENTION_HOURS = 7 * 24
_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


@dataclass(frozen=True)
class HistoryEntry:
    """One version of a table as `LakeMaintenance.history` lists it (both engines' histories in one shape)."""

    version: int
    timestamp: datetime
    operation: str
    rows_added: int | None
    files_added: int | None
    files_removed: int | None
    ingest_id: str | None
    engine_info: str | None = None  # commitInfo.engineInfo: the engine that made the commit


class LakeMaintenance(LakeCommits):
    """The maintenance half of `lakehouse.lake.Lake` (its compaction commits through the commit layer)."""

    def history(self, name: str, limit: int | None = None) -> list[HistoryEntry]:
        """Versions newest first, with the operation and how many rows each added. Read from the Delta log by
        delta-rs whichever engine committed: it keeps every commit's own keys, which delta-spark's ``DESCRIBE
        HISTORY`` drops from a delta-rs commit (the replay's)."""
        entries = []
        for commit in self.delta_table(name).history(limit=limit):
            commit = {**commit, **user_metadata(commit)}
            metrics = commit.get("operationMetrics") or {}
            rows = commit.get(ROWS_KEY)
            rows_added = int(rows) if rows is not None else _int_or_none(
                metrics.get("num_added_rows", metrics.get("numOutputRows")))
            entries.append(HistoryEntry(
                version=int(commit["version"]),
                timestamp=datetime.fromtimestamp(commit["timestamp"] / 1000, UTC),
                operation=str(commit.get(OPERATION_KEY) or commit.get("operation") or "?"),
                rows_added=rows_added,
                files_added=_int_or_none(metrics.get("num_added_files", metrics.get("numFilesAdded"))),
                files_removed=_int_or_none(metrics.get("num_removed_files", metrics.get("numFilesRemoved"))),
                ingest_id=commit.get(INGEST_KEY),
                engine_info=commit.get("engineInfo") or commit.get("clientVersion"),
            ))
        return entries

    def optimize(self, spark: SparkSession, names: list[str] | None = None,
                 small_file_bytes: int = 64 * 2**20) -> dict[str, dict[str, int]]:
        """Compact small files. Range-sorted tables are rewritten by Spark in key order, so each new
        file covers one contiguous key range and offset lookups still skip all other files; the
        rewrite commits as a `data_change=false` replace of exactly the files it read. The tables are
        independent: they are compacted at once (``lakehouse.concurrent_jobs``), each mostly a small job's latency."""
        delta_spark = self.delta_spark(spark)
        return run_concurrently(spark, {name: partial(self._optimize_table, spark, delta_spark, name, small_file_bytes)
                                        for name in names or self.table_names()})

    def _optimize_table(self, spark: SparkSession, delta_spark: SparkSession | None, name: str,
                        small_file_bytes: int) -> dict[str, int]:
        if delta_spark is not None:
            # Delta's own OPTIMIZE; the range-sorted tables clustered on their sort key, so offset lookups
            # still skip the other files
            zorder = [c for c in SORT_COLUMNS.get(name, ()) if c != "cluster_id"]
            sql = f"OPTIMIZE delta.`{self.path(name)}`" + (f" ZORDER BY ({', '.join(zorder)})" if zorder else "")
            metrics = delta_spark.sql(sql).collect()[0]["metrics"]
            result = {"files_removed": int(metrics["numFilesRemoved"]), "files_added": int(metrics["numFilesAdded"])}
        elif name in (AVRO_SCHEMAS,) or name not in SORT_COLUMNS:
            metrics = self.delta_table(name).optimize.compact(
                commit_properties=_props("optimize"))
            result = {"files_removed": int(metrics.get("numFilesRemoved", 0)),
                      "files_added": int(metrics.get("numFilesAdded", 0))}
        else:
            result = self._rewrite_sorted(spark, name, small_file_bytes)
        version = int(self.delta_table(name).version())
        self._checkpoint(name, version)
        return result

    def _rewrite_sorted(self, spark: SparkSession, name: str, small_file_bytes: int) -> dict[str, int]:
        root = self.path(name)

        def attempt(table: DeltaTable, _number: int) -> dict[str, int] | Conflict:
            files = pa.table(table.get_add_actions(flatten=True))
            small = [(path, size, rows) for path, size, rows in zip(
                files.column("path").to_pylist(), files.column("size_bytes").to_pylist(),
                files.column("num_records").to_pylist(), strict=True) if size < small_file_bytes]
            if len(small) < 2:
                return {"files_removed": 0, "files_added": 0}
            total_rows = sum(rows or 0 for _, _, rows in small)
            df = spark.read.schema(spark_schema(name)).parquet(*(f"{root}/{path}" for path, _, _ in small))
            sort = list(SORT_COLUMNS[name])
            df = df.repartitionByRange(max(1, -(-total_rows // ROWS_PER_FILE)), *sort).sortWithinPartitions(*sort)
            staging, adds = stage_parquet(df, root, "optimized")
            now_ms = int(time.time() * 1000)
            actions: list[AddAction | RemoveAction] = [replace(add, data_change=False) for add in adds]
            actions += [removed_file(path, size, now_ms, data_change=False) for path, size, _ in small]
            try:
                commit_at_version(table, actions, SCHEMAS[name], {OPERATION_KEY: "optimize", ROWS_KEY: "0"})
            except CommitFailedError:
                self._delete_dir(f"{root}/{staging}")
                return CONFLICT
            return {"files_removed": len(small), "files_added": len(adds)}

        return self.commit_with_retry(name, attempt, gave_up=f"{name}: optimize gave up: other writers keep committing",
                                      backoff_cap=None)

    def vacuum(self, retention_hours: float = DEFAULT_RETENTION_HOURS, dry_run: bool = False
               ) -> dict[str, list[str]]:
        """Delete files no version younger than the retention needs, and stale ingest scratch space.

        delta-rs never deletes files of the current version whatever the retention; files of older
        versions go only once they have been unreferenced for `retention_hours` (default 7 days), so time
        travel within that window keeps working.
        """
        if retention_hours < 0:
            raise LakeError("retention must be >= 0 hours")
        spark = self.delta_spark()
        if spark is not None:  # the tables at once, as optimize does
            deleted = run_concurrently(spark, {name: partial(self._spark_vacuum, spark, name, retention_hours, dry_run)
                                               for name in self.table_names()})
        else:
            deleted = {name: self.delta_table(name).vacuum(
                retention_hours=int(retention_hours), dry_run=dry_run, enforce_retention_duration=False,
                commit_properties=_props("vacuum")) for name in self.table_names()}
        deleted[STAGING_DIR] = self._vacuum_staging(retention_hours, dry_run)
        return deleted

    def _spark_vacuum(self, spark: SparkSession, name: str, retention_hours: float, dry_run: bool) -> list[str]:
        """Delta's VACUUM, run only on a table that has something to delete: the candidates are listed from the
        Delta log and the directory (delta-rs's dry run, no Spark job; VACUUM itself names no file and its
        listing job costs seconds per table). Retention under Delta's 7-day safety check is the user's explicit
        choice here, as with delta-rs."""
        candidates = self.delta_table(name).vacuum(retention_hours=int(retention_hours), dry_run=True,
                                                   enforce_retention_duration=False)
        if candidates and not dry_run:
            with spark_conf(spark, _RETENTION_CHECK, "false"), listed_in_session_tasks(spark):
                spark.sql(f"VACUUM delta.`{self.path(name)}` RETAIN {retention_hours} HOURS").collect()
        return sorted(candidates)

    def _vacuum_staging(self, retention_hours: float, dry_run: bool) -> list[str]:
        """Scratch directories of ingests that were killed (finished ingests delete their own)."""
        if "://" in self.root:
            return []
        base = Path(self.root) / STAGING_DIR
        if not base.is_dir():
            return []
        cutoff = time.time() - retention_hours * 3600
        old = [file_path for file_path in base.iterdir() if file_path.stat().st_mtime < cutoff]
        if not dry_run:
            for file_path in old:
                shutil.rmtree(file_path, ignore_errors=True)
        return [str(file_path) for file_path in old]

def _int_or_none(value: Any) -> int | None:
    return int(value) if value is not None else None


def _props(operation: str) -> Any:
    from deltalake import CommitProperties

    return CommitProperties(custom_metadata={OPERATION_KEY: operation})

