"""Kafka's field names and the lake's column names, mapped by one rule and listed from Kafka's own definitions.

A column is the snake_case of Kafka's JSON name (``leaderRecoveryState`` ↔ ``leader_recovery_state``); every
replay table, seed and JSON output converts through these two functions, so a name is never typed twice.
``fields()`` lists, for every record type Kafka defines, each field's Kafka name, column, type and default;
``field()`` looks one up, so a name the replay reads that Kafka does not define fails where it is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from records.definitions import FieldDef, definitions

_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# The table columns that differ from the rule on purpose: the tables keep the names they have always had.
# (record type, Kafka name) → column; declared here once, and nowhere else.
COLUMN_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("RegisterBrokerRecord", "endPoints"): "endpoints",  # one word in broker_history, not end_points
    ("RegisterControllerRecord", "endPoints"): "endpoints",  # and in controller_history
    ("FenceBrokerRecord", "id"): "broker_id",  # every broker record is keyed by broker_id
    ("UnfenceBrokerRecord", "id"): "broker_id",
    ("FeatureLevelRecord", "name"): "feature",  # feature_history: (feature, level)
    ("FeatureLevelRecord", "featureLevel"): "level",
}


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
    nested: tuple[str, ...] = ()  # an array of structs: its element's Kafka names


def _field(record_type: str, definition: FieldDef) -> Field:
    name = definition.json_name
    nested = tuple(f.json_name for f in definition.struct.fields) if definition.struct is not None else ()
    return Field(record_type, name, COLUMN_EXCEPTIONS.get((record_type, name), column_name(name)),
                 definition.type, definition.default, nested)


@cache
def fields() -> dict[str, tuple[Field, ...]]:
    """Every record type's top-level fields, from the bundled Kafka definitions."""
    return {name: tuple(_field(name, f) for f in message.body.fields)
            for name, message in sorted(definitions().items())}


@cache
def field(record_type: str, kafka_field: str) -> Field:
    """The field ``kafka_field`` of ``record_type``; a KeyError when Kafka's definition has no such field."""
    for candidate in fields()[record_type]:
        if candidate.kafka_name == kafka_field:
            return candidate
    raise KeyError(f"{record_type} has no field {kafka_field} in Kafka's definition")


def default(record_type: str, kafka_field: str) -> Any:
    """Kafka's default of a field: what a reader of the record gets when the field is absent (tagged)."""
    return field(record_type, kafka_field).default
