"""The reference replay: a plain, record-by-record, in-memory fold of a KRaft metadata log.

It is the oracle the Spark replay is tested against, and the naive alternative of the benchmark:
no cleverness, one Python dict per entity kind, Kafka's rules applied in log order as Kafka's
``MetadataLoader``/``MetadataDelta`` apply them:

- ``fold`` walks the log and yields a :class:`Commit` every time something becomes *visible*: each
  record outside a metadata transaction at its own offset; the records of a transaction (KIP-868)
  together at its ``EndTransactionRecord`` (an ``AbortTransactionRecord`` discards them, and a
  transaction still open when the input ends never becomes visible). A transaction's records are
  applied, in order, at the End, so refusals are judged against the state at that point.
- ``reference_histories`` turns those commits into the history tables (``partition_history``,
  ``broker_history``, ... , ``replay_anomalies``) with the columns of the Spark replay.
- ``image_at`` is the state after every record up to and including an offset, for spot checks: the whole image,
  the parts ``replay.image_parts_delta`` adds included.

Applying one record (Kafka's ``MetadataDelta.replay``) and the image it applies to are ``replay.metadata_delta``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lakehouse.tables import (
    ACL_HISTORY,
    BROKER_HISTORY,
    CLIENT_QUOTA_HISTORY,
    CONFIG_HISTORY,
    CONTROLLER_HISTORY,
    DELEGATION_TOKEN_HISTORY,
    FEATURE_HISTORY,
    PARTITION_HISTORY,
    PRODUCER_ID_HISTORY,
    REPLAY_ANOMALIES,
    REPLICA_HISTORY,
    SCRAM_HISTORY,
    TOPIC_HISTORY,
)
from records.kafka_constants import ABORT, BEGIN, END, ZK_MIGRATION_NONE, ZK_MIGRATION_STATE_FEATURE
from records.model import LogEntry, MetadataRecord, RawRecord
from records.vocabulary import column_name
from replay.image_parts_delta import Acl, DelegationToken, QuotaEntity
from replay.metadata_delta import Anomaly, Broker, Cause, Changes, Controller, Image, MetadataDelta, Partition

# the image's other parts (replay.image_parts_delta), in the contract's tables (lakehouse.tables.IMAGE_SCHEMAS)
IMAGE_PART_TABLES = (CONFIG_HISTORY, CLIENT_QUOTA_HISTORY, ACL_HISTORY, SCRAM_HISTORY, DELEGATION_TOKEN_HISTORY,
                     PRODUCER_ID_HISTORY)
TABLES = (PARTITION_HISTORY, BROKER_HISTORY, TOPIC_HISTORY, FEATURE_HISTORY, CONTROLLER_HISTORY,
          REPLICA_HISTORY, *IMAGE_PART_TABLES, REPLAY_ANOMALIES)
VERSION_COLUMNS = ("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                   "cause_offset", "cause_type")
ANOMALY_COLUMNS = ("cluster_id", "offset", "record_type", "kind", "reason")


@dataclass
class Commit:
    """One visibility point: the image right after it (live: valid until the fold moves on)."""

    offset: int
    time_ms: int | None
    image: Image
    changes: Changes



# --- Visibility (Kafka's MetadataBatchLoader) ----------------------------------------------------


def fold(entries: Iterable[LogEntry], base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None,
         ) -> Iterator[Commit]:
    """Every visibility point of the log, in offset order; ``commit.image`` is the live image."""
    delta = MetadataDelta()
    start = None
    if base_snapshot is not None:
        end_offset, records = base_snapshot
        start = end_offset
        changes = Changes()
        for record in records:
            if isinstance(record, MetadataRecord) and not record.is_control:
                delta.replay(LogEntry(offset=end_offset - 1, record=record), changes)
        yield Commit(end_offset - 1, None, delta.image, changes)
    pending: list[LogEntry] | None = None  # the records of the open transaction, None outside one
    begin_offset = -1
    for entry in entries:
        if start is not None and entry.offset < start:
            continue
        record = entry.record
        if isinstance(record, RawRecord) or record.is_control:
            continue
        kind = record.type_name
        if kind == BEGIN:
            if pending is not None:  # Kafka faults and stays in the transaction
                yield _only_anomaly(entry, delta, f"BeginTransactionRecord while the transaction begun at "
                                                   f"{begin_offset} is open")
            else:
                pending, begin_offset = [], entry.offset
        elif kind in (END, ABORT):
            if pending is None:
                yield _only_anomaly(entry, delta, f"{kind} without a BeginTransactionRecord")
                continue
            changes = Changes()
            if kind == END:
                for held in pending:
                    delta.replay(held, changes)
            pending = None
            yield Commit(entry.offset, entry.append_time_ms, delta.image, changes)
        elif pending is not None:
            pending.append(entry)
        else:
            changes = Changes()
            delta.replay(entry, changes)
            yield Commit(entry.offset, entry.append_time_ms, delta.image, changes)


def _only_anomaly(entry: LogEntry, delta: MetadataDelta, reason: str) -> Commit:
    changes = Changes(anomalies=[Anomaly(entry.offset, entry.record.type_name, "refused", reason)])
    return Commit(entry.offset, entry.append_time_ms, delta.image, changes)


def image_at(entries: Iterable[LogEntry], offset: int,
             base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None) -> Image:
    """The image after every record up to and including ``offset`` (a transaction still open there
    is not visible)."""
    image = Image()
    for commit in fold((e for e in entries if e.offset <= offset), base_snapshot):
        image = commit.image
    return image.copy()


# --- History tables ------------------------------------------------------------------------------


class _Table:
    """Versions of one entity kind: a new row when the values change (or when forced)."""

    def __init__(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.rows: list[dict[str, Any]] = []
        self.open: dict[Any, dict[str, Any]] = {}

    def put(self, key: Any, values: dict[str, Any] | None, commit: Commit, cause: Cause, force: bool = False,
            ) -> bool:
        """Set the entity's state at ``commit`` (``None``: gone); True if a version opened or closed."""
        current = self.open.get(key)
        if current is not None:
            if values is not None and not force and all(current[k] == v for k, v in values.items()):
                return False
            current["valid_to_offset"] = commit.offset
            current["valid_to_time_ms"] = commit.time_ms
            del self.open[key]
        if values is None:
            return current is not None
        row = {"cluster_id": self.cluster_id, **values, "valid_from_offset": commit.offset, "valid_to_offset": None,
               "valid_from_time_ms": commit.time_ms, "valid_to_time_ms": None,
               "cause_offset": cause[0], "cause_type": cause[1]}
        self.rows.append(row)
        self.open[key] = row
        return True


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


def acl_values(acl: Acl) -> dict[str, Any]:
    return _columns(id=acl.id, resourceType=acl.resource_type, resourceName=acl.resource_name,
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


def partition_invariants(partition: Partition) -> list[str]:
    problems = []
    if partition.leader >= 0 and partition.leader not in partition.replicas:
        problems.append(f"leader {partition.leader} not in replicas {list(partition.replicas)}")
    if not set(partition.isr) <= set(partition.replicas):
        problems.append(f"ISR {list(partition.isr)} not a subset of replicas {list(partition.replicas)}")
    return problems


class HistoryBuilder:
    """Consumes commits and keeps every table's versions."""

    def __init__(self, cluster_id: str) -> None:
        self.cluster_id = cluster_id
        self.partitions = _Table(cluster_id)
        self.brokers = _Table(cluster_id)
        self.topics = _Table(cluster_id)
        self.features = _Table(cluster_id)
        self.controllers = _Table(cluster_id)
        self.replicas = _Table(cluster_id)
        # the other image parts: a new version only when the values change (a record may restate them)
        self.parts = {name: _Table(cluster_id) for name in IMAGE_PART_TABLES}
        self.anomalies: list[dict[str, Any]] = []
        # open replica rows, indexed both ways, to find the rows a partition or broker change may end
        self.open_by_partition: dict[tuple[str, int], set[int]] = {}
        self.open_by_broker: dict[int, set[tuple[str, int]]] = {}

    def add(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        for anomaly in changes.anomalies:
            self.anomalies.append({"cluster_id": self.cluster_id, "offset": anomaly.offset,
                                   "record_type": anomaly.record_type, "kind": anomaly.kind,
                                   "reason": anomaly.reason})
        for tid, cause in changes.topics.items():
            name = image.topics.get(tid)
            values = None if name is None else {"topic_id": tid, "name": name}
            self.topics.put(tid, values, commit, cause, force=tid in changes.registered_topics)
        for fname, cause in changes.features.items():
            level = feature_level(image, fname)
            self.features.put(fname, None if level is None else {"feature": fname, "level": level}, commit, cause)
        for cid, cause in changes.controllers.items():
            controller = image.controllers.get(cid)
            self.controllers.put(cid, None if controller is None else controller_values(controller), commit, cause,
                                 force=True)
        for bid, cause in changes.brokers.items():
            broker = image.brokers.get(bid)
            self.brokers.put(bid, None if broker is None else broker_values(broker), commit, cause,
                             force=bid in changes.registered_brokers)
        for key, cause in changes.partitions.items():
            partition = image.partitions.get(key)
            values = None if partition is None else partition_values(image, partition)
            opened = self.partitions.put(key, values, commit, cause, force=True)
            if partition is not None and opened:
                for problem in partition_invariants(partition):
                    self.anomalies.append({"cluster_id": self.cluster_id, "offset": cause[0],
                                           "record_type": cause[1], "kind": "invariant", "reason": problem})
        self._replicas(commit)
        self._image_parts(commit)

    def _image_parts(self, commit: Commit) -> None:
        image, changes, tables = commit.image, commit.changes, self.parts
        for key, cause in changes.configs.items():
            tables[CONFIG_HISTORY].put(key, config_values(image, key), commit, cause)
        for quota, cause in changes.client_quotas.items():
            tables[CLIENT_QUOTA_HISTORY].put(quota, client_quota_values(image, quota), commit, cause)
        for acl_id, cause in changes.acls.items():
            acl = image.acls.get(acl_id)
            tables[ACL_HISTORY].put(acl_id, None if acl is None else acl_values(acl), commit, cause)
        for scram, cause in changes.scram.items():
            tables[SCRAM_HISTORY].put(scram, scram_values(image, scram), commit, cause)
        for token_id, cause in changes.delegation_tokens.items():
            token = image.delegation_tokens.get(token_id)
            tables[DELEGATION_TOKEN_HISTORY].put(token_id, None if token is None else delegation_token_values(token),
                                                 commit, cause)
        if changes.producer_ids is not None:
            tables[PRODUCER_ID_HISTORY].put((), producer_id_values(image), commit, changes.producer_ids)

    def _replicas(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        candidates: dict[tuple[tuple[str, int], int], Cause] = {}

        def consider(key: tuple[str, int], bid: int, cause: Cause) -> None:
            known = candidates.get((key, bid))
            candidates[(key, bid)] = cause if known is None or cause[0] > known[0] else known

        for key, cause in changes.partitions.items():
            partition = image.partitions.get(key)
            for bid in (partition.replicas if partition is not None else ()):
                consider(key, bid, cause)
            for bid in self.open_by_partition.get(key, ()):
                consider(key, bid, cause)
        if changes.brokers:
            for key, partition in image.partitions.items():
                for bid in partition.replicas:
                    if bid in changes.brokers:
                        consider(key, bid, changes.brokers[bid])
            for bid, cause in changes.brokers.items():
                for key in self.open_by_broker.get(bid, ()):
                    consider(key, bid, cause)
        for (key, bid), cause in sorted(candidates.items()):
            values = replica_values(image, key, bid)
            self.replicas.put((key, bid), values, commit, cause)
            if values is None:
                self.open_by_partition.get(key, set()).discard(bid)
                self.open_by_broker.get(bid, set()).discard(key)
            else:
                self.open_by_partition.setdefault(key, set()).add(bid)
                self.open_by_broker.setdefault(bid, set()).add(key)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {PARTITION_HISTORY: self.partitions.rows, BROKER_HISTORY: self.brokers.rows,
                TOPIC_HISTORY: self.topics.rows, FEATURE_HISTORY: self.features.rows,
                CONTROLLER_HISTORY: self.controllers.rows, REPLICA_HISTORY: self.replicas.rows,
                **{name: table.rows for name, table in self.parts.items()}, REPLAY_ANOMALIES: self.anomalies}


def reference_histories(entries: Iterable[LogEntry], cluster_id: str,
                        base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None,
                        ) -> dict[str, list[dict[str, Any]]]:
    """The history tables of the Spark replay, computed by folding the log record by record."""
    builder = HistoryBuilder(cluster_id)
    for commit in fold(entries, base_snapshot):
        builder.add(commit)
    return builder.tables()


def current_rows(rows: Iterable[dict[str, Any]], offset: int) -> list[dict[str, Any]]:
    """The versions of a history table that are valid at ``offset``."""
    return [r for r in rows if r["valid_from_offset"] <= offset
            and (r["valid_to_offset"] is None or offset < r["valid_to_offset"])]
