"""Log entries → Kafka's on-disk format: segment files, snapshot files and ``meta.properties``.

Entries that share a ``batch_base_offset`` are written as one batch, as the controller wrote them
atomically; control records always get control batches of their own, as in Kafka. The bytes are
Kafka's record batch v2, so Kafka's own tools read what this writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from records.batch_writer import NewRecord, encode_batch
from records.batch_writer import write_segments as write_batch_segments
from records.compression import Compression
from records.errors import RecordsError
from records.kafka_codec import encode_body, encode_control_key, encode_metadata_value
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, RawRecord

DEFAULT_SEGMENT_BYTES = 1 << 30  # Kafka's metadata.log.segment.bytes default
DEFAULT_MAX_BATCH_RECORDS = 1000


def encode_entry(entry: LogEntry) -> tuple[bytes | None, bytes]:
    """The (key, value) Kafka stores for one record."""
    record = entry.record
    if isinstance(record, RawRecord):
        key = encode_control_key(record.control_type) if record.control_type is not None else None
        return key, record.value
    message = record.definition
    if message.is_control:
        assert message.control_type is not None
        return encode_control_key(message.control_type), encode_body(message, record.layout_version, record.data)
    return None, encode_metadata_value(message, record.version, record.data)


def group_batches(entries: Iterable[LogEntry], max_batch_records: int) -> Iterator[list[LogEntry]]:
    """Consecutive entries of one batch: same batch base offset (when given) and same control-ness."""
    batch: list[LogEntry] = []
    for entry in entries:
        if batch:
            head = batch[0]
            same = (entry.is_control == head.is_control
                    and entry.offset == batch[-1].offset + 1
                    and (entry.batch_base_offset == head.batch_base_offset
                         if head.batch_base_offset is not None and entry.batch_base_offset is not None
                         else len(batch) < max_batch_records))
            if not same:
                yield batch
                batch = []
        batch.append(entry)
    if batch:
        yield batch


def encode_entries_batch(batch: list[LogEntry], compression: Compression) -> bytes:
    head = batch[0]
    records = [NewRecord(key=key, value=value, timestamp=entry.append_time_ms or 0)
               for entry in batch for key, value in [encode_entry(entry)]]
    return encode_batch(records, base_offset=head.offset,
                        partition_leader_epoch=head.raft_leader_epoch or 0,
                        compression=Compression.NONE if head.is_control else compression,
                        is_control=head.is_control)


def write_segments(entries: Iterable[LogEntry], directory: Path, *,
                   compression: Compression = Compression.NONE,
                   max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
                   segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> list[Path]:
    """Write entries (in offset order) as segment files named by their base offset."""
    directory.mkdir(parents=True, exist_ok=True)
    batches = (encode_entries_batch(batch, compression)
               for batch in group_batches(entries, max_batch_records))
    try:
        return write_batch_segments(batches, directory, segment_bytes=segment_bytes)
    except (ValueError, FileExistsError) as exc:
        raise RecordsError(f"{directory}: cannot write segments: {exc}") from None


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    """Kafka's name for a snapshot whose next offset is ``end_offset``, taken at raft ``epoch``."""
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def write_snapshot(records: Iterable[MetadataRecord], directory: Path, *, end_offset: int, epoch: int,
                   last_contained_log_timestamp: int,
                   compression: Compression = Compression.NONE,
                   max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS) -> Path:
    """A KRaft snapshot file: SnapshotHeader, the records, SnapshotFooter, offsets from 0."""
    header = make_record("SnapshotHeaderRecord", 0, version=0,
                         lastContainedLogTimestamp=last_contained_log_timestamp)
    footer = make_record("SnapshotFooterRecord", 0, version=0)

    def entries() -> Iterator[LogEntry]:
        for offset, record in enumerate((header, *records, footer)):
            yield LogEntry(offset=offset, record=record, raft_leader_epoch=epoch,
                           append_time_ms=last_contained_log_timestamp)

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / snapshot_file_name(end_offset, epoch)
    with path.open("wb") as out:
        for batch in group_batches(entries(), max_batch_records):
            out.write(encode_entries_batch(batch, compression))
    return path


def write_meta_properties(directory: Path, *, cluster_id: str, node_id: int,
                          directory_id: str | None = None) -> Path:
    """``meta.properties`` as a KRaft node writes it (version 1), so readers find the cluster id."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["#", "#Written by kraft-replay", "version=1", f"cluster.id={cluster_id}",
             f"node.id={node_id}"]
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    path = directory / "meta.properties"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
