"""Kafka's message encoding, fast: one generated Python function per (struct, version) that reads plain
fields inline and falls back to the checked readers of :mod:`records.message_encoding` on anything unusual.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from records.definitions import FieldDef, StructDef
from records.message_encoding import (
    UNKNOWN_TAGGED,
    DecodeError,
    Reader,
    ValueReader,
    _copy_default,
    _field_reader,
    _struct_reader,
)

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
        varint_byte = buf[pos]
        pos += 1
        result |= (varint_byte & 0x7F) << shift
        if varint_byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Fallback


def _array_structs(code: str) -> tuple[list[Callable[[bytes, int], tuple[Any, ...]]],
                                         Callable[[int], Callable[[bytes, int], tuple[Any, ...]]]]:
    """``unpack_from`` for arrays of ``count`` values of ``code``: built for every ``count`` up to
    ``_ARRAY_CACHE_MAX`` (a list indexed by ``count``), and the function building one for any ``count``."""
    repeat = code.endswith("s")  # a uuid is "16s": "3" + "16s" would be one 16-byte string, not three

    def make(count: int) -> Callable[[bytes, int], tuple[Any, ...]]:
        return struct.Struct(">" + (code * count if repeat else f"{count}{code}")).unpack_from

    return [make(count) for count in range(_ARRAY_CACHE_MAX + 1)], make


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

    def not_null(self, indent: int, length_name: str) -> int:
        """Opens the branch of a length ``length_name`` that is not negative; returns its indent. The code reading
        the value goes there, then :meth:`null_else` closes it."""
        self.emit(indent, f"if {length_name} >= 0:")
        return indent + 1

    def null_else(self, indent: int, length_name: str, target: str, nullable: bool) -> None:
        """``target = None`` for length -1 when allowed, any other negative length is unusual."""
        if nullable:
            self.emit(indent, f"elif {length_name} == -1:", f"    {target} = None")
        self.emit(indent, "else:", "    raise _Fallback")

    def blob(self, indent: int, target: str, kind: str, flexible: bool, nullable: bool,
             limit: str = "buflen") -> None:
        length_name = self.var()
        self.length(indent, length_name, flexible, "h" if kind == "string" else "i")
        inner = self.not_null(indent, length_name)
        self.emit(inner, f"{length_name} += pos", f"if {length_name} > {limit}:", "    raise _Fallback")
        if kind == "string":
            self.emit(inner, f"{target} = str(buf[pos:{length_name}], 'utf-8')")
        else:
            self.emit(inner, f"{target} = bytes(buf[pos:{length_name}])")
        self.emit(inner, f"pos = {length_name}")
        self.null_else(indent, length_name, target, nullable)

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
        length_name = self.var()
        self.length(indent, length_name, flexible, "i")
        inner = self.not_null(indent, length_name)
        if kind in _FIXED_CODES:  # one unpack for the whole array; uuids come out as bytes too
            # Up to _ARRAY_CACHE_MAX values, the unpack itself fails on too few bytes (struct.error), and
            # reading past a tagged field's end fails its caller's check; larger counts are checked first,
            # so that a damaged count never builds a huge Struct.
            code = _FIXED_CODES[kind]
            shared_cache, shared_make = _ARRAY_MAKERS[code]
            cache, make = self.const(shared_cache), self.const(shared_make)
            end = self.var()
            self.emit(inner, f"{end} = pos + {struct.calcsize('>' + code)} * {length_name}",
                      f"if {length_name} <= {_ARRAY_CACHE_MAX}:",
                      f"    {target} = [*{cache}[{length_name}](buf, pos)] if {length_name} else []",
                      f"elif {end} > {limit}:", "    raise _Fallback", "else:",
                      f"    {target} = [*{make}({length_name})(buf, pos)]", f"pos = {end}")
        else:
            self.emit(inner, f"if {length_name} > {limit} - pos:", "    raise _Fallback")
            if fdef.struct is not None:
                element = _fast_struct_reader(fdef.struct, version, flexible)
            elif kind in ("string", "bytes", "records"):
                element = _fast_blob_reader(blob, flexible)
            else:
                raise ValueError(f"unsupported type {kind}")
            read, item = self.const(element), self.var()
            self.emit(inner, f"{target} = []", f"for _ in range({length_name}):",
                      f"    {item}, pos = {read}(buf, pos)", f"    {target}.append({item})")
        self.null_else(indent, length_name, target, fdef.nullable_in(version))

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
