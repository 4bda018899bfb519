"""The terms the registry of image parts declares (``replay.core.image_parts.Term``: a diff's label and sort, a
change log entry's name and value) as Spark columns, in one place: the diff (``replay.query.image``) and the change
log (``replay.query.changes``) read each part's terms through :func:`term_column`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from records.kafka_constants import CONFIG_RESOURCE_TYPES, UNKNOWN
from records.vocabulary import kafka_name
from replay.core.cells import DEFAULT_ENTITY
from replay.core.image_parts import Term

_LISTS = {"renewers", "isr", "replicas", "eligible_leader_replicas"}


def code_name(code: Column, names: Mapping[int, str]) -> Column:
    """Kafka's name of an enum code (UNKNOWN for a code Kafka does not know)."""
    mapping = F.create_map(*[item for pair in names.items() for item in (F.lit(pair[0]), F.lit(pair[1]))])
    return F.coalesce(mapping[code], F.lit(UNKNOWN))


def resource_label(resource_type: Column, resource_name: Column, names: Mapping[int, str] = CONFIG_RESOURCE_TYPES
                   ) -> Column:
    """``TOPIC:orders``, ``BROKER:`` (the cluster default): the form ``parse_resource`` reads."""
    return F.concat(code_name(resource_type, names), F.lit(":"), F.coalesce(resource_name, F.lit("")))


def quota_entity_label(entity: Column) -> Column:
    """``user=alice,client-id=<default>``: a client-quota entity's (type, name) pairs, in the stored order."""
    return F.array_join(F.transform(entity, lambda element: F.concat(
        element["entity_type"], F.lit("="), F.coalesce(element["entity_name"], F.lit(DEFAULT_ENTITY)))), ",")


def text_column(column: str) -> Column:
    """The column as a string, empty when null."""
    return F.coalesce(F.col(column).cast("string"), F.lit(""))


def pairs_column(*columns: str) -> Column:
    """``kafkaName=value …`` for the columns (lists comma-joined, booleans true/false)."""
    parts = []
    for column in columns:
        value = F.col(column)
        shown = F.array_join(value.cast("array<string>"), ",") if column in _LISTS else value.cast("string")
        parts.append(F.concat(F.lit(f"{kafka_name(column)}="), F.coalesce(shown, F.lit(""))))
    return F.concat_ws(" ", *parts)


def _config_entity(resource_type: str, resource_name: str) -> Column:
    """``topic orders``; ``broker (cluster default)`` for an empty name."""
    kind = F.lower(code_name(F.col(resource_type), CONFIG_RESOURCE_TYPES))
    name = F.coalesce(F.col(resource_name), F.lit(""))
    return F.when(name == "", F.concat(kind, F.lit(" (cluster default)"))).otherwise(F.concat_ws(" ", kind, name))


def term_column(term: Term) -> Column:
    """The Spark column of one declared term."""
    columns, codes = term.columns, term.codes or {}
    inner = [term_column(each) for each in term.terms]
    match term.kind:
        case "column":
            return F.col(columns[0])
        case "text":
            return text_column(columns[0])
        case "string":
            return F.col(columns[0]).cast("string")
        case "number":
            return F.col(columns[0]).cast("long")
        case "zero":
            return F.lit(0).cast("long")
        case "literal":
            return F.lit(term.text)
        case "code":
            return code_name(F.col(columns[0]), codes)
        case "resource":
            return resource_label(F.col(columns[0]), F.col(columns[1]), codes)
        case "quota_entity":
            return quota_entity_label(F.col(columns[0]))
        case "pairs":
            return pairs_column(*columns)
        case "concat":
            return F.concat(*inner)
        case "joined":
            return F.concat_ws(term.text, *inner)
        case "format":
            return F.format_string(term.text, *inner)
        case "config_entity":
            return _config_entity(*columns)
    raise ValueError(f"unknown term {term.kind!r}")


__all__ = ["code_name", "pairs_column", "quota_entity_label", "resource_label", "term_column", "text_column"]
