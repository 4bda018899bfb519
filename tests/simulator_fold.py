"""The simulator's tests' yardstick: a small, independent fold of a generated log that asserts Kafka's invariants
at every offset (not the simulator's own state), honouring metadata transactions: records between Begin and End
apply at End, and an Abort discards them. Plus the small clusters and runs the simulator's test modules share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from records.kafka_constants import (
    CONFIG_RESOURCE_TOPIC,
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    NO_LEADER,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    NONE,
    PRODUCER_ID_BLOCK_SIZE,
    UNFENCE,
)
from records.model import LogEntry
from simulator import ControllerSimulator, ScenarioOptions, SimConfig, run_scenario

MVS = ["3.0", "3.3", "3.6", "3.9", "4.0"]


@dataclass
class Part:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)


@dataclass
class BrokerState:
    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False


class Fold:
    """Replays a log and asserts Kafka's invariants after every applied record."""

    def __init__(self, elr: bool = False) -> None:
        self.elr = elr
        self.brokers: dict[int, BrokerState] = {}
        self.epoch_history: dict[int, int] = {}
        self.parts: dict[tuple[bytes, int], Part] = {}
        self.topics: dict[bytes, str] = {}
        self.txn: list[LogEntry] | None = None
        self.visible_offsets: set[int] = set()
        self.leaderless_at: list[tuple[int, str, int]] = []
        self.unclean_at: list[tuple[int, str, int]] = []
        self.fenced_at: list[tuple[int, int]] = []
        self.last_raft_epoch = 0
        # the image's other parts, as Kafka's *Delta classes keep them
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
        self.acls: dict[bytes, tuple[Any, ...]] = {}
        self.scram: dict[tuple[str, int], int] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.next_producer_id = 0

    def feed(self, entry: LogEntry) -> None:
        rec = entry.record
        assert entry.raft_leader_epoch is not None and entry.raft_leader_epoch >= self.last_raft_epoch
        self.last_raft_epoch = entry.raft_leader_epoch
        name = rec.type_name
        if name == "LeaderChangeMessage":
            return
        if name == "BeginTransactionRecord":
            assert self.txn is None, f"nested transaction at {entry.offset}"
            self.txn = []
            return
        if name == "EndTransactionRecord":
            assert self.txn is not None
            for held in self.txn:
                self.apply(held)
            self.txn = None
            return
        if name == "AbortTransactionRecord":
            assert self.txn is not None
            self.txn = None
            return
        if self.txn is not None:
            self.txn.append(entry)
            return
        self.apply(entry)

    def active(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def check(self, p: Part, where: str) -> None:
        assert p.leader == NO_LEADER or p.leader in p.replicas, where
        assert set(p.isr) <= set(p.replicas), where
        assert len(set(p.replicas)) == len(p.replicas), where
        if not self.elr:
            assert p.isr, f"{where}: empty ISR without ELR"

    def apply(self, entry: LogEntry) -> None:
        rec = entry.record
        data: dict[str, Any] = rec.data  # type: ignore[union-attr]
        name = rec.type_name
        self.visible_offsets.add(entry.offset)
        where = f"offset {entry.offset} {name}"
        if name == "RegisterBrokerRecord":
            bid, epoch = data["brokerId"], data["brokerEpoch"]
            assert epoch == entry.offset, f"{where}: broker epoch is the record's offset"
            assert epoch > self.epoch_history.get(bid, -1), where
            self.epoch_history[bid] = epoch
            self.brokers[bid] = BrokerState(epoch, data["fenced"])
        elif name in ("BrokerRegistrationChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord"):
            bid = data.get("brokerId", data.get("id"))
            epoch = data.get("brokerEpoch", data.get("epoch"))
            b = self.brokers[bid]
            assert b.epoch == epoch, f"{where}: names epoch {epoch}, current {b.epoch}"
            fenced = {"FenceBrokerRecord": FENCE, "UnfenceBrokerRecord": UNFENCE}.get(name, data.get("fenced", NONE))
            if fenced == FENCE:
                assert not b.fenced, where
                b.fenced = True
                self.fenced_at.append((entry.offset, bid))
            elif fenced == UNFENCE:
                assert b.fenced, where
                b.fenced = False
            if data.get("inControlledShutdown") == IN_CONTROLLED_SHUTDOWN:
                b.in_controlled_shutdown = True
        elif name == "UnregisterBrokerRecord":
            assert self.brokers.pop(data["brokerId"]).epoch == data["brokerEpoch"], where
        elif name == "TopicRecord":
            assert data["topicId"] not in self.topics, where
            self.topics[data["topicId"]] = data["name"]
        elif name == "RemoveTopicRecord":
            self.configs.pop((CONFIG_RESOURCE_TOPIC, self.topics.pop(data["topicId"])), None)
            for key in [k for k in self.parts if k[0] == data["topicId"]]:
                del self.parts[key]
        elif name == "PartitionRecord":
            key = (data["topicId"], data["partitionId"])
            assert data["topicId"] in self.topics and key not in self.parts, where
            p = Part(list(data["replicas"]), list(data["isr"]), data["leader"], data["leaderEpoch"],
                     data["partitionEpoch"], data["leaderRecoveryState"])
            assert p.leader == NO_LEADER or self.active(p.leader), where
            self.check(p, where)
            self.parts[key] = p
        elif name == "PartitionChangeRecord":
            p = self.parts[(data["topicId"], data["partitionId"])]
            old_leader, old_isr, old_elr = p.leader, list(p.isr), list(p.elr)
            if data["leader"] != NO_LEADER_CHANGE:
                p.leader = data["leader"]
                p.leader_epoch += 1  # exactly +1 on any leader field, even naming the same leader
            p.partition_epoch += 1
            if data["isr"] is not None:
                p.isr = list(data["isr"])
            if data["replicas"] is not None:
                p.replicas = list(data["replicas"])
            if data["leaderRecoveryState"] != NO_RECOVERY_STATE_CHANGE:
                p.leader_recovery_state = data["leaderRecoveryState"]
            if data.get("eligibleLeaderReplicas") is not None:
                p.elr = list(data["eligibleLeaderReplicas"])
            if data.get("lastKnownElr") is not None:
                p.last_known_elr = list(data["lastKnownElr"])
            self.check(p, where)
            topic = self.topics[data["topicId"]]
            if p.leader != old_leader and p.leader >= 0:
                assert self.active(p.leader), f"{where}: newly elected leader {p.leader} is not active"
                # clean elections pick from the target ISR, which a completing reassignment changes too
                if p.leader not in old_isr and p.leader not in old_elr and data["replicas"] is None:
                    assert p.isr == [p.leader], f"{where}: unclean election sets ISR = [leader]"
                    self.unclean_at.append((entry.offset, topic, data["partitionId"]))
            if p.leader == NO_LEADER and old_leader != NO_LEADER:
                self.leaderless_at.append((entry.offset, topic, data["partitionId"]))
        elif name in OTHER_PARTS:
            self.apply_other_part(name, data, where)
        elif name == "ClearElrRecord":
            assert self.elr, f"{where}: only a controller with ELR enabled clears ELRs"
            named = [t for t, n in self.topics.items() if n == data["topicName"]]
            assert named or not data["topicName"], f"{where}: unknown topic"
            for (tid, _), p in self.parts.items():
                if (tid in named or not data["topicName"]) and (p.elr or p.last_known_elr):
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1


    def apply_other_part(self, name: str, data: dict[str, Any], where: str) -> None:
        """Configs, quotas, ACLs, SCRAM, tokens, producer ids: Kafka's rules, and what its controller never writes
        (a removal of nothing, a producer id going back, a config of a topic that does not exist)."""
        if name == "ConfigRecord":
            resource = (data["resourceType"], data["resourceName"])
            if resource[0] == CONFIG_RESOURCE_TOPIC:
                assert resource[1] in self.topics.values(), f"{where}: config of an unknown topic"
            configs = self.configs.setdefault(resource, {})
            if data["value"] is None:
                assert data["name"] in configs, f"{where}: delete of a config that is not set"
                del configs[data["name"]]
            else:
                configs[data["name"]] = data["value"]
            if not configs:
                del self.configs[resource]
        elif name == "ClientQuotaRecord":
            entity = tuple((item["entityType"], item["entityName"]) for item in data["entity"])
            quotas = self.quotas.setdefault(entity, {})
            if data["remove"]:
                assert quotas.pop(data["key"], None) is not None, f"{where}: removes a quota that is not set"
                if not quotas:
                    del self.quotas[entity]
            else:
                assert quotas.get(data["key"]) != data["value"], f"{where}: an unchanged quota"
                quotas[data["key"]] = data["value"]
        elif name == "AccessControlEntryRecord":
            acl = tuple(v for k, v in data.items() if k != "id")
            assert data["id"] not in self.acls and acl not in self.acls.values(), f"{where}: a duplicate ACL"
            self.acls[data["id"]] = acl
        elif name == "RemoveAccessControlEntryRecord":
            assert self.acls.pop(data["id"], None) is not None, f"{where}: no acl with that ID (Kafka refuses)"
        elif name == "UserScramCredentialRecord":
            assert 4096 <= data["iterations"] <= 16384 and data["salt"] and data["storedKey"], where
            self.scram[(data["name"], data["mechanism"])] = data["iterations"]
        elif name == "RemoveUserScramCredentialRecord":
            assert self.scram.pop((data["name"], data["mechanism"]), None) is not None, where
        elif name == "DelegationTokenRecord":
            assert data["issueTimestamp"] <= data["expirationTimestamp"] <= data["maxTimestamp"], where
            self.tokens[data["tokenId"]] = dict(data)
        elif name == "RemoveDelegationTokenRecord":
            assert self.tokens.pop(data["tokenId"], None) is not None, where
        elif name == "ProducerIdsRecord":
            assert data["nextProducerId"] == self.next_producer_id + PRODUCER_ID_BLOCK_SIZE, where
            assert self.brokers[data["brokerId"]].epoch == data["brokerEpoch"], f"{where}: stale broker epoch"
            self.next_producer_id = data["nextProducerId"]


OTHER_PARTS = frozenset({
    "ConfigRecord", "ClientQuotaRecord", "AccessControlEntryRecord", "RemoveAccessControlEntryRecord",
    "UserScramCredentialRecord", "RemoveUserScramCredentialRecord", "DelegationTokenRecord",
    "RemoveDelegationTokenRecord", "ProducerIdsRecord"})


def fold(entries: list[LogEntry], elr: bool = False) -> Fold:
    f = Fold(elr)
    for e in entries:
        f.feed(e)
    assert True  # an open transaction at the end stays invisible
    return f


def check_batches(entries: list[LogEntry]) -> None:
    """Offsets dense from 0, batches contiguous, one raft epoch and time per batch, control alone."""
    batch: list[LogEntry] = []
    for i, e in enumerate(entries):
        assert e.offset == i
        if batch and e.batch_base_offset == batch[0].batch_base_offset:
            batch.append(e)
        else:
            batch = [e]
            assert e.batch_base_offset == e.offset
        assert e.raft_leader_epoch == batch[0].raft_leader_epoch
        assert e.append_time_ms == batch[0].append_time_ms
        assert e.is_control == batch[0].is_control
        if e.is_control:
            assert len(batch) == 1
    times = [e.append_time_ms for e in entries]
    assert times == sorted(times)


def small(name: str, mv: str, seed: int, **kw: Any) -> ScenarioOptions:
    return ScenarioOptions(brokers=6, topics=3, partitions_per_topic=6, replication_factor=3, events=150,
                           seed=seed, metadata_version=mv, elr=(mv == "4.0" and seed % 2 == 1),
                           max_records_per_batch=25, **kw)


def generate(name: str, options: ScenarioOptions) -> tuple[list[LogEntry], Any]:
    run = run_scenario(name, options)
    entries = list(run.entries())
    return entries, run


def scripted(mv: str = "3.9", **cfg: Any) -> ControllerSimulator:
    sim = ControllerSimulator(SimConfig(metadata_version=mv, **cfg))
    for b, rack in ((1, "a"), (2, "b"), (3, "c")):
        sim.register_broker(b, rack=rack)
    for b in (1, 2, 3):
        sim.unfence(b)
    return sim
