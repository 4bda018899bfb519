"""Building batches and segment files (records.batch_writer): kafka-python reads them, segments roll."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from records.batch import RecordBatch, iter_batches
from records.batch_writer import SegmentWriter, encode_batch, write_segments
from records.compression import Compression
from tests.test_batch import CODECS, offsets, sample_records


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_we_write(codec: Compression) -> None:
    records = sample_records(12, value_size=3000)
    data = encode_batch(records, base_offset=500, partition_leader_epoch=4, compression=codec,
                        is_transactional=True, producer_id=11, producer_epoch=2, base_sequence=0)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch, theirs.compression_type) == (500, 4, codec)
    assert (theirs.is_transactional, theirs.producer_id, theirs.last_offset) == (True, 11, 511)
    got = [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in theirs]
    assert got == [(500 + i, r.timestamp, r.key, r.value, list(r.headers)) for i, r in enumerate(records)]


def test_write_segments_rolls_and_reads_back(tmp_path: Path) -> None:
    batches = [encode_batch(sample_records(3), base_offset=3 * n, partition_leader_epoch=1,
                            compression=CODECS[n % len(CODECS)]) for n in range(10)]
    limit = len(batches[0]) * 3
    paths = write_segments(batches, tmp_path, segment_bytes=limit)
    assert len(paths) > 1
    assert all(p.stat().st_size <= limit for p in paths)
    read: list[RecordBatch] = []
    for n, path in enumerate(paths):
        with path.open("rb") as stream:
            segment = list(iter_batches(stream, source=str(path), is_last_segment=n == len(paths) - 1))
        assert path.name == f"{segment[0].base_offset:020d}.log"
        read += segment
    assert offsets(read) == list(range(30))


def test_segment_writer_tracks_offsets_and_refuses_going_back(tmp_path: Path) -> None:
    first = encode_batch(sample_records(4), base_offset=20, partition_leader_epoch=1)
    with SegmentWriter(tmp_path, 20) as writer:
        writer.append(first)
        assert (writer.next_offset, writer.size) == (24, len(first))
        with pytest.raises(ValueError, match="before the next offset 24"):
            writer.append(encode_batch(sample_records(1), base_offset=23, partition_leader_epoch=1))
        with pytest.raises(ValueError, match="length field"):
            writer.append(first + b"x")
    assert writer.path == tmp_path / "00000000000000000020.log"
    assert writer.path.read_bytes() == first
    with pytest.raises(FileExistsError):
        SegmentWriter(tmp_path, 20)


def test_encode_rejects_an_empty_batch() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([], base_offset=0, partition_leader_epoch=0)

