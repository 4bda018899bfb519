"""Kafka record batches (magic v2) at the byte level: a streaming reader, a writer and segment files.

The layout follows Kafka's ``DefaultRecordBatch`` / ``DefaultRecord``: a 61-byte header, then records
(compressed as a whole when attributes bits 0-2 say so). The CRC-32C covers everything from the attributes
field to the end of the batch. Varints are zig-zag encoded as in Kafka's ``ByteUtils``.
"""

from __future__ import annotations

import gzip
import struct
import threading
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from enum import IntEnum
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Literal, TypeVar

import cramjam
import crc32c
import lz4.frame
import zstandard

from records.errors import CorruptBatchError, TruncatedTailWarning
from records.model import LogEntry, LogEntryTwin, MetadataRecord, MetadataRecordTwin, unfrozen_twin

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

#: Largest batch_length accepted; anything above is treated as garbage, not as a batch to allocate for.
MAX_BATCH_BYTES = 128 * 1024 * 1024
#: Largest decompressed records section accepted, so a damaged or hostile batch cannot exhaust memory.
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

# baseOffset int64, batchLength int32: the part of the header every message format version shares.
_PREFIX = struct.Struct(">qi")
# What follows batchLength: partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount.
_REST = struct.Struct(">ibIhiqqqhii")
_PREFIX_SIZE = _PREFIX.size  # 12 (Kafka's LOG_OVERHEAD)
_HEADER_SIZE = _PREFIX_SIZE + _REST.size  # 61
_MIN_BATCH_LENGTH = _REST.size  # 49: batch_length counts the bytes after the length field
_CRC_START = 9  # attributes, relative to the end of the length field
_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key, value, header count

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, minimum compatible version
_XERIAL_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size, what Kafka writes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_READ_CHUNK = 1024 * 1024
_ZSTD_INPUT_CHUNK = 4096  # bounds the output of one decompress call (zstd can expand ~40000x)
_LZ4_FIRST_OUTPUT = 64 * 1024  # first output room for an lz4 batch; grows 4x as needed
_ZSTD = threading.local()  # per-thread reusable ZstdDecompressor


class Compression(IntEnum):
    """Codec ids of attributes bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# The reader compares plain ints: comparing with an IntEnum member, or calling the enum, costs more.
_CODEC_NAMES = {int(codec): codec.name.lower() for codec in Compression}
_SNAPPY, _LZ4, _ZSTD_CODEC = int(Compression.SNAPPY), int(Compression.LZ4), int(Compression.ZSTD)
_lz4_context = lz4.frame.create_decompression_context
_lz4_chunk = lz4.frame.decompress_chunk


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One record of a batch with absolute offset and timestamp (base + delta)."""

    offset: int
    timestamp: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    position: int  # byte position of the enclosing batch, for error messages


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
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int:
        """0 = create time, 1 = log-append time."""
        return 1 if self.attributes & _TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size_in_bytes(self) -> int:
        return _PREFIX_SIZE + self.batch_length


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


# Cheap constructors for the reader's hot path; see records.model.unfrozen_twin.
_BatchRecordTwin = unfrozen_twin(BatchRecord)
_RecordBatchTwin = unfrozen_twin(RecordBatch)


# _parse_records builds these two slot by slot (cheaper than calling even the twin); it must set them all.
if ([f.name for f in fields(LogEntry)] != [
        "offset", "record", "batch_base_offset", "raft_leader_epoch", "append_time_ms", "cluster_id",
        "read_mode", "source", "position", "notes"]
        or [f.name for f in fields(MetadataRecord)] != ["type_name", "version", "data"]):
    raise ImportError("records.batch._parse_records must set every field of LogEntry and MetadataRecord")


class BatchIssueWarning(UserWarning):
    """Issued for a :class:`BatchIssue` when the caller passed no ``on_issue`` callback."""


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to write with :func:`encode_batch`; its offset comes from its place in the batch."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


class _Malformed(Exception):
    """Internal: the batch content is damaged; the reader adds file, position and base offset."""


# --------------------------------------------------------------------------------------------- reading


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
    return _iter_frames(stream, _decode_batch, source=source, is_last_segment=is_last_segment,
                       skip_corrupt=skip_corrupt, on_issue=on_issue)


_T = TypeVar("_T")


def _iter_frames(
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
    ``buf[off:off + 12 + batch_length]`` and raises :class:`_Malformed` for a damaged one, which is then
    reported (or raised) exactly as :func:`iter_batches` does; :func:`records.decode.iter_batch_entries`
    uses it to build log entries without building the batches' :class:`BatchRecord` objects.
    """

    def report(kind: IssueKind, detail: CorruptBatchError | TruncatedTailWarning) -> None:
        issue = BatchIssue(kind, source, detail.position, detail.base_offset, str(detail), detail)
        if on_issue is None:
            warnings.warn(issue.message, BatchIssueWarning, stacklevel=3)
        else:
            on_issue(issue)

    position = stream.tell() if stream.seekable() else 0
    buf, off = b"", 0  # unread bytes are buf[off:]; at most one chunk plus one batch is held
    while True:
        if len(buf) - off < _HEADER_SIZE:
            buf, off = _refill(stream, buf, off, _HEADER_SIZE)
        available = len(buf) - off
        if available == 0:
            return
        if available < _PREFIX_SIZE:
            base = _INT64.unpack_from(buf, off)[0] if available >= 8 else None
            _cut_short(report, source, position, base, available, None, is_last_segment, skip_corrupt)
            return
        base_offset, length = _PREFIX.unpack_from(buf, off)
        if not _MIN_BATCH_LENGTH <= length <= MAX_BATCH_BYTES:
            error = CorruptBatchError(
                f"impossible length {length} (a v2 batch has {_MIN_BATCH_LENGTH} to {MAX_BATCH_BYTES} "
                "bytes after the length field); cannot find the next batch",
                source=source, position=position, base_offset=base_offset)
            if not skip_corrupt:
                raise error
            report("stopped-corrupt", error)
            return
        size = _PREFIX_SIZE + length
        if available < size:
            buf, off = _refill(stream, buf, off, size)
            available = len(buf) - off
            if available < size:
                _cut_short(report, source, position, base_offset, available, size, is_last_segment,
                           skip_corrupt)
                return
        try:
            batch = decode(buf, off, base_offset, length, position, source)
        except _Malformed as exc:
            error = CorruptBatchError(str(exc), source=source, position=position, base_offset=base_offset)
            if not skip_corrupt:
                raise error from None
            report("skipped-corrupt", error)
        else:
            yield batch
        off += size
        position += size


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


def _cut_short(
    report: Callable[[IssueKind, CorruptBatchError | TruncatedTailWarning], None],
    source: str,
    position: int,
    base_offset: int | None,
    present: int,
    expected: int | None,
    is_last_segment: bool,
    skip_corrupt: bool,
) -> None:
    """Handle a batch the file ends inside: normal crash debris in the last segment, corruption elsewhere."""
    if is_last_segment:
        report("truncated-tail", TruncatedTailWarning(source, position, base_offset, present, expected))
        return
    wanted = f"at least {_PREFIX_SIZE}" if expected is None else str(expected)
    error = CorruptBatchError(
        f"batch cut short: the file ends {present} bytes into a batch of {wanted} bytes, "
        "but only the last segment of a log may end inside a batch",
        source=source, position=position, base_offset=base_offset)
    if not skip_corrupt:
        raise error
    report("stopped-corrupt", error)


def _check_batch(buf: bytes, off: int, length: int) -> tuple[tuple[int, ...], bytes, int, int]:
    """Validate the header and CRC of the batch at ``buf[off:off + 12 + length]`` and decompress its
    records: (the header fields after the length, the records' buffer, their start and end in it)."""
    header = _REST.unpack_from(buf, off + _PREFIX_SIZE)
    magic, crc, attributes, count = header[1], header[2], header[3], header[10]
    if magic != 2:
        raise _Malformed(f"unknown magic {magic}, expected 2")
    end = off + _PREFIX_SIZE + length
    computed = crc32c.crc32c(memoryview(buf)[off + _PREFIX_SIZE + _CRC_START:end])
    if computed != crc:
        raise _Malformed(f"CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}")
    if count < 0:
        raise _Malformed(f"negative record count {count}")
    codec = attributes & _COMPRESSION_MASK
    if not codec:  # Compression.NONE
        return header, buf, off + _HEADER_SIZE, end
    data = _decompress(codec, memoryview(buf)[off + _HEADER_SIZE:end])
    return header, data, 0, len(data)


def _decode_batch(buf: bytes, off: int, base_offset: int, length: int, position: int,
                  source: str) -> RecordBatch:
    """Validate and decode the batch at ``buf[off:off + 12 + length]``."""
    header, data, start, end = _check_batch(buf, off, length)
    (leader_epoch, magic, crc, attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
     producer_epoch, base_sequence, count) = header
    records = _parse_records(data, start, end, count, base_offset, base_timestamp, position)
    batch = _RecordBatchTwin(base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta,
                             base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                             records, position, source)
    batch.__class__ = RecordBatch
    return batch


def _decompress(codec: int, data: memoryview) -> bytes:
    """Decompress the records section as Kafka writes it, bounded by MAX_DECOMPRESSED_BYTES."""
    name = _CODEC_NAMES.get(codec)  # not Compression(codec).name: an enum call costs ~2 us per batch
    if name is None:
        raise _Malformed(f"unknown compression codec {codec} in attributes, expected 0 to 4")
    try:
        if codec == _LZ4:
            out = _unlz4(data)
        elif codec == _ZSTD_CODEC:
            out = _unzstd(data)
        elif codec == _SNAPPY:
            out = _unsnappy(data)
        else:
            out = _gunzip(data)
    except _Malformed:
        raise
    except Exception as exc:  # any library failure on these bytes means the batch is damaged
        raise _Malformed(f"{name} records cannot be decompressed: {exc}") from None
    return out


def _too_large() -> _Malformed:
    return _Malformed(f"records decompress to more than {MAX_DECOMPRESSED_BYTES} bytes")


def _gunzip(data: memoryview) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, MAX_DECOMPRESSED_BYTES)
    if inflater.unconsumed_tail:
        raise _too_large()
    if not inflater.eof:
        raise _Malformed("gzip records end before the end of the gzip stream")
    if inflater.unused_data:
        raise _Malformed(f"{len(inflater.unused_data)} bytes after the gzip stream")
    return out


def _unsnappy_block(block: bytes | memoryview, budget: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > budget:
        raise _too_large()
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: memoryview) -> bytes:
    """snappy-java's stream framing (magic, version, compat, then length-prefixed blocks) or a raw block."""
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _unsnappy_block(data, MAX_DECOMPRESSED_BYTES)
    if len(data) < _XERIAL_HEADER.size:
        raise _Malformed("snappy stream header cut short")
    parts: list[bytes] = []
    total = 0
    i = _XERIAL_HEADER.size
    while i < len(data):
        if i + 4 > len(data):
            raise _Malformed("snappy block length cut short")
        size = _INT32.unpack_from(data, i)[0]
        i += 4
        if size < 0 or i + size > len(data):
            raise _Malformed(f"snappy block of {size} bytes runs past the end of the batch")
        part = _unsnappy_block(data[i:i + size], MAX_DECOMPRESSED_BYTES - total)
        parts.append(part)
        total += len(part)
        i += size
    return b"".join(parts)


def _unlz4(data: memoryview) -> bytes:
    """Output room grows from a small first guess: python-lz4 allocates all of ``max_length`` up front,
    and 256 MiB per batch cost ~14 us of mmap and page faults for a batch that decompresses in 1 us.

    What ``lz4.frame.LZ4FrameDecompressor`` does, on its C functions directly: the class's Python layer
    cost more than decompressing a metadata batch. ``pending[used:]`` is the class's unconsumed input
    while the frame goes on, its ``unused_data`` once the frame has ended."""
    context = _lz4_context()
    room = min(max(_LZ4_FIRST_OUTPUT, 8 * len(data)), MAX_DECOMPRESSED_BYTES)
    pending = bytes(data)
    out, used, eof = _lz4_chunk(context, pending, max_length=room)
    if not eof and used < len(pending):  # output room used up: more to come
        parts = [out]
        total = len(out)
        while True:
            pending = pending[used:]
            if total >= MAX_DECOMPRESSED_BYTES:
                raise _too_large()
            room = min(4 * room, MAX_DECOMPRESSED_BYTES - total)
            part, used, eof = _lz4_chunk(context, pending, max_length=room)
            parts.append(part)
            total += len(part)
            if eof or used >= len(pending):
                break
        out = b"".join(parts)
    if not eof:
        raise _Malformed("lz4 records end before the end of the lz4 frame")
    if used < len(pending):
        raise _Malformed(f"{len(pending) - used} bytes after the lz4 frame")
    return out


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """One per thread: creating one costs ~8 us, more than decompressing a metadata batch, and an
    instance must not be used by two threads at once."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def _unzstd(data: memoryview) -> bytes:
    """Streaming, since Kafka's zstd stream does not always record the content size."""
    decompressor = _zstd_decompressor().decompressobj()
    parts: list[bytes] = []
    total = 0
    for i in range(0, len(data), _ZSTD_INPUT_CHUNK):
        part = decompressor.decompress(data[i:i + _ZSTD_INPUT_CHUNK])
        total += len(part)
        if total > MAX_DECOMPRESSED_BYTES:
            raise _too_large()
        parts.append(part)
        if decompressor.eof:
            if i + _ZSTD_INPUT_CHUNK < len(data) or decompressor.unused_data:
                raise _Malformed("bytes after the zstd frame")
            break
    if not decompressor.eof:
        raise _Malformed("zstd records end before the end of the zstd frame")
    return b"".join(parts)


def _varint(buf: bytes, i: int, max_shift: int = 28) -> tuple[int, int]:
    """Kafka's zig-zag varint (``max_shift`` 28) or varlong (63) at ``buf[i]``: (value, next index)."""
    b = buf[i]
    i += 1
    raw = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > max_shift:
            raise _Malformed("varint longer than Kafka allows")
        b = buf[i]
        i += 1
        raw |= (b & 0x7F) << shift
        shift += 7
    return (raw >> 1) ^ -(raw & 1), i


#: What :func:`_parse_records` needs to build log entries instead of batch records: the value plans and
#: the checked value decoder of :mod:`records.decode`, and the batch's leader epoch, cluster id and source.
_EntryContext = tuple[dict[bytes, Any], Callable[[bytes], Any], int, str | None, str]


def _zigzag_table() -> tuple[int, ...]:
    """Decoded zig-zag varints of one byte ``b < 0x80``, at ``b``, and of two bytes ``b >= 0x80, c < 0x80``,
    at ``b + (c << 7)``: raw value ``(b & 0x7F) | (c << 7)`` plus 128. A tuple lookup costs less than the
    four integer operations of decoding, in the loop below (tuple indexing is specialised by CPython)."""
    raws = [*range(128), *range(128 * 128)]
    return tuple((raw >> 1) ^ -(raw & 1) for raw in raws)


_ZIGZAG = _zigzag_table()


def _parse_records(buf: bytes, i: int, end: int, count: int, base_offset: int, base_timestamp: int,
                   position: int, entries: _EntryContext | None = None) -> Sequence[Any]:
    """Decode ``count`` records from ``buf[i:end]``, which they must fill exactly.

    This loop is the reader's hot path: one- and two-byte varints (nearly all of them) are decoded
    inline, and records are built through the unfrozen twin of :class:`BatchRecord` (see
    :func:`records.model.unfrozen_twin`), which costs a third of the frozen constructor.

    With ``entries`` (only for batches of metadata records, not control ones) it returns instead the
    list of :class:`LogEntry` that :func:`records.decode.entries_from_batch` makes of these records,
    without building the records: each value is decoded as soon as its record is framed. The framing
    checks and their errors are the same in both modes; decoding a value never raises.
    """
    if count > (end - i) // _MIN_RECORD_BYTES:
        raise _Malformed(f"header declares {count} records but only {end - i} bytes of records follow")
    varint = _varint
    zigzag = _ZIGZAG
    twin = _BatchRecordTwin
    frozen = BatchRecord
    no_headers: tuple[tuple[str, bytes | None], ...] = ()
    records: list[Any] = []
    append = records.append
    if entries is not None:
        plans, checked, leader_epoch, cluster_id, source = entries
        new = object.__new__
        entry_twin, entry_frozen = LogEntryTwin, LogEntry
        record_twin, record_frozen = MetadataRecordTwin, MetadataRecord
    for n in range(count):
        try:
            if i >= end:
                raise _Malformed(f"header declares {count} records but the batch ends after {n}")
            b = buf[i]
            if b < 0x80:
                length = zigzag[b]
                i += 1
            else:
                c = buf[i + 1]
                if c < 0x80:
                    length = zigzag[b + (c << 7)]
                    i += 2
                else:
                    length, i = varint(buf, i)
            record_end = i + length
            if length < _MIN_RECORD_BYTES - 1 or record_end > end:
                raise _Malformed(f"record {n} declares length {length}, impossible in this batch")
            attributes_at = i  # read only for a BatchRecord: log entries do not keep it
            b = buf[i + 1]
            if b < 0x80:
                timestamp_delta = zigzag[b]
                i += 2
            else:
                c = buf[i + 2]
                if c < 0x80:
                    timestamp_delta = zigzag[b + (c << 7)]
                    i += 3
                else:
                    timestamp_delta, i = varint(buf, i + 1, 63)
            b = buf[i]
            if b < 0x80:
                offset_delta = zigzag[b]
                i += 1
            else:
                c = buf[i + 1]
                if c < 0x80:  # offsets 64 to 8191 of big batches
                    offset_delta = zigzag[b + (c << 7)]
                    i += 2
                else:
                    offset_delta, i = varint(buf, i)
            b = buf[i]
            if b == 1:  # -1: no key, what metadata records have
                key = None
                i += 1
            else:
                if b < 0x80:
                    key_length = zigzag[b]
                    i += 1
                else:
                    key_length, i = varint(buf, i)
                if key_length < 0:
                    if key_length != -1:
                        raise _Malformed(f"record {n} has key length {key_length}")
                    key = None
                else:
                    if i + key_length > record_end:
                        raise _Malformed(f"record {n}: key of {key_length} bytes runs past the record")
                    key = buf[i:i + key_length]
                    i += key_length
            b = buf[i]
            if b < 0x80:
                value_length = zigzag[b]
                i += 1
            else:
                c = buf[i + 1]
                if c < 0x80:
                    value_length = zigzag[b + (c << 7)]
                    i += 2
                else:
                    value_length, i = varint(buf, i)
            if value_length < 0:
                if value_length != -1:
                    raise _Malformed(f"record {n} has value length {value_length}")
                value = None
            else:
                if i + value_length > record_end:
                    raise _Malformed(f"record {n}: value of {value_length} bytes runs past the record")
                value = buf[i:i + value_length]
                i += value_length
            if buf[i] == 0:  # no headers, the common case
                headers = no_headers
                i += 1
            else:
                headers, i = _parse_headers(buf, i, record_end, n)
        except IndexError:
            raise _Malformed(f"record {n} runs past the end of the batch") from None
        if i != record_end:
            raise _Malformed(f"record {n} declares {length} bytes after its length but its fields take "
                             f"{length + i - record_end}")
        if entries is None:
            record = twin(base_offset + offset_delta, base_timestamp + timestamp_delta, buf[attributes_at],
                          key, value, headers, position)
            record.__class__ = frozen
            append(record)
            continue
        # A log entry: records.decode.entries_from_batch inlined, its objects built slot by slot.
        if value is None:
            value = b""
            data = None
        else:
            try:
                name, version, reader, mode, notes = plans[value[:3]]
            except KeyError:
                data = None
            else:
                data = reader(value)
        if data is not None:
            decoded = new(record_twin)
            decoded.type_name = name
            decoded.version = version
            decoded.data = data
            decoded.__class__ = record_frozen
        else:
            decoded, mode, notes = checked(value)
        entry = new(entry_twin)
        entry.offset = base_offset + offset_delta
        entry.record = decoded
        entry.batch_base_offset = base_offset
        entry.raft_leader_epoch = leader_epoch
        entry.append_time_ms = base_timestamp + timestamp_delta
        entry.cluster_id = cluster_id
        entry.read_mode = mode
        entry.source = source
        entry.position = position
        entry.notes = notes
        entry.__class__ = entry_frozen
        append(entry)
    if i != end:
        raise _Malformed(f"{end - i} bytes left over after the {count} records the header declares")
    return records if entries is not None else tuple(records)


def _parse_headers(buf: bytes, i: int, record_end: int,
                   n: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The headers of record ``n`` starting at their count; (headers, next index)."""
    varint = _varint
    header_count, i = varint(buf, i)
    if header_count == 0:
        return (), i
    if header_count < 0 or header_count > (record_end - i) // 2:
        raise _Malformed(f"record {n} declares {header_count} headers, impossible in its length")
    parsed = []
    for _ in range(header_count):
        header_key_length, i = varint(buf, i)
        if header_key_length < 0 or i + header_key_length > record_end:
            raise _Malformed(f"record {n}: header key length {header_key_length} is impossible")
        try:
            header_key = buf[i:i + header_key_length].decode()
        except UnicodeDecodeError:
            raise _Malformed(f"record {n}: header key is not UTF-8") from None
        i += header_key_length
        header_value_length, i = varint(buf, i)
        if header_value_length == -1:
            header_value = None
        elif header_value_length < 0 or i + header_value_length > record_end:
            raise _Malformed(f"record {n}: header value length {header_value_length} is impossible")
        else:
            header_value = buf[i:i + header_value_length]
            i += header_value_length
        parsed.append((header_key, header_value))
    return tuple(parsed), i


# --------------------------------------------------------------------------------------------- writing


def _put_varint(out: bytearray, value: int) -> None:
    """Append Kafka's zig-zag varint/varlong encoding of ``value`` (a signed 64-bit int)."""
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _put_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _put_varint(out, -1)
    else:
        _put_varint(out, len(data))
        out += data


def _encode_records(records: Sequence[NewRecord], base_timestamp: int) -> bytearray:
    body = bytearray()
    record = bytearray()
    for offset_delta, new in enumerate(records):
        record.clear()
        record.append(0)  # record attributes: unused by Kafka
        _put_varint(record, new.timestamp - base_timestamp)
        _put_varint(record, offset_delta)
        _put_bytes(record, new.key)
        _put_bytes(record, new.value)
        _put_varint(record, len(new.headers))
        for header_key, header_value in new.headers:
            _put_bytes(record, header_key.encode())
            _put_bytes(record, header_value)
        _put_varint(body, len(record))
        body += record
    return body


def _compress(compression: Compression, data: bytes) -> bytes:
    """Compress the records section in the framing Kafka's own producer and broker write."""
    if compression == Compression.NONE:
        return data
    if compression == Compression.GZIP:
        return gzip.compress(data, mtime=0)
    if compression == Compression.SNAPPY:
        out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
        for i in range(0, len(data), _XERIAL_BLOCK_BYTES):
            block = bytes(cramjam.snappy.compress_raw(data[i:i + _XERIAL_BLOCK_BYTES]))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if compression == Compression.LZ4:
        # Kafka's KafkaLZ4BlockOutputStream: 64 KiB independent blocks, no checksums, no content size.
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                  content_checksum=False, block_checksum=False, store_size=False)
    return zstandard.ZstdCompressor().compress(data)


def encode_batch(
    records: Sequence[NewRecord],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    base_timestamp: int | None = None,
    compression: Compression = Compression.NONE,
    is_control: bool = False,
    is_transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type: int = 0,
) -> bytes:
    """Encode records with consecutive offsets from ``base_offset`` as one v2 batch, bytes as Kafka writes.

    ``base_timestamp`` defaults to the first record's timestamp, as Kafka's MemoryRecordsBuilder does.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    if timestamp_type not in (0, 1):
        raise ValueError(f"timestamp_type must be 0 (create time) or 1 (log-append time): {timestamp_type}")
    compression = Compression(compression)
    if base_timestamp is None:
        base_timestamp = records[0].timestamp
    attributes = int(compression) | (_TIMESTAMP_TYPE_MASK if timestamp_type else 0)
    attributes |= (_TRANSACTIONAL_MASK if is_transactional else 0) | (_CONTROL_MASK if is_control else 0)
    payload = _compress(compression, bytes(_encode_records(records, base_timestamp)))
    rest = bytearray(_REST.pack(partition_leader_epoch, 2, 0, attributes, len(records) - 1, base_timestamp,
                                max(r.timestamp for r in records), producer_id, producer_epoch, base_sequence,
                                len(records)))
    rest += payload
    struct.pack_into(">I", rest, 5, crc32c.crc32c(memoryview(rest)[_CRC_START:]))
    return _PREFIX.pack(base_offset, len(rest)) + rest


# --------------------------------------------------------------------------------------------- segments


def _batch_offsets(batch: bytes) -> tuple[int, int]:
    """(base offset, last offset) of encoded batch bytes, checking they hold exactly one batch."""
    if len(batch) < _HEADER_SIZE:
        raise ValueError(f"{len(batch)} bytes are too few for a record batch (header is {_HEADER_SIZE})")
    base_offset, length = _PREFIX.unpack_from(batch)
    if _PREFIX_SIZE + length != len(batch):
        raise ValueError(f"batch length field says {_PREFIX_SIZE + length} bytes, got {len(batch)}")
    last_offset_delta = _INT32.unpack_from(batch, _PREFIX_SIZE + 11)[0]
    return base_offset, base_offset + last_offset_delta


class SegmentWriter:
    """Writes one segment file ``{base_offset:020d}.log``; refuses to overwrite an existing file."""

    def __init__(self, directory: str | Path, base_offset: int) -> None:
        self.path = Path(directory) / f"{base_offset:020d}.log"
        self.base_offset = base_offset
        self.next_offset = base_offset
        self.size = 0
        self._file = self.path.open("xb")

    def append(self, batch: bytes) -> None:
        """Append one encoded batch, whose offsets must follow the ones already written."""
        base_offset, last_offset = _batch_offsets(batch)
        if base_offset < self.next_offset:
            raise ValueError(f"{self.path}: batch at offset {base_offset} is before the next offset "
                             f"{self.next_offset}; offsets in a log only grow")
        self._file.write(batch)
        self.size += len(batch)
        self.next_offset = last_offset + 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> SegmentWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def write_segments(batches: Iterable[bytes], directory: str | Path,
                   segment_bytes: int = 1024 * 1024 * 1024) -> list[Path]:
    """Write batches into segment files, rolling (as Kafka's ``segment.bytes``) before one would overflow.

    Each segment is named by the base offset of its first batch; a batch larger than the limit gets a
    segment of its own. Returns the segment paths in order.
    """
    directory = Path(directory)
    paths: list[Path] = []
    writer: SegmentWriter | None = None
    try:
        for batch in batches:
            if writer is not None and writer.size + len(batch) > segment_bytes:
                writer.close()
                next_offset = writer.next_offset
                writer = SegmentWriter(directory, _batch_offsets(batch)[0])
                writer.next_offset = next_offset  # keeps offsets growing across the roll
                paths.append(writer.path)
            elif writer is None:
                writer = SegmentWriter(directory, _batch_offsets(batch)[0])
                paths.append(writer.path)
            writer.append(batch)
    finally:
        if writer is not None:
            writer.close()
    return paths
