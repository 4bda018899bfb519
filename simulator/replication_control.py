"""Kafka's ``ReplicationControlManager`` side of the simulated controller: topic creation and deletion,
partition placement, AlterPartition, reassignments and leader elections."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from records.kafka_constants import NO_LEADER
from records.model import MetadataRecord, uuid_to_str
from simulator.facts import Reassignment, TopicChange
from simulator.model import RESOURCE_TOPIC, Election, Partition, SimulationError, Topic, record


class ReplicationControlManager:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: topics and their partitions."""

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

    def _change(self, p: Partition, mark: str | None = None, **kwargs: Any) -> int:
        rec, unclean = self.build_change(p, self.is_active, **kwargs)
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
        was_reassigning = bool(p.adding_replicas or p.removing_replicas)
        rec, _ = self.build_change(p, self.is_active, isr=list(isr), lrs=0 if recovered else None)
        if rec is None:
            return -1
        self._latency()
        base = self._commit([rec])
        if was_reassigning and not (p.adding_replicas or p.removing_replicas):
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
        if p.leader_recovery_state != 1:
            raise SimulationError(f"{name}-{pid} is not recovering")
        return self.alter_isr(name, pid, list(p.isr), recovered=True)

    def reassign(self, name: str, pid: int, target: list[int]) -> int:
        """AlterPartitionReassignments: replicas = target + removing, with adding/removing set."""
        p = self.partition(name, pid)
        if p.adding_replicas or p.removing_replicas:
            raise SimulationError(f"{name}-{pid} is already being reassigned")
        if len(set(target)) != len(target) or not target:
            raise SimulationError(f"bad target replicas {target}")
        for r in target:
            self._broker(r)
        removing = [r for r in p.replicas if r not in target]
        adding = [r for r in target if r not in p.replicas]
        merged = [*target, *removing]
        self._latency()
        rec, unclean = self.build_change(p, self.is_active, replicas=merged, removing=removing,
                                         adding=adding)
        if rec is None:
            return -1
        base = self._commit([rec], {0: "unclean"} if unclean else None)
        self.facts.reassignments.append(Reassignment(base, "started", name, p.topic.topic_id_str, pid,
                                                     tuple(target)))
        if not p.adding_replicas and not p.removing_replicas:  # nothing to add: Kafka completes it at once
            self.facts.reassignments.append(Reassignment(base, "completed", name, p.topic.topic_id_str, pid,
                                                         tuple(p.replicas)))
        return base

    def cancel_reassignment(self, name: str, pid: int) -> int:
        """Revert to the original replicas (PartitionReassignmentRevert)."""
        p = self.partition(name, pid)
        if not (p.adding_replicas or p.removing_replicas):
            raise SimulationError(f"{name}-{pid} has no reassignment in progress")
        replicas = [r for r in p.replicas if r not in p.adding_replicas]
        isr = [r for r in p.isr if r not in p.adding_replicas]
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
            rec, _ = self.build_change(self.partitions[key], self.is_active, election=Election.PREFERRED)
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
            self.expand_isr(p.topic.name, p.partition_id, [broker_id])
            done += 1
        return done

