"""The records inside a batch: Kafka's ``DefaultRecord`` framing (zig-zag varints as in ``ByteUtils``).

The decompressed records section of a batch is split into records (or, on the full read's hot path,
straight into log entries); any framing fault raises :class:`records.framing.MalformedBatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload

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
        "read_mode", "source", "position", "notes", "secret_fingerprint"]
        or [f.name for f in fields(MetadataRecord)] != ["type_name", "version", "data"]):
    raise ImportError("records.record_parsing.parse_records must set every field of LogEntry and "
                      "MetadataRecord")


def _varint(buf: bytes, cursor: int, max_shift: int = 28) -> tuple[int, int]:
    """Kafka's zig-zag varint (``max_shift`` 28) or varlong (63) at ``buf[i]``: (value, next index)."""
    first_byte = buf[cursor]
    cursor += 1
    raw = first_byte & 0x7F
    shift = 7
    while first_byte & 0x80:
        if shift > max_shift:
            raise MalformedBatch("varint longer than Kafka allows")
        first_byte = buf[cursor]
        cursor += 1
        raw |= (first_byte & 0x7F) << shift
        shift += 7
    return (raw >> 1) ^ -(raw & 1), cursor


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


@overload
def parse_records(buf: bytes, cursor: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  position: int, entries: None = None) -> tuple[BatchRecord, ...]: ...


@overload
def parse_records(buf: bytes, cursor: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  position: int, entries: EntryContext) -> list[LogEntry]: ...


def parse_records(buf: bytes, cursor: int, end: int, count: int, base_offset: int, base_timestamp: int,
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
    if count > (end - cursor) // _MIN_RECORD_BYTES:
        raise MalformedBatch(f"header declares {count} records but only {end - cursor} bytes of records follow")
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
    for record_index in range(count):
        try:
            if cursor >= end:
                raise MalformedBatch(f"header declares {count} records but the batch ends after {record_index}")
            first_byte = buf[cursor]
            if first_byte < 0x80:
                length = zigzag[first_byte]
                cursor += 1
            else:
                second_byte = buf[cursor + 1]
                if second_byte < 0x80:
                    length = zigzag[first_byte + (second_byte << 7)]
                    cursor += 2
                else:
                    length, cursor = varint(buf, cursor)
            record_end = cursor + length
            if length < _MIN_RECORD_BYTES - 1 or record_end > end:
                raise MalformedBatch(f"record {record_index} declares length {length}, impossible in this batch")
            attributes_at = cursor  # read only for a BatchRecord: log entries do not keep it
            first_byte = buf[cursor + 1]
            if first_byte < 0x80:
                timestamp_delta = zigzag[first_byte]
                cursor += 2
            else:
                second_byte = buf[cursor + 2]
                if second_byte < 0x80:
                    timestamp_delta = zigzag[first_byte + (second_byte << 7)]
                    cursor += 3
                else:
                    timestamp_delta, cursor = varint(buf, cursor + 1, 63)
            first_byte = buf[cursor]
            if first_byte < 0x80:
                offset_delta = zigzag[first_byte]
                cursor += 1
            else:
                second_byte = buf[cursor + 1]
                if second_byte < 0x80:  # offsets 64 to 8191 of big batches
                    offset_delta = zigzag[first_byte + (second_byte << 7)]
                    cursor += 2
                else:
                    offset_delta, cursor = varint(buf, cursor)
            first_byte = buf[cursor]
            if first_byte == 1:  # -1: no key, what metadata records have
                key = None
                cursor += 1
            else:
                if first_byte < 0x80:
                    key_length = zigzag[first_byte]
                    cursor += 1
                else:
                    key_length, cursor = varint(buf, cursor)
                if key_length < 0:
                    if key_length != -1:
                        raise MalformedBatch(f"record {record_index} has key length {key_length}")
                    key = None
                else:
                    if cursor + key_length > record_end:
                        raise MalformedBatch(f"record {record_index}: key of {key_length} bytes runs past the record")
                    key = buf[cursor:cursor + key_length]
                    cursor += key_length
            first_byte = buf[cursor]
            if first_byte < 0x80:
                value_length = zigzag[first_byte]
                cursor += 1
            else:
                second_byte = buf[cursor + 1]
                if second_byte < 0x80:
                    value_length = zigzag[first_byte + (second_byte << 7)]
                    cursor += 2
                else:
                    value_length, cursor = varint(buf, cursor)
            if value_length < 0:
                if value_length != -1:
                    raise MalformedBatch(f"record {record_index} has value length {value_length}")
                value = None
            else:
                if cursor + value_length > record_end:
                    raise MalformedBatch(f"record {record_index}: value of {value_length} bytes runs past the record")
                value = buf[cursor:cursor + value_length]
                cursor += value_length
            if buf[cursor] == 0:  # no headers, the common case
                headers = no_headers
                cursor += 1
            else:
                headers, cursor = _parse_headers(buf, cursor, record_end, record_index)
        except IndexError:
            raise MalformedBatch(f"record {record_index} runs past the end of the batch") from None
        if cursor != record_end:
            raise MalformedBatch(f"record {record_index} declares {length} bytes after its length but its fields take "
                             f"{length + cursor - record_end}")
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
            decoded: Any = new(record_twin)  # mutable (a twin) until its class is set below
            decoded.type_name = name
            decoded.version = version
            decoded.data = data
            decoded.__class__ = record_frozen
        else:
            decoded, mode, notes = checked(value)
        entry: Any = new(entry_twin)  # mutable (a twin) until its class is set below
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
        entry.secret_fingerprint = None
        entry.__class__ = entry_frozen
        append(entry)
    if cursor != end:
        raise MalformedBatch(f"{end - cursor} bytes left over after the {count} records the header declares")
    return records if entries is not None else tuple(records)


def _parse_headers(buf: bytes, cursor: int, record_end: int,
                   record_index: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The headers of record ``record_index`` starting at their count; (headers, next index)."""
    varint = _varint
    header_count, cursor = varint(buf, cursor)
    if header_count == 0:
        return (), cursor
    if header_count < 0 or header_count > (record_end - cursor) // 2:
        raise MalformedBatch(f"record {record_index} declares {header_count} headers, impossible in its length")
    parsed = []
    for _ in range(header_count):
        header_key_length, cursor = varint(buf, cursor)
        if header_key_length < 0 or cursor + header_key_length > record_end:
            raise MalformedBatch(f"record {record_index}: header key length {header_key_length} is impossible")
        try:
            header_key = buf[cursor:cursor + header_key_length].decode()
        except UnicodeDecodeError:
            raise MalformedBatch(f"record {record_index}: header key is not UTF-8") from None
        cursor += header_key_length
        header_value_length, cursor = varint(buf, cursor)
        if header_value_length == -1:
            header_value = None
        elif header_value_length < 0 or cursor + header_value_length > record_end:
            raise MalformedBatch(f"record {record_index}: header value length {header_value_length} is impossible")
        else:
            header_value = buf[cursor:cursor + header_value_length]
            cursor += header_value_length
        parsed.append((header_key, header_value))
    return tuple(parsed), cursor

