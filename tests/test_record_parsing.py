"""The records inside a batch (records.record_parsing): damage behind a valid CRC is a CorruptBatchError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from records.batch_writer import encode_batch
from records.errors import CorruptBatchError
from tests.test_batch import CODECS, check_outcome, read_all, recrc, sample_records


@pytest.mark.parametrize(("tamper", "message"), [
    (lambda b: struct.pack_into(">i", b, 57, 6), "header declares 6 records but the batch ends after 5"),
    (lambda b: struct.pack_into(">i", b, 57, 99), "header declares 99 records but only"),
    (lambda b: struct.pack_into(">i", b, 57, 4), "bytes left over after the 4 records"),
    (lambda b: struct.pack_into(">i", b, 57, -2), "negative record count -2"),
    (lambda b: struct.pack_into(">h", b, 21, 5), "unknown compression codec 5"),
    (lambda b: struct.pack_into(">h", b, 21, 1), "gzip records cannot be decompressed"),
    (lambda b: b.__setitem__(61, 0x02), "record 0 declares length 1, impossible in this batch"),
    (lambda b: b.__setitem__(61, 0x7E), "record 0 declares 40 headers"),
])
def test_damaged_content_behind_a_valid_crc(tamper, message: str) -> None:  # type: ignore[no-untyped-def]
    batch = bytearray(encode_batch(sample_records(), base_offset=0, partition_leader_epoch=1))
    tamper(batch)
    with pytest.raises(CorruptBatchError, match=message):
        read_all(recrc(batch))


CODEC_BATCHES = [encode_batch(sample_records(6, value_size=200), base_offset=0, partition_leader_epoch=1,
                              compression=codec) for codec in CODECS]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), codec=st.sampled_from(range(len(CODECS))))
def test_fuzz_content_behind_a_valid_crc(data: st.DataObject, codec: int) -> None:
    """Damage behind a valid CRC reaches decompressors and varint parsing: still only CorruptBatchError."""
    batch = bytearray(CODEC_BATCHES[codec])
    for _ in range(data.draw(st.integers(1, 6), label="changes")):
        index = data.draw(st.integers(21, len(batch) - 1), label="at")
        batch[index] = data.draw(st.integers(0, 255), label="byte")
    check_outcome(recrc(batch), is_last_segment=True, skip_corrupt=data.draw(st.booleans(), label="skip"))

