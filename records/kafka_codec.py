"""Kafka's message encoding (the one ``MetadataRecordSerde`` and the raft control records use).

Driven entirely by :mod:`records.definitions`: for each (record type, version) a reader and a
writer are compiled once from the definition into closures, so decoding a record is a chain of
direct calls, not a walk over the definition.

Values follow the record model: integers, ``bool``, ``float``, ``str``, ``bytes``, UUIDs as
16 raw bytes, arrays as lists (``None`` when null), structs as dicts keyed by Kafka's camelCase
JSON names. Unknown tagged fields are kept under ``_unknownTaggedFields`` as ``[tag, bytes]``
pairs so that re-encoding gives the original bytes back.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from records.definitions import FieldDef, MessageDef, StructDef

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
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
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
            n, pos = read_uvarint(buf, pos)
            n -= 1
        elif what == "string":
            n, pos = int16(buf, pos)
        else:
            n, pos = int32(buf, pos)
        if n < -1:
            raise DecodeError(f"negative {what} length {n}", start)
        if n == -1 and not nullable:
            raise DecodeError(f"null {what} in a non-nullable field", start)
        return n, pos

    return read


def _length_writer(flexible: bool, what: str) -> Callable[[int, list[bytes]], None]:
    def write(n: int, out: list[bytes]) -> None:
        if flexible:
            write_uvarint(n + 1, out)
        elif what == "string":
            out.append(struct.pack(">h", n))
        else:
            out.append(struct.pack(">i", n))

    return write


def _blob_reader(kind: str, flexible: bool, nullable: bool) -> Reader:
    read_len = _length_reader(flexible, nullable, kind)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            return None, pos
        end = pos + n
        if end > len(buf):
            raise DecodeError(f"{kind} of {n} bytes runs past the end", pos)
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
        n, pos = read_len(buf, pos)
        if n < 0:
            return None, pos
        if n > len(buf) - pos:
            raise DecodeError(f"array of {n} elements cannot fit in the value", pos)
        items = []
        for _ in range(n):
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


# ---------------------------------------------------------------------------------------------
# generated readers: the fast path
#
# The closures above check every read and say exactly what is wrong; a chain of them costs a call per
# field. For decoding millions of records, each (struct, version) also gets one generated function
# that reads all plain fields inline (runs of fixed-size fields with one struct.unpack_from, int arrays
# with one unpack) and builds the dict with a single literal. It checks just enough to never return
# anything the checked reader would not; on anything unusual it re-reads the struct with the checked
# reader, so results and error messages are the same as the checked reader's by construction.
# A metadata record's body also gets a whole-value variant (value_reader) that returns None instead of
# falling back, for records.decode, whose checked path then reads the value from the start.


class _Fallback(Exception):
    """Internal: the generated reader met something unusual; the checked reader takes over."""


# DecodeError is deliberately absent: one raised by a nested reader's own fallback is already the error
# the checked reader of the enclosing struct would raise.
_FAST_ERRORS = (_Fallback, IndexError, struct.error, UnicodeDecodeError)
_FIXED_CODES = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
                "float64": "d", "bool": "?", "uuid": "16s"}
_ARRAY_CACHE_MAX = 64  # element counts up to this get a cached Struct; larger ones are built per use


def _fast_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """:func:`read_uvarint` for varints of two bytes or more; failures go to the checked reader."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Fallback


def _array_structs(code: str) -> tuple[list[Callable[[bytes, int], tuple[Any, ...]]],
                                         Callable[[int], Callable[[bytes, int], tuple[Any, ...]]]]:
    """``unpack_from`` for arrays of ``n`` values of ``code``: built for every ``n`` up to
    ``_ARRAY_CACHE_MAX`` (a list indexed by ``n``), and the function building one for any ``n``."""
    repeat = code.endswith("s")  # a uuid is "16s": "3" + "16s" would be one 16-byte string, not three

    def make(n: int) -> Callable[[bytes, int], tuple[Any, ...]]:
        return struct.Struct(">" + (code * n if repeat else f"{n}{code}")).unpack_from

    return [make(n) for n in range(_ARRAY_CACHE_MAX + 1)], make


_ARRAY_MAKERS = {code: _array_structs(code) for code in set(_FIXED_CODES.values())}


class _Emitter:
    """Python source for one generated reader, and the constants it refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"_Fallback": _Fallback, "_FAST_ERRORS": _FAST_ERRORS,
                                   "uvarint": _fast_uvarint, "_copy_default": _copy_default}
        self.counter = 0

    def const(self, value: Any) -> str:
        self.counter += 1
        name = f"K{self.counter}"
        self.ns[name] = value
        return name

    def var(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def emit(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def uvarint(self, indent: int, target: str) -> None:
        self.emit(indent, f"{target} = buf[pos]", f"if {target} < 0x80:", "    pos += 1", "else:",
                  f"    {target}, pos = uvarint(buf, pos)")

    def length(self, indent: int, target: str, flexible: bool, code: str) -> None:
        """A length prefix: uvarint + 1 when flexible, else a signed int16 (strings) or int32."""
        if flexible:  # the uvarint inline, with the 1 taken off in the same step for one byte
            self.emit(indent, f"{target} = buf[pos] - 1", f"if {target} < 0x7F:", "    pos += 1", "else:",
                      f"    {target}, pos = uvarint(buf, pos)", f"    {target} -= 1")
        else:
            size = 2 if code == "h" else 4
            self.emit(indent, f"{target}, = {self.const(struct.Struct('>' + code).unpack_from)}(buf, pos)",
                      f"pos += {size}")

    def not_null(self, indent: int, n: str) -> int:
        """Opens the branch of a length ``n`` that is not negative; returns its indent. The code reading
        the value goes there, then :meth:`null_else` closes it."""
        self.emit(indent, f"if {n} >= 0:")
        return indent + 1

    def null_else(self, indent: int, n: str, target: str, nullable: bool) -> None:
        """``target = None`` for length -1 when allowed, any other negative length is unusual."""
        if nullable:
            self.emit(indent, f"elif {n} == -1:", f"    {target} = None")
        self.emit(indent, "else:", "    raise _Fallback")

    def blob(self, indent: int, target: str, kind: str, flexible: bool, nullable: bool,
             limit: str = "buflen") -> None:
        n = self.var()
        self.length(indent, n, flexible, "h" if kind == "string" else "i")
        inner = self.not_null(indent, n)
        self.emit(inner, f"{n} += pos", f"if {n} > {limit}:", "    raise _Fallback")
        if kind == "string":
            self.emit(inner, f"{target} = str(buf[pos:{n}], 'utf-8')")
        else:
            self.emit(inner, f"{target} = bytes(buf[pos:{n}])")
        self.emit(inner, f"pos = {n}")
        self.null_else(indent, n, target, nullable)

    def field(self, indent: int, target: str, fdef: FieldDef, version: int, flexible: bool,
              limit: str = "buflen") -> None:
        """Code reading one field into ``target``; ``limit`` is where its bytes must end at the latest.

        Fixed-size reads and single bytes are bounded by the buffer itself (struct.error, IndexError);
        a tagged field is read inline from the whole value, so its caller checks it ended at its end.
        """
        kind = fdef.element_type
        blob = "string" if kind == "string" else "bytes"
        if not fdef.is_array:
            if fdef.struct is not None:
                reader = self.const(_fast_struct_reader(fdef.struct, version, flexible))
                self.emit(indent, f"{target}, pos = {reader}(buf, pos)")
            elif kind in _FIXED_CODES:
                unpack = self.const(struct.Struct(">" + _FIXED_CODES[kind]).unpack_from)
                self.emit(indent, f"{target}, = {unpack}(buf, pos)",
                          f"pos += {struct.calcsize('>' + _FIXED_CODES[kind])}")
            elif kind in ("string", "bytes", "records"):
                self.blob(indent, target, blob, flexible, fdef.nullable_in(version), limit)
            else:
                raise ValueError(f"unsupported type {kind}")
            return
        n = self.var()
        self.length(indent, n, flexible, "i")
        inner = self.not_null(indent, n)
        if kind in _FIXED_CODES:  # one unpack for the whole array; uuids come out as bytes too
            # Up to _ARRAY_CACHE_MAX values, the unpack itself fails on too few bytes (struct.error), and
            # reading past a tagged field's end fails its caller's check; larger counts are checked first,
            # so that a damaged count never builds a huge Struct.
            code = _FIXED_CODES[kind]
            shared_cache, shared_make = _ARRAY_MAKERS[code]
            cache, make = self.const(shared_cache), self.const(shared_make)
            end = self.var()
            self.emit(inner, f"{end} = pos + {struct.calcsize('>' + code)} * {n}",
                      f"if {n} <= {_ARRAY_CACHE_MAX}:",
                      f"    {target} = [*{cache}[{n}](buf, pos)] if {n} else []",
                      f"elif {end} > {limit}:", "    raise _Fallback", "else:",
                      f"    {target} = [*{make}({n})(buf, pos)]", f"pos = {end}")
        else:
            self.emit(inner, f"if {n} > {limit} - pos:", "    raise _Fallback")
            if fdef.struct is not None:
                element = _fast_struct_reader(fdef.struct, version, flexible)
            elif kind in ("string", "bytes", "records"):
                element = _fast_blob_reader(blob, flexible)
            else:
                raise ValueError(f"unsupported type {kind}")
            read, item = self.const(element), self.var()
            self.emit(inner, f"{target} = []", f"for _ in range({n}):",
                      f"    {item}, pos = {read}(buf, pos)", f"    {target}.append({item})")
        self.null_else(indent, n, target, fdef.nullable_in(version))

    def compile(self, name: str) -> Reader:
        exec(compile("\n".join(self.lines), f"<kafka_codec {name}>", "exec"), self.ns)
        return self.ns["read"]


@cache
def _fast_blob_reader(kind: str, flexible: bool) -> Reader:
    """An array element that is a string or bytes (never null); raises _Fallback on anything unusual."""
    out = _Emitter()
    out.emit(0, "def read(buf, pos):", "    buflen = len(buf)")
    out.blob(1, "value", kind, flexible, nullable=False)
    out.emit(1, "return value, pos")
    return out.compile(f"[]{kind}")


def _fast_field_reader(fdef: FieldDef, version: int, flexible: bool) -> Reader:
    """A tagged field's value, with the checked field reader as the fallback."""
    out = _Emitter()
    out.ns["checked"] = _field_reader(fdef, version, flexible)
    out.emit(0, "def read(buf, pos):", "    start = pos", "    buflen = len(buf)", "    try:")
    out.field(2, "value", fdef, version, flexible)
    out.emit(1, "except _FAST_ERRORS:", "    return checked(buf, start)", "return value, pos")
    return out.compile(f"{fdef.name} v{version}")


@cache
def _fast_struct_reader(sdef: StructDef, version: int, flexible: bool) -> Reader:
    """The generated reader of a struct; same results and errors as :func:`_struct_reader`."""
    return _generate_struct_reader(sdef, version, flexible, whole_value=False)


@cache
def _fast_value_reader(sdef: StructDef, version: int, flexible: bool) -> ValueReader:
    """A generated reader of a whole metadata value whose body starts at byte 3, for the value plans of
    :mod:`records.decode`: the body's fields when the generated code of :func:`_fast_struct_reader`
    reads the body from byte 3 to exactly the end of the value, else ``None`` (where the struct reader
    would have fallen back to the checked reader, or stopped short of the end).

    Cheaper than the struct reader on the hot path (no position in and out, no tuple); on ``None`` the
    caller decodes the value the checked way, which says what is wrong (or reads it all the same)."""
    return _generate_struct_reader(sdef, version, flexible, whole_value=True)  # type: ignore[return-value]


def _generate_struct_reader(sdef: StructDef, version: int, flexible: bool, whole_value: bool) -> Reader:
    out = _Emitter()
    if whole_value:
        out.ns["_VALUE_ERRORS"] = (*_FAST_ERRORS, DecodeError)  # a nested reader's fallback may raise
        out.emit(0, "def read(buf):", "    pos = 3", "    buflen = len(buf)", "    try:")
    else:
        out.ns["checked"] = _struct_reader(sdef, version, flexible)
        out.emit(0, "def read(buf, pos):", "    start = pos", "    buflen = len(buf)", "    try:")
    items: list[str] = []  # "'jsonName': variable" of the result dict, in the checked reader's order
    run: list[tuple[str, str]] = []  # consecutive fixed-size fields: (struct code, variable)

    def flush_run() -> None:
        if run:
            layout = struct.Struct(">" + "".join(code for code, _ in run))
            targets = "".join(f"{target}, " for _, target in run)
            out.emit(2, f"{targets}= {out.const(layout.unpack_from)}(buf, pos)", f"pos += {layout.size}")
            run.clear()

    tagged: list[tuple[FieldDef, str]] = []
    for fdef in sdef.fields_in(version):
        target = out.var()
        if flexible and fdef.tagged_in(version):
            tagged.append((fdef, target))
            continue
        items.append(f"{fdef.json_name!r}: {target}")
        if not fdef.is_array and fdef.struct is None and fdef.type in _FIXED_CODES:
            run.append((_FIXED_CODES[fdef.type], target))
        else:
            flush_run()
            out.field(2, target, fdef, version, flexible)
    flush_run()
    if flexible:
        for fdef, target in tagged:
            items.append(f"{fdef.json_name!r}: {target}")
            default = fdef.default
            if isinstance(default, list) and not default:
                out.emit(2, f"{target} = []")
            elif isinstance(default, list | dict):
                out.emit(2, f"{target} = _copy_default({out.const(default)})")
            else:
                out.emit(2, f"{target} = {out.const(default)}")
        out.emit(2, "unknown = None")
        out.uvarint(2, "count")
        out.emit(2, "while count:", "    count -= 1")
        out.uvarint(3, "tag")
        out.uvarint(3, "size")
        out.emit(3, "end = pos + size", "if end > buflen:", "    raise _Fallback")
        keyword = "if"
        for fdef, target in tagged:
            assert fdef.tag is not None
            out.emit(3, f"{keyword} tag == {fdef.tag}:")
            keyword = "elif"
            if fdef.struct is None:  # read inline; the check catches any read past its end
                out.field(4, target, fdef, version, flexible, limit="end")
                out.emit(4, "if pos != end:", "    raise _Fallback")
            else:  # a nested reader bounds itself by its buffer, so it gets only the field's bytes
                reader = out.const(_fast_field_reader(fdef, version, flexible))
                out.emit(4, "part = buf if end == buflen else buf[:end]",
                         f"{target}, used = {reader}(part, pos)", "if used != end:", "    raise _Fallback",
                         "pos = end")
        unknown = ["if unknown is None:", "    unknown = []", "unknown.append([tag, bytes(buf[pos:end])])",
                   "pos = end"]
        if tagged:
            out.emit(3, "else:", *("    " + line for line in unknown))
        else:
            out.emit(3, *unknown)
    if whole_value:
        out.emit(1, "except _VALUE_ERRORS:", "    return None", "if pos != buflen:", "    return None")
    else:
        out.emit(1, "except _FAST_ERRORS:", "    return checked(buf, start)")
    out.emit(1, "result = {" + ", ".join(items) + "}")
    if flexible:
        out.emit(1, "if unknown:", f"    result[{UNKNOWN_TAGGED!r}] = unknown")
    out.emit(1, "return result" if whole_value else "return result, pos")
    return out.compile(f"{sdef.name} v{version}{' value' if whole_value else ''}")


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
