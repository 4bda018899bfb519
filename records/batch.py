"""Reading record batches (magic v2) from a segment: framing, CRC-32C, decompression and records, streamed.

The layout follows Kafka's ``DefaultRecordBatch`` / ``DefaultRecord``: a 61-byte header, then records
(compressed as a whole when attributes bits 0-2 say so). The CRC-32C covers everything from the attributes
field to the end of the batch. Each job has its module: :mod:`records.framing` (where batches begin and end),
:mod:`records.compression`, :mod:`records.record_parsing` (the records inside) and
:mod:`records.batch_writer` (building batches); this module puts the first three together into batches.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal, TypeVar

import crc32c

# Re-exported for the packages that import them from here (simulator, kraft_replay, bench, lake tests).
from records.batch_writer import NewRecord, SegmentWriter, encode_batch, write_segments
from records.compression import COMPRESSION_MASK, Compression, decompress
from records.errors import CorruptBatchError, TruncatedTailWarning
from records.framing import (
    CONTROL_MASK,
    CRC_START,
    HEADER_AFTER_LENGTH,
    LOG_OVERHEAD,
    MAX_BATCH_BYTES,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchScan,
    IncompleteBatch,
    MalformedBatch,
)
from records.model import unfrozen_twin
from records.record_parsing import BatchRecord, parse_records

__all__ = [
    "MAX_BATCH_BYTES",
    "BatchIssue",
    "BatchIssueWarning",
    "BatchRecord",
    "Compression",
    "IssueKind",
    "NewRecord",
    "RecordBatch",
    "SegmentWriter",
    "encode_batch",
    "iter_batches",
    "write_segments",
]


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A validated v2 record batch as it sits in a segment file."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[BatchRecord, ...]
    position: int
    source: str

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int:
        """0 = create time, 1 = log-append time."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length


IssueKind = Literal["truncated-tail", "skipped-corrupt", "stopped-corrupt"]


@dataclass(frozen=True, slots=True)
class BatchIssue:
    """Something the reader did not turn into batches; every such case is reported, never dropped silently.

    ``kind`` is "truncated-tail" (partial batch ending the last segment, ignored like Kafka's recovery),
    "skipped-corrupt" (bad batch skipped by its length) or "stopped-corrupt" (cannot resynchronise).
    """

    kind: IssueKind
    source: str
    position: int
    base_offset: int | None
    message: str
    detail: CorruptBatchError | TruncatedTailWarning


# A cheap constructor for the reader's hot path; see records.model.unfrozen_twin.
_RecordBatchTwin = unfrozen_twin(RecordBatch)


class BatchIssueWarning(UserWarning):
    """Issued for a :class:`BatchIssue` when the caller passed no ``on_issue`` callback."""


def iter_batches(
    stream: BinaryIO,
    *,
    source: str,
    is_last_segment: bool = True,
    skip_corrupt: bool = False,
    on_issue: Callable[[BatchIssue], None] | None = None,
) -> Iterator[RecordBatch]:
    """Yield the batches of a segment, reading one batch at a time so memory does not grow with the file.

    A partial batch ending the last segment is reported as "truncated-tail" and ends the iteration, as
    Kafka's log recovery truncates it. Any other damage raises :class:`CorruptBatchError`, or with
    ``skip_corrupt`` is reported and skipped by its length (or ends the iteration when the length itself
    is impossible). Issues go to ``on_issue``, or are issued as :class:`BatchIssueWarning` without it.
    """
    return iter_decoded(stream, _decode_batch, source=source, is_last_segment=is_last_segment,
                        skip_corrupt=skip_corrupt, on_issue=on_issue)


_T = TypeVar("_T")


def iter_decoded(
    stream: BinaryIO,
    decode: Callable[[bytes, int, int, int, int, str], _T],
    *,
    source: str,
    is_last_segment: bool = True,
    skip_corrupt: bool = False,
    on_issue: Callable[[BatchIssue], None] | None = None,
) -> Iterator[_T]:
    """:func:`iter_batches` with the decoding of each complete batch left to ``decode``.

    ``decode(buf, off, base_offset, batch_length, position, source)`` gets the batch at
    ``buf[off:off + 12 + batch_length]`` and raises :class:`MalformedBatch` for a damaged one, which is then
    reported (or raised) exactly as :func:`iter_batches` does; :func:`records.decode.iter_batch_entries`
    uses it to build log entries without building the batches' :class:`BatchRecord` objects.
    """

    def report(kind: IssueKind, detail: CorruptBatchError | TruncatedTailWarning) -> None:
        issue = BatchIssue(kind, source, detail.position, detail.base_offset, str(detail), detail)
        if on_issue is None:
            warnings.warn(issue.message, BatchIssueWarning, stacklevel=3)
        else:
            on_issue(issue)

    scan = BatchScan(stream, source=source)
    frames = iter(scan)
    while True:
        try:
            frame = next(frames, None)
        except CorruptBatchError as corrupt:  # an impossible length: nothing after it can be found
            if not skip_corrupt:
                raise
            report("stopped-corrupt", corrupt)
            return
        if frame is None:
            break
        position, base_offset, length, buf, off = frame
        try:
            batch = decode(buf, off, base_offset, length, position, source)
        except MalformedBatch as exc:
            error = CorruptBatchError(str(exc), source=source, position=position, base_offset=base_offset)
            if not skip_corrupt:
                raise error from None
            report("skipped-corrupt", error)
        else:
            yield batch
    if scan.incomplete is not None:
        _cut_short(report, source, scan.incomplete, is_last_segment, skip_corrupt)


def _cut_short(
    report: Callable[[IssueKind, CorruptBatchError | TruncatedTailWarning], None],
    source: str,
    incomplete: IncompleteBatch,
    is_last_segment: bool,
    skip_corrupt: bool,
) -> None:
    """Handle a batch the file ends inside: normal crash debris in the last segment, corruption elsewhere."""
    if is_last_segment:
        report("truncated-tail", TruncatedTailWarning(source, incomplete.position, incomplete.base_offset,
                                                      incomplete.bytes_present, incomplete.bytes_expected))
        return
    expected = incomplete.bytes_expected
    wanted = f"at least {LOG_OVERHEAD}" if expected is None else str(expected)
    error = CorruptBatchError(
        f"batch cut short: the file ends {incomplete.bytes_present} bytes into a batch of {wanted} bytes, "
        "but only the last segment of a log may end inside a batch",
        source=source, position=incomplete.position, base_offset=incomplete.base_offset)
    if not skip_corrupt:
        raise error
    report("stopped-corrupt", error)


# The header fields after the length, as HEADER_AFTER_LENGTH unpacks them: partition leader epoch, magic, CRC,
# attributes, last offset delta, base timestamp, max timestamp, producer id, producer epoch, base sequence, count.
_BatchHeader = tuple[int, int, int, int, int, int, int, int, int, int, int]


def check_batch(buf: bytes, off: int, length: int) -> tuple[_BatchHeader, bytes, int, int]:
    """Validate the header and CRC of the batch at ``buf[off:off + 12 + length]`` and decompress its
    records: (the header fields after the length, the records' buffer, their start and end in it)."""
    header = HEADER_AFTER_LENGTH.unpack_from(buf, off + LOG_OVERHEAD)
    magic, crc, attributes, count = header[1], header[2], header[3], header[10]
    if magic != 2:
        raise MalformedBatch(f"unknown magic {magic}, expected 2")
    end = off + LOG_OVERHEAD + length
    computed = crc32c.crc32c(memoryview(buf)[off + LOG_OVERHEAD + CRC_START:end])
    if computed != crc:
        raise MalformedBatch(f"CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}")
    if count < 0:
        raise MalformedBatch(f"negative record count {count}")
    codec = attributes & COMPRESSION_MASK
    if not codec:  # Compression.NONE
        return header, buf, off + RECORD_BATCH_OVERHEAD, end
    data = decompress(codec, memoryview(buf)[off + RECORD_BATCH_OVERHEAD:end])
    return header, data, 0, len(data)


def _decode_batch(buf: bytes, off: int, base_offset: int, length: int, position: int,
                  source: str) -> RecordBatch:
    """Validate and decode the batch at ``buf[off:off + 12 + length]``."""
    header, data, start, end = check_batch(buf, off, length)
    (leader_epoch, magic, crc, attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
     producer_epoch, base_sequence, count) = header
    records = parse_records(data, start, end, count, base_offset, base_timestamp, position)
    batch = _RecordBatchTwin(base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta,
                             base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                             records, position, source)
    batch.__class__ = RecordBatch
    return batch
