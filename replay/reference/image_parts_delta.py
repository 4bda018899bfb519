"""The parts of Kafka's ``MetadataImage`` beyond topics, cluster and features, and the rules of their Deltas, record
by record: ``ConfigurationsDelta``, ``ClientQuotasDelta``, ``AclsDelta``, ``ScramDelta``, ``DelegationTokenDelta``,
``ProducerIdsDelta``, and 3.9's ``FeaturesDelta.replay(ZkMigrationStateRecord)``. ``replay.reference.metadata_delta``
dispatches to them (``PART_REPLAYS``) and its ``Image``/``Changes`` hold these parts (``ImageParts``,
``PartChanges``).

Checked against Kafka 4.4.0 and 3.9.2 (their sources and jars; tests/test_kafka_referee.py folds with both):

- Kafka normalises codes it does not know: ``ConfigResource.Type.forId``, ``ResourceType``/``PatternType``/
  ``AclOperation``/``AclPermissionType.fromCode`` and ``ScramMechanism.fromType`` give UNKNOWN (0), and the image
  keeps that; so do we (an ACL's: ``records.standard_acl``, which the simulated controller keeps its ACLs in too).
- The fold works on redacted entries (``records.redaction``): a config value or SCRAM credential is what the entry
  holds, and ``entry.secret_fingerprint`` stays beside it so a change of a secret is still a change.
- Kafka 4.4's broker also drops a ConfigRecord its ``SupportedConfigChecker`` does not know; the log's own state
  (every checker true, as the referee runs it) keeps every key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from records.kafka_constants import (
    CONFIG_RESOURCE_TOPIC,
    CONFIG_RESOURCE_TYPES,
    CONFIG_RESOURCE_UNKNOWN,
    SCRAM_MECHANISMS,
    SCRAM_UNKNOWN,
    ZK_MIGRATION_STATES,
)
from records.model import LogEntry, MetadataRecord, uuid_to_str
from records.standard_acl import StandardAcl
from records.token_information import DelegationToken
from records.vocabulary import default
from replay.core.refusals import INVALID_PRINCIPAL, INVALID_ZK_MIGRATION_STATE, UNKNOWN_ACL_REMOVAL


class Refused(Exception):
    """Kafka would not apply this record (its replay throws)."""


Cause = tuple[int, str]  # (offset, record type) of the last record that touched an entity
ConfigResource = tuple[int, str]  # Kafka's ConfigResource: (resource type, resource name)
QuotaEntity = tuple[tuple[str, str | None], ...]  # ClientQuotaEntity: (entityType, entityName) sorted by type


@dataclass(frozen=True)
class ConfigValue:
    value: str | None  # as the entry holds it: "(redacted)" for a secret
    fingerprint: str | None  # the secret's keyed fingerprint, None when nothing was redacted


@dataclass(frozen=True)
class ScramCredential:
    """``ScramCredentialData`` without its secrets (salt, stored key, server key): their fingerprint instead."""

    iterations: int
    fingerprint: str | None


@dataclass(frozen=True)
class ProducerIds:
    """``ProducerIdsImage`` (only ``nextProducerId``) and the broker whose block request set it."""

    next_producer_id: int
    broker_id: int
    broker_epoch: int


@dataclass
class ImageParts:
    """ConfigurationsImage, ClientQuotasImage, AclsImage, ScramImage, DelegationTokenImage, ProducerIdsImage and
    3.9's FeaturesImage.zkMigrationState; empty as Kafka's empty image is."""

    configs: dict[ConfigResource, dict[str, ConfigValue]] = field(default_factory=dict)
    client_quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    acls: dict[str, StandardAcl] = field(default_factory=dict)  # by id, as AclsImage keeps them
    scram: dict[tuple[str, int], ScramCredential] = field(default_factory=dict)  # (user name, mechanism)
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)
    producer_ids: ProducerIds | None = None  # None: ProducerIdsImage.EMPTY (nextProducerId -1)
    zk_migration_state: int = 0  # ZkMigrationState.NONE

    def parts_copy(self) -> dict[str, Any]:
        """The parts as independent keyword arguments (the values are immutable; nested dicts are copied)."""
        return {"configs": {k: dict(v) for k, v in self.configs.items()},
                "client_quotas": {k: dict(v) for k, v in self.client_quotas.items()}, "acls": dict(self.acls),
                "scram": dict(self.scram), "delegation_tokens": dict(self.delegation_tokens),
                "producer_ids": self.producer_ids, "zk_migration_state": self.zk_migration_state}


@dataclass
class PartChanges:
    """The keys of these parts one commit touched, each with the last record that touched it."""

    configs: dict[tuple[int, str, str], Cause] = field(default_factory=dict)  # (resource type, name, key)
    client_quotas: dict[tuple[QuotaEntity, str], Cause] = field(default_factory=dict)
    acls: dict[str, Cause] = field(default_factory=dict)
    scram: dict[tuple[str, int], Cause] = field(default_factory=dict)
    delegation_tokens: dict[str, Cause] = field(default_factory=dict)
    producer_ids: Cause | None = None


def _record(entry: LogEntry) -> MetadataRecord:
    """The entry's record: the fold hands these rules decoded records only (it skips raw ones)."""
    return cast(MetadataRecord, entry.record)


def _code(value: int, known: Mapping[int, str], unknown: int) -> int:
    """Kafka's ``fromCode``/``forId``/``fromType``: a code it does not know is its UNKNOWN."""
    return value if value in known else unknown


# --- ConfigurationsDelta --------------------------------------------------------------------------------------


def config_resource(record: MetadataRecord) -> ConfigResource:
    """``new ConfigResource(Type.forId(resourceType), resourceName)``: BROKER with an empty name is the cluster
    default, an unknown type is UNKNOWN."""
    return (_code(record.data["resourceType"], CONFIG_RESOURCE_TYPES, CONFIG_RESOURCE_UNKNOWN),
            record.data["resourceName"])


def replay_config(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``ConfigurationDelta.replay(ConfigRecord)``: sets the key; a null value deletes it, and a resource left with
    no key disappears (``ConfigurationsDelta.apply`` keeps no empty ``ConfigurationImage``)."""
    record = _record(entry)
    resource, name, value = config_resource(record), record.data["name"], record.data.get("value")
    configs = parts.configs.get(resource, {})
    if value is None:
        configs.pop(name, None)
    else:
        configs[name] = ConfigValue(value, entry.secret_fingerprint)
    if configs:
        parts.configs[resource] = configs
    else:
        parts.configs.pop(resource, None)
    changes.configs[(*resource, name)] = cause


def remove_topic_configs(parts: ImageParts, topic_name: str, cause: Cause, changes: PartChanges) -> None:
    """``ConfigurationsDelta.replay(RemoveTopicRecord, topicName)``: every config of the topic's name goes, so a
    topic re-created under that name starts with none. (A broker's delta deletes only what its base image held, so
    a config set in the same batch as the removal outlives it there; the controller's
    ``ConfigurationControlManager.deleteTopicConfigs`` deletes them all, as a record-by-record fold does.)"""
    resource = (CONFIG_RESOURCE_TOPIC, topic_name)
    for name in parts.configs.pop(resource, {}):
        changes.configs[(*resource, name)] = cause


# --- ClientQuotasDelta ----------------------------------------------------------------------------------------


def quota_entity(record: MetadataRecord) -> QuotaEntity:
    """``ClientQuotaImage.dataToEntity``: a map entityType -> entityName (a repeated type: the last wins; a null
    name is the default entity), here sorted by type, which is unique in it."""
    names = {part["entityType"]: part.get("entityName") for part in record.data["entity"]}
    return tuple(sorted(names.items(), key=lambda pair: pair[0]))


def replay_client_quota(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``ClientQuotaDelta.replay``: ``remove`` deletes the key, else sets it; an entity left with no key
    disappears."""
    record = _record(entry)
    entity, key = quota_entity(record), record.data["key"]
    quotas = parts.client_quotas.get(entity, {})
    if record.data["remove"]:
        quotas.pop(key, None)
    else:
        quotas[key] = float(record.data["value"])
    if quotas:
        parts.client_quotas[entity] = quotas
    else:
        parts.client_quotas.pop(entity, None)
    changes.client_quotas[(entity, key)] = cause


# --- AclsDelta ------------------------------------------------------------------------------------------------


def replay_acl(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``AclsDelta.replay(AccessControlEntryRecord)``: upsert by id (``StandardAclWithId.fromRecord``)."""
    record = _record(entry)
    acl_id = uuid_to_str(record.data["id"])
    parts.acls[acl_id] = StandardAcl.from_record(record)
    changes.acls[acl_id] = cause


def remove_acl(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``AclsDelta.replay(RemoveAccessControlEntryRecord)``: Kafka throws when the id is in neither the image nor
    the delta (record by record: not in the image)."""
    acl_id = uuid_to_str(_record(entry).data["id"])
    if acl_id not in parts.acls:
        raise Refused(UNKNOWN_ACL_REMOVAL.format(acl_id=acl_id))
    del parts.acls[acl_id]
    changes.acls[acl_id] = cause


# --- ScramDelta -----------------------------------------------------------------------------------------------


def scram_key(record: MetadataRecord) -> tuple[str, int]:
    """(user name, ``ScramMechanism.fromType(mechanism)``)."""
    return record.data["name"], _code(record.data["mechanism"], SCRAM_MECHANISMS, SCRAM_UNKNOWN)


def replay_scram(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``ScramDelta.replay(UserScramCredentialRecord)``: upsert by (mechanism, name)."""
    key = scram_key(_record(entry))
    parts.scram[key] = ScramCredential(_record(entry).data["iterations"], entry.secret_fingerprint)
    changes.scram[key] = cause


def remove_scram(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``ScramDelta.replay(RemoveUserScramCredentialRecord)``: removes; an absent credential is no error."""
    key = scram_key(_record(entry))
    parts.scram.pop(key, None)
    changes.scram[key] = cause


# --- DelegationTokenDelta -------------------------------------------------------------------------------------


def kafka_principal(text: str) -> str:
    """``SecurityUtils.parseKafkaPrincipal`` then ``KafkaPrincipal.toString``: the same text, if it has a ':'."""
    if not text or ":" not in text:
        raise Refused(INVALID_PRINCIPAL.format(principal="null" if text is None else text))
    return text


def delegation_token_data(record: MetadataRecord) -> DelegationToken:
    """``DelegationTokenData.fromRecord``: the renewers' principals are parsed first, then owner and requester."""
    data = record.data
    renewers = tuple(kafka_principal(renewer) for renewer in data["renewers"])
    return DelegationToken(token_id=data["tokenId"], owner=kafka_principal(data["owner"]),
                           requester=kafka_principal(data["requester"]), renewers=renewers,
                           issue_timestamp=data["issueTimestamp"], max_timestamp=data["maxTimestamp"],
                           expiration_timestamp=data["expirationTimestamp"])


def replay_delegation_token(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``DelegationTokenDelta.replay(DelegationTokenRecord)``: upsert by token id."""
    token = delegation_token_data(_record(entry))
    parts.delegation_tokens[token.token_id] = token
    changes.delegation_tokens[token.token_id] = cause


def remove_delegation_token(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``DelegationTokenDelta.replay(RemoveDelegationTokenRecord)``: removes; an absent token is no error."""
    token_id = _record(entry).data["tokenId"]
    parts.delegation_tokens.pop(token_id, None)
    changes.delegation_tokens[token_id] = cause


# --- ProducerIdsDelta -----------------------------------------------------------------------------------------


def replay_producer_ids(parts: ImageParts, entry: LogEntry, cause: Cause, changes: PartChanges) -> None:
    """``ProducerIdsDelta.replay``: the last record's ``nextProducerId``, whatever it is (Kafka checks nothing)."""
    record = _record(entry)
    parts.producer_ids = ProducerIds(
        next_producer_id=record.data["nextProducerId"], broker_id=record.data["brokerId"],
        broker_epoch=record.data.get("brokerEpoch", default(record.type_name, "brokerEpoch")))
    changes.producer_ids = cause


# --- FeaturesDelta.replay(ZkMigrationStateRecord), Kafka 3.9 ---------------------------------------------------


def zk_migration_state_of(value: int) -> int:
    """``ZkMigrationState.of``: one of Kafka's states, else it throws. (Kafka 4.x's ``MetadataDelta`` ignores the
    record: its image has no migration state.)"""
    if value not in ZK_MIGRATION_STATES:
        raise Refused(INVALID_ZK_MIGRATION_STATE.format(state=value))
    return value


PartReplay = Callable[[ImageParts, LogEntry, Cause, PartChanges], None]
# Kafka's rule of each record type the parts are folded from (``replay.core.image_parts``; a RemoveTopicRecord's is
# ``remove_topic_configs``, called by ``MetadataDelta``); their history rows: ``replay.reference.rows.PART_ROWS``.
PART_REPLAYS: dict[str, PartReplay] = {
    "ConfigRecord": replay_config, "ClientQuotaRecord": replay_client_quota,
    "AccessControlEntryRecord": replay_acl, "RemoveAccessControlEntryRecord": remove_acl,
    "UserScramCredentialRecord": replay_scram, "RemoveUserScramCredentialRecord": remove_scram,
    "DelegationTokenRecord": replay_delegation_token, "RemoveDelegationTokenRecord": remove_delegation_token,
    "ProducerIdsRecord": replay_producer_ids}
