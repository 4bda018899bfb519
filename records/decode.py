"""Record values → model: metadata records (``MetadataRecordSerde`` framing) and raft control records.

Nothing is ever dropped here. A version newer than the definitions is read with the newest
known layout when that consumes its bytes exactly (Kafka evolves these records through tagged
fields, which then land in ``_unknownTaggedFields``) and flagged best-effort; anything else that
cannot be read is kept as raw bytes with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from records.batch import BatchIssue, RecordBatch, _RecordBatchTwin, check_batch, iter_decoded
from records.definitions import MessageDef, by_api_key, by_control_type
from records.framing import CONTROL_MASK
from records.kafka_codec import (
    METADATA_FRAME_VERSION,
    DecodeError,
    ValueReader,
    decode_body,
    read_control_key,
    read_control_version,
    read_metadata_header,
    value_reader,
)
from records.model import LogEntry, LogEntryTwin, MetadataRecord, MetadataRecordTwin, RawRecord, ReadMode
from records.record_parsing import parse_records

Decoded = tuple[MetadataRecord | RawRecord, ReadMode, tuple[str, ...]]
# How to read a metadata value, by its first three bytes (frame 1, one-byte api key and version: every
# value Kafka writes today): type name, record version, value reader, read mode and notes. Filled by the
# checked path the first time a header is seen, so the fast path only ever repeats what it decided.
Plan = tuple[str, int, ValueReader, ReadMode, tuple[str, ...]]
_PLANS: dict[bytes, Plan] = {}


def _read_as(message: MessageDef, version: int) -> tuple[ReadMode, tuple[str, ...]]:
    """Exact for a version the definitions know; else best effort with the newest layout, said in a note."""
    layout = message.layout_version(version)
    if layout == version:
        return ReadMode.EXACT, ()
    return ReadMode.BEST_EFFORT, (f"{message.name} v{version} is newer than the known versions "
                                  f"{message.valid_versions}; read with the v{layout} layout, which consumed "
                                  "every byte",)


def _plan(message: MessageDef, version: int) -> Plan:
    """What :func:`_decode_known` does for this version when the bytes fit it."""
    mode, notes = _read_as(message, version)
    return message.name, version, value_reader(message, message.layout_version(version)), mode, notes


def _decode_known(message: MessageDef, version: int, value: bytes, start: int,
                  api_key: int | None, control_type: int | None) -> Decoded:
    layout = message.layout_version(version)
    try:
        data, end = decode_body(message, layout, value, start)
    except DecodeError as exc:
        reason = f"{message.name} v{version} does not decode: {exc}"
        return RawRecord(api_key, control_type, version, value, reason), ReadMode.RAW, (reason,)
    if end != len(value):
        reason = (f"{message.name} v{version}: {len(value) - end} bytes left over after the body "
                  f"(read as v{layout})")
        return RawRecord(api_key, control_type, version, value, reason), ReadMode.RAW, (reason,)
    # The record reports the version the log holds; its data has the fields of the layout read.
    mode, notes = _read_as(message, version)
    return MetadataRecord(message.name, version, data), mode, notes


def decode_metadata_value(value: bytes) -> Decoded:
    """A metadata record value: frame version, api key, version, body."""
    try:
        plan = _PLANS.get(value[:3])
    except TypeError:  # an unhashable buffer such as a bytearray: the checked path reads it
        plan = None
    if plan is not None:
        name, version, reader, mode, notes = plan
        data = reader(value)
        if data is not None:  # else the checked path below says what is wrong, or reads it all the same
            record = MetadataRecordTwin(name, version, data)
            record.__class__ = MetadataRecord
            return record, mode, notes
    return _decode_metadata_value_checked(value)


def _decode_metadata_value_checked(value: bytes) -> Decoded:
    """:func:`decode_metadata_value` step by step; remembers the plan for one-byte headers."""
    try:
        frame, api_key, version, start = read_metadata_header(value)
    except DecodeError as exc:
        reason = f"metadata record header does not decode: {exc}"
        return RawRecord(None, None, -1, value, reason), ReadMode.RAW, (reason,)
    if frame != METADATA_FRAME_VERSION:
        reason = f"unknown metadata frame version {frame} (expected {METADATA_FRAME_VERSION})"
        return RawRecord(api_key, None, version, value, reason), ReadMode.RAW, (reason,)
    message = by_api_key().get(api_key)
    if message is None:
        reason = f"unknown metadata record api key {api_key} (version {version})"
        return RawRecord(api_key, None, version, value, reason), ReadMode.RAW, (reason,)
    if start == 3 and len(_PLANS) < 4096:  # bounded: hostile input could invent many headers
        _PLANS[bytes(value[:3])] = _plan(message, version)
    return _decode_known(message, version, value, start, api_key, None)


def decode_control_value(key: bytes | None, value: bytes | None) -> Decoded:
    """A raft control record: the key names its ControlRecordType, the value starts with its version."""
    value = value or b""
    try:
        control_type = read_control_key(key or b"")
    except DecodeError as exc:
        reason = f"control record key does not decode: {exc}"
        return RawRecord(None, -1, -1, value, reason), ReadMode.RAW, (reason,)
    message = by_control_type().get(control_type)
    if message is None:
        reason = f"control record type {control_type} is not a raft control record kraft-replay knows"
        return RawRecord(None, control_type, 0, value, reason), ReadMode.RAW, (reason,)
    try:
        version = read_control_version(value)
    except DecodeError as exc:
        reason = f"{message.name}: {exc}"
        return RawRecord(None, control_type, -1, value, reason), ReadMode.RAW, (reason,)
    return _decode_known(message, version, value, 0, None, control_type)


def entries_from_batch(batch: RecordBatch, cluster_id: str | None = None,
                       source: str | None = None) -> Iterator[LogEntry]:
    """The log entries of one record batch, with their place in the log.

    The hot loop of a full read: the per-batch values are hoisted, the fast path of
    :func:`decode_metadata_value` is inlined, and entries are built through their unfrozen twin.
    """
    base_offset = batch.base_offset
    leader_epoch = batch.partition_leader_epoch
    position = batch.position
    source = source if source is not None else batch.source
    twin, frozen = LogEntryTwin, LogEntry
    if batch.is_control:
        for rec in batch.records:
            record, mode, notes = decode_control_value(rec.key, rec.value)
            entry = twin(rec.offset, record, base_offset, leader_epoch, rec.timestamp, cluster_id, mode,
                         source, position, notes)
            entry.__class__ = frozen
            yield entry
        return
    plans = _PLANS
    record_twin, record_frozen = MetadataRecordTwin, MetadataRecord
    for rec in batch.records:
        value = rec.value or b""
        try:
            plan = plans.get(value[:3])
        except TypeError:  # an unhashable buffer such as a bytearray: the checked path reads it
            plan = None
        decoded = None
        if plan is not None:
            name, version, reader, mode, notes = plan
            data = reader(value)
            if data is not None:
                decoded = record_twin(name, version, data)
                decoded.__class__ = record_frozen
        if decoded is None:
            record, mode, notes = _decode_metadata_value_checked(value)
        else:
            record = decoded
        entry = twin(rec.offset, record, base_offset, leader_epoch, rec.timestamp, cluster_id, mode, source,
                     position, notes)
        entry.__class__ = frozen
        yield entry


#: What :func:`iter_batch_entries` yields per batch: base offset, last offset, byte position, entries.
BatchEntries = tuple[int, int, int, Iterable[LogEntry]]
#: Batches of up to this many metadata records are decoded at once into a list of entries; larger ones
#: (snapshot batches can hold tens of thousands) lazily, so that memory holds their records, as
#: iter_batches does, rather than all of their decoded entries.
_EAGER_MAX_RECORDS = 2048


def iter_batch_entries(
    stream: BinaryIO,
    *,
    source: str,
    is_last_segment: bool = True,
    skip_corrupt: bool = False,
    on_issue: Callable[[BatchIssue], None] | None = None,
    cluster_id: str | None = None,
) -> Iterator[BatchEntries]:
    """:func:`records.batch.iter_batches` followed by :func:`entries_from_batch`, a batch at a time.

    Yields, for each batch ``iter_batches`` would yield, ``(base_offset, last_offset, position,
    entries)`` with the very entries ``entries_from_batch(batch, cluster_id)`` gives; damaged batches
    are raised or reported exactly as ``iter_batches`` does. Metadata batches (up to
    ``_EAGER_MAX_RECORDS`` records) are decoded straight into a list of entries, without building a
    :class:`RecordBatch` or its records: the full read's hot path. Control batches and very large ones
    come as the lazy ``entries_from_batch`` of their batch.
    """

    def decode(buf: bytes, off: int, base_offset: int, length: int, position: int,
               source: str) -> BatchEntries:
        header, data, start, end = check_batch(buf, off, length)
        attributes, last_offset_delta, base_timestamp, count = header[3], header[4], header[5], header[10]
        entries: Iterable[LogEntry]
        if attributes & CONTROL_MASK or count > _EAGER_MAX_RECORDS:
            records = parse_records(data, start, end, count, base_offset, base_timestamp, position)
            batch = _RecordBatchTwin(base_offset, length, *header[:10], records, position, source)
            batch.__class__ = RecordBatch
            entries = entries_from_batch(batch, cluster_id)
        else:
            entries = parse_records(data, start, end, count, base_offset, base_timestamp, position,
                                    (_PLANS, _decode_metadata_value_checked, header[0], cluster_id, source))
        return base_offset, base_offset + last_offset_delta, position, entries

    return iter_decoded(stream, decode, source=source, is_last_segment=is_last_segment,
                        skip_corrupt=skip_corrupt, on_issue=on_issue)
