"""Building record batches and segment files, the bytes Kafka's ``MemoryRecordsBuilder`` and ``LogSegment`` write.

The writer of simulated logs and the tests build batches here; nothing here reads them back.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import crc32c

from records.compression import Compression, compress
from records.framing import (
    BATCH_PREFIX,
    CONTROL_MASK,
    CRC_START,
    HEADER_AFTER_LENGTH,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)

__all__ = ["NewRecord", "SegmentWriter", "encode_batch", "write_segments"]

_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to write with :func:`encode_batch`; its offset comes from its place in the batch."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


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
    attributes = int(compression) | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
    attributes |= (TRANSACTIONAL_MASK if is_transactional else 0) | (CONTROL_MASK if is_control else 0)
    payload = compress(compression, bytes(_encode_records(records, base_timestamp)))
    rest = bytearray(HEADER_AFTER_LENGTH.pack(partition_leader_epoch, 2, 0, attributes, len(records) - 1,
                                              base_timestamp, max(r.timestamp for r in records), producer_id,
                                              producer_epoch, base_sequence, len(records)))
    rest += payload
    struct.pack_into(">I", rest, 5, crc32c.crc32c(memoryview(rest)[CRC_START:]))
    return BATCH_PREFIX.pack(base_offset, len(rest)) + rest


# --------------------------------------------------------------------------------------------- segments


def _batch_offsets(batch: bytes) -> tuple[int, int]:
    """(base offset, last offset) of encoded batch bytes, checking they hold exactly one batch."""
    if len(batch) < RECORD_BATCH_OVERHEAD:
        raise ValueError(f"{len(batch)} bytes are too few for a record batch (header is {RECORD_BATCH_OVERHEAD})")
    base_offset, length = BATCH_PREFIX.unpack_from(batch)
    if LOG_OVERHEAD + length != len(batch):
        raise ValueError(f"batch length field says {LOG_OVERHEAD + length} bytes, got {len(batch)}")
    last_offset_delta = _INT32.unpack_from(batch, LOG_OVERHEAD + 11)[0]
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
