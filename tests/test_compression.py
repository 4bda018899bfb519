"""Compression of a batch's records section (records.compression): the framings Kafka writes and reads."""

from __future__ import annotations

import struct

import pytest

from records.batch_writer import encode_batch
from records.compression import Compression
from tests.test_batch import expect_record, read_all, recrc, sample_records


def test_snappy_is_xerial_framed_and_lz4_is_a_kafka_frame() -> None:
    """Kafka writes snappy-java's stream framing and LZ4 frames with 64 KiB independent blocks."""
    snappy = encode_batch(sample_records(), base_offset=0, partition_leader_epoch=0,
                          compression=Compression.SNAPPY)
    assert snappy[61:69] == b"\x82SNAPPY\x00" and snappy[69:77] == b"\x00\x00\x00\x01\x00\x00\x00\x01"
    lz4 = encode_batch(sample_records(), base_offset=0, partition_leader_epoch=0, compression=Compression.LZ4)
    assert lz4[61:65] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    assert lz4[65] == 0x60 and lz4[66] == 0x40  # FLG: version 1, independent blocks; BD: 64 KiB


def alternative_payload(codec: Compression) -> bytes:
    """Other valid framings Kafka clients produce: raw snappy, zstd without content size, lz4 with extras."""
    import cramjam
    import lz4.frame
    import zstandard

    body = encode_batch(sample_records(), base_offset=0, partition_leader_epoch=0)[61:]
    if codec == Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(body))
    if codec == Compression.ZSTD:
        return zstandard.ZstdCompressor(write_content_size=False).compress(body)
    return lz4.frame.compress(body, content_checksum=True, block_checksum=True, store_size=True)


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.ZSTD, Compression.LZ4])
def test_alternative_framings_are_accepted(codec: Compression) -> None:
    batch = bytearray(encode_batch(sample_records(), base_offset=0, partition_leader_epoch=0)[:61])
    batch += alternative_payload(codec)
    struct.pack_into(">h", batch, 21, codec)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    (read,), _ = read_all(recrc(batch))
    for i, (record, new) in enumerate(zip(read.records, sample_records(), strict=True)):
        expect_record(record, new, i)

