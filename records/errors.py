"""Errors a user sees: each names where (file, line or byte, offset) and what was expected.

The CLI turns any :class:`RecordsError` into a one-paragraph message and a non-zero exit code,
never a traceback.
"""

from __future__ import annotations


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
