"""Kafka's message encoding, checked: primitives (``ByteUtils`` varints, fixed types, blobs) and, for each
(struct, version) of :mod:`records.definitions`, a reader and a writer compiled once into closures.

Every read is checked and names exactly what is wrong; :mod:`records.generated_readers` is the fast path
that falls back to these readers, and :mod:`records.kafka_codec` the API over both.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from records.definitions import FieldDef, StructDef

UNKNOWN_TAGGED = "_unknownTaggedFields"

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, list[bytes]], None]
ValueReader = Callable[[bytes], dict[str, Any] | None]


class DecodeError(ValueError):
    """The bytes do not follow the definition; ``position`` is relative to the value start."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position} of the value)")
        self.position = position


# ---------------------------------------------------------------------------------------------
# varints (Kafka ByteUtils)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("varint runs past the end", pos)
        varint_byte = buf[pos]
        pos += 1
        result |= (varint_byte & 0x7F) << shift
        if varint_byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint is too long", pos)


def write_uvarint(value: int, out: list[bytes]) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    parts = bytearray()
    while value >= 0x80:
        parts.append((value & 0x7F) | 0x80)
        value >>= 7
    parts.append(value)
    out.append(bytes(parts))


def uvarint_bytes(value: int) -> bytes:
    out: list[bytes] = []
    write_uvarint(value, out)
    return out[0]


# ---------------------------------------------------------------------------------------------
# primitives

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}


def _fixed_reader(kind: str) -> Reader:
    st = _FIXED[kind]
    size = st.size
    unpack = st.unpack_from

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeError(f"{kind} runs past the end", pos)
        return unpack(buf, pos)[0], pos + size

    return read


def _fixed_writer(kind: str) -> Writer:
    pack = _FIXED[kind].pack

    def write(value: Any, out: list[bytes]) -> None:
        out.append(pack(value))

    return write


def _read_bool(buf: bytes, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise DecodeError("bool runs past the end", pos)
    return buf[pos] != 0, pos + 1


def _write_bool(value: Any, out: list[bytes]) -> None:
    out.append(b"\x01" if value else b"\x00")


def _read_uuid(buf: bytes, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(buf):
        raise DecodeError("uuid runs past the end", pos)
    return bytes(buf[pos : pos + 16]), pos + 16


def _write_uuid(value: Any, out: list[bytes]) -> None:
    out.append(bytes(value))


def _length_reader(flexible: bool, nullable: bool, what: str) -> Callable[[bytes, int], tuple[int, int]]:
    """Reads a length prefix; returns -1 for null."""
    int16 = _fixed_reader("int16")
    int32 = _fixed_reader("int32")

    def read(buf: bytes, pos: int) -> tuple[int, int]:
        start = pos
        if flexible:
            length_value, pos = read_uvarint(buf, pos)
            length_value -= 1
        elif what == "string":
            length_value, pos = int16(buf, pos)
        else:
            length_value, pos = int32(buf, pos)
        if length_value < -1:
            raise DecodeError(f"negative {what} length {length_value}", start)
        if length_value == -1 and not nullable:
            raise DecodeError(f"null {what} in a non-nullable field", start)
        return length_value, pos

    return read


def _length_writer(flexible: bool, what: str) -> Callable[[int, list[bytes]], None]:
    def write(length_value: int, out: list[bytes]) -> None:
        if flexible:
            write_uvarint(length_value + 1, out)
        elif what == "string":
            out.append(struct.pack(">h", length_value))
        else:
            out.append(struct.pack(">i", length_value))

    return write


def _blob_reader(kind: str, flexible: bool, nullable: bool) -> Reader:
    read_len = _length_reader(flexible, nullable, kind)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        length_value, pos = read_len(buf, pos)
        if length_value < 0:
            return None, pos
        end = pos + length_value
        if end > len(buf):
            raise DecodeError(f"{kind} of {length_value} bytes runs past the end", pos)
        raw = bytes(buf[pos:end])
        if kind == "string":
            try:
                return raw.decode("utf-8"), end
            except UnicodeDecodeError as exc:
                raise DecodeError(f"string is not UTF-8: {exc.reason}", pos) from None
        return raw, end

    return read


def _blob_writer(kind: str, flexible: bool) -> Writer:
    write_len = _length_writer(flexible, kind)

    def write(value: Any, out: list[bytes]) -> None:
        if value is None:
            write_len(-1, out)
            return
        raw = value.encode("utf-8") if kind == "string" else bytes(value)
        write_len(len(raw), out)
        out.append(raw)

    return write


# ---------------------------------------------------------------------------------------------
# compiled readers and writers


def _element_reader(fdef: FieldDef, version: int, flexible: bool) -> Reader:
    kind = fdef.element_type
    if fdef.struct is not None:
        return _struct_reader(fdef.struct, version, flexible)
    if kind in _FIXED:
        return _fixed_reader(kind)
    if kind == "bool":
        return _read_bool
    if kind == "uuid":
        return _read_uuid
    if kind in ("string", "bytes", "records"):
        return _blob_reader("string" if kind == "string" else "bytes", flexible,
                            fdef.nullable_in(version) and not fdef.is_array)
    raise ValueError(f"unsupported type {kind}")


def _element_writer(fdef: FieldDef, version: int, flexible: bool) -> Writer:
    kind = fdef.element_type
    if fdef.struct is not None:
        return _struct_writer(fdef.struct, version, flexible)
    if kind in _FIXED:
        return _fixed_writer(kind)
    if kind == "bool":
        return _write_bool
    if kind == "uuid":
        return _write_uuid
    if kind in ("string", "bytes", "records"):
        return _blob_writer("string" if kind == "string" else "bytes", flexible)
    raise ValueError(f"unsupported type {kind}")


def _field_reader(fdef: FieldDef, version: int, flexible: bool) -> Reader:
    element = _element_reader(fdef, version, flexible)
    if not fdef.is_array:
        return element
    read_len = _length_reader(flexible, fdef.nullable_in(version), "array")

    def read_array(buf: bytes, pos: int) -> tuple[Any, int]:
        length_value, pos = read_len(buf, pos)
        if length_value < 0:
            return None, pos
        if length_value > len(buf) - pos:
            raise DecodeError(f"array of {length_value} elements cannot fit in the value", pos)
        items = []
        for _ in range(length_value):
            item, pos = element(buf, pos)
            items.append(item)
        return items, pos

    return read_array


def _field_writer(fdef: FieldDef, version: int, flexible: bool) -> Writer:
    element = _element_writer(fdef, version, flexible)
    if not fdef.is_array:
        return element
    write_len = _length_writer(flexible, "array")

    def write_array(value: Any, out: list[bytes]) -> None:
        if value is None:
            write_len(-1, out)
            return
        write_len(len(value), out)
        for item in value:
            element(item, out)

    return write_array


@cache
def _struct_reader(sdef: StructDef, version: int, flexible: bool) -> Reader:
    plain: list[tuple[str, Reader]] = []
    tagged: dict[int, tuple[FieldDef, Reader]] = {}
    defaults: dict[str, Any] = {}
    for fdef in sdef.fields_in(version):
        reader = _field_reader(fdef, version, flexible)
        if flexible and fdef.tagged_in(version):
            assert fdef.tag is not None
            tagged[fdef.tag] = (fdef, reader)
            defaults[fdef.json_name] = fdef.default
        else:
            plain.append((fdef.json_name, reader))

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        result: dict[str, Any] = {}
        for name, reader in plain:
            result[name], pos = reader(buf, pos)
        if flexible:
            for name, value in defaults.items():
                result[name] = _copy_default(value)
            count, pos = read_uvarint(buf, pos)
            unknown: list[list[Any]] = []
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise DecodeError(f"tagged field {tag} of {size} bytes runs past the end", pos)
                known = tagged.get(tag)
                if known is None:
                    unknown.append([tag, bytes(buf[pos:end])])
                else:
                    fdef, reader = known
                    value, used = reader(buf[:end], pos)
                    if used != end:
                        raise DecodeError(
                            f"tagged field {fdef.name} (tag {tag}) declares {size} bytes "
                            f"but its value used {used - pos}", pos)
                    result[fdef.json_name] = value
                pos = end
            if unknown:
                result[UNKNOWN_TAGGED] = unknown
        return result, pos

    return read


def _copy_default(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return {k: _copy_default(v) for k, v in value.items()}
    return value


@cache
def _struct_writer(sdef: StructDef, version: int, flexible: bool) -> Writer:
    plain: list[tuple[str, Any, Writer]] = []
    tagged: list[tuple[int, str, Any, Writer]] = []
    for fdef in sdef.fields_in(version):
        writer = _field_writer(fdef, version, flexible)
        if flexible and fdef.tagged_in(version):
            assert fdef.tag is not None
            tagged.append((fdef.tag, fdef.json_name, fdef.default, writer))
        else:
            plain.append((fdef.json_name, fdef.default, writer))
    tagged.sort(key=lambda t: t[0])

    def write(value: Any, out: list[bytes]) -> None:
        for name, default, writer in plain:
            writer(value.get(name, default), out)
        if not flexible:
            return
        fields: list[tuple[int, bytes]] = []
        for tag, name, default, writer in tagged:
            field_value = value.get(name, default)
            if field_value == default:
                continue  # Kafka writes a tagged field only when it differs from its default
            body: list[bytes] = []
            writer(field_value, body)
            fields.append((tag, b"".join(body)))
        for tag, raw in value.get(UNKNOWN_TAGGED, ()):
            fields.append((int(tag), bytes(raw)))
        fields.sort(key=lambda t: t[0])
        write_uvarint(len(fields), out)
        for tag, raw in fields:
            write_uvarint(tag, out)
            write_uvarint(len(raw), out)
            out.append(raw)

    return write
