"""Helpers for the decoder guards (tests/test_generated_readers.py, tests/test_decode_perf_guards.py): a reader's
outcome (value or error), and mutations of an encoded body."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from records.kafka_codec import DecodeError


def outcome(reader: Any, buf: bytes, pos: int) -> Any:
    """What ``reader`` makes of ``buf`` at ``pos``, comparable with ``==``: its value (each float as its eight bytes,
    so that two NaNs read from the same bytes are equal and any other difference is not) or its error."""
    try:
        return "ok", _bits(reader(buf, pos))
    except (DecodeError, IndexError, struct.error) as exc:
        return type(exc).__name__, str(exc)


def _bits(value: Any) -> Any:
    """``value`` with every float replaced by its IEEE 754 bytes (a float64 field may hold a NaN, never equal to
    itself)."""
    if isinstance(value, float):
        return struct.pack(">d", value)
    if isinstance(value, dict):
        return {key: _bits(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_bits(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_bits(item) for item in value)
    return value


def mutations(raw: bytes, data: st.DataObject) -> list[bytes]:
    """The body itself, cut short, grown, and with a few bytes overwritten."""
    cut = raw[: data.draw(st.integers(0, len(raw)))]
    out = [raw, cut, raw + data.draw(st.binary(min_size=1, max_size=4))]
    if raw:
        damaged = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 3))):
            damaged[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        out.append(bytes(damaged))
    return out
