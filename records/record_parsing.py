"""The records inside a batch: Kafka's ``DefaultRecord`` framing (zig-zag varints as in ``ByteUtils``).

The decompressed records section of a batch is split into records (or, on the full read's hot path,
straight into log entries); any framing fault raises :class:`records.framing.MalformedBatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from records.framing import MalformedBatch
from records.model import LogEntry, LogEntryTwin, MetadataRecord, MetadataRecordTwin, unfrozen_twin

__all__ = ["BatchRecord", "EntryContext", "parse_records"]

_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key, value, header count


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



# A cheap constructor for the hot path; see records.model.unfrozen_twin.
_BatchRecordTwin = unfrozen_twin(BatchRecord)


# parse_records builds these two slot by slot (cheaper than calling even the twin); it must set them all.
if ([f.name for f in fields(LogEntry)] != [
        "offset", "record", "batch_base_offset", "raft_leader_epoch", "append_time_ms", "cluster_id",
        "read_mode", "source", "position", "notes"]
        or [f.name for f in fields(MetadataRecord)] != ["type_name", "version", "data"]):
    raise ImportError("records.record_parsing.parse_records must set every field of LogEntry and "
                      "MetadataRecord")


def _varint(buf: bytes, i: int, max_shift: int = 28) -> tuple[int, int]:
    """Kafka's zig-zag varint (``max_shift`` 28) or varlong (63) at ``buf[i]``: (value, next index)."""
    b = buf[i]
    i += 1
    raw = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > max_shift:
            raise MalformedBatch("varint longer than Kafka allows")
        b = buf[i]
        i += 1
        raw |= (b & 0x7F) << shift
        shift += 7
    return (raw >> 1) ^ -(raw & 1), i


#: What :func:`parse_records` needs to build log entries instead of batch records: the value plans and
#: the checked value decoder of :mod:`records.decode`, and the batch's leader epoch, cluster id and source.
EntryContext = tuple[dict[bytes, Any], Callable[[bytes], Any], int, str | None, str]


def _zigzag_table() -> tuple[int, ...]:
    """Decoded zig-zag varints of one byte ``b < 0x80``, at ``b``, and of two bytes ``b >= 0x80, c < 0x80``,
    at ``b + (c << 7)``: raw value ``(b & 0x7F) | (c << 7)`` plus 128. A tuple lookup costs less than the
    four integer operations of decoding, in the loop below (tuple indexing is specialised by CPython)."""
    raws = [*range(128), *range(128 * 128)]
    return tuple((raw >> 1) ^ -(raw & 1) for raw in raws)


_ZIGZAG = _zigzag_table()


def parse_records(buf: bytes, i: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  position: int, entries: EntryContext | None = None) -> Sequence[Any]:
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
        raise MalformedBatch(f"header declares {count} records but only {end - i} bytes of records follow")
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
                raise MalformedBatch(f"header declares {count} records but the batch ends after {n}")
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
                raise MalformedBatch(f"record {n} declares length {length}, impossible in this batch")
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
                        raise MalformedBatch(f"record {n} has key length {key_length}")
                    key = None
                else:
                    if i + key_length > record_end:
                        raise MalformedBatch(f"record {n}: key of {key_length} bytes runs past the record")
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
                    raise MalformedBatch(f"record {n} has value length {value_length}")
                value = None
            else:
                if i + value_length > record_end:
                    raise MalformedBatch(f"record {n}: value of {value_length} bytes runs past the record")
                value = buf[i:i + value_length]
                i += value_length
            if buf[i] == 0:  # no headers, the common case
                headers = no_headers
                i += 1
            else:
                headers, i = _parse_headers(buf, i, record_end, n)
        except IndexError:
            raise MalformedBatch(f"record {n} runs past the end of the batch") from None
        if i != record_end:
            raise MalformedBatch(f"record {n} declares {length} bytes after its length but its fields take "
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
        raise MalformedBatch(f"{end - i} bytes left over after the {count} records the header declares")
    return records if entries is not None else tuple(records)


def _parse_headers(buf: bytes, i: int, record_end: int,
                   n: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The headers of record ``n`` starting at their count; (headers, next index)."""
    varint = _varint
    header_count, i = varint(buf, i)
    if header_count == 0:
        return (), i
    if header_count < 0 or header_count > (record_end - i) // 2:
        raise MalformedBatch(f"record {n} declares {header_count} headers, impossible in its length")
    parsed = []
    for _ in range(header_count):
        header_key_length, i = varint(buf, i)
        if header_key_length < 0 or i + header_key_length > record_end:
            raise MalformedBatch(f"record {n}: header key length {header_key_length} is impossible")
        try:
            header_key = buf[i:i + header_key_length].decode()
        except UnicodeDecodeError:
            raise MalformedBatch(f"record {n}: header key is not UTF-8") from None
        i += header_key_length
        header_value_length, i = varint(buf, i)
        if header_value_length == -1:
            header_value = None
        elif header_value_length < 0 or i + header_value_length > record_end:
            raise MalformedBatch(f"record {n}: header value length {header_value_length} is impossible")
        else:
            header_value = buf[i:i + header_value_length]
            i += header_value_length
        parsed.append((header_key, header_value))
    return tuple(parsed), i

