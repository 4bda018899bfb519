"""How a table for people writes a value of the image: Kafka's enum names (TOPIC, ALLOW, SCRAM-SHA-256…), a
config resource, a client-quota entity, a secret fingerprint's head, a time. Plain Python (no pyspark), so the
registry of image parts (``replay.core.image_parts``) can say how each part is printed, for the Spark path and
the JVM-free path alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from records.kafka_constants import CONFIG_RESOURCE_TYPES, UNKNOWN

DEFAULT_ENTITY = "<default>"  # a client-quota entity's default name (a null entity_name)
FINGERPRINT_SHOWN = 12  # hex digits of a secret's fingerprint a table shows: enough to tell two apart


def named(names: Mapping[int, str], code: int | None) -> str:
    """Kafka's name of an enum code (UNKNOWN for a code Kafka does not know; empty for none)."""
    return "" if code is None else names.get(code, UNKNOWN)


def config_resource(resource_type: int | None, resource_name: str | None) -> str:
    """``TOPIC:orders``, ``BROKER:1``, ``BROKER:`` (the cluster default): as ``history --config`` takes it."""
    return f"{named(CONFIG_RESOURCE_TYPES, resource_type)}:{resource_name or ''}"


def quota_entity(entity: list[Any] | None) -> str:
    """``user=alice,client-id=<default>``: a client-quota entity's (type, name) pairs, in the stored order."""
    return ",".join(f"{e['entity_type']}={DEFAULT_ENTITY if e['entity_name'] is None else e['entity_name']}"
                    for e in entity or [])


def fingerprint_head(value: str | None) -> str:
    """The first ``FINGERPRINT_SHOWN`` hex digits of a secret's fingerprint."""
    return "" if value is None else value[:FINGERPRINT_SHOWN] + "…"


def iso_ms(epoch_ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2026-01-30T17:23:55.232Z``)."""
    if epoch_ms is None:
        return ""
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


__all__ = ["DEFAULT_ENTITY", "FINGERPRINT_SHOWN", "config_resource", "fingerprint_head", "iso_ms", "named",
           "quota_entity"]
