"""A deterministic model of Kafka's KRaft controller that writes the records the real one would.

The controller decides with Kafka's rules (``PartitionChangeBuilder``, ``ReplicationControlManager``,
``ClusterControlManager``, ``ActivationRecordsGenerator``) and then *replays its own records* to change
its state, as Kafka's controller does, so the state can never drift from the log it wrote. Records
are produced as :class:`LogEntry` objects in a buffer that callers drain (:meth:`drain`), so a long
run streams: only cluster state is kept, never the records.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from records.kafka_constants import NO_LEADER, NO_LEADER_CHANGE, UNASSIGNED_DIR
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_from_str, uuid_to_str
from simulator.facts import (
    BrokerFenced,
    BrokerRegistered,
    BrokerUnfenced,
    BrokerUnregistered,
    ControlledShutdown,
    ControllerFailover,
    LeaderRecovered,
    PartitionLeaderless,
    Reassignment,
    ScenarioFacts,
    TopicChange,
    Transaction,
    UncleanElection,
)
from simulator.versions import MetadataVersion

UNASSIGNED_DIR_ID = uuid_from_str(UNASSIGNED_DIR)  # the records carry directory ids as 16 bytes
RESOURCE_TOPIC = 2  # ConfigResource.Type.TOPIC
RESOURCE_BROKER = 4  # ConfigResource.Type.BROKER ("" = cluster default)
UNCLEAN_KEY = "unclean.leader.election.enable"
MIN_ISR_KEY = "min.insync.replicas"


class SimulationError(ValueError):
    """An operation Kafka's controller would reject (unknown broker, not enough brokers, ...)."""


class Election(Enum):
    """PartitionChangeBuilder.Election."""

    PREFERRED = "preferred"
    ONLINE = "online"
    UNCLEAN = "unclean"


@dataclass(frozen=True)
class SimConfig:
    """Options of one simulated cluster; the same config always gives the same log."""

    metadata_version: str = "3.9"
    seed: int = 0
    unclean: bool = False  # cluster default unclean.leader.election.enable (written as a ConfigRecord)
    elr: bool = False  # eligible leader replicas (KIP-966); needs metadata version 4.0
    min_insync_replicas: int = 1  # cluster default min.insync.replicas (Kafka's default is 1)
    controller_ids: tuple[int, ...] = (3000, 3001, 3002)
    start_time_ms: int = 1_700_000_000_000
    noop_interval_ms: int = 500  # metadata.max.idle.interval.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    max_records_per_batch: int = 10000  # QuorumController's MAX_RECORDS_PER_BATCH
    cluster_id: str | None = None


@cache
def _defaults(type_name: str, version: int) -> tuple[tuple[str, Any], ...]:
    return tuple(make_record(type_name, version).data.items())


def record(type_name: str, version: int, /, **fields: Any) -> MetadataRecord:
    """A record from cached Kafka defaults plus fields; fields the version lacks are dropped."""
    data = dict(_defaults(type_name, version))
    for name, value in fields.items():
        if name in data:
            data[name] = value
    return MetadataRecord(type_name, version, data)


class Broker:
    __slots__ = ("broker_id", "cs", "epoch", "fenced", "incarnation", "log_dir", "rack")

    def __init__(self, broker_id: int, epoch: int, incarnation: bytes, rack: str | None,
                 log_dir: bytes) -> None:
        self.broker_id = broker_id
        self.epoch = epoch
        self.incarnation = incarnation
        self.rack = rack
        self.fenced = True
        self.cs = False
        self.log_dir = log_dir


class Partition:
    """A partition registration (PartitionRegistration), the fields the records carry."""

    __slots__ = ("adding", "dirs", "elr", "isr", "key", "leader", "leader_epoch", "lke", "lrs",
                 "partition_epoch", "pid", "removing", "replicas", "topic")

    def __init__(self, key: int, topic: Topic, pid: int) -> None:
        self.key = key
        self.topic = topic
        self.pid = pid
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.removing: list[int] = []
        self.adding: list[int] = []
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.lrs = 0
        self.elr: list[int] = []
        self.lke: list[int] = []
        self.dirs: list[bytes] = []


class Topic:
    __slots__ = ("configs", "name", "partitions", "topic_id", "topic_id_str")

    def __init__(self, name: str, topic_id: bytes) -> None:
        self.name = name
        self.topic_id = topic_id
        self.topic_id_str = uuid_to_str(topic_id)
        self.partitions: list[int] = []  # partition keys by partition id
        self.configs: dict[str, str] = {}


class ControllerSimulator:
    """The active controller of a KRaft quorum, driven by calls; records accumulate until drained.

    Each public operation writes what Kafka's controller writes for it, in Kafka's batches.
    ``entries()``/``drain()`` hand the written entries over and forget them.
    """

    def __init__(self, config: SimConfig | None = None, *, facts: ScenarioFacts | None = None) -> None:
        self.config = cfg = config or SimConfig()
        self.mv = MetadataVersion.parse(cfg.metadata_version)
        if cfg.elr and not self.mv.elr_supported:
            raise SimulationError(f"eligible leader replicas need metadata version 4.0 (4.0-IV1), "
                                  f"not {self.mv.name}")
        if not cfg.controller_ids:
            raise SimulationError("at least one controller id is needed")
        self.rng = random.Random(cfg.seed)
        self.facts = facts if facts is not None else ScenarioFacts(seed=cfg.seed)
        self.facts.metadata_version = self.mv.name
        self.elr = cfg.elr
        self.cluster_id = cfg.cluster_id or uuid_to_str(self._uuid())
        self.now = cfg.start_time_ms
        self.next_offset = 0
        self.raft_epoch = 0
        self.active_controller = cfg.controller_ids[0]
        self.next_noop_at = 0
        self.brokers: dict[int, Broker] = {}
        self.active: set[int] = set()  # registered, unfenced, not in controlled shutdown
        self.topics: dict[str, Topic] = {}
        self.partitions: dict[int, Partition] = {}
        self.next_partition_key = 0
        self.isr_index: dict[int, set[int]] = {}  # broker -> partitions with it in the ISR
        self.replica_index: dict[int, set[int]] = {}  # broker -> partitions with it as a replica
        self.leaderless: set[int] = set()
        self.imbalanced: set[int] = set()  # leader is not the preferred (first) replica
        self.recovering: set[int] = set()  # leaderRecoveryState RECOVERING
        self.reassigning: set[int] = set()
        self.cluster_configs: dict[str, str] = {}
        self.controller_incarnations: dict[int, bytes] = {}
        self._by_id: dict[bytes, Topic] = {}
        self._buffer: list[LogEntry] = []
        self._open_txn: tuple[str, int] | None = None
        self._pc_version = self.mv.partition_record_version(self.elr)
        self._start()

    # ------------------------------------------------------------------ plumbing

    def _uuid(self) -> bytes:
        """A random Kafka Uuid, never a reserved one nor one printing with a leading '-'."""
        while True:
            raw = self.rng.getrandbits(128).to_bytes(16, "big")
            if raw[:8] != bytes(8) and not uuid_to_str(raw).startswith("-"):
                return raw

    def drain(self) -> list[LogEntry]:
        """The entries written since the last drain, in offset order; the simulator forgets them."""
        out, self._buffer = self._buffer, []
        return out

    def entries(self) -> list[LogEntry]:
        """Alias of :meth:`drain` for scripted stories."""
        return self.drain()

    def _write_batch(self, records: list[MetadataRecord]) -> int:
        """One record batch at the current time and raft epoch; returns its base offset."""
        base = self.next_offset
        epoch, now, buffer = self.raft_epoch, self.now, self._buffer
        for i, rec in enumerate(records):
            buffer.append(LogEntry(base + i, rec, base, epoch, now))
        self.next_offset = base + len(records)
        return base

    def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int:
        """Write records as one atomic batch and replay them; returns the base offset."""
        if not records:
            return -1
        base = self._write_batch(records)
        for i, rec in enumerate(records):
            self._replay(rec, base + i, marks.get(i) if marks else None)
        return base

    def _commit_non_atomic(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> None:
        """A non-atomic result: as many batches as QuorumController's batch limit needs."""
        step = self.config.max_records_per_batch
        for start in range(0, len(records), step):
            chunk = records[start:start + step]
            sub = {i - start: m for i, m in (marks or {}).items() if start <= i < start + step}
            self._commit(chunk, sub)

    def _commit_large(self, name: str, records: list[MetadataRecord], *,
                      abort_after_batches: int | None = None) -> int:
        """Records that may not fit one batch: a metadata transaction when the MV has them (KIP-868)."""
        step = self.config.max_records_per_batch
        if len(records) <= step and abort_after_batches is None:
            return self._commit(records)
        if not self.mv.transactions:
            if abort_after_batches is not None:
                raise SimulationError(f"metadata version {self.mv.name} has no metadata transactions")
            return self._commit(records)  # simplification: one oversized atomic batch
        body = [record("BeginTransactionRecord", 0, name=name), *records]
        chunks = [body[i:i + step] for i in range(0, len(body), step)]
        written: list[tuple[int, MetadataRecord]] = []
        begin = -1
        for index, chunk in enumerate(chunks):
            if abort_after_batches is not None and index >= abort_after_batches:
                break
            base = self._write_batch(chunk)
            begin = base if begin < 0 else begin
            written.extend((base + i, rec) for i, rec in enumerate(chunk))
        if abort_after_batches is not None:
            self._open_txn = (name, begin)
            return begin
        end = self._write_batch([record("EndTransactionRecord", 0)])
        for offset, rec in written:
            self._replay(rec, offset, None)
        self.facts.transactions.append(Transaction(name, begin, end, False))
        return begin

    def tick(self, ms: int) -> None:
        """Let ``ms`` pass; the controller writes a NoOpRecord every metadata.max.idle.interval.ms."""
        target = self.now + ms
        if self.mv.noop_records:
            interval = self.config.noop_interval_ms
            noop = [record("NoOpRecord", 0)]
            while self.next_noop_at <= target:
                self.now = self.next_noop_at
                self._write_batch(noop)
                self.next_noop_at += interval
        self.now = target

    def _latency(self) -> None:
        """A few milliseconds between requests, so append times advance like a live controller's."""
        self.tick(self.rng.randint(1, 5))

    # ------------------------------------------------------------------ start and failover

    def _leader_change(self) -> int:
        ids = self.config.controller_ids
        majority = len(ids) // 2 + 1
        leader = self.active_controller
        granting = [leader, *[c for c in ids if c != leader]][:majority]
        msg = record("LeaderChangeMessage", 0, version=0, leaderId=leader,
                     voters=[{"voterId": c} for c in ids],
                     grantingVoters=[{"voterId": c} for c in sorted(granting)])
        self.raft_epoch += 1
        return self._write_batch([msg])

    def _start(self) -> None:
        """Raft election, then the bootstrap records (ActivationRecordsGenerator for an empty log)."""
        self._leader_change()
        self.next_noop_at = self.now + self.config.noop_interval_ms
        boot: list[MetadataRecord] = []
        if self.mv.writes_metadata_version:
            boot.append(record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=self.mv.level))
        if self.elr:
            boot.append(record("FeatureLevelRecord", 0, name="eligible.leader.replicas.version",
                               featureLevel=1))
        if self.mv.zk_migration_state_at_bootstrap:
            boot.append(record("ZkMigrationStateRecord", 0, zkMigrationState=0))  # NONE
        self._latency()
        if self.mv.transactions:
            name = "Bootstrap records"
            base = self._write_batch([record("BeginTransactionRecord", 0, name=name), *boot,
                                      record("EndTransactionRecord", 0)])
            self.facts.transactions.append(Transaction(name, base, self.next_offset - 1, False))
        elif boot:
            self._commit(boot)
        if self.config.unclean:
            self._latency()
            self.set_cluster_config(UNCLEAN_KEY, "true")
        if self.config.min_insync_replicas != 1:
            self._latency()
            self.set_cluster_config(MIN_ISR_KEY, str(self.config.min_insync_replicas))
        if self.mv.controller_registration:
            for controller_id in self.config.controller_ids:
                self._latency()
                self._register_controller(controller_id)

    def _register_controller(self, controller_id: int) -> None:
        incarnation = self._uuid()
        self.controller_incarnations[controller_id] = incarnation
        features = [{"name": "metadata.version", "minSupportedVersion": 1,
                     "maxSupportedVersion": self.mv.level}]
        if self.mv.level >= 21:
            features.append({"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1})
        self._commit([record("RegisterControllerRecord", 0, controllerId=controller_id,
                             incarnationId=incarnation, zkMigrationReady=False,
                             endPoints=[{"name": "CONTROLLER", "host": f"controller-{controller_id}",
                                         "port": 9093, "securityProtocol": 0}],
                             features=features)])

    def controller_failover(self, election_ms: int = 2000) -> int:
        """The active controller dies; the next voter wins the election (raft epoch + 1).

        The new leader's LeaderChangeMessage comes first; a metadata transaction left open by the
        old leader is then aborted (AbortTransactionRecord "Controller failover"), and the restarted
        controller registers again with a new incarnation (3.7+). Returns the LeaderChangeMessage offset.
        """
        ids = self.config.controller_ids
        old = self.active_controller
        self.active_controller = ids[(ids.index(old) + 1) % len(ids)]
        self.now += election_ms  # no NoOps while there is no leader
        offset = self._leader_change()
        self.facts.failovers.append(ControllerFailover(offset, self.raft_epoch, self.active_controller))
        self.next_noop_at = self.now + self.config.noop_interval_ms
        if self._open_txn is not None:
            name, begin = self._open_txn
            self._latency()
            end = self._commit([record("AbortTransactionRecord", 0, reason="Controller failover")])
            self.facts.transactions.append(Transaction(name, begin, end, True))
            self._open_txn = None
        if self.mv.controller_registration and len(ids) > 1:
            self.tick(self.rng.randint(3000, 6000))  # the old controller restarts
            self._register_controller(old)
        return offset

    # ------------------------------------------------------------------ replay

    def _replay(self, rec: MetadataRecord, offset: int, mark: str | None) -> None:
        kind = rec.type_name
        data = rec.data
        if kind == "PartitionChangeRecord":
            self._replay_change(data, offset, mark)
        elif kind == "PartitionRecord":
            self._replay_partition(data)
        elif kind == "RegisterBrokerRecord":
            self._replay_register(data)
        elif kind == "BrokerRegistrationChangeRecord":
            fenced = data["fenced"]
            self._set_broker_state(data["brokerId"], True if fenced == 1 else False if fenced == -1 else None,
                                   True if data.get("inControlledShutdown") == 1 else None)
        elif kind == "FenceBrokerRecord":
            self._set_broker_state(data["id"], True, None)
        elif kind == "UnfenceBrokerRecord":
            self._set_broker_state(data["id"], False, None)
        elif kind == "UnregisterBrokerRecord":
            self.brokers.pop(data["brokerId"], None)
            self.active.discard(data["brokerId"])
        elif kind == "TopicRecord":
            topic = Topic(data["name"], data["topicId"])
            self.topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        elif kind == "ConfigRecord":
            if data["resourceType"] == RESOURCE_TOPIC:
                topic = self.topics.get(data["resourceName"])
                if topic is not None:
                    self._set_config(topic.configs, data["name"], data["value"])
            elif data["resourceType"] == RESOURCE_BROKER and data["resourceName"] == "":
                self._set_config(self.cluster_configs, data["name"], data["value"])
        elif kind == "RemoveTopicRecord":
            self._replay_remove_topic(data["topicId"])
        elif kind == "ClearElrRecord":
            self._replay_clear_elr(data["topicName"])

    def _replay_clear_elr(self, topic_name: str) -> None:
        """``ReplicationControlManager.replay(ClearElrRecord)``: a partition of the topic (of every topic for an
        empty name) with an ELR or a last known ELR loses both, and its partition epoch moves on."""
        topics = [self.topics[topic_name]] if topic_name else list(self.topics.values())
        for topic in topics:
            for key in topic.partitions:
                p = self.partitions[key]
                if p.elr or p.lke:
                    p.elr, p.lke = [], []
                    p.partition_epoch += 1

    @staticmethod
    def _set_config(configs: dict[str, str], name: str, value: str | None) -> None:
        if value is None:
            configs.pop(name, None)
        else:
            configs[name] = value

    def _set_broker_state(self, broker_id: int, fenced: bool | None, cs: bool | None) -> None:
        broker = self.brokers[broker_id]
        if fenced is not None:
            broker.fenced = fenced
        if cs is not None:
            broker.cs = cs
        if broker.fenced or broker.cs:
            self.active.discard(broker_id)
        else:
            self.active.add(broker_id)

    def _replay_register(self, data: dict[str, Any]) -> None:
        broker_id = data["brokerId"]
        old = self.brokers.get(broker_id)
        log_dir = data["logDirs"][0] if data.get("logDirs") else (old.log_dir if old else UNASSIGNED_DIR_ID)
        broker = Broker(broker_id, data["brokerEpoch"], data["incarnationId"], data["rack"], log_dir)
        broker.fenced = data["fenced"]
        self.brokers[broker_id] = broker
        self.active.discard(broker_id)
        if not broker.fenced:
            self.active.add(broker_id)

    def _index(self, p: Partition, old_replicas: list[int], old_isr: list[int]) -> None:
        key = p.key
        if old_isr is not p.isr:
            for b in old_isr:
                if b not in p.isr:
                    self.isr_index[b].discard(key)
            for b in p.isr:
                if b not in old_isr:
                    self.isr_index.setdefault(b, set()).add(key)
        if old_replicas is not p.replicas:
            for b in old_replicas:
                if b not in p.replicas:
                    self.replica_index[b].discard(key)
            for b in p.replicas:
                if b not in old_replicas:
                    self.replica_index.setdefault(b, set()).add(key)
        if p.leader == NO_LEADER:
            self.leaderless.add(key)
        else:
            self.leaderless.discard(key)
        if p.leader != p.replicas[0]:
            self.imbalanced.add(key)
        else:
            self.imbalanced.discard(key)
        if p.lrs == 1:
            self.recovering.add(key)
        else:
            self.recovering.discard(key)
        if p.adding or p.removing:
            self.reassigning.add(key)
        else:
            self.reassigning.discard(key)

    def _replay_partition(self, data: dict[str, Any]) -> None:
        topic = self._by_id[data["topicId"]]
        key = self.next_partition_key
        self.next_partition_key += 1
        p = Partition(key, topic, data["partitionId"])
        p.replicas = list(data["replicas"])
        p.isr = list(data["isr"])
        p.removing = list(data["removingReplicas"])
        p.adding = list(data["addingReplicas"])
        p.leader = data["leader"]
        p.leader_epoch = data["leaderEpoch"]
        p.partition_epoch = data["partitionEpoch"]
        p.lrs = data["leaderRecoveryState"]
        p.dirs = list(data.get("directories", ()))
        p.elr = list(data.get("eligibleLeaderReplicas") or ())
        p.lke = list(data.get("lastKnownElr") or ())
        self.partitions[key] = p
        topic.partitions.append(key)
        self._index(p, [], [])

    def _replay_change(self, data: dict[str, Any], offset: int, mark: str | None) -> None:
        topic = self._by_id[data["topicId"]]
        p = self.partitions[topic.partitions[data["partitionId"]]]
        old_replicas, old_isr, old_leader = p.replicas, p.isr, p.leader
        if data["isr"] is not None:
            p.isr = list(data["isr"])
        if data["leader"] != NO_LEADER_CHANGE:
            p.leader = data["leader"]
            p.leader_epoch += 1
        if data["replicas"] is not None:
            p.replicas = list(data["replicas"])
        if data["removingReplicas"] is not None:
            p.removing = list(data["removingReplicas"])
        if data["addingReplicas"] is not None:
            p.adding = list(data["addingReplicas"])
        old_lrs = p.lrs
        if data["leaderRecoveryState"] != -1:
            p.lrs = data["leaderRecoveryState"]
        if data.get("directories") is not None:
            p.dirs = list(data["directories"])
        if data.get("eligibleLeaderReplicas") is not None:
            p.elr = list(data["eligibleLeaderReplicas"])
        if data.get("lastKnownElr") is not None:
            p.lke = list(data["lastKnownElr"])
        p.partition_epoch += 1
        self._index(p, old_replicas, old_isr)
        facts = self.facts
        if p.leader == NO_LEADER and old_leader != NO_LEADER:
            facts.leaderless.append(PartitionLeaderless(offset, topic.name, topic.topic_id_str, p.pid,
                                                        p.leader_epoch, old_leader))
        if mark == "unclean":
            facts.unclean_elections.append(UncleanElection(offset, topic.name, topic.topic_id_str, p.pid,
                                                           p.leader, p.leader_epoch))
        elif mark == "cancelled":
            facts.reassignments.append(Reassignment(offset, mark, topic.name, topic.topic_id_str, p.pid,
                                                    tuple(p.replicas)))
        if old_lrs == 1 and p.lrs == 0:
            facts.recovered.append(LeaderRecovered(offset, topic.name, topic.topic_id_str, p.pid))

    def _replay_remove_topic(self, topic_id: bytes) -> None:
        topic = self._by_id.pop(topic_id)
        del self.topics[topic.name]
        for key in topic.partitions:
            p = self.partitions.pop(key)
            for b in p.isr:
                self.isr_index[b].discard(key)
            for b in p.replicas:
                self.replica_index[b].discard(key)
            for index in (self.leaderless, self.imbalanced, self.recovering, self.reassigning):
                index.discard(key)

    # ------------------------------------------------------------------ PartitionChangeBuilder

    def _dir_of(self, broker_id: int) -> bytes:
        broker = self.brokers.get(broker_id)
        return broker.log_dir if broker is not None else UNASSIGNED_DIR_ID

    def _min_isr(self, topic: Topic) -> int:
        value = topic.configs.get(MIN_ISR_KEY) or self.cluster_configs.get(MIN_ISR_KEY)
        return int(value) if value else 1

    def _unclean_enabled(self, topic: Topic) -> bool:
        value = topic.configs.get(UNCLEAN_KEY, self.cluster_configs.get(UNCLEAN_KEY, "false"))
        return value == "true"

    def build_change(self, p: Partition, acceptable: Callable[[int], bool], *,
                     isr: list[int] | None = None, replicas: list[int] | None = None,
                     removing: list[int] | None = None, adding: list[int] | None = None,
                     election: Election = Election.ONLINE,
                     lrs: int | None = None) -> tuple[MetadataRecord | None, bool]:
        """Kafka's ``PartitionChangeBuilder.build()``: the change record (None for a no-op) and
        whether its election was unclean. Balanced recovery (last-known-leader election) is off."""
        t_isr = p.isr if isr is None else isr
        t_rep = p.replicas if replicas is None else replicas
        t_rem = p.removing if removing is None else removing
        t_add = p.adding if adding is None else adding
        t_lrs = p.lrs if lrs is None else lrs
        t_elr, t_lke = p.elr, p.lke
        elr_on = self.elr
        # completeReassignmentIfNeeded
        if t_rem or t_add:
            n_isr, n_rep, ok = t_isr, t_rep, True
            if t_rem:
                n_isr = [r for r in t_isr if r not in t_rem]
                n_rep = [r for r in t_rep if r not in t_rem]
                ok = bool(n_isr) and bool(n_rep)
            if ok and all(r in n_isr for r in n_rep):
                t_isr, t_rep, t_rem, t_add = n_isr, n_rep, [], []
        # maybePopulateTargetElr
        if elr_on:
            if len(t_isr) >= self._min_isr(p.topic):
                t_elr, t_lke = [], []
            else:
                isr_set = set(t_isr)
                candidates = set(t_elr) | set(p.isr)
                t_elr = [r for r in sorted(candidates) if r not in isr_set]
                candidates |= set(t_lke)
                t_lke = [r for r in sorted(candidates) if r not in isr_set and r not in t_elr]
        # tryElection
        rec_leader, rec_isr, rec_lrs, unclean = NO_LEADER_CHANGE, None, -1, False

        def valid(r: int) -> bool:
            return (r in t_isr or (not t_isr and r in t_elr)) and acceptable(r)

        current = p.leader
        node = NO_LEADER
        if election is Election.PREFERRED and valid(t_rep[0]):
            node = t_rep[0]
        elif current != NO_LEADER and valid(current):
            node = current
        else:
            candidates_iter = t_rep[1:] if election is Election.PREFERRED else t_rep
            node = next((r for r in candidates_iter if valid(r)), NO_LEADER)
            if node == NO_LEADER and election is Election.UNCLEAN:
                node = next((r for r in t_rep if acceptable(r)), NO_LEADER)
                unclean = node != NO_LEADER
        if node != current:
            if node != NO_LEADER and node in t_elr:
                t_isr = [node]
                t_elr = [r for r in t_elr if r != node]
            rec_leader = node
            if unclean:
                rec_isr = [node]
                if p.lrs != 1 and self.mv.leader_recovery:
                    rec_lrs = 1
        # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
        if rec_leader == NO_LEADER_CHANGE and not all(r in t_rep for r in p.replicas):
            rec_leader = current
        # maybeUpdateRecordElr (no balanced recovery)
        rec_elr = rec_lke = None
        if rec_isr is not None or not elr_on:
            t_elr, t_lke = [], []
        if t_elr != p.elr:
            rec_elr = t_elr
        if t_lke != p.lke:
            rec_lke = t_lke
        if rec_isr is None and (t_isr or elr_on) and t_isr != p.isr:
            rec_isr = list(t_isr)
        # triggerLeaderEpochBumpForIsrShrinkIfNeeded
        if (self.mv.epoch_bump_on_isr_shrink and rec_leader == NO_LEADER_CHANGE and rec_isr is not None
                and not all(r in rec_isr for r in p.isr)):
            rec_leader = current
        # setAssignmentChanges
        rec_dirs = rec_rep = rec_rem = rec_add = None
        if t_rep:
            if self._pc_version >= 1:
                existing = dict(zip(p.replicas, p.dirs, strict=False))
                dirs = [existing.get(r) or self._dir_of(r) for r in t_rep]
                if dirs != p.dirs:
                    rec_dirs = dirs
            if t_rep != p.replicas:
                rec_rep = list(t_rep)
        if t_rem != p.removing:
            rec_rem = list(t_rem)
        if t_add != p.adding:
            rec_add = list(t_add)
        if t_lrs != p.lrs:
            rec_lrs = t_lrs
        if (rec_isr is None and rec_elr is None and rec_lke is None and rec_leader == NO_LEADER_CHANGE
                and rec_rep is None and rec_rem is None and rec_add is None and rec_lrs == -1
                and rec_dirs is None):
            return None, False
        data: dict[str, Any] = {
            "partitionId": p.pid, "topicId": p.topic.topic_id, "isr": rec_isr, "leader": rec_leader,
            "replicas": rec_rep, "removingReplicas": rec_rem, "addingReplicas": rec_add,
            "leaderRecoveryState": rec_lrs,
        }
        version = self._pc_version
        if version >= 1:
            data["directories"] = rec_dirs
        if version >= 2:
            data["eligibleLeaderReplicas"] = rec_elr
            data["lastKnownElr"] = rec_lke
        return MetadataRecord("PartitionChangeRecord", version, data), unclean

    def _is_active(self, broker_id: int) -> bool:
        return broker_id in self.active

    def _leader_and_isr_updates(self, remove: int, add: int, keys: Iterable[int],
                                records: list[MetadataRecord], marks: dict[int, str]) -> None:
        """ReplicationControlManager.generateLeaderAndIsrUpdates over ``keys`` (in key order)."""
        active = self.active

        def acceptable(r: int) -> bool:
            return r != remove and (r == add or r in active)

        for key in sorted(keys):
            p = self.partitions[key]
            election = Election.UNCLEAN if self._unclean_enabled(p.topic) else Election.ONLINE
            isr = [r for r in p.isr if r != remove] if remove in p.isr else p.isr
            rec, unclean = self.build_change(p, acceptable, isr=isr, election=election)
            if rec is not None:
                if unclean:
                    marks[len(records)] = "unclean"
                records.append(rec)

    # ------------------------------------------------------------------ brokers

    def _broker(self, broker_id: int) -> Broker:
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise SimulationError(f"broker {broker_id} is not registered")
        return broker

    def register_broker(self, broker_id: int, rack: str | None = None, *, host: str | None = None) -> int:
        """A broker (re)starts with a new incarnation: RegisterBrokerRecord, fenced; returns its epoch.

        The broker epoch is the offset of the record (the controller's next write offset).
        """
        old = self.brokers.get(broker_id)
        if old is not None and not old.fenced:
            raise SimulationError(f"broker {broker_id} still has a live session; fence it first")
        self._latency()
        epoch = self.next_offset
        incarnation = self._uuid()
        log_dir = old.log_dir if old is not None else self._uuid()  # directory ids persist
        if rack is None and old is not None:
            rack = old.rack
        features = [{"name": "metadata.version", "minSupportedVersion": 1,
                     "maxSupportedVersion": self.mv.level}]
        rec = record("RegisterBrokerRecord", self.mv.register_broker_version, brokerId=broker_id,
                     isMigratingZkBroker=False, incarnationId=incarnation, brokerEpoch=epoch,
                     endPoints=[{"name": "PLAINTEXT", "host": host or f"broker-{broker_id}",
                                 "port": 9092, "securityProtocol": 0}],
                     features=features, rack=rack, fenced=True, inControlledShutdown=False,
                     logDirs=[log_dir])
        self._commit([rec])
        self.facts.registered.append(BrokerRegistered(epoch, broker_id, epoch, uuid_to_str(incarnation)))
        return epoch

    def _fence_record(self, broker: Broker) -> MetadataRecord:
        if self.mv.registration_change_record:
            return record("BrokerRegistrationChangeRecord", 0, brokerId=broker.broker_id,
                          brokerEpoch=broker.epoch, fenced=1)
        return record("FenceBrokerRecord", 0, id=broker.broker_id, epoch=broker.epoch)

    def unfence(self, broker_id: int) -> int:
        """The broker caught up: unfence record, then elections for leaderless partitions (one batch)."""
        broker = self._broker(broker_id)
        if not broker.fenced:
            raise SimulationError(f"broker {broker_id} is not fenced")
        self._latency()
        if self.mv.registration_change_record:
            first = record("BrokerRegistrationChangeRecord", 0, brokerId=broker_id, brokerEpoch=broker.epoch,
                           fenced=-1)
        else:
            first = record("UnfenceBrokerRecord", 0, id=broker_id, epoch=broker.epoch)
        records = [first]
        marks: dict[int, str] = {}
        self._leader_and_isr_updates(NO_LEADER, broker_id, self.leaderless, records, marks)
        base = self._commit(records, marks)
        self.facts.unfenced.append(BrokerUnfenced(base, broker_id, broker.epoch))
        return base

    def fence(self, broker_id: int, *, reason: str = "heartbeat-timeout") -> int:
        """Fence now: partition changes removing the broker from ISRs and re-electing, then the fence
        record, in one batch. Returns the fence record's offset."""
        broker = self._broker(broker_id)
        if broker.fenced:
            raise SimulationError(f"broker {broker_id} is already fenced")
        self._latency()
        records: list[MetadataRecord] = []
        marks: dict[int, str] = {}
        self._leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        records.append(self._fence_record(broker))
        base = self._commit(records, marks)
        offset = base + len(records) - 1
        self.facts.fenced.append(BrokerFenced(offset, broker_id, broker.epoch, reason))
        return offset

    def crash(self, broker_id: int) -> int:
        """The broker stops heartbeating: fenced when broker.session.timeout.ms has passed."""
        self._broker(broker_id)
        self.tick(self.config.session_timeout_ms)
        return self.fence(broker_id)

    def controlled_shutdown(self, broker_id: int, *, complete: bool = True) -> int:
        """BrokerRegistrationChangeRecord(inControlledShutdown=1) (3.3-IV3+), then the changes moving
        leadership away and shrinking ISRs, one batch; with ``complete`` the broker is then fenced
        (the controller's SHUTDOWN_NOW). Returns the first offset of the shutdown batch."""
        broker = self._broker(broker_id)
        if broker.fenced:
            raise SimulationError(f"broker {broker_id} is fenced")
        self._latency()
        records: list[MetadataRecord] = []
        if self.mv.controlled_shutdown_state and not broker.cs:
            records.append(record("BrokerRegistrationChangeRecord", 1, brokerId=broker_id,
                                  brokerEpoch=broker.epoch, fenced=0, inControlledShutdown=1))
        else:
            self._set_broker_state(broker_id, None, True)  # older MVs: the heartbeat manager's state
        marks: dict[int, str] = {}
        self._leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        base = self._commit(records, marks)
        if base < 0:
            base = self.next_offset
        self.facts.controlled_shutdowns.append(ControlledShutdown(base, broker_id, broker.epoch))
        if complete:
            self.tick(self.rng.randint(200, 1500))
            self.fence(broker_id, reason="controlled-shutdown")
        return base

    def unregister_broker(self, broker_id: int) -> int:
        """Decommission: leave every ISR, then UnregisterBrokerRecord (one batch)."""
        broker = self._broker(broker_id)
        self._latency()
        records: list[MetadataRecord] = []
        marks: dict[int, str] = {}
        self._leader_and_isr_updates(broker_id, NO_LEADER, self.isr_index.get(broker_id, ()), records, marks)
        records.append(record("UnregisterBrokerRecord", 0, brokerId=broker_id, brokerEpoch=broker.epoch))
        base = self._commit(records, marks)
        offset = base + len(records) - 1
        self.facts.unregistered.append(BrokerUnregistered(offset, broker_id, broker.epoch))
        return offset

    # ------------------------------------------------------------------ topics

    def _place(self, count: int, replication_factor: int) -> list[list[int]]:
        """Rack-aware assignment over the usable (active) brokers: replicas of a partition span distinct
        racks while there are racks left, first replicas rotate (Kafka's rack-alternating list)."""
        usable = sorted(self.active)
        if len(usable) < replication_factor:
            raise SimulationError(f"replication factor {replication_factor} needs {replication_factor} "
                                  f"usable brokers; {len(usable)} are unfenced")
        by_rack: dict[str, list[int]] = {}
        for b in usable:
            by_rack.setdefault(self.brokers[b].rack or "", []).append(b)
        racks = sorted(by_rack)
        for rack in racks:
            self.rng.shuffle(by_rack[rack])
        ring: list[int] = []
        for i in range(max(len(v) for v in by_rack.values())):
            ring.extend(by_rack[r][i] for r in racks if i < len(by_rack[r]))
        n = len(ring)
        rack_of = {b: self.brokers[b].rack for b in ring}
        start = self.rng.randrange(n)
        shift = self.rng.randrange(n)
        n_racks = len(racks)
        out: list[list[int]] = []
        for i in range(count):
            if i and i % n == 0:
                shift += 1
            first = (start + i) % n
            chosen = [ring[first]]
            used = {rack_of[ring[first]]}
            j = first + 1 + shift % max(n - 1, 1)
            while len(chosen) < replication_factor:
                b = ring[j % n]
                j += 1
                if b in chosen:
                    continue
                if len(used) < n_racks and rack_of[b] in used:
                    continue
                chosen.append(b)
                used.add(rack_of[b])
            out.append(chosen)
        return out

    def _partition_records(self, topic_id: bytes, first_pid: int,
                           assignment: list[list[int]]) -> list[MetadataRecord]:
        version = self.mv.partition_record_version(self.elr)
        out = []
        for i, replicas in enumerate(assignment):
            isr = [r for r in replicas if r in self.active]
            data: dict[str, Any] = {
                "partitionId": first_pid + i, "topicId": topic_id, "replicas": replicas, "isr": isr,
                "removingReplicas": [], "addingReplicas": [], "leader": isr[0], "leaderRecoveryState": 0,
                "leaderEpoch": 0, "partitionEpoch": 0,
            }
            if version >= 1:
                data["directories"] = [self._dir_of(r) for r in replicas]
            if version >= 2:
                data["eligibleLeaderReplicas"] = []
                data["lastKnownElr"] = []
            out.append(MetadataRecord("PartitionRecord", version, data))
        return out

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None, *,
                     abort_after_batches: int | None = None) -> bytes:
        """TopicRecord, its ConfigRecords, one PartitionRecord per partition: one atomic batch, or a
        metadata transaction when the records exceed one batch. ``abort_after_batches`` leaves the
        transaction open after that many batches and fails the controller over, which aborts it."""
        if name in self.topics:
            raise SimulationError(f"topic {name!r} already exists")
        if partitions < 1:
            raise SimulationError("a topic needs at least one partition")
        self._latency()
        topic_id = self._uuid()
        assignment = self._place(partitions, replication_factor)
        records = [record("TopicRecord", 0, name=name, topicId=topic_id)]
        for key, value in sorted((configs or {}).items()):
            records.extend(self._config_records(RESOURCE_TOPIC, name, key, value))
        records.extend(self._partition_records(topic_id, 0, assignment))
        if abort_after_batches is not None:
            self._commit_large(f"CreateTopics {name}", records, abort_after_batches=abort_after_batches)
            self.controller_failover()
            return topic_id
        base = self._commit_large(f"CreateTopics {name}", records)
        offset = base + 1 if self._last_was_txn(base) else base
        self.facts.topics.append(TopicChange(offset, "created", name, uuid_to_str(topic_id), partitions))
        return topic_id

    def _last_was_txn(self, base: int) -> bool:
        txns = self.facts.transactions
        return bool(txns) and txns[-1].begin_offset == base and not txns[-1].aborted

    def add_partitions(self, name: str, count: int) -> int:
        """CreatePartitions: PartitionRecords for the new partition ids."""
        topic = self._topic(name)
        self._latency()
        first = len(topic.partitions)
        rf = len(self.partitions[topic.partitions[0]].replicas)
        records = self._partition_records(topic.topic_id, first, self._place(count, rf))
        base = self._commit_large(f"CreatePartitions {name}", records)
        offset = base + 1 if self._last_was_txn(base) else base
        self.facts.topics.append(TopicChange(offset, "partitions-added", name, topic.topic_id_str, count))
        return offset

    def delete_topic(self, name: str) -> int:
        topic = self._topic(name)
        self._latency()
        base = self._commit([record("RemoveTopicRecord", 0, topicId=topic.topic_id)])
        self.facts.topics.append(TopicChange(base, "deleted", name, topic.topic_id_str,
                                             len(topic.partitions)))
        return base

    def set_topic_config(self, name: str, key: str, value: str | None) -> int:
        self._topic(name)
        self._latency()
        return self._commit(self._config_records(RESOURCE_TOPIC, name, key, value))

    def set_cluster_config(self, key: str, value: str | None) -> int:
        """A cluster-wide broker default (``kafka-configs --entity-type brokers --entity-default``)."""
        return self._commit(self._config_records(RESOURCE_BROKER, "", key, value))

    def _config_records(self, resource_type: int, resource_name: str, key: str,
                        value: str | None) -> list[MetadataRecord]:
        """The ConfigRecord, then the ClearElrRecord Kafka 4.x's ``ConfigurationControlManager`` adds in the
        same atomic batch when ``min.insync.replicas`` changes while ELR is enabled: an ELR chosen under the
        old minimum means nothing under the new one. It names the topic; a broker resource clears every topic."""
        records = [record("ConfigRecord", 0, resourceType=resource_type, resourceName=resource_name,
                          name=key, value=value)]
        if self.elr and key == MIN_ISR_KEY:
            records.append(record("ClearElrRecord", 0,
                                  topicName=resource_name if resource_type == RESOURCE_TOPIC else ""))
        return records

    def _topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise SimulationError(f"unknown topic {name!r}")
        return topic

    def partition(self, name: str, pid: int) -> Partition:
        topic = self._topic(name)
        if not 0 <= pid < len(topic.partitions):
            raise SimulationError(f"topic {name!r} has no partition {pid}")
        return self.partitions[topic.partitions[pid]]

    # ------------------------------------------------------------------ partitions

    def _change(self, p: Partition, mark: str | None = None, **kwargs: Any) -> int:
        rec, unclean = self.build_change(p, self._is_active, **kwargs)
        if rec is None:
            return -1
        self._latency()
        if unclean:
            mark = "unclean"
        return self._commit([rec], {0: mark} if mark else None)

    def alter_isr(self, name: str, pid: int, isr: list[int], *, recovered: bool = False) -> int:
        """AlterPartition from the leader: the new ISR (and RECOVERED after an unclean election).
        A reassignment completes here once every target replica is in the ISR."""
        p = self.partition(name, pid)
        if p.leader == NO_LEADER or p.leader not in isr:
            raise SimulationError(f"{name}-{pid}: AlterPartition comes from the leader, which stays in "
                                  "the ISR")
        for r in isr:
            if r not in p.replicas:
                raise SimulationError(f"{name}-{pid}: {r} is not a replica")
            if r not in p.isr and r not in self.active:
                raise SimulationError(f"{name}-{pid}: broker {r} is fenced or shutting down (ineligible)")
        was_reassigning = bool(p.adding or p.removing)
        rec, _ = self.build_change(p, self._is_active, isr=list(isr), lrs=0 if recovered else None)
        if rec is None:
            return -1
        self._latency()
        base = self._commit([rec])
        if was_reassigning and not (p.adding or p.removing):
            self.facts.reassignments.append(Reassignment(base, "completed", name, p.topic.topic_id_str, pid,
                                                         tuple(p.replicas)))
        return base

    def shrink_isr(self, name: str, pid: int, drop: Iterable[int]) -> int:
        """Followers fell behind: the leader removes them from the ISR."""
        p = self.partition(name, pid)
        gone = set(drop)
        return self.alter_isr(name, pid, [r for r in p.isr if r not in gone])

    def expand_isr(self, name: str, pid: int, add: Iterable[int]) -> int:
        """Followers caught up: the leader adds them to the ISR."""
        p = self.partition(name, pid)
        extra = [r for r in add if r not in p.isr]
        return self.alter_isr(name, pid, [*p.isr, *extra])

    def recover(self, name: str, pid: int) -> int:
        """The uncleanly elected leader finished recovery: leaderRecoveryState back to RECOVERED."""
        p = self.partition(name, pid)
        if p.lrs != 1:
            raise SimulationError(f"{name}-{pid} is not recovering")
        return self.alter_isr(name, pid, list(p.isr), recovered=True)

    def reassign(self, name: str, pid: int, target: list[int]) -> int:
        """AlterPartitionReassignments: replicas = target + removing, with adding/removing set."""
        p = self.partition(name, pid)
        if p.adding or p.removing:
            raise SimulationError(f"{name}-{pid} is already being reassigned")
        if len(set(target)) != len(target) or not target:
            raise SimulationError(f"bad target replicas {target}")
        for r in target:
            self._broker(r)
        removing = [r for r in p.replicas if r not in target]
        adding = [r for r in target if r not in p.replicas]
        merged = [*target, *removing]
        self._latency()
        rec, unclean = self.build_change(p, self._is_active, replicas=merged, removing=removing,
                                         adding=adding)
        if rec is None:
            return -1
        base = self._commit([rec], {0: "unclean"} if unclean else None)
        self.facts.reassignments.append(Reassignment(base, "started", name, p.topic.topic_id_str, pid,
                                                     tuple(target)))
        if not p.adding and not p.removing:  # nothing to add: Kafka completes it at once
            self.facts.reassignments.append(Reassignment(base, "completed", name, p.topic.topic_id_str, pid,
                                                         tuple(p.replicas)))
        return base

    def cancel_reassignment(self, name: str, pid: int) -> int:
        """Revert to the original replicas (PartitionReassignmentRevert)."""
        p = self.partition(name, pid)
        if not (p.adding or p.removing):
            raise SimulationError(f"{name}-{pid} has no reassignment in progress")
        replicas = [r for r in p.replicas if r not in p.adding]
        isr = [r for r in p.isr if r not in p.adding]
        if not isr:
            raise SimulationError(f"{name}-{pid}: reverting would leave an empty ISR (not simulated)")
        return self._change(p, "cancelled", replicas=replicas, isr=isr, removing=[], adding=[])

    def elect_leaders(self, name: str, pid: int, *, unclean: bool = False) -> int:
        """ElectLeaders (kafka-leader-election): preferred, or unclean from outside the ISR."""
        p = self.partition(name, pid)
        return self._change(p, election=Election.UNCLEAN if unclean else Election.PREFERRED)

    def preferred_election(self, brokers: Iterable[int] | None = None) -> int:
        """Auto leader rebalance: preferred elections for imbalanced partitions (non-atomic batches).
        Returns how many partitions changed leader."""
        keys: Iterable[int] = self.imbalanced
        if brokers is not None:
            wanted = set(brokers)
            keys = [k for k in self.imbalanced if self.partitions[k].replicas[0] in wanted]
        records: list[MetadataRecord] = []
        for key in sorted(keys):
            rec, _ = self.build_change(self.partitions[key], self._is_active, election=Election.PREFERRED)
            if rec is not None:
                records.append(rec)
        if records:
            self._latency()
            self._commit_non_atomic(records)
        return len(records)

    def catch_up(self, broker_id: int, limit: int | None = None) -> int:
        """After a restart the broker's replicas rejoin their ISRs (AlterPartition per partition)."""
        done = 0
        for key in sorted(self.replica_index.get(broker_id, ())):
            if limit is not None and done >= limit:
                break
            p = self.partitions[key]
            if broker_id in p.isr or p.leader == NO_LEADER or broker_id not in self.active:
                continue
            self.expand_isr(p.topic.name, p.pid, [broker_id])
            done += 1
        return done

    def restart_broker(self, broker_id: int, *, controlled: bool = True, down_ms: int = 10_000,
                       rebalance: bool = True) -> int:
        """Stop (controlled shutdown or crash), register a new incarnation, unfence, catch up and
        (optionally) move preferred leadership back. Returns the new broker epoch."""
        broker = self._broker(broker_id)
        if not broker.fenced:
            if controlled:
                self.controlled_shutdown(broker_id)
            else:
                self.crash(broker_id)
        self.tick(down_ms)
        epoch = self.register_broker(broker_id)
        self.tick(self.rng.randint(500, 2000))
        self.unfence(broker_id)
        self.catch_up(broker_id)
        if rebalance:
            self.preferred_election([broker_id])
        return epoch

    def stream(self, actions: Iterable[Callable[[ControllerSimulator], object]]) -> Iterator[LogEntry]:
        """Run actions one by one, yielding the entries each wrote (memory stays flat)."""
        yield from self.drain()
        for action in actions:
            action(self)
            yield from self.drain()
