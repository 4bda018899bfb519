"""A reference history row's values, read off the reference fold's image: the columns of the Spark replay's tables.

``replay.reference.fold.HistoryBuilder`` keeps one version per entity and offset from these; Kafka's referee
(``tests/referee``) reads Kafka's own image into the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from records.kafka_constants import ZK_MIGRATION_NONE, ZK_MIGRATION_STATE_FEATURE
from records.vocabulary import column_name
from replay.core.refusals import ISR_NOT_WITHIN_REPLICAS, LEADER_NOT_IN_REPLICAS, joined
from replay.reference.image import Broker, Controller, Image, Partition
from replay.reference.image_parts_delta import Cause, DelegationToken, PartChanges, QuotaEntity


def _endpoint_dicts(endpoints: tuple[tuple[str, str, int, int], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "host": h, "port": p, "security_protocol": s} for n, h, p, s in endpoints]


def _feature_dicts(features: tuple[tuple[str, int, int], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "min_supported_version": lo, "max_supported_version": hi} for n, lo, hi in features]


def partition_values(image: Image, partition: Partition) -> dict[str, Any]:
    """A partition_history row's values."""
    return {"topic_id": partition.topic_id, "topic_name": image.topics.get(partition.topic_id),
            "partition_id": partition.partition_id, "leader": partition.leader,
            "leader_epoch": partition.leader_epoch, "partition_epoch": partition.partition_epoch,
            "isr": list(partition.isr), "replicas": list(partition.replicas),
            "adding_replicas": list(partition.adding_replicas), "removing_replicas": list(partition.removing_replicas),
            "eligible_leader_replicas": list(partition.eligible_leader_replicas),
            "last_known_elr": list(partition.last_known_elr),
            "leader_recovery_state": partition.leader_recovery_state, "directories": list(partition.directories)}


def broker_values(broker: Broker) -> dict[str, Any]:
    return {"broker_id": broker.broker_id, "broker_epoch": broker.broker_epoch, "incarnation_id": broker.incarnation_id,
            "fenced": broker.fenced, "in_controlled_shutdown": broker.in_controlled_shutdown, "rack": broker.rack,
            "endpoints": _endpoint_dicts(broker.endpoints), "features": _feature_dicts(broker.features),
            "log_dirs": list(broker.log_dirs), "is_migrating_zk_broker": broker.is_migrating_zk_broker}


def controller_values(controller: Controller) -> dict[str, Any]:
    return {"controller_id": controller.controller_id, "incarnation_id": controller.incarnation_id,
            "zk_migration_ready": controller.zk_migration_ready, "endpoints": _endpoint_dicts(controller.endpoints),
            "features": _feature_dicts(controller.features)}


def replica_values(image: Image, key: tuple[str, int], broker_id: int) -> dict[str, Any] | None:
    """The replica row of ``broker_id`` in partition ``key``, or None if it is not a replica."""
    partition = image.partitions.get(key)
    if partition is None or broker_id not in partition.replicas:
        return None
    index = partition.replicas.index(broker_id)
    broker = image.brokers.get(broker_id)
    return {"topic_id": partition.topic_id, "topic_name": image.topics.get(partition.topic_id),
            "partition_id": partition.partition_id,
            "broker_id": broker_id, "is_leader": partition.leader == broker_id, "in_isr": broker_id in partition.isr,
            "in_elr": broker_id in partition.eligible_leader_replicas, "adding": broker_id in partition.adding_replicas,
            "removing": broker_id in partition.removing_replicas,
            "directory": partition.directories[index] if index < len(partition.directories) else None,
            "broker_fenced": None if broker is None else broker.fenced}


def feature_level(image: Image, name: str) -> int | None:
    """A feature_history row's level: a finalized feature's, or (``ZK_MIGRATION_STATE_FEATURE``) Kafka 3.9's ZK
    migration state's byte; None when the image has none (ZkMigrationState.NONE is the empty image's)."""
    if name == ZK_MIGRATION_STATE_FEATURE:
        return None if image.zk_migration_state == ZK_MIGRATION_NONE else image.zk_migration_state
    return image.features.get(name)


def _columns(**kafka_fields: Any) -> dict[str, Any]:
    """A row's values under Kafka's field names, as the lake's columns (``records.vocabulary.column_name``)."""
    return {column_name(name): value for name, value in kafka_fields.items()}


def config_values(image: Image, key: tuple[int, str, str]) -> dict[str, Any] | None:
    """A config_history row's values: the key's value in its resource, or None when it has none."""
    resource_type, resource_name, name = key
    config = image.configs.get((resource_type, resource_name), {}).get(name)
    return None if config is None else _columns(
        resourceType=resource_type, resourceName=resource_name, name=name, value=config.value,
        valueFingerprint=config.fingerprint)


def entity_list(entity: QuotaEntity) -> list[dict[str, Any]]:
    """A client quota entity as the table's list of structs, sorted by entity type: the order Spark's
    ``array_sort`` gives (a type is unique in an entity, so the name, null for the default, never decides)."""
    return [_columns(entityType=entity_type, entityName=entity_name) for entity_type, entity_name in entity]


def client_quota_values(image: Image, key: tuple[QuotaEntity, str]) -> dict[str, Any] | None:
    entity, quota_key = key
    value = image.client_quotas.get(entity, {}).get(quota_key)
    return None if value is None else _columns(entity=entity_list(entity), key=quota_key, value=value)


def acl_values(image: Image, acl_id: str) -> dict[str, Any] | None:
    acl = image.acls.get(acl_id)
    return None if acl is None else _columns(id=acl_id, resourceType=acl.resource_type, resourceName=acl.resource_name,
                    patternType=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
                    permissionType=acl.permission_type)


def scram_values(image: Image, key: tuple[str, int]) -> dict[str, Any] | None:
    credential = image.scram.get(key)
    return None if credential is None else _columns(
        name=key[0], mechanism=key[1], iterations=credential.iterations,
        credentialFingerprint=credential.fingerprint)


def delegation_token_values(token: DelegationToken) -> dict[str, Any]:
    return _columns(tokenId=token.token_id, owner=token.owner, requester=token.requester,
                    renewers=list(token.renewers), issueTimestamp=token.issue_timestamp,
                    maxTimestamp=token.max_timestamp, expirationTimestamp=token.expiration_timestamp)


def producer_id_values(image: Image) -> dict[str, Any] | None:
    ids = image.producer_ids
    return None if ids is None else _columns(nextProducerId=ids.next_producer_id, brokerId=ids.broker_id,
                                             brokerEpoch=ids.broker_epoch)


@dataclass(frozen=True)
class PartRows:
    """One image part's history rows in the reference fold: the keys a commit touched, each with the last record
    that touched it, and a touched key's values (None: it is gone)."""

    touched: Callable[[PartChanges], Mapping[Any, Cause]]
    values: Callable[[Image, Any], dict[str, Any] | None]


# The parts folded on their own (``replay.core.image_parts.WHOLE_PARTS``), by section; their rules, record by record,
# are ``replay.reference.image_parts_delta.PART_REPLAYS``.
PART_ROWS: dict[str, PartRows] = {
    "configs": PartRows(lambda changes: changes.configs, config_values),
    "clientQuotas": PartRows(lambda changes: changes.client_quotas, client_quota_values),
    "acls": PartRows(lambda changes: changes.acls, acl_values),
    "scramCredentials": PartRows(lambda changes: changes.scram, scram_values),
    "delegationTokens": PartRows(lambda changes: changes.delegation_tokens, lambda image, token_id: None if (
        token := image.delegation_tokens.get(token_id)) is None else delegation_token_values(token)),
    "producerIds": PartRows(lambda changes: {} if changes.producer_ids is None else {(): changes.producer_ids},
                            lambda image, _key: producer_id_values(image)),
}


def partition_invariants(partition: Partition) -> list[str]:
    problems = []
    where = {"topic_id": partition.topic_id, "partition_id": partition.partition_id}
    if partition.leader >= 0 and partition.leader not in partition.replicas:
        problems.append(LEADER_NOT_IN_REPLICAS.format(**where, leader=partition.leader,
                                                      replicas=joined(partition.replicas)))
    if not set(partition.isr) <= set(partition.replicas):
        problems.append(ISR_NOT_WITHIN_REPLICAS.format(**where, isr=joined(partition.isr),
                                                       replicas=joined(partition.replicas)))
    return problems


__all__ = [
    "PART_ROWS", "PartRows", "acl_values", "broker_values", "client_quota_values", "config_values", "controller_values",
    "delegation_token_values", "entity_list", "feature_level", "partition_invariants", "partition_values",
    "producer_id_values", "replica_values", "scram_values",
]
