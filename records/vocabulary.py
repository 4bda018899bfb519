"""Kafka's field names and the lake's column names, mapped by one rule and listed from Kafka's own definitions.

A column is the snake_case of Kafka's JSON name (``leaderRecoveryState`` ↔ ``leader_recovery_state``); every
replay table, seed and JSON output converts through these two functions, so a name is never typed twice.
``FIELDS`` lists, for every record type Kafka defines, each field's Kafka name, column, type and default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from records.definitions import definitions

_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def column_name(kafka_name: str) -> str:
    """``inControlledShutdown`` → ``in_controlled_shutdown``; ``isr`` stays ``isr``."""
    return _WORD_START.sub("_", kafka_name).lower()


def kafka_name(column: str) -> str:
    """``in_controlled_shutdown`` → ``inControlledShutdown``: the inverse of :func:`column_name`."""
    head, *rest = column.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of one record type: Kafka's name, the lake's column, Kafka's type and default."""

    record_type: str
    kafka_name: str
    column: str
    type: str
    default: Any


@cache
def fields() -> dict[str, tuple[Field, ...]]:
    """Every record type's top-level fields, from the bundled Kafka definitions."""
    return {name: tuple(Field(name, f.json_name, column_name(f.json_name), f.type, f.default)
                        for f in message.body.fields)
            for name, message in sorted(definitions().items())}
