"""records.message_encoding: Kafka's unsigned varints (ByteUtils), exact bytes and clear errors."""

from __future__ import annotations

import pytest

from records.message_encoding import DecodeError, read_uvarint, uvarint_bytes


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
])
def test_uvarint_bytes_and_back(value: int, encoded: bytes) -> None:
    assert uvarint_bytes(value) == encoded
    assert read_uvarint(b"\x09" + encoded + b"\x05", 1) == (value, 1 + len(encoded))


def test_uvarint_errors() -> None:
    with pytest.raises(ValueError, match="unsigned varint cannot hold -1"):
        uvarint_bytes(-1)
    with pytest.raises(DecodeError) as info:
        read_uvarint(b"\x80\x80", 0)
    assert str(info.value) == "varint runs past the end (at byte 2 of the value)" and info.value.position == 2
    with pytest.raises(DecodeError) as info:
        read_uvarint(b"\xff" * 10 + b"\x01", 0)
    assert str(info.value) == "varint is too long (at byte 10 of the value)"
