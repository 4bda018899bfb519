"""Helpers for the Avro tests (tests/test_avro_codec.py, tests/test_avro_schema.py)."""

from __future__ import annotations

from typing import Any


def avro_shape(data: Any) -> Any:
    """Model data as Avro writes it: unknown tagged fields as {tag, data} records."""
    if isinstance(data, dict):
        out = {k: avro_shape(v) for k, v in data.items() if k != "_unknownTaggedFields"}
        out["_unknownTaggedFields"] = [{"tag": t, "data": raw}
                                       for t, raw in data.get("_unknownTaggedFields", [])]
        return out
    if isinstance(data, list):
        return [avro_shape(v) for v in data]
    return data
