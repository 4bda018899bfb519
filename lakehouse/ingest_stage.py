"""Staging an ingest's input: each chunk decoded once into Parquet under `<lake>/_staging/<ingest id>/`, profiled.

Big segment inputs are decoded on the executors (`lakehouse.spark_decode.decode_segments`), small ones and the
other formats in the driver process, streamed in Arrow batches; every later step reads the staged files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.ingest_plan import IngestOptions, SegmentInput
from lakehouse.log_rows import (
    LOG_ROW_DDL,
    LOG_ROW_SCHEMA,
    ROW_KIND_ERROR,
    ROW_KIND_ISSUE,
    IssueRow,
    entry_row,
    issue_row,
    to_record_batches,
)
from lakehouse.parquet_files import arrow_filesystem
from lakehouse.spark_decode import SegmentFile, _has_context, decode_segments, decode_slice
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

    def stage_segments(self, segments: list[SegmentInput], cluster_id: str) -> DataFrame:
        target = self._staged_dir("segments")
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
        else:
            rows = (row for s in segments for row in decode_slice(
                str(s.path), s.start, s.end if s.end is not None else s.path.stat().st_size, s.is_last,
                cluster_id, self.options.skip_corrupt, self.fingerprint_key))
            write_rows(target, rows)
        return self.spark.read.schema(LOG_ROW_DDL).parquet(target)

    def stage_entries(self, path: Path, fmt: str, cluster_id: str | None) -> DataFrame:
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

        write_rows(target, rows())
        return self.spark.read.schema(LOG_ROW_DDL).parquet(target)


def write_rows(target: str, rows: Iterable[dict[str, object]]) -> None:
    """Driver-decoded rows to one Parquet file, batch by batch (memory stays bounded)."""
    filesystem, path = arrow_filesystem(target)
    filesystem.create_dir(path, recursive=True)
    with pq.ParquetWriter(f"{path}/part-00000.parquet", LOG_ROW_SCHEMA, filesystem=filesystem) as writer:
        for batch in to_record_batches(rows, 65536):
            writer.write_batch(batch)


@dataclass(frozen=True)
class StagedProfile:
    ranges: dict[str, tuple[int, int]]  # cluster id -> (first, last offset)
    records: int
    duplicates: bool  # some offset appears twice within the staged rows themselves
    issues: int


def staged_profile(staged: DataFrame, source: str) -> StagedProfile:
    """One aggregate over the staged rows: errors, offset ranges, in-source duplicates, issue count.

    A row without a cluster id, or an error row (the file could not be read), stops the ingest here,
    before anything of this chunk is committed.
    """
    rows = staged.groupBy("row_kind", "cluster_id").agg(
        F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"),
        F.count_distinct("offset").alias("distinct"), F.first("message", ignorenulls=True).alias("message"),
    ).collect()
    ranges: dict[str, tuple[int, int]] = {}
    records = issues = 0
    duplicates = False
    for row in rows:
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

