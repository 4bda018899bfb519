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
- ``image_at`` is the state after every record up to and including an offset, for spot checks.

Kafka's constants (no leader, directory ids, transaction markers) come from ``records.kafka_constants``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lakehouse.tables import (
    BROKER_HISTORY,
    CONTROLLER_HISTORY,
    FEATURE_HISTORY,
    PARTITION_HISTORY,
    REPLAY_ANOMALIES,
    REPLICA_HISTORY,
    TOPIC_HISTORY,
)
from records.kafka_constants import (
    ABORT,
    BEGIN,
    END,
    LENGTHS,
    MIGRATING_DIR,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    RECOVERY_STATES,
)
from records.model import LogEntry, MetadataRecord, RawRecord, uuid_to_str

TABLES = (PARTITION_HISTORY, BROKER_HISTORY, TOPIC_HISTORY, FEATURE_HISTORY, CONTROLLER_HISTORY,
          REPLICA_HISTORY, REPLAY_ANOMALIES)
VERSION_COLUMNS = ("valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
                   "cause_offset", "cause_type")
ANOMALY_COLUMNS = ("cluster_id", "offset", "record_type", "kind", "reason")


# --- The image -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Partition:
    topic_id: str
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[str, ...]
    eligible_leader_replicas: tuple[int, ...]
    last_known_elr: tuple[int, ...]


@dataclass(frozen=True)
class Broker:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None
    endpoints: tuple[tuple[str, str, int, int], ...]  # (name, host, port, security_protocol)
    features: tuple[tuple[str, int, int], ...]  # (name, min_supported_version, max_supported_version)
    log_dirs: tuple[str, ...]
    is_migrating_zk_broker: bool


@dataclass(frozen=True)
class Controller:
    controller_id: int
    incarnation_id: str
    zk_migration_ready: bool
    endpoints: tuple[tuple[str, str, int, int], ...]
    features: tuple[tuple[str, int, int], ...]


@dataclass
class Image:
    """The metadata image: what Kafka's ``MetadataImage`` holds for these tables."""

    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name
    partitions: dict[tuple[str, int], Partition] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, Controller] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Image:
        """An independent copy (the values are immutable, so copying the dicts suffices)."""
        return Image(dict(self.topics), dict(self.partitions), dict(self.brokers), dict(self.controllers),
                     dict(self.features))

    def topic_partitions(self, topic_id: str) -> dict[int, Partition]:
        return {pid: p for (tid, pid), p in self.partitions.items() if tid == topic_id}


@dataclass(frozen=True)
class Anomaly:
    offset: int
    record_type: str
    kind: str  # "refused" (not applied, as Kafka refuses) or "invariant" (applied, breaks an invariant)
    reason: str


class Refused(Exception):
    """Kafka would not apply this record (its replay throws)."""


Cause = tuple[int, str]  # (offset, record type) of the last record that touched an entity


@dataclass
class Changes:
    """What the records of one commit touched, each with the last record that touched it."""

    topics: dict[str, Cause] = field(default_factory=dict)
    partitions: dict[tuple[str, int], Cause] = field(default_factory=dict)
    brokers: dict[int, Cause] = field(default_factory=dict)
    registered_brokers: set[int] = field(default_factory=set)  # RegisterBrokerRecord: always a new version
    registered_topics: set[str] = field(default_factory=set)  # TopicRecord: always a new version
    controllers: dict[int, Cause] = field(default_factory=dict)
    features: dict[str, Cause] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)


@dataclass
class Commit:
    """One visibility point: the image right after it (live: valid until the fold moves on)."""

    offset: int
    time_ms: int | None
    image: Image
    changes: Changes


# --- Applying one record (Kafka's MetadataDelta.replay) ------------------------------------------


def _ints(values: Iterable[int] | None) -> tuple[int, ...]:
    return tuple(values) if values is not None else ()


def _uuids(values: Iterable[bytes] | None) -> tuple[str, ...]:
    return tuple(uuid_to_str(v) for v in values) if values is not None else ()


def _endpoints(values: Iterable[dict[str, Any]] | None) -> tuple[tuple[str, str, int, int], ...]:
    return tuple((e["name"], e["host"], e["port"], e["securityProtocol"]) for e in values or ())


def _features(values: Iterable[dict[str, Any]] | None) -> tuple[tuple[str, int, int], ...]:
    return tuple((f["name"], f["minSupportedVersion"], f["maxSupportedVersion"]) for f in values or ())


def _recovery_state(value: int) -> int:
    if value not in RECOVERY_STATES:
        raise Refused(f"invalid leaderRecoveryState {value}")
    return value


def _default_to_migrating(directories: tuple[str, ...], replicas: Sequence[int]) -> tuple[str, ...]:
    """``PartitionRegistration.defaultToMigrating``: directories that are all MIGRATING (or none) say nothing, so
    every replica of the new assignment is MIGRATING, whatever its count; any other list is kept as it is, and
    the registration's constructor refuses it unless it has one entry per replica."""
    if all(directory == MIGRATING_DIR for directory in directories):
        return (MIGRATING_DIR,) * len(replicas)
    if len(directories) != len(replicas):
        raise Refused(LENGTHS)
    return directories


def _partition_record(image: Image, d: dict[str, Any]) -> tuple[str, int]:
    tid, pid = uuid_to_str(d["topicId"]), d["partitionId"]
    if tid not in image.topics:
        raise Refused(f"partition of an unknown topic {tid}")
    replicas = _ints(d["replicas"])
    directories = _uuids(d.get("directories"))
    if directories and len(directories) != len(replicas):  # checkDirectories
        raise Refused(f"{len(directories)} directories for {len(replicas)} replicas")
    image.partitions[(tid, pid)] = Partition(
        topic_id=tid, partition_id=pid, replicas=replicas, isr=_ints(d["isr"]),
        removing_replicas=_ints(d.get("removingReplicas")), adding_replicas=_ints(d.get("addingReplicas")),
        leader=d["leader"], leader_recovery_state=_recovery_state(d.get("leaderRecoveryState", 0)),
        leader_epoch=d["leaderEpoch"], partition_epoch=d["partitionEpoch"],
        directories=_default_to_migrating(directories, replicas),
        eligible_leader_replicas=_ints(d.get("eligibleLeaderReplicas")),
        last_known_elr=_ints(d.get("lastKnownElr")))
    return tid, pid


def _partition_change(image: Image, d: dict[str, Any]) -> tuple[str, int]:
    """``PartitionRegistration.merge`` as released in Kafka 3.9 and 4.x (checked against both by
    tests/test_kafka_referee.py)."""
    tid, pid = uuid_to_str(d["topicId"]), d["partitionId"]
    if tid not in image.topics:
        raise Refused(f"change of a partition of an unknown topic {tid}")
    old = image.partitions.get((tid, pid))
    if old is None:
        raise Refused(f"change of an unknown partition {tid}:{pid}")
    new_replicas = d.get("replicas")
    record_dirs = None if d.get("directories") is None else _uuids(d["directories"])
    if new_replicas is not None and record_dirs and len(new_replicas) != len(record_dirs):  # checkDirectories
        raise Refused(f"{len(record_dirs)} directories for {len(new_replicas)} replicas")
    replicas = _ints(new_replicas) if new_replicas is not None else old.replicas
    # null directories (every record before v1, and later ones that leave them) keep the old list as it is,
    # position by position: Kafka does not map them onto the new replicas
    directories = _default_to_migrating(old.directories if record_dirs is None else record_dirs, replicas)
    leader, leader_epoch = old.leader, old.leader_epoch
    if d.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
        leader, leader_epoch = d["leader"], old.leader_epoch + 1
    recovery = d.get("leaderRecoveryState", NO_RECOVERY_STATE_CHANGE)
    recovery = old.leader_recovery_state if recovery == NO_RECOVERY_STATE_CHANGE else _recovery_state(recovery)

    def field_or_old(name: str, current: tuple[int, ...]) -> tuple[int, ...]:
        value = d.get(name)
        return current if value is None else _ints(value)

    image.partitions[(tid, pid)] = Partition(
        topic_id=tid, partition_id=pid, replicas=replicas, isr=field_or_old("isr", old.isr),
        removing_replicas=field_or_old("removingReplicas", old.removing_replicas),
        adding_replicas=field_or_old("addingReplicas", old.adding_replicas),
        leader=leader, leader_recovery_state=recovery, leader_epoch=leader_epoch,
        partition_epoch=old.partition_epoch + 1, directories=directories,
        eligible_leader_replicas=field_or_old("eligibleLeaderReplicas", old.eligible_leader_replicas),
        last_known_elr=field_or_old("lastKnownElr", old.last_known_elr))
    return tid, pid


def _clear_elr(image: Image, topic_name: str) -> list[tuple[str, int]]:
    """``TopicsDelta.replay(ClearElrRecord)``: every partition of the named topic (of every topic when the name
    is empty) that has an ELR or a last known ELR gets both emptied by a ``merge``, so its partition epoch moves
    on; the others are left as they are. Returns the partitions it changed."""
    topic_ids = {tid for tid, name in image.topics.items() if not topic_name or name == topic_name}
    if topic_name and not topic_ids:
        raise Refused(f"ELR clear of an unknown topic {topic_name}")
    cleared = [key for key, p in image.partitions.items()
               if key[0] in topic_ids and (p.eligible_leader_replicas or p.last_known_elr)]
    for key in cleared:
        p = image.partitions[key]
        image.partitions[key] = replace(p, eligible_leader_replicas=(), last_known_elr=(),
                                        partition_epoch=p.partition_epoch + 1)
    return cleared


def _current_broker(image: Image, broker_id: int, epoch: int, action: str) -> Broker:
    """``ClusterDelta.getBrokerOrThrow``."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise Refused(f"{action} of unknown broker {broker_id}")
    if broker.broker_epoch != epoch:
        raise Refused(f"{action} of broker {broker_id} with stale epoch {epoch} vs current {broker.broker_epoch}")
    return broker


class Folder:
    """Applies records to an image, noting what they touched and the anomalies."""

    def __init__(self, image: Image | None = None) -> None:
        self.image = image or Image()
        self.registered_epochs: dict[int, int] = {}  # last registered epoch of every broker id ever seen

    def apply(self, entry: LogEntry, changes: Changes) -> None:
        record = entry.record
        try:
            self._apply(record, (entry.offset, record.type_name), changes)
        except Refused as refused:
            changes.anomalies.append(Anomaly(entry.offset, record.type_name, "refused", str(refused)))

    def _apply(self, record: MetadataRecord, cause: Cause, changes: Changes) -> None:
        image, d, kind = self.image, record.data, record.type_name
        offset = cause[0]
        if kind == "TopicRecord":
            tid = uuid_to_str(d["topicId"])
            # TopicsDelta.replay(TopicRecord) starts the topic afresh: a repeated id loses its partitions.
            for pid in image.topic_partitions(tid):
                del image.partitions[(tid, pid)]
                changes.partitions[(tid, pid)] = cause
            image.topics[tid] = d["name"]
            changes.topics[tid] = cause
            changes.registered_topics.add(tid)
        elif kind == "RemoveTopicRecord":
            tid = uuid_to_str(d["topicId"])
            if tid not in image.topics:
                raise Refused(f"removal of an unknown topic {tid}")
            for pid in image.topic_partitions(tid):
                del image.partitions[(tid, pid)]
                changes.partitions[(tid, pid)] = cause
            del image.topics[tid]
            changes.topics[tid] = cause
        elif kind == "PartitionRecord":
            changes.partitions[_partition_record(image, d)] = cause
        elif kind == "PartitionChangeRecord":
            changes.partitions[_partition_change(image, d)] = cause
        elif kind == "ClearElrRecord":
            for key in _clear_elr(image, d["topicName"]):
                changes.partitions[key] = cause
        elif kind == "RegisterBrokerRecord":
            bid, epoch = d["brokerId"], d["brokerEpoch"]
            previous = self.registered_epochs.get(bid)
            if previous is not None and epoch < previous:
                changes.anomalies.append(Anomaly(offset, kind, "invariant",
                                                 f"broker {bid} epoch went backwards: {previous} -> {epoch}"))
            self.registered_epochs[bid] = epoch
            image.brokers[bid] = Broker(
                broker_id=bid, broker_epoch=epoch, incarnation_id=uuid_to_str(d["incarnationId"]),
                fenced=bool(d.get("fenced", True)), in_controlled_shutdown=bool(d.get("inControlledShutdown", False)),
                rack=d.get("rack"), endpoints=_endpoints(d.get("endPoints")), features=_features(d.get("features")),
                log_dirs=_uuids(d.get("logDirs")), is_migrating_zk_broker=bool(d.get("isMigratingZkBroker", False)))
            changes.brokers[bid] = cause
            changes.registered_brokers.add(bid)
        elif kind in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
            fence = kind == "FenceBrokerRecord"
            broker = _current_broker(image, d["id"], d["epoch"], "fence" if fence else "unfence")
            image.brokers[d["id"]] = replace(broker, fenced=fence)
            changes.brokers[d["id"]] = cause
        elif kind == "BrokerRegistrationChangeRecord":
            bid = d["brokerId"]
            broker = _current_broker(image, bid, d["brokerEpoch"], "change")
            fenced = {-1: False, 0: broker.fenced, 1: True}.get(d.get("fenced", 0))
            if fenced is None:
                raise Refused(f"unknown value for fenced: {d['fenced']}")
            shutdown = {0: broker.in_controlled_shutdown, 1: True}.get(d.get("inControlledShutdown", 0))
            if shutdown is None:
                raise Refused(f"unknown value for inControlledShutdown: {d['inControlledShutdown']}")
            log_dirs = _uuids(d.get("logDirs")) or broker.log_dirs
            image.brokers[bid] = replace(broker, fenced=fenced, in_controlled_shutdown=shutdown, log_dirs=log_dirs)
            changes.brokers[bid] = cause
        elif kind == "UnregisterBrokerRecord":
            # Kafka's ClusterDelta removes the broker unconditionally; a mismatch is worth a flag.
            bid, epoch = d["brokerId"], d["brokerEpoch"]
            broker = image.brokers.pop(bid, None)
            if broker is None:
                changes.anomalies.append(Anomaly(offset, kind, "invariant", f"unregister of unknown broker {bid}"))
            elif broker.broker_epoch != epoch:
                changes.anomalies.append(Anomaly(
                    offset, kind, "invariant",
                    f"unregister of broker {bid} with stale epoch {epoch} vs current {broker.broker_epoch}"))
            changes.brokers[bid] = cause
        elif kind == "RegisterControllerRecord":
            cid = d["controllerId"]
            image.controllers[cid] = Controller(
                controller_id=cid, incarnation_id=uuid_to_str(d["incarnationId"]),
                zk_migration_ready=bool(d.get("zkMigrationReady", False)),
                endpoints=_endpoints(d.get("endPoints")), features=_features(d.get("features")))
            changes.controllers[cid] = cause
        elif kind == "UnregisterControllerRecord":
            # ClusterDelta removes the registration unconditionally, as it does a broker's.
            image.controllers.pop(d["controllerId"], None)
            changes.controllers[d["controllerId"]] = cause
        elif kind == "FeatureLevelRecord":
            if d["featureLevel"] == 0:
                image.features.pop(d["name"], None)
            else:
                image.features[d["name"]] = d["featureLevel"]
            changes.features[d["name"]] = cause
        # every other record type (configs, quotas, ACLs, producer ids, NoOp, ...) touches none of these


# --- Visibility (Kafka's MetadataBatchLoader) ----------------------------------------------------


def fold(entries: Iterable[LogEntry], base_snapshot: tuple[int, Sequence[MetadataRecord]] | None = None,
         ) -> Iterator[Commit]:
    """Every visibility point of the log, in offset order; ``commit.image`` is the live image."""
    folder = Folder()
    start = None
    if base_snapshot is not None:
        end_offset, records = base_snapshot
        start = end_offset
        changes = Changes()
        for record in records:
            if isinstance(record, MetadataRecord) and not record.is_control:
                folder.apply(LogEntry(offset=end_offset - 1, record=record), changes)
        yield Commit(end_offset - 1, None, folder.image, changes)
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
                yield _only_anomaly(entry, folder, f"BeginTransactionRecord while the transaction begun at "
                                                   f"{begin_offset} is open")
            else:
                pending, begin_offset = [], entry.offset
        elif kind in (END, ABORT):
            if pending is None:
                yield _only_anomaly(entry, folder, f"{kind} without a BeginTransactionRecord")
                continue
            changes = Changes()
            if kind == END:
                for held in pending:
                    folder.apply(held, changes)
            pending = None
            yield Commit(entry.offset, entry.append_time_ms, folder.image, changes)
        elif pending is not None:
            pending.append(entry)
        else:
            changes = Changes()
            folder.apply(entry, changes)
            yield Commit(entry.offset, entry.append_time_ms, folder.image, changes)


def _only_anomaly(entry: LogEntry, folder: Folder, reason: str) -> Commit:
    changes = Changes(anomalies=[Anomaly(entry.offset, entry.record.type_name, "refused", reason)])
    return Commit(entry.offset, entry.append_time_ms, folder.image, changes)


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


def partition_values(image: Image, p: Partition) -> dict[str, Any]:
    return {"topic_id": p.topic_id, "topic_name": image.topics.get(p.topic_id), "partition_id": p.partition_id,
            "leader": p.leader, "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
            "isr": list(p.isr), "replicas": list(p.replicas), "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas),
            "eligible_leader_replicas": list(p.eligible_leader_replicas), "last_known_elr": list(p.last_known_elr),
            "leader_recovery_state": p.leader_recovery_state, "directories": list(p.directories)}


def broker_values(b: Broker) -> dict[str, Any]:
    return {"broker_id": b.broker_id, "broker_epoch": b.broker_epoch, "incarnation_id": b.incarnation_id,
            "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown, "rack": b.rack,
            "endpoints": _endpoint_dicts(b.endpoints), "features": _feature_dicts(b.features),
            "log_dirs": list(b.log_dirs), "is_migrating_zk_broker": b.is_migrating_zk_broker}


def controller_values(c: Controller) -> dict[str, Any]:
    return {"controller_id": c.controller_id, "incarnation_id": c.incarnation_id,
            "zk_migration_ready": c.zk_migration_ready, "endpoints": _endpoint_dicts(c.endpoints),
            "features": _feature_dicts(c.features)}


def replica_values(image: Image, key: tuple[str, int], broker_id: int) -> dict[str, Any] | None:
    """The replica row of ``broker_id`` in partition ``key``, or None if it is not a replica."""
    p = image.partitions.get(key)
    if p is None or broker_id not in p.replicas:
        return None
    index = p.replicas.index(broker_id)
    broker = image.brokers.get(broker_id)
    return {"topic_id": p.topic_id, "topic_name": image.topics.get(p.topic_id), "partition_id": p.partition_id,
            "broker_id": broker_id, "is_leader": p.leader == broker_id, "in_isr": broker_id in p.isr,
            "in_elr": broker_id in p.eligible_leader_replicas, "adding": broker_id in p.adding_replicas,
            "removing": broker_id in p.removing_replicas,
            "directory": p.directories[index] if index < len(p.directories) else None,
            "broker_fenced": None if broker is None else broker.fenced}


def partition_invariants(p: Partition) -> list[str]:
    problems = []
    if p.leader >= 0 and p.leader not in p.replicas:
        problems.append(f"leader {p.leader} not in replicas {list(p.replicas)}")
    if not set(p.isr) <= set(p.replicas):
        problems.append(f"ISR {list(p.isr)} not a subset of replicas {list(p.replicas)}")
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
        self.anomalies: list[dict[str, Any]] = []
        # open replica rows, indexed both ways, to find the rows a partition or broker change may end
        self.open_by_partition: dict[tuple[str, int], set[int]] = {}
        self.open_by_broker: dict[int, set[tuple[str, int]]] = {}

    def add(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        for a in changes.anomalies:
            self.anomalies.append({"cluster_id": self.cluster_id, "offset": a.offset, "record_type": a.record_type,
                                   "kind": a.kind, "reason": a.reason})
        for tid, cause in changes.topics.items():
            name = image.topics.get(tid)
            values = None if name is None else {"topic_id": tid, "name": name}
            self.topics.put(tid, values, commit, cause, force=tid in changes.registered_topics)
        for fname, cause in changes.features.items():
            level = image.features.get(fname)
            self.features.put(fname, None if level is None else {"feature": fname, "level": level}, commit, cause)
        for cid, cause in changes.controllers.items():
            c = image.controllers.get(cid)
            self.controllers.put(cid, None if c is None else controller_values(c), commit, cause, force=True)
        for bid, cause in changes.brokers.items():
            b = image.brokers.get(bid)
            self.brokers.put(bid, None if b is None else broker_values(b), commit, cause,
                             force=bid in changes.registered_brokers)
        for key, cause in changes.partitions.items():
            p = image.partitions.get(key)
            opened = self.partitions.put(key, None if p is None else partition_values(image, p), commit, cause,
                                         force=True)
            if p is not None and opened:
                for problem in partition_invariants(p):
                    self.anomalies.append({"cluster_id": self.cluster_id, "offset": cause[0],
                                           "record_type": cause[1], "kind": "invariant", "reason": problem})
        self._replicas(commit)

    def _replicas(self, commit: Commit) -> None:
        image, changes = commit.image, commit.changes
        candidates: dict[tuple[tuple[str, int], int], Cause] = {}

        def consider(key: tuple[str, int], bid: int, cause: Cause) -> None:
            known = candidates.get((key, bid))
            candidates[(key, bid)] = cause if known is None or cause[0] > known[0] else known

        for key, cause in changes.partitions.items():
            p = image.partitions.get(key)
            for bid in (p.replicas if p is not None else ()):
                consider(key, bid, cause)
            for bid in self.open_by_partition.get(key, ()):
                consider(key, bid, cause)
        if changes.brokers:
            for key, p in image.partitions.items():
                for bid in p.replicas:
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
                REPLAY_ANOMALIES: self.anomalies}


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
