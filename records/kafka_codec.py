"""Kafka's message encoding (the one ``MetadataRecordSerde`` and the raft control records use).

Driven entirely by :mod:`records.definitions`: for each (record type, version) a reader and a
writer are compiled once from the definition into closures, so decoding a record is a chain of
direct calls, not a walk over the definition.

Values follow the record model: integers, ``bool``, ``float``, ``str``, ``bytes``, UUIDs as
16 raw bytes, arrays as lists (``None`` when null), structs as dicts keyed by Kafka's camelCase
JSON names. Unknown tagged fields are kept under ``_unknownTaggedFields`` as ``[tag, bytes]``
pairs so that re-encoding gives the original bytes back.

The checked readers and writers are in :mod:`records.message_encoding`, the generated fast readers in
:mod:`records.generated_readers`; this module is the API over both, and the metadata and control framing.
"""

from __future__ import annotations

import struct
from typing import Any

from records.definitions import MessageDef
from records.generated_readers import _fast_struct_reader, _fast_value_reader
from records.message_encoding import (
    UNKNOWN_TAGGED,
    DecodeError,
    Reader,
    ValueReader,
    _struct_writer,
    read_uvarint,
    uvarint_bytes,
    write_uvarint,
)

__all__ = [
    "CONTROL_KEY",
    "METADATA_FRAME_VERSION",
    "UNKNOWN_TAGGED",
    "DecodeError",
    "Reader",
    "ValueReader",
    "body_reader",
    "decode_body",
    "encode_body",
    "encode_control_key",
    "encode_metadata_value",
    "read_control_key",
    "read_control_version",
    "read_metadata_header",
    "read_uvarint",
    "uvarint_bytes",
    "value_reader",
    "write_uvarint",
]

# ---------------------------------------------------------------------------------------------
# public API


_BODY_READERS: dict[tuple[int, int], tuple[MessageDef, Reader]] = {}


def body_reader(message: MessageDef, version: int) -> Reader:
    """The (generated) reader of a message body at ``version``, looked up by identity.

    Keyed by ``id(message)`` because hashing a MessageDef hashes its whole definition tree, which cost
    more than decoding the record; the entry keeps ``message`` alive, so the id cannot be reused.
    """
    hit = _BODY_READERS.get((id(message), version))
    if hit is None or hit[0] is not message:
        hit = (message, _fast_struct_reader(message.body, version, message.is_flexible(version)))
        _BODY_READERS[(id(message), version)] = hit
    return hit[1]


_VALUE_READERS: dict[tuple[int, int], tuple[MessageDef, ValueReader]] = {}


def value_reader(message: MessageDef, version: int) -> ValueReader:
    """The generated whole-value reader of a metadata record at ``version`` (see
    :func:`_fast_value_reader`), looked up by identity as :func:`body_reader` does."""
    hit = _VALUE_READERS.get((id(message), version))
    if hit is None or hit[0] is not message:
        hit = (message, _fast_value_reader(message.body, version, message.is_flexible(version)))
        _VALUE_READERS[(id(message), version)] = hit
    return hit[1]


def decode_body(message: MessageDef, version: int, buf: bytes, pos: int = 0) -> tuple[dict[str, Any], int]:
    """Decode one message body at ``version``; returns the data and the position after it."""
    reader = body_reader(message, version)
    try:
        return reader(buf, pos)
    except (IndexError, struct.error) as exc:  # pragma: no cover - guarded above, kept as a net
        raise DecodeError(f"{message.name} v{version}: {exc}", pos) from None


def encode_body(message: MessageDef, version: int, data: dict[str, Any]) -> bytes:
    out: list[bytes] = []
    _struct_writer(message.body, version, message.is_flexible(version))(data, out)
    return b"".join(out)


METADATA_FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION


def encode_metadata_value(message: MessageDef, version: int, data: dict[str, Any]) -> bytes:
    """A metadata record's value as ``MetadataRecordSerde`` writes it: frame, api key, version, body (in the
    layout of ``version``, or of the newest known version for a record read best-effort)."""
    assert message.api_key is not None
    out: list[bytes] = []
    write_uvarint(METADATA_FRAME_VERSION, out)
    write_uvarint(message.api_key, out)
    write_uvarint(version, out)
    out.append(encode_body(message, message.layout_version(version), data))
    return b"".join(out)


def read_metadata_header(value: bytes) -> tuple[int, int, int, int]:
    """(frame version, api key, record version, body start) of a metadata record value."""
    frame, pos = read_uvarint(value, 0)
    api_key, pos = read_uvarint(value, pos)
    version, pos = read_uvarint(value, pos)
    return frame, api_key, version, pos


CONTROL_KEY = struct.Struct(">hh")


def encode_control_key(control_type: int) -> bytes:
    """Kafka's control record key: version 0 and the ControlRecordType."""
    return CONTROL_KEY.pack(0, control_type)


def read_control_key(key: bytes) -> int:
    if len(key) < CONTROL_KEY.size:
        raise DecodeError(f"control record key has {len(key)} bytes, expected 4", 0)
    _version, control_type = CONTROL_KEY.unpack_from(key, 0)
    return int(control_type)


def read_control_version(value: bytes) -> int:
    """Every raft control message starts with its own int16 ``Version`` field."""
    if len(value) < 2:
        raise DecodeError("control record value is shorter than its version field", 0)
    return int(struct.unpack_from(">h", value, 0)[0])
