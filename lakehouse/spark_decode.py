"""Decoding segments in parallel as Spark tasks, without reading them on the driver.

The driver only lists files. A first Spark stage scans batch headers (12 bytes a batch, the rest
skipped with a seek) to cut large segments into slices at batch boundaries; a second stage decodes
each slice in its own task and returns rows in the ``metadata_log`` shape through ``mapInArrow``
(Arrow batches, not a per-row Python UDF). Only DataFrame APIs are used, so it also runs over Spark
Connect. The files must be readable at the same path from the executors (local disk in
``local[*]``, a shared mount on a cluster).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakehouse.log_rows import (
    LOG_ROW_DDL,
    ROW_KIND_ERROR,
    ROW_KIND_ISSUE,
    IssueRow,
    entry_row,
    issue_row,
    to_record_batches,
)
from records.batch import BatchIssue, iter_batches
from records.decode import entries_from_batch
from records.errors import CorruptBatchError, RecordsError
from records.framing import BatchScan

DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
SLICE_DDL = "path STRING, start BIGINT, `end` BIGINT, is_last BOOLEAN, cluster_id STRING"


@dataclass(frozen=True, slots=True)
class SegmentFile:
    path: str
    is_last_segment: bool


class _Window(io.RawIOBase):
    """The bytes ``[start, end)`` of a file, as a stream whose ``tell()`` is the file position."""

    def __init__(self, path: str, start: int, end: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._file.seek(start)
        self._end = end

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        left = self._end - self._file.tell()
        if left <= 0:
            return 0
        view = memoryview(buffer)[: min(len(buffer), left)]
        return self._file.readinto(view)

    def close(self) -> None:
        self._file.close()
        super().close()


def slice_boundaries(path: str, split_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of about ``split_bytes`` that start and end on batch boundaries.

    Planning stops at a partial or corrupt batch (:class:`records.framing.BatchScan`'s rule); the last
    slice runs to the end of the file, so the decoding stage reads it and reports it as the reader does.
    """
    size = Path(path).stat().st_size
    if size <= split_bytes:
        return [(0, size)]
    ranges: list[tuple[int, int]] = []
    start = 0
    with open(path, "rb") as stream:
        try:
            for frame in BatchScan(stream, source=path, read_bodies=False, start=0, end=size):
                position = frame.position + frame.size
                if position - start >= split_bytes:
                    ranges.append((start, position))
                    start = position
        except CorruptBatchError:
            pass  # reported by the decoding stage of the last slice, which starts before it
    ranges.append((start, size))
    return ranges


def _plan(batches: Iterable[pa.RecordBatch], split_bytes: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for row in batch.to_pylist():
            ranges = slice_boundaries(row["path"], split_bytes)
            rows = [{"path": row["path"], "start": start, "end": end,
                     "is_last": bool(row["is_last"]) and index == len(ranges) - 1,
                     "cluster_id": row["cluster_id"]} for index, (start, end) in enumerate(ranges)]
            yield pa.RecordBatch.from_pylist(rows, schema=_SLICE_SCHEMA)


_SLICE_SCHEMA = pa.schema([("path", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                           ("is_last", pa.bool_()), ("cluster_id", pa.string())])


def decode_slice(path: str, start: int, end: int, is_last: bool, cluster_id: str | None,
                 skip_corrupt: bool, fingerprint_key: bytes | None = None) -> Iterator[dict[str, object]]:
    """Rows of one slice: its records (secrets redacted, fingerprinted with ``fingerprint_key``), then any issue;
    a fatal problem becomes one error row."""
    issues: list[BatchIssue] = []
    try:
        with _Window(path, start, end) as raw, io.BufferedReader(raw, 1 << 20) as stream:
            for batch in iter_batches(stream, source=path, is_last_segment=is_last, skip_corrupt=skip_corrupt,
                                      on_issue=issues.append):
                for entry in entries_from_batch(batch, cluster_id=cluster_id):
                    yield entry_row(entry, cluster_id, fingerprint_key)
    except RecordsError as exc:
        yield issue_row(IssueRow(ROW_KIND_ERROR, path, getattr(exc, "position", None),
                                 getattr(exc, "base_offset", None), str(exc)), cluster_id)
    for issue in issues:
        yield issue_row(IssueRow(ROW_KIND_ISSUE, issue.source, issue.position, issue.base_offset,
                                 f"{issue.kind}: {issue.message}"), cluster_id)


def _decode(batches: Iterable[pa.RecordBatch], skip_corrupt: bool,
            fingerprint_key: bytes | None) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for row in batch.to_pylist():
            yield from to_record_batches(decode_slice(row["path"], row["start"], row["end"], row["is_last"],
                                                      row["cluster_id"], skip_corrupt, fingerprint_key))


def decode_segments(spark: SparkSession, segments: list[SegmentFile], *, cluster_id: str | None,
                    skip_corrupt: bool = False, split_bytes: int = DEFAULT_SPLIT_BYTES,
                    fingerprint_key: bytes | None = None) -> DataFrame:
    """A DataFrame of ``metadata_log``-shaped rows (plus issue and error rows) decoded by executors, secrets
    redacted there (the key travels in the task's closure, never into a row)."""
    if not segments:
        raise RecordsError("no segments to decode")
    files = spark.createDataFrame([(s.path, s.is_last_segment, cluster_id) for s in segments],
                                  "path STRING, is_last BOOLEAN, cluster_id STRING")
    files = files.repartition(len(segments))
    slices = files.mapInArrow(lambda it: _plan(it, split_bytes), SLICE_DDL)
    slices = slices.repartition(max(len(segments), spark.sparkContext.defaultParallelism)
                                if _has_context(spark) else len(segments))
    return slices.mapInArrow(lambda it: _decode(it, skip_corrupt, fingerprint_key), LOG_ROW_DDL)


def _has_context(spark: SparkSession) -> bool:
    try:
        return spark.sparkContext is not None
    except Exception:  # Spark Connect sessions have no SparkContext
        return False
