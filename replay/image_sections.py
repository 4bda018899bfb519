"""The parts of Kafka's image beyond brokers, topics and partitions (issue 19), as ``state`` shows them: each
part's section, history table, key, Kafka JSON fields and order. Without Spark, so that ``replay.image_query``
(the Spark path) and ``replay.light_state`` (the JVM-free path of a fresh ``state``) read one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lakehouse.tables import (
    ACL_HISTORY,
    CLIENT_QUOTA_HISTORY,
    CONFIG_HISTORY,
    CONTROLLER_HISTORY,
    DELEGATION_TOKEN_HISTORY,
    FEATURE_HISTORY,
    PRODUCER_ID_HISTORY,
    SCRAM_HISTORY,
)
from records.vocabulary import fields
from replay.query_rules import kafka_fields

DEFAULT_ENTITY = "<default>"  # a client-quota entity's default name (a null entity_name)
# FeatureLevelRecord's names for feature_history's columns (feature → name, level → featureLevel)
_FEATUREnameS = {definition.column: definition.kafka_name for definition in fields()["FeatureLevelRecord"]}
NO_PRODUCER_ID = -1  # ProducerIdsImage.EMPTY: nextProducerId before any ProducerIdsRecord


@dataclass(frozen=True)
class Part:
    """One part of the image: its section name in ``state --format json`` (Kafka's image name), what one entry
    is called (``diff``, ``changes``), the history table, the key of one entry, the fields shown (column, Kafka
    name) and the order of a list."""

    section: str
    entity: str
    table: str
    key: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]
    order: tuple[str, ...]


PARTS: dict[str, Part] = {part.section: part for part in (
    Part("features", "feature", FEATURE_HISTORY, ("feature",),
         kafka_fields("feature", "level", names=_FEATUREnameS), ("feature",)),
    Part("controllers", "controller", CONTROLLER_HISTORY, ("controller_id",),
         kafka_fields("controller_id", "incarnation_id", "zk_migration_ready", "endpoints", "features"),
         ("controller_id",)),
    Part("configs", "config", CONFIG_HISTORY, ("resource_type", "resource_name", "name"),
         kafka_fields("resource_type", "resource_name", "name", "value"), ("resource_type", "resource_name", "name")),
    Part("clientQuotas", "clientQuota", CLIENT_QUOTA_HISTORY, ("entity", "key"),
         kafka_fields("entity", "key", "value"), ("entity", "key")),
    Part("acls", "acl", ACL_HISTORY, ("id",),
         kafka_fields("id", "resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
                      "permission_type"),
         ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type",
          "id")),
    Part("scramCredentials", "scramCredential", SCRAM_HISTORY, ("name", "mechanism"),
         kafka_fields("name", "mechanism", "iterations"), ("name", "mechanism")),
    Part("delegationTokens", "delegationToken", DELEGATION_TOKEN_HISTORY, ("token_id",),
         kafka_fields("token_id", "owner", "requester", "renewers", "issue_timestamp", "max_timestamp",
                      "expiration_timestamp"),
         ("token_id",)),
    Part("producerIds", "producerIds", PRODUCER_ID_HISTORY, (), kafka_fields("next_producer_id"), ()),
)}
SECTIONS = tuple(PARTS)
# What a diff also compares where the part keeps a secret's fingerprint: a new secret is a change.
FINGERPRINTS = {"configs": "value_fingerprint", "scramCredentials": "credential_fingerprint"}
INTERVAL_FIELDS = kafka_fields("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                               "cause_offset", "cause_type")



def next_producer_id_of(row: Mapping[str, Any] | None) -> int:
    """The image's ``nextProducerId``: the producer ids' one row's, or -1 before any ProducerIdsRecord."""
    return NO_PRODUCER_ID if row is None or row["next_producer_id"] is None else int(row["next_producer_id"])


__all__ = ["DEFAULT_ENTITY", "FINGERPRINTS", "INTERVAL_FIELDS", "NO_PRODUCER_ID", "PARTS", "SECTIONS", "Part",
           "next_producer_id_of"]
