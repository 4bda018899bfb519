"""Helpers for the JSON-lines tests (tests/test_jsonl.py, tests/test_validation.py): read lines, or the error."""

from __future__ import annotations

import io
import json

import pytest

from records.errors import RecordValidationError
from records.jsonl import read_jsonl

TOPIC = "_3Hx0m1zQ4mBbPw_6E4vVw"
GOOD = {"offset": 7, "type": "FENCE_BROKER_RECORD", "version": 0, "data": {"id": 1, "epoch": 5}}


def read_lines(lines: list[dict | str]) -> list:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    return list(read_jsonl(io.StringIO(text), "cluster.jsonl"))


def read_error(lines: list[dict | str]) -> str:
    with pytest.raises(RecordValidationError) as info:
        read_lines(lines)
    return str(info.value)
