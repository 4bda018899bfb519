"""The text ``kafka-dump-log.sh --cluster-metadata-decoder`` prints, written from log entries as a given
Kafka version prints it: fixtures and comparisons without a Kafka install (read back by
:mod:`records.dumplog`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator
from pathlib import PurePath
from typing import TextIO

import crc32c

from records.dumplog import CONTROL_LABELS
from records.kafka_codec import uvarint_bytes
from records.kafka_json import dumps_compact, record_to_json, struct_to_json
from records.model import LogEntry, RawRecord
from records.writer import encode_entry

__all__ = ["format_dump_log", "write_dump_log"]

_LABEL_OF = {message: label for label, message in CONTROL_LABELS.items()}


def _version_tuple(text: str) -> tuple[int, int]:
    parts = text.split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ValueError(f"expected a Kafka version such as 3.7 or 4.1, got {text!r}") from None


def _zigzag(value: int) -> bytes:
    return uvarint_bytes((value << 1) ^ (value >> 63))


def _content_text(entry: LogEntry, version: tuple[int, int]) -> str:
    """What kafka-dump-log prints after the record metadata, as the given Kafka version does."""
    record = entry.record
    if isinstance(record, RawRecord):
        if record.control_type is not None:
            name = record.type_name if record.type_name in _LABEL_OF else "UNKNOWN"
            return f" controlType: {name}({record.control_type})"
        return f" payload: Error at {entry.offset}, skipping. {record.reason}"
    message = record.definition
    if not message.is_control:
        return " payload: " + dumps_compact(record_to_json(record))
    body = dumps_compact(struct_to_json(message.body, record.layout_version, record.data))
    if message.name == "LeaderChangeMessage":
        if version >= (4, 1):
            return f" LeaderChange: {body}"
        return f" controlType: LEADER_CHANGE({message.control_type})"
    if message.name in ("KRaftVersionRecord", "VotersRecord") and version < (3, 8):
        return f" controlType: UNKNOWN({message.control_type})"
    return f" {_LABEL_OF[message.name]} {body}"


def _group(entries: Iterable[LogEntry]) -> Iterator[list[LogEntry]]:
    batch: list[LogEntry] = []
    for entry in entries:
        if batch and (entry.batch_base_offset is None or entry.batch_base_offset != batch[0].batch_base_offset
                      or entry.is_control != batch[0].is_control):
            yield batch
            batch = []
        batch.append(entry)
    if batch:
        yield batch


def _header_lines(path: str, first_offset: int | None) -> list[str]:
    name = PurePath(path).name
    lines = [f"Dumping {path}"]
    if name.endswith(".log"):
        stem = name[: -len(".log")]
        start = int(stem) if stem.isdigit() else (first_offset or 0)
        lines.append(f"Log starting offset: {start}")
    elif name == "bootstrap.checkpoint":
        lines.append("KRaft bootstrap snapshot")
    elif name.endswith(".checkpoint"):
        match = re.fullmatch(r"(\d+)-(\d+)\.checkpoint", name)
        if match:
            lines.append(f"Snapshot end offset: {int(match.group(1))}, epoch: {int(match.group(2))}")
    return lines


def format_dump_log(entries: Iterable[LogEntry], *, path: str = "00000000000000000000.log",
                    kafka_version: str = "3.7") -> Iterator[str]:
    """The lines (without newlines) ``kafka-dump-log.sh --cluster-metadata-decoder`` of the given
    Kafka version prints for these entries: fixtures and comparisons without a Kafka install.

    Sizes and CRCs are those of the v2 batches Kafka would write (uncompressed); a batch keeps its
    entries' ``position`` when they carry one, otherwise positions accumulate the sizes.
    """
    version = _version_tuple(kafka_version)
    started = False
    next_position = 0
    for batch in _group(entries):
        if not started:
            yield from _header_lines(path, batch[0].offset)
            started = True
        first = batch[0]
        base = first.batch_base_offset if first.batch_base_offset is not None else first.offset
        times = [e.append_time_ms if e.append_time_ms is not None else -1 for e in batch]
        base_ts, max_ts = times[0], max(times)
        records = b""
        kv = []
        for entry, ts in zip(batch, times, strict=True):
            key, value = encode_entry(entry)
            kv.append((key, value))
            body = (b"\x00" + _zigzag(ts - base_ts) + _zigzag(entry.offset - base)
                    + (_zigzag(-1) if key is None else _zigzag(len(key)) + key)
                    + _zigzag(len(value)) + value + _zigzag(0))
            records += _zigzag(len(body)) + body
        epoch = first.raft_leader_epoch if first.raft_leader_epoch is not None else -1
        attributes = 0x20 if first.is_control else 0
        after_crc = struct.pack(">hiqqqhii", attributes, batch[-1].offset - base, base_ts, max_ts, -1, -1, -1,
                                len(batch)) + records
        size = 21 + len(after_crc)
        crc = crc32c.crc32c(after_crc)
        position = first.position if all(e.position is not None for e in batch) else next_position
        assert position is not None
        delete_horizon = " deleteHorizonMs: OptionalLong.empty" if version >= (3, 1) else ""
        yield (f"baseOffset: {base} lastOffset: {batch[-1].offset} count: {len(batch)} baseSequence: -1 "
               f"lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: {epoch} "
               f"isTransactional: false isControl: {str(first.is_control).lower()}{delete_horizon} "
               f"position: {position} CreateTime: {max_ts} size: {size} magic: 2 compresscodec: none "
               f"crc: {crc} isvalid: true")
        next_position = position + size
        for entry, ts, (key, value) in zip(batch, times, kv, strict=True):
            yield (f"| offset: {entry.offset} CreateTime: {ts} keySize: {-1 if key is None else len(key)} "
                   f"valueSize: {len(value)} sequence: -1 headerKeys: []{_content_text(entry, version)}")
    if not started:
        yield from _header_lines(path, None)


def write_dump_log(entries: Iterable[LogEntry], out: TextIO, *, path: str = "00000000000000000000.log",
                   kafka_version: str = "3.7") -> int:
    """Writes :func:`format_dump_log` lines to ``out``; returns the number of lines."""
    count = 0
    for line in format_dump_log(entries, path=path, kafka_version=kafka_version):
        out.write(line)
        out.write("\n")
        count += 1
    return count
