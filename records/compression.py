"""The records section of a batch, compressed as a whole by the codec of attributes bits 0-2.

Kafka's ``CompressionType``: each codec in the framing Kafka's own producer and broker write (gzip,
snappy-java's xerial stream, ``KafkaLZ4BlockOutputStream``'s lz4 frame, a zstd stream), decompressed with
a bound (``MAX_DECOMPRESSED_BYTES``) so a damaged or hostile batch cannot exhaust memory.
"""

from __future__ import annotations

import gzip
import struct
import threading
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from records.framing import MalformedBatch

__all__ = ["COMPRESSION_MASK", "MAX_DECOMPRESSED_BYTES", "Compression", "compress", "decompress"]

#: Largest decompressed records section accepted, so a damaged or hostile batch cannot exhaust memory.
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
#: Kafka's ``DefaultRecordBatch.COMPRESSION_CODEC_MASK``: attributes bits 0-2.
COMPRESSION_MASK = 0x07

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, minimum compatible version
_XERIAL_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size, what Kafka writes
_INT32 = struct.Struct(">i")
_ZSTD_INPUT_CHUNK = 4096  # bounds the output of one decompress call (zstd can expand ~40000x)
_LZ4_FIRST_OUTPUT = 64 * 1024  # first output room for an lz4 batch; grows 4x as needed
_ZSTD = threading.local()  # per-thread reusable ZstdDecompressor


class Compression(IntEnum):
    """Codec ids of attributes bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# The reader compares plain ints: comparing with an IntEnum member, or calling the enum, costs more.
_CODEC_NAMES = {int(codec): codec.name.lower() for codec in Compression}
_SNAPPY, _LZ4, _ZSTD_CODEC = int(Compression.SNAPPY), int(Compression.LZ4), int(Compression.ZSTD)
_lz4_context = lz4.frame.create_decompression_context
_lz4_chunk = lz4.frame.decompress_chunk


def decompress(codec: int, data: memoryview) -> bytes:
    """Decompress the records section as Kafka writes it, bounded by MAX_DECOMPRESSED_BYTES."""
    name = _CODEC_NAMES.get(codec)  # not Compression(codec).name: an enum call costs ~2 us per batch
    if name is None:
        raise MalformedBatch(f"unknown compression codec {codec} in attributes, expected 0 to 4")
    try:
        if codec == _LZ4:
            out = _unlz4(data)
        elif codec == _ZSTD_CODEC:
            out = _unzstd(data)
        elif codec == _SNAPPY:
            out = _unsnappy(data)
        else:
            out = _gunzip(data)
    except MalformedBatch:
        raise
    except Exception as exc:  # any library failure on these bytes means the batch is damaged
        raise MalformedBatch(f"{name} records cannot be decompressed: {exc}") from None
    return out


def _too_large() -> MalformedBatch:
    return MalformedBatch(f"records decompress to more than {MAX_DECOMPRESSED_BYTES} bytes")


def _gunzip(data: memoryview) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, MAX_DECOMPRESSED_BYTES)
    if inflater.unconsumed_tail:
        raise _too_large()
    if not inflater.eof:
        raise MalformedBatch("gzip records end before the end of the gzip stream")
    if inflater.unused_data:
        raise MalformedBatch(f"{len(inflater.unused_data)} bytes after the gzip stream")
    return out


def _unsnappy_block(block: bytes | memoryview, budget: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > budget:
        raise _too_large()
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: memoryview) -> bytes:
    """snappy-java's stream framing (magic, version, compat, then length-prefixed blocks) or a raw block."""
    if bytes(data[:8]) != _XERIAL_MAGIC:
        return _unsnappy_block(data, MAX_DECOMPRESSED_BYTES)
    if len(data) < _XERIAL_HEADER.size:
        raise MalformedBatch("snappy stream header cut short")
    parts: list[bytes] = []
    total = 0
    cursor = _XERIAL_HEADER.size
    while cursor < len(data):
        if cursor + 4 > len(data):
            raise MalformedBatch("snappy block length cut short")
        size = _INT32.unpack_from(data, cursor)[0]
        cursor += 4
        if size < 0 or cursor + size > len(data):
            raise MalformedBatch(f"snappy block of {size} bytes runs past the end of the batch")
        part = _unsnappy_block(data[cursor:cursor + size], MAX_DECOMPRESSED_BYTES - total)
        parts.append(part)
        total += len(part)
        cursor += size
    return b"".join(parts)


def _unlz4(data: memoryview) -> bytes:
    """Output room grows from a small first guess: python-lz4 allocates all of ``max_length`` up front,
    and 256 MiB per batch cost ~14 us of mmap and page faults for a batch that decompresses in 1 us.

    What ``lz4.frame.LZ4FrameDecompressor`` does, on its C functions directly: the class's Python layer
    cost more than decompressing a metadata batch. ``pending[used:]`` is the class's unconsumed input
    while the frame goes on, its ``unused_data`` once the frame has ended."""
    context = _lz4_context()
    room = min(max(_LZ4_FIRST_OUTPUT, 8 * len(data)), MAX_DECOMPRESSED_BYTES)
    pending = bytes(data)
    out, used, eof = _lz4_chunk(context, pending, max_length=room)
    if not eof and used < len(pending):  # output room used up: more to come
        parts = [out]
        total = len(out)
        while True:
            pending = pending[used:]
            if total >= MAX_DECOMPRESSED_BYTES:
                raise _too_large()
            room = min(4 * room, MAX_DECOMPRESSED_BYTES - total)
            part, used, eof = _lz4_chunk(context, pending, max_length=room)
            parts.append(part)
            total += len(part)
            if eof or used >= len(pending):
                break
        out = b"".join(parts)
    if not eof:
        raise MalformedBatch("lz4 records end before the end of the lz4 frame")
    if used < len(pending):
        raise MalformedBatch(f"{len(pending) - used} bytes after the lz4 frame")
    return out


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """One per thread: creating one costs ~8 us, more than decompressing a metadata batch, and an
    instance must not be used by two threads at once."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def _unzstd(data: memoryview) -> bytes:
    """Streaming, since Kafka's zstd stream does not always record the content size."""
    decompressor = _zstd_decompressor().decompressobj()
    parts: list[bytes] = []
    total = 0
    for cursor in range(0, len(data), _ZSTD_INPUT_CHUNK):
        part = decompressor.decompress(data[cursor:cursor + _ZSTD_INPUT_CHUNK])
        total += len(part)
        if total > MAX_DECOMPRESSED_BYTES:
            raise _too_large()
        parts.append(part)
        if decompressor.eof:
            if cursor + _ZSTD_INPUT_CHUNK < len(data) or decompressor.unused_data:
                raise MalformedBatch("bytes after the zstd frame")
            break
    if not decompressor.eof:
        raise MalformedBatch("zstd records end before the end of the zstd frame")
    return b"".join(parts)


def compress(compression: Compression, data: bytes) -> bytes:
    """Compress the records section in the framing Kafka's own producer and broker write."""
    if compression == Compression.NONE:
        return data
    if compression == Compression.GZIP:
        return gzip.compress(data, mtime=0)
    if compression == Compression.SNAPPY:
        out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
        for cursor in range(0, len(data), _XERIAL_BLOCK_BYTES):
            block = bytes(cramjam.snappy.compress_raw(data[cursor:cursor + _XERIAL_BLOCK_BYTES]))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if compression == Compression.LZ4:
        # Kafka's KafkaLZ4BlockOutputStream: 64 KiB independent blocks, no checksums, no content size.
        return lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                  content_checksum=False, block_checksum=False, store_size=False)
    return zstandard.ZstdCompressor().compress(data)

