"""Staging an ingest's input: each chunk decoded once into Parquet under `<lake>/_staging/<ingest id>/`, profiled.

Big segment inputs are decoded on the executors (`lakehouse.spark_decode.decode_segments`) and profiled by one
Spark aggregate over the staged files; small ones (one process a core: ``lakehouse.driver_decode``) and the other
formats are decoded in the driver, streamed in Arrow batches, and profiled as they pass (no Spark job: a small log's
first answer waits for none). Every later step reads the staged files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.driver_decode import BATCH_ROWS, decoded_batches
from lakehouse.ingest_plan import IngestOptions, SegmentInput
from lakehouse.log_rows import (
    LOG_ROW_DDL,
    LOG_ROW_SCHEMA,
    ROW_KIND_ERROR,
    ROW_KIND_ISSUE,
    ROW_KIND_RECORD,
    IssueRow,
    entry_row,
    issue_row,
    to_record_batches,
)
from lakehouse.parquet_files import arrow_filesystem
from lakehouse.spark_decode import SegmentFile, _has_context, decode_segments
from records.errors import RecordsError
from records.sources import ReadOptions, ReadReport, read_entries


class Staging:
    """The staging directory of one ingest run and the chunks decoded into it."""

    def __init__(self, spark: SparkSession, options: IngestOptions, staging: str,
                 fingerprint_key: bytes | None = None) -> None:
        self.spark = spark
        self.options = options
        self.staging = staging
        self.chunk = 0
        # every row is redacted as it is decoded (lakehouse.log_rows.entry_row): no staged file holds a secret
        self.fingerprint_key = fingerprint_key

    def _staged_dir(self, label: str) -> str:
        self.chunk += 1
        return f"{self.staging}/{label}-{self.chunk:05d}"

    def stage_segments(self, segments: list[SegmentInput], cluster_id: str) -> Staged:
        target = self._staged_dir("segments")
        source = str(segments[0].path)
        # Executors read whole files only (a follow round's byte range of a growing file stays in the driver).
        whole = all(s.start == 0 and (s.end is None or s.end == s.path.stat().st_size) for s in segments)
        if whole and sum(s.size() for s in segments) >= self.options.spark_decode_min_bytes:
            # absolute: executors of a cluster run in their own working directories
            files = [SegmentFile(str(s.path.absolute()), s.is_last) for s in segments]
            # Slices small enough that every core gets several (decoding is CPU-bound Python).
            cores = self.spark.sparkContext.defaultParallelism if _has_context(self.spark) else 2
            split = max(2**20, min(self.options.split_bytes, sum(s.size() for s in segments) // (4 * cores)))
            decoded = decode_segments(self.spark, files, cluster_id=cluster_id,
                                      skip_corrupt=self.options.skip_corrupt, split_bytes=split,
                                      fingerprint_key=self.fingerprint_key)
            decoded.write.mode("error").parquet(target)
            return self._staged(target, source, None)
        profile = RowProfile()
        write_batches(target, profile.counting(decoded_batches(segments, cluster_id, self.options.skip_corrupt,
                                                               self.fingerprint_key)))
        return self._staged(target, source, profile)

    def _staged(self, target: str, source: str, passed: RowProfile | None) -> Staged:
        """The staged rows, profiled as they were written when that was exact, else by one Spark aggregate."""
        rows = self.spark.read.schema(LOG_ROW_DDL).parquet(target)
        groups = passed.groups() if passed is not None else None
        if passed is None or groups is None:
            return Staged(rows, staged_profile(rows, source))
        return Staged(rows, replace(profile_of(groups, source), in_order=passed.in_order()))

    def stage_entries(self, path: Path, fmt: str, cluster_id: str | None) -> Staged:
        target = self._staged_dir("entries")
        report = ReadReport()
        options = ReadOptions(skip_corrupt=self.options.skip_corrupt, cluster_id=cluster_id)

        def rows() -> Iterator[dict[str, object]]:
            for entry in read_entries(path, options, report, fmt):
                row = entry_row(entry, cluster_id, self.fingerprint_key)
                if row["source_file"] is None:
                    row["source_file"] = str(path)
                yield row
            for issue in report.issues:
                yield issue_row(IssueRow(ROW_KIND_ISSUE, issue.source, issue.position, issue.base_offset,
                                         f"{issue.kind}: {issue.message}"), cluster_id)
            for note in report.notes:
                if not any(note == issue.message for issue in report.issues):
                    yield issue_row(IssueRow(ROW_KIND_ISSUE, str(path), None, None, f"skipped: {note}"),
                                    cluster_id)

        return self._staged(target, str(path), write_rows(target, rows()))


def write_rows(target: str, rows: Iterable[dict[str, object]]) -> RowProfile:
    """Driver-decoded rows to one Parquet file, batch by batch (memory stays bounded), profiled as they pass."""
    profile = RowProfile()
    write_batches(target, to_record_batches(profile.passing(rows), BATCH_ROWS))
    return profile


def write_batches(target: str, batches: Iterable[pa.RecordBatch]) -> None:
    """Driver-decoded rows, as Arrow batches, to one Parquet file in their order."""
    filesystem, path = arrow_filesystem(target)
    filesystem.create_dir(path, recursive=True)
    with pq.ParquetWriter(f"{path}/part-00000.parquet", LOG_ROW_SCHEMA, filesystem=filesystem) as writer:
        for batch in batches:
            writer.write_batch(batch)


@dataclass(frozen=True)
class StagedProfile:
    ranges: dict[str, tuple[int, int]]  # cluster id -> (first, last offset)
    records: int
    duplicates: bool  # some offset appears twice within the staged rows themselves
    issues: int
    in_order: bool = False  # the records are staged in metadata_log's order (cluster_id, offset)


def staged_profile(staged: DataFrame, source: str) -> StagedProfile:
    """The profile of staged rows by one aggregate over them (rows decoded by the executors)."""
    groups = staged.groupBy("row_kind", "cluster_id").agg(
        F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"),
        F.count_distinct("offset").alias("distinct"), F.first("message", ignorenulls=True).alias("message"),
    ).collect()
    return profile_of([row.asDict() for row in groups], source)


def profile_of(groups: Iterable[dict[str, Any]], source: str) -> StagedProfile:
    """Errors, offset ranges, in-source duplicates and issue count from the rows' groups by (row_kind, cluster_id):
    ``n`` rows, offsets ``lo``..``hi`` of which ``distinct`` differ, the first ``message``.

    A row without a cluster id, or an error row (the file could not be read), stops the ingest here,
    before anything of this chunk is committed.
    """
    ranges: dict[str, tuple[int, int]] = {}
    records = issues = 0
    duplicates = False
    for row in groups:
        if row["row_kind"] == ROW_KIND_ERROR:
            raise RecordsError(str(row["message"]))
        if row["row_kind"] == ROW_KIND_ISSUE:
            issues += row["n"]
            continue
        if row["cluster_id"] is None:
            raise RecordsError(f"{source}: {row['n']} records carry no cluster id (offsets {row['lo']}.."
                               f"{row['hi']}); pass --cluster-id")
        ranges[row["cluster_id"]] = (row["lo"], row["hi"])
        records += row["n"]
        duplicates = duplicates or row["distinct"] != row["n"]
    return StagedProfile(ranges, records, duplicates, issues)


PROFILED_COLUMNS = ("row_kind", "cluster_id", "offset", "message")  # what ``RowProfile`` reads of a row


class RowProfile:
    """The groups ``profile_of`` reads, counted from rows as the driver writes them. Exact while the records'
    offsets rise in each cluster (a log's do); after one that does not, ``groups()`` is None: the staged files are
    profiled by Spark instead (counting distinct offsets here would hold them all in memory)."""

    def __init__(self) -> None:
        self._groups: dict[tuple[object, object], dict[str, Any]] = {}
        self._rising = True

    def passing(self, rows: Iterable[dict[str, object]]) -> Iterator[dict[str, object]]:
        """``rows`` unchanged, counted as they pass."""
        for row in rows:
            self._count(row)
            yield row

    def counting(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches`` of rows unchanged, their rows counted as they pass."""
        for batch in batches:
            for row in batch.select(list(PROFILED_COLUMNS)).to_pylist():
                self._count(row)
            yield batch

    def _count(self, row: dict[str, object]) -> None:
        key = (row["row_kind"], row["cluster_id"])
        offset, message = row["offset"], row["message"]
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = {"row_kind": key[0], "cluster_id": key[1], "n": 0, "lo": None, "hi": None,
                                         "distinct": 0, "message": None}
        group["n"] += 1
        if group["message"] is None:
            group["message"] = message
        if offset is None or key[0] != ROW_KIND_RECORD:
            return  # the profile reads only the records' offsets
        if group["hi"] is not None and offset <= group["hi"]:
            self._rising = False
            return
        if group["lo"] is None:
            group["lo"] = offset
        group["hi"] = offset
        group["distinct"] += 1

    def in_order(self) -> bool:
        """The records passed in metadata_log's order (cluster_id, offset): one cluster's, their offsets rising."""
        return self._rising and len({cluster for kind, cluster in self._groups if kind == ROW_KIND_RECORD}) == 1

    def groups(self) -> list[dict[str, Any]] | None:
        return list(self._groups.values()) if self._rising else None


@dataclass(frozen=True)
class Staged:
    """One chunk's staged rows and their profile."""

    rows: DataFrame
    profile: StagedProfile
