"""Where record batches begin and end in a segment: Kafka's batch header and its one boundary scan.

Every reader of segment bytes (the full reader :func:`records.batch.iter_batches`, the Spark slice planner
and the live follower) walks batches through :class:`BatchScan`, so they agree on what a complete batch is,
what ends a scan and what is corrupt. The rules are Kafka's ``ByteBufferLogInputStream.nextBatchSize`` /
``FileLogInputStream.nextBatch`` (see :func:`check_batch_length`).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from records.errors import CorruptBatchError

__all__ = [
    "LOG_OVERHEAD",
    "MAX_BATCH_BYTES",
    "MIN_BATCH_LENGTH",
    "RECORD_BATCH_OVERHEAD",
    "BatchFrame",
    "BatchScan",
    "IncompleteBatch",
    "MalformedBatch",
    "check_batch_length",
]

# baseOffset int64, batchLength int32: the part of the header every message format version shares.
BATCH_PREFIX = struct.Struct(">qi")
# What follows batchLength: partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount.
HEADER_AFTER_LENGTH = struct.Struct(">ibIhiqqqhii")
#: Kafka's ``Records.LOG_OVERHEAD``: base offset and length, the bytes a batch's length does not count.
LOG_OVERHEAD = BATCH_PREFIX.size  # 12
#: Kafka's ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``: the v2 header, the smallest v2 batch there is.
RECORD_BATCH_OVERHEAD = LOG_OVERHEAD + HEADER_AFTER_LENGTH.size  # 61
#: The smallest batch length (bytes after the length field) a v2 batch can declare.
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49
#: Largest batch_length accepted (Kafka's ``maxMessageSize`` check); above is garbage, not a batch to allocate for.
MAX_BATCH_BYTES = 128 * 1024 * 1024
#: Kafka's ``DefaultRecordBatch.ATTRIBUTES_OFFSET`` relative to the end of the length field: the CRC-32C
#: covers the batch from here to its end.
CRC_START = 9

TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

_INT64 = struct.Struct(">q")
_READ_CHUNK = 1024 * 1024


class MalformedBatch(Exception):
    """Internal: the batch content is damaged; the reader adds file, position and base offset."""


class BatchFrame(NamedTuple):
    """One complete batch found by the scan; ``data[start:start + size]`` holds it when bodies are read."""

    position: int
    base_offset: int
    batch_length: int
    data: bytes
    start: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length


@dataclass(frozen=True, slots=True)
class IncompleteBatch:
    """The batch a scan ended inside: the stream holds ``bytes_present`` of its ``bytes_expected``.

    ``base_offset`` is None when fewer than 8 bytes are present, ``bytes_expected`` when fewer than
    ``LOG_OVERHEAD`` are (the length is not there yet).
    """

    position: int
    base_offset: int | None
    bytes_present: int
    bytes_expected: int | None


def check_batch_length(length: int, *, source: str, position: int, base_offset: int) -> int:
    """The size of the batch whose length field says ``length``, or :class:`CorruptBatchError`.

    Kafka's ``ByteBufferLogInputStream.nextBatchSize`` and ``FileLogInputStream.nextBatch`` throw
    ``CorruptRecordException`` for a length below the minimum record overhead (so a zero or negative
    length is corrupt, never the end of a log) or above the largest message size; the stricter v2 minimum,
    ``RECORD_BATCH_OVERHEAD``, is ``DefaultRecordBatch.ensureValid``'s, applied here at once since only v2
    batches are read. Nothing after a corrupt length can be found, so it ends every scan.
    """
    if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_BYTES:
        raise CorruptBatchError(
            f"impossible length {length} (a v2 batch has {MIN_BATCH_LENGTH} to {MAX_BATCH_BYTES} "
            "bytes after the length field); cannot find the next batch",
            source=source, position=position, base_offset=base_offset)
    return LOG_OVERHEAD + length


class BatchScan:
    """Kafka's log input stream over a segment: yields each complete batch as a :class:`BatchFrame`.

    The order of the checks is ``ByteBufferLogInputStream.nextBatchSize``'s: fewer than ``LOG_OVERHEAD``
    bytes left, or fewer than the batch's size, end the scan (a batch still being written, or a crash's
    partial tail) and leave it in :attr:`incomplete`; an impossible length raises
    :class:`CorruptBatchError` (:func:`check_batch_length`). Content (magic, CRC, records) is not checked.
    (``FileLogInputStream.nextBatch`` also ends a scan when fewer than ``HEADER_SIZE_UP_TO_MAGIC``, 17,
    bytes are left, before reading the length; here the length is checked once its 12 bytes are there.)

    With ``read_bodies`` (the reader) each frame's bytes are in ``frame.data``, read in few large chunks
    (at most one chunk plus one batch is held). Without it (slice planning, following a live segment)
    only the 12 header bytes of each batch are read and the rest skipped with a seek, from ``start`` to
    ``end`` (the end of the stream by default); ``frame.data`` is then empty.
    """

    def __init__(self, stream: BinaryIO, *, source: str, read_bodies: bool = True, start: int | None = None,
                 end: int | None = None) -> None:
        self.stream = stream
        self.source = source
        self.read_bodies = read_bodies
        self.start = start
        self.end = end
        #: Set when the scan ended inside a batch; None after a clean end.
        self.incomplete: IncompleteBatch | None = None
        #: Byte position after the last complete batch yielded so far.
        self.position = 0

    def __iter__(self) -> Iterator[BatchFrame]:
        return self._bodies() if self.read_bodies else self._headers()

    def _bodies(self) -> Iterator[BatchFrame]:
        stream, source = self.stream, self.source
        position = self.position = stream.tell() if stream.seekable() else 0
        buf, off = b"", 0  # unread bytes are buf[off:]
        while True:
            if len(buf) - off < RECORD_BATCH_OVERHEAD:
                buf, off = _refill(stream, buf, off, RECORD_BATCH_OVERHEAD)
            available = len(buf) - off
            if available == 0:
                return
            if available < LOG_OVERHEAD:
                base = _INT64.unpack_from(buf, off)[0] if available >= 8 else None
                self.incomplete = IncompleteBatch(position, base, available, None)
                return
            base_offset, length = BATCH_PREFIX.unpack_from(buf, off)
            size = check_batch_length(length, source=source, position=position, base_offset=base_offset)
            if available < size:
                buf, off = _refill(stream, buf, off, size)
                available = len(buf) - off
                if available < size:
                    self.incomplete = IncompleteBatch(position, base_offset, available, size)
                    return
            yield BatchFrame(position, base_offset, length, buf, off)
            off += size
            position = self.position = position + size

    def _headers(self) -> Iterator[BatchFrame]:
        stream, source = self.stream, self.source
        position = self.position = stream.tell() if self.start is None else self.start
        end = stream.seek(0, io.SEEK_END) if self.end is None else self.end
        while position < end:
            stream.seek(position)
            prefix = stream.read(min(LOG_OVERHEAD, end - position))
            if len(prefix) < LOG_OVERHEAD:
                base = _INT64.unpack_from(prefix)[0] if len(prefix) >= 8 else None
                self.incomplete = IncompleteBatch(position, base, len(prefix), None)
                return
            base_offset, length = BATCH_PREFIX.unpack(prefix)
            size = check_batch_length(length, source=source, position=position, base_offset=base_offset)
            if end - position < size:
                self.incomplete = IncompleteBatch(position, base_offset, end - position, size)
                return
            yield BatchFrame(position, base_offset, length, b"", 0)
            position = self.position = position + size


def _refill(stream: BinaryIO, buf: bytes, off: int, need: int) -> tuple[bytes, int]:
    """Keep the unread bytes and read until ``need`` are available or the stream ends; few large reads."""
    parts = [buf[off:]]
    have = len(parts[0])
    while have < need:
        chunk = stream.read(max(_READ_CHUNK, need - have))
        if not chunk:
            break
        parts.append(chunk)
        have += len(chunk)
    return b"".join(parts), 0
