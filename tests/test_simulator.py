"""The KRaft controller simulator: Kafka's invariants at every offset, scenario facts, batches, files.

The checks fold the generated log with a small, independent model written here (not the simulator's
own state), honouring metadata transactions: records between Begin and End apply at End, and an
Abort discards them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from records.jsonl import read_jsonl, write_jsonl
from records.model import LogEntry, uuid_to_str
from records.sources import read_entries
from records.writer import write_segments
from simulator import (
    SCENARIOS,
    ControllerSimulator,
    ScenarioOptions,
    SimConfig,
    SimulationError,
    run_scenario,
    write_log,
)

MVS = ["3.0", "3.3", "3.6", "3.9", "4.0"]


@dataclass
class Part:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    lrs: int
    elr: list[int] = field(default_factory=list)
    lke: list[int] = field(default_factory=list)


@dataclass
class BrokerState:
    epoch: int
    fenced: bool = True
    cs: bool = False


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
        assert p.leader == -1 or p.leader in p.replicas, where
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
            fenced = {"FenceBrokerRecord": 1, "UnfenceBrokerRecord": -1}.get(name, data.get("fenced", 0))
            if fenced == 1:
                assert not b.fenced, where
                b.fenced = True
                self.fenced_at.append((entry.offset, bid))
            elif fenced == -1:
                assert b.fenced, where
                b.fenced = False
            if data.get("inControlledShutdown") == 1:
                b.in_controlled_shutdown = True
        elif name == "UnregisterBrokerRecord":
            assert self.brokers.pop(data["brokerId"]).epoch == data["brokerEpoch"], where
        elif name == "TopicRecord":
            assert data["topicId"] not in self.topics, where
            self.topics[data["topicId"]] = data["name"]
        elif name == "RemoveTopicRecord":
            del self.topics[data["topicId"]]
            for key in [k for k in self.parts if k[0] == data["topicId"]]:
                del self.parts[key]
        elif name == "PartitionRecord":
            key = (data["topicId"], data["partitionId"])
            assert data["topicId"] in self.topics and key not in self.parts, where
            p = Part(list(data["replicas"]), list(data["isr"]), data["leader"], data["leaderEpoch"],
                     data["partitionEpoch"], data["leaderRecoveryState"])
            assert p.leader == -1 or self.active(p.leader), where
            self.check(p, where)
            self.parts[key] = p
        elif name == "PartitionChangeRecord":
            p = self.parts[(data["topicId"], data["partitionId"])]
            old_leader, old_isr, old_elr = p.leader, list(p.isr), list(p.elr)
            if data["leader"] != -2:
                p.leader = data["leader"]
                p.leader_epoch += 1  # exactly +1 on any leader field, even naming the same leader
            p.partition_epoch += 1
            if data["isr"] is not None:
                p.isr = list(data["isr"])
            if data["replicas"] is not None:
                p.replicas = list(data["replicas"])
            if data["leaderRecoveryState"] != -1:
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
            if p.leader == -1 and old_leader != -1:
                self.leaderless_at.append((entry.offset, topic, data["partitionId"]))
        elif name == "ClearElrRecord":
            assert self.elr, f"{where}: only a controller with ELR enabled clears ELRs"
            named = [t for t, n in self.topics.items() if n == data["topicName"]]
            assert named or not data["topicName"], f"{where}: unknown topic"
            for (tid, _), p in self.parts.items():
                if (tid in named or not data["topicName"]) and (p.elr or p.last_known_elr):
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1


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


@pytest.mark.parametrize("mv", MVS)
@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2])
def test_every_scenario_keeps_kafka_invariants(name: str, mv: str, seed: int) -> None:
    options = small(name, mv, seed, unclean=(seed == 2))
    if name == "aborted-transaction" and mv in ("3.0", "3.3"):
        with pytest.raises(SimulationError, match="transactions"):
            generate(name, options)
        return
    if name == "min-isr-change" and not options.elr:
        with pytest.raises(SimulationError, match="eligible leader replicas"):
            generate(name, options)
        return
    entries, run = generate(name, options)
    check_batches(entries)
    f = fold(entries, elr=options.elr)
    facts = run.facts
    # the audit of the log finds exactly the incidents the simulator recorded
    assert [(x.offset, x.topic, x.partition) for x in facts.leaderless] == f.leaderless_at
    assert [(x.offset, x.broker_id) for x in facts.fenced] == f.fenced_at
    assert {(x.offset, x.topic, x.partition) for x in facts.unclean_elections} == set(f.unclean_at)
    # the simulator's own state is what the log says
    sim = run.sim
    for p in sim.partitions.values():
        q = f.parts[(p.topic.topic_id, p.partition_id)]
        assert (q.leader, q.isr, q.replicas, q.leader_epoch, q.partition_epoch) == (
            p.leader, p.isr, p.replicas, p.leader_epoch, p.partition_epoch)
    assert len(f.parts) == len(sim.partitions)
    # record versions follow the metadata version
    versions = {(e.type_name, e.version) for e in entries}
    pc = 2 if options.elr else 1 if mv in ("3.9", "4.0") else 0
    assert all(v == pc for t, v in versions if t in ("PartitionRecord", "PartitionChangeRecord"))
    types = {t for t, _ in versions}
    assert ("NoOpRecord" in types) == (mv != "3.0")
    assert ("FenceBrokerRecord" in types or "UnfenceBrokerRecord" in types) == (mv == "3.0")
    assert ("BeginTransactionRecord" in types) == (mv not in ("3.0", "3.3"))
    assert ("RegisterControllerRecord" in types) == (mv in ("3.9", "4.0"))


def test_start_of_log() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="3.9"))
    entries = sim.entries()
    names = [e.type_name for e in entries]
    assert names[:6] == ["LeaderChangeMessage", "BeginTransactionRecord", "FeatureLevelRecord",
                         "ZkMigrationStateRecord", "EndTransactionRecord", "RegisterControllerRecord"]
    assert entries[0].is_control and entries[0].batch_base_offset == 0
    assert {e.batch_base_offset for e in entries[1:5]} == {1}
    assert entries[2].record["featureLevel"] == 21
    old = ControllerSimulator(SimConfig(metadata_version="3.3")).entries()
    assert [e.type_name for e in old] == ["LeaderChangeMessage", "FeatureLevelRecord"]
    assert [e.type_name for e in ControllerSimulator(SimConfig(metadata_version="3.0")).entries()] == [
        "LeaderChangeMessage"]


def scripted(mv: str = "3.9", **cfg: Any) -> ControllerSimulator:
    sim = ControllerSimulator(SimConfig(metadata_version=mv, **cfg))
    for b, rack in ((1, "a"), (2, "b"), (3, "c")):
        sim.register_broker(b, rack=rack)
    for b in (1, 2, 3):
        sim.unfence(b)
    return sim


def test_scripted_story_broker_epochs_and_fence_batch() -> None:
    sim = scripted()
    start = sim.entries()
    reg = [e for e in start if e.type_name == "RegisterBrokerRecord"]
    assert [e.record["brokerEpoch"] for e in reg] == [e.offset for e in reg]
    assert all(e.record["fenced"] for e in reg) and reg[0].version == 3
    sim.create_topic("t", partitions=2, replication_factor=3)
    p0 = sim.partition("t", 0)
    leader = p0.leader
    assert sorted(p0.replicas) == [1, 2, 3] and p0.isr == p0.replicas and leader == p0.replicas[0]
    sim.entries()
    fence_offset = sim.crash(leader)
    entries = sim.entries()
    batch = [e for e in entries if e.batch_base_offset == entries[-1].batch_base_offset]
    assert [e.type_name for e in batch][-1] == "BrokerRegistrationChangeRecord"
    assert batch[-1].offset == fence_offset and batch[-1].record["fenced"] == 1
    changes = [e.record for e in batch[:-1]]
    assert all(r.type_name == "PartitionChangeRecord" for r in changes) and len(changes) == 2
    for rec in changes:
        assert leader not in rec["isr"]
    assert sim.partition("t", 0).leader != leader
    # restart: new incarnation, epoch = offset, unfence, elections for leaderless partitions
    new_epoch = sim.register_broker(leader)
    assert new_epoch > batch[-1].record["brokerEpoch"]
    sim.unfence(leader)
    entries = sim.entries()
    unfence = next(e for e in entries if e.type_name == "BrokerRegistrationChangeRecord")
    assert unfence.record["fenced"] == -1 and unfence.record["brokerEpoch"] == new_epoch


def test_old_metadata_version_uses_fence_and_unfence_records() -> None:
    sim = scripted("3.0")
    sim.create_topic("t", partitions=1, replication_factor=3)
    sim.crash(2)
    names = [e.type_name for e in sim.entries()]
    assert "UnfenceBrokerRecord" in names and "FenceBrokerRecord" in names
    assert "NoOpRecord" not in names and "BrokerRegistrationChangeRecord" not in names


@pytest.mark.parametrize(("mv", "bump"), [("3.5", True), ("3.6", False)])
def test_isr_shrink_bumps_leader_epoch_only_before_3_6(mv: str, bump: bool) -> None:
    sim = scripted(mv)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    epoch, leader = p.leader_epoch, p.leader
    sim.entries()
    follower = p.replicas[1]
    sim.shrink_isr("t", 0, [follower])
    rec = sim.entries()[-1].record
    assert rec.type_name == "PartitionChangeRecord" and follower not in rec["isr"]
    assert (rec["leader"] == leader) is bump and (rec["leader"] == -2) is not bump
    assert p.leader_epoch == epoch + (1 if bump else 0)
    sim.expand_isr("t", 0, [follower])
    assert sim.entries()[-1].record["leader"] == -2  # expansion never bumps


def test_last_isr_member_lost_then_unclean_election() -> None:
    sim = scripted("3.9")
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == -1 and p.isr == [last]  # the ISR keeps its last member
    epoch = p.leader_epoch
    sim.elect_leaders("t", 0, unclean=False)  # preferred: nobody eligible, no record
    sim.set_topic_config("t", "unclean.leader.election.enable", "true")
    sim.entries()
    sim.elect_leaders("t", 0, unclean=True)
    rec = sim.entries()[-1].record
    assert rec["leader"] == p.replicas[1] and rec["isr"] == [p.replicas[1]]
    assert rec["leaderRecoveryState"] == 1
    assert p.leader_epoch == epoch + 1 and p.leader_recovery_state == 1
    sim.recover("t", 0)
    rec = sim.entries()[-1].record
    assert rec["leaderRecoveryState"] == 0 and rec["leader"] == -2 and p.leader_recovery_state == 0


def test_unclean_cluster_default_elects_at_fence_time() -> None:
    sim = scripted("3.9", unclean=True)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == p.replicas[1] and p.isr == [p.leader] and p.leader_recovery_state == 1
    assert sim.facts.unclean_elections[-1].leader == p.leader and not sim.facts.leaderless


def test_elr_keeps_last_isr_member_eligible() -> None:
    sim = scripted("4.0", elr=True)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == -1 and p.isr == [] and p.elr == [last]
    sim.register_broker(last)
    sim.unfence(last)
    assert p.leader == last and p.isr == [last] and p.elr == []
    versions = {e.version for e in sim.entries() if e.type_name == "PartitionChangeRecord"}
    assert versions == {2}


def test_controlled_shutdown_batch_comes_first() -> None:
    sim = scripted("3.9")
    sim.create_topic("t", partitions=3, replication_factor=2)
    sim.entries()
    led = [p.key for p in sim.partitions.values() if p.leader == 1]
    base = sim.controlled_shutdown(1, complete=False)
    entries = sim.entries()
    batch = [e for e in entries if e.batch_base_offset == base]
    assert batch[0].type_name == "BrokerRegistrationChangeRecord" and batch[0].version == 1
    assert batch[0].record["inControlledShutdown"] == 1
    assert all(e.type_name == "PartitionChangeRecord" for e in batch[1:])
    assert all(sim.partitions[k].leader != 1 for k in led)


def test_reassignment_complete_and_cancel() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="3.9"))
    for b in range(1, 6):
        sim.register_broker(b, rack="abc"[b % 3])
        sim.unfence(b)
    sim.create_topic("t", partitions=2, replication_factor=3)
    p = sim.partition("t", 0)
    old = list(p.replicas)
    spare = next(b for b in range(1, 6) if b not in old)
    target = [*old[1:], spare]
    sim.reassign("t", 0, target)
    assert p.replicas == [*target, old[0]] and p.adding_replicas == [spare] and p.removing_replicas == [old[0]]
    epoch = p.leader_epoch
    sim.expand_isr("t", 0, [spare])
    assert p.replicas == target and p.adding_replicas == [] and p.removing_replicas == [] and old[0] not in p.isr
    assert p.leader_epoch == epoch + 1  # replicas dropped: leader named (or changed), epoch bumped
    q = sim.partition("t", 1)
    before = list(q.replicas)
    spare = next(b for b in range(1, 6) if b not in before)
    sim.reassign("t", 1, [*before[:2], spare])
    sim.cancel_reassignment("t", 1)
    assert q.replicas == before and q.adding_replicas == [] and q.removing_replicas == []
    kinds = [r.kind for r in sim.facts.reassignments]
    assert kinds == ["started", "completed", "started", "cancelled"]


def test_big_topic_creation_is_a_transaction_over_batches() -> None:
    sim = scripted("3.9", max_records_per_batch=10)
    sim.entries()
    sim.create_topic("big", partitions=25, replication_factor=2)
    entries = sim.entries()
    assert entries[0].type_name == "BeginTransactionRecord"
    assert entries[-1].type_name == "EndTransactionRecord"
    assert len({e.batch_base_offset for e in entries}) == 4  # 27 records in batches of 10, then End
    assert len(sim.topics["big"].partitions) == 25


def test_scenario_lost_last_isr_unclean_facts() -> None:
    entries, run = generate("lost-last-isr-unclean", ScenarioOptions(seed=5))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    assert by_offset[k["leaderless_offset"]].record["leader"] == -1
    assert k["fence_offset"] > k["leaderless_offset"]  # same batch: partition changes, then fence
    fence_batch = by_offset[k["fence_offset"]].batch_base_offset
    assert fence_batch == by_offset[k["leaderless_offset"]].batch_base_offset
    rec = by_offset[k["unclean_offset"]].record
    assert rec["leader"] == k["unclean_leader"] != k["last_isr_member"]
    assert rec["isr"] == [k["unclean_leader"]]
    assert rec["leaderRecoveryState"] == 1 and k["unclean_epoch"] > k["leaderless_epoch"]
    assert by_offset[k["recovered_offset"]].record["leaderRecoveryState"] == 0
    assert [f.offset for f in run.facts.leaderless] == [k["leaderless_offset"]]
    assert [f.offset for f in run.facts.unclean_elections] == [k["unclean_offset"]]


def test_scenario_rolling_restart_facts() -> None:
    entries, run = generate("rolling-restart", ScenarioOptions(seed=3, metadata_version="3.7"))
    by_offset = {e.offset: e for e in entries}
    restarts = run.facts.key["restarts"]
    assert [r["broker"] for r in restarts] == [1, 2, 3, 4, 5, 6]
    for r in restarts:
        assert r["new_epoch"] > r["old_epoch"]
        assert by_offset[r["shutdown_offset"]].record["inControlledShutdown"] == 1
        assert by_offset[r["register_offset"]].record["brokerEpoch"] == r["register_offset"]
    assert not run.facts.leaderless
    assert all(p.leader == p.replicas[0] for p in run.sim.partitions.values())


def test_scenario_rack_outage_facts() -> None:
    _, run = generate("rack-outage", ScenarioOptions(seed=4))
    k = run.facts.key
    assert k["brokers"] == [2, 5] and [f.broker_id for f in run.facts.fenced] == [2, 5]
    assert not run.facts.leaderless  # replicas span racks: every partition kept a leader


def test_scenario_flapping_broker_facts() -> None:
    _, run = generate("flapping-broker", ScenarioOptions(seed=6))
    k = run.facts.key
    assert k["epochs"] == sorted(k["epochs"]) and len(set(k["epochs"])) == 6
    assert [f.offset for f in run.facts.fenced] == k["fence_offsets"]
    assert [f.broker_epoch for f in run.facts.fenced] == k["epochs"][:5]


def test_scenario_reassignment_under_failure_facts() -> None:
    _, run = generate("reassignment-under-failure", ScenarioOptions(seed=7))
    k = run.facts.key
    kinds = [(r.kind, r.partition, r.offset) for r in run.facts.reassignments]
    assert ("started", 0, k["a_started"]) in kinds and ("cancelled", 0, k["a_cancelled"]) in kinds
    assert ("completed", 1, k["b_completed"]) in kinds
    assert k["a_started"] < k["a_crash_offset"] < k["a_cancelled"] < k["b_started"] < k["b_crash_offset"]
    assert sorted(run.sim.partition("topic-0", 1).replicas) == sorted(k["b_target"])


def test_scenario_controlled_shutdown_facts() -> None:
    entries, run = generate("controlled-shutdown", ScenarioOptions(seed=8))
    k = run.facts.key
    batch = [e for e in entries if e.batch_base_offset == k["shutdown_offset"]]
    moved = {(run.facts.key["broker"], e.record["partitionId"]) for e in batch[1:] if e.record["leader"] >= 0}
    assert len(moved) == len([t for t in k["led_partitions"]]) or len(moved) >= 1
    assert run.facts.fenced[0].reason == "controlled-shutdown"
    assert run.facts.fenced[0].offset == k["fence_offset"]


def test_scenario_topic_recreate_facts() -> None:
    entries, run = generate("topic-recreate", ScenarioOptions(seed=9))
    k = run.facts.key
    assert k["first_id"] != k["second_id"]
    by_offset = {e.offset: e for e in entries}
    assert uuid_to_str(by_offset[k["deleted_offset"]].record["topicId"]) == k["first_id"]
    assert by_offset[k["recreated_offset"]].record["name"] == "orders"
    assert run.sim.topics["orders"].topic_id_str == k["second_id"]


def test_scenario_min_isr_change_clears_elrs() -> None:
    """Each min.insync.replicas change comes with a ClearElrRecord in its batch (KIP-966): the first finds no ELR,
    the second clears topic-0's, the third every other topic's; the simulator's partitions say the same."""
    entries, run = generate("min-isr-change", ScenarioOptions(seed=11, metadata_version="4.0", elr=True))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    clears = [(e.offset, e.record["topicName"]) for e in entries if e.type_name == "ClearElrRecord"]
    assert clears == [(k["cluster_min_isr_2_offset"] + 1, ""), (k["topic_min_isr_1_offset"] + 1, "topic-0"),
                      (k["cluster_min_isr_1_offset"] + 1, "")]
    for offset, _ in clears:
        assert by_offset[offset].batch_base_offset == by_offset[offset - 1].batch_base_offset  # one atomic batch
    f = fold(entries, elr=True)
    assert not any(p.elr or p.last_known_elr for p in f.parts.values())
    assert not any(p.elr or p.last_known_elr for p in run.sim.partitions.values())
    # ELRs there were to clear: the failed brokers were the last ISR members of some partitions
    elr_before = [e for e in entries if e.type_name == "PartitionChangeRecord" and e.record["eligibleLeaderReplicas"]]
    assert elr_before and {b for e in elr_before for b in e.record["eligibleLeaderReplicas"]} <= set(k["failed"])


def test_scenario_aborted_transaction_facts() -> None:
    entries, run = generate("aborted-transaction", ScenarioOptions(seed=10, max_records_per_batch=40))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    assert by_offset[k["aborted_begin"]].type_name == "BeginTransactionRecord"
    assert by_offset[k["failover_offset"]].type_name == "LeaderChangeMessage"
    assert by_offset[k["aborted_end"]].type_name == "AbortTransactionRecord"
    assert k["aborted_begin"] < k["failover_offset"] < k["aborted_end"]
    begin_epoch = by_offset[k["aborted_begin"]].raft_leader_epoch
    assert by_offset[k["aborted_end"]].raft_leader_epoch == begin_epoch + 1
    f = fold(entries)
    hidden = set(range(k["aborted_begin"], k["failover_offset"]))
    assert not hidden & f.visible_offsets  # aborted records never become visible
    assert list(f.topics.values()).count("bulk") == 1
    assert uuid_to_str(next(t for t, n in f.topics.items() if n == "bulk")) == k["committed_topic_id"]


def _envelope(e: LogEntry) -> tuple[Any, ...]:
    return (e.offset, e.record, e.batch_base_offset, e.raft_leader_epoch, e.append_time_ms)


@pytest.mark.parametrize("mv", ["3.0", "3.6", "4.0"])
def test_segments_and_jsonl_read_back_equal(tmp_path: Path, mv: str) -> None:
    entries, _run = generate("random", small("random", mv, 3))
    write_segments(entries, tmp_path / "seg")
    back = list(read_entries(tmp_path / "seg"))
    assert [_envelope(e) for e in back] == [_envelope(e) for e in entries]
    buf = io.StringIO()
    write_jsonl(entries, buf)
    buf.seek(0)
    assert [_envelope(e) for e in read_jsonl(buf, "mem")] == [_envelope(e) for e in entries]


def test_write_log_is_deterministic(tmp_path: Path) -> None:
    outputs = []
    for attempt in range(2):
        run = run_scenario("random", small("random", "3.9", 11))
        out = tmp_path / f"run{attempt}"
        count, paths = write_log(run.entries(), out, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
        assert count > 0
        outputs.append([p.read_bytes() for p in paths])
    assert outputs[0] == outputs[1]
    assert next(iter(read_entries(tmp_path / "run0"))).cluster_id == run.sim.cluster_id


def test_cli_simulate_is_byte_identical(tmp_path: Path) -> None:
    import typer

    from kraft_replay.simulate_command import SIMULATE_EPILOG, simulate

    app = typer.Typer()
    app.command(epilog=SIMULATE_EPILOG)(simulate)
    app.command("noop")(lambda: None)
    runner = CliRunner()
    blobs = []
    for fmt in ("segments", "jsonl"):
        for attempt in range(2):
            out = tmp_path / f"{fmt}{attempt}"
            result = runner.invoke(app, ["simulate", "--out", str(out), "--format", fmt, "--seed", "4",
                                         "--events", "60", "--metadata-version", "4.0", "--elr",
                                         "--compression", "zstd", "--unclean"])
            assert result.exit_code == 0, result.output
            files = sorted(p for p in out.rglob("*") if p.is_file())
            blobs.append([(p.relative_to(out), p.read_bytes()) for p in files])
    assert blobs[0] == blobs[1] and blobs[2] == blobs[3]
    assert {str(name) for name, _ in blobs[2]} == {"metadata.jsonl"}
    bad = runner.invoke(app, ["simulate", "--out", str(tmp_path / "x"), "--elr", "--metadata-version", "3.9"])
    assert bad.exit_code == 3 and "4.0" in bad.output


def test_streaming_keeps_no_records() -> None:
    run = run_scenario("random", ScenarioOptions(seed=1, events=300))
    count = 0
    for _ in run.entries():
        count += 1
        assert len(run.sim._buffer) < 5000
    assert count > 1000
