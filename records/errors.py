"""Errors a user sees: each names where (file, line or byte, offset) and what was expected.

The CLI turns any :class:`RecordsError` into a one-paragraph message and a non-zero exit code,
never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class RecordsError(Exception):
    """Base of every input error; ``str()`` is the whole user-facing message."""


class RecordValidationError(RecordsError):
    """A record does not match Kafka's definition of its type and version."""

    def __init__(self, problem: str, *, source: str | None = None, line: int | None = None,
                 offset: int | None = None, path: str | None = None) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.offset = offset
        self.path = path
        where = []
        if source is not None:
            where.append(source)
        if line is not None:
            where.append(f"line {line}")
        if offset is not None:
            where.append(f"offset {offset}")
        prefix = ", ".join(where)
        field_part = f"field {path}: " if path else ""
        super().__init__(f"{prefix}: {field_part}{problem}" if prefix else f"{field_part}{problem}")


class CorruptBatchError(RecordsError):
    """A Kafka record batch on disk is damaged: names the file, byte position, base offset and the fault."""

    def __init__(self, reason: str, *, source: str, position: int, base_offset: int | None = None) -> None:
        self.reason = reason
        self.source = source
        self.position = position
        self.base_offset = base_offset
        where = f"byte {position}" if base_offset is None else f"byte {position} (base offset {base_offset})"
        super().__init__(f"{source}: corrupt record batch at {where}: {reason}")


@dataclass(frozen=True, slots=True)
class TruncatedTailWarning:
    """A partial batch at the end of the last segment, as a crashed writer leaves it; Kafka truncates it."""

    source: str
    position: int
    base_offset: int | None
    bytes_present: int
    bytes_expected: int | None

    def __str__(self) -> str:
        offset = "" if self.base_offset is None else f" (base offset {self.base_offset})"
        expected = "a full batch header" if self.bytes_expected is None else f"{self.bytes_expected} bytes"
        return (f"{self.source}: partial record batch at byte {self.position}{offset} at the end of the log: "
                f"{self.bytes_present} bytes present, {expected} expected; "
                "ignored as Kafka's log recovery does")
