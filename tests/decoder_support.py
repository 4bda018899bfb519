"""Helpers for the decoder guards (tests/test_generated_readers.py, tests/test_decode_perf_guards.py): a reader's
outcome (value or error), and mutations of an encoded body."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from records.kafka_codec import DecodeError


def outcome(reader: Any, buf: bytes, pos: int) -> Any:
    try:
        return "ok", reader(buf, pos)
    except (DecodeError, IndexError, struct.error) as exc:
        return type(exc).__name__, str(exc)


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
