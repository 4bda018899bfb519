"""Kafka's ``ReplicationControlManager`` side of the simulated controller: topic creation and deletion,
partition placement, AlterPartition, reassignments and leader elections."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from records.kafka_constants import NO_LEADER
from records.model import MetadataRecord, uuid_to_str
from simulator.facts import Reassignment, TopicChange
from simulator.model import RECOVERED, RECOVERING, RESOURCE_TOPIC, Election, Partition, SimulationError, Topic, record

if TYPE_CHECKING:
    import random
    from collections.abc import Callable

    from simulator.facts import ScenarioFacts
    from simulator.model import Broker
    from simulator.versions import MetadataVersion


class ReplicationControlManager:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: topics and their partitions."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        active: set[int]
        brokers: dict[int, Broker]
        elr: bool
        facts: ScenarioFacts
        imbalanced: set[int]
        mv: MetadataVersion
        partitions: dict[int, Partition]
        replica_index: dict[int, set[int]]
        rng: random.Random
        topics: dict[str, Topic]

        def _broker(self, broker_id: int) -> Broker: ...
        def _commit(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> int: ...
        def _commit_large(self, name: str, records: list[MetadataRecord], *,
                          abort_after_batches: int | None = None) -> int: ...
        def _commit_non_atomic(self, records: list[MetadataRecord], marks: dict[int, str] | None = None) -> None: ...
        def _config_records(self, resource_type: int, resource_name: str, key: str,
                            value: str | None) -> list[MetadataRecord]: ...
        def _dir_of(self, broker_id: int) -> bytes: ...
        def _latency(self) -> None: ...
        def _unclean_enabled(self, topic: Topic) -> bool: ...
        def _uuid(self) -> bytes: ...
        def build_partition_change(self, partition: Partition, is_acceptable_leader: Callable[[int], bool], *,
                                   target_isr: list[int] | None = None, target_replicas: list[int] | None = None,
                                   target_removing: list[int] | None = None,
                                   target_adding: list[int] | None = None,
                                   election: Election = Election.ONLINE,
                                   target_leader_recovery_state: int | None = None,
                                   ) -> tuple[MetadataRecord | None, bool]: ...
        def controller_failover(self, election_ms: int = 2000) -> int: ...
        def is_active(self, broker_id: int) -> bool: ...

    def _place(self, count: int, replication_factor: int) -> list[list[int]]:
        """Rack-aware assignment over the usable (active) brokers: replicas of a partition span distinct
        racks while there are racks left, first replicas rotate (Kafka's rack-alternating list)."""
        usable = sorted(self.active)
        if len(usable) < replication_factor:
            raise SimulationError(f"replication factor {replication_factor} needs {replication_factor} "
                                  f"usable brokers; {len(usable)} are unfenced")
        by_rack: dict[str, list[int]] = {}
        for broker_id in usable:
            by_rack.setdefault(self.brokers[broker_id].rack or "", []).append(broker_id)
        racks = sorted(by_rack)
        for rack in racks:
            self.rng.shuffle(by_rack[rack])
        ring: list[int] = []
        for position in range(max(len(v) for v in by_rack.values())):
            ring.extend(by_rack[r][position] for r in racks if position < len(by_rack[r]))
        ring_size = len(ring)
        rack_of = {b: self.brokers[b].rack for b in ring}
        start = self.rng.randrange(ring_size)
        shift = self.rng.randrange(ring_size)
        rack_count = len(racks)
        out: list[list[int]] = []
        for index in range(count):
            if index and index % ring_size == 0:
                shift += 1
            first = (start + index) % ring_size
            chosen = [ring[first]]
            used = {rack_of[ring[first]]}
            cursor = first + 1 + shift % max(ring_size - 1, 1)
            while len(chosen) < replication_factor:
                broker_id = ring[cursor % ring_size]
                cursor += 1
                if broker_id in chosen:
                    continue
                if len(used) < rack_count and rack_of[broker_id] in used:
                    continue
                chosen.append(broker_id)
                used.add(rack_of[broker_id])
            out.append(chosen)
        return out

    def _partition_records(self, topic_id: bytes, first_pid: int,
                           assignment: list[list[int]]) -> list[MetadataRecord]:
        version = self.mv.partition_record_version(self.elr)
        out = []
        for index, replicas in enumerate(assignment):
            isr = [r for r in replicas if r in self.active]
            data: dict[str, Any] = {
                "partitionId": first_pid + index, "topicId": topic_id, "replicas": replicas, "isr": isr,
                "removingReplicas": [], "addingReplicas": [], "leader": isr[0], "leaderRecoveryState": RECOVERED,
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

    def _change(self, partition: Partition, mark: str | None = None, **kwargs: Any) -> int:
        change, unclean = self.build_partition_change(partition, self.is_active, **kwargs)
        if change is None:
            return -1
        self._latency()
        if unclean:
            mark = "unclean"
        return self._commit([change], {0: mark} if mark else None)

    def alter_isr(self, name: str, pid: int, isr: list[int], *, recovered: bool = False) -> int:
        """AlterPartition from the leader: the new ISR (and RECOVERED after an unclean election).
        A reassignment completes here once every target replica is in the ISR."""
        partition = self.partition(name, pid)
        if partition.leader == NO_LEADER or partition.leader not in isr:
            raise SimulationError(f"{name}-{pid}: AlterPartition comes from the leader, which stays in "
                                  "the ISR")
        for replica in isr:
            if replica not in partition.replicas:
                raise SimulationError(f"{name}-{pid}: {replica} is not a replica")
            if replica not in partition.isr and replica not in self.active:
                raise SimulationError(f"{name}-{pid}: broker {replica} is fenced or shutting down (ineligible)")
        was_reassigning = bool(partition.adding_replicas or partition.removing_replicas)
        change, _ = self.build_partition_change(partition, self.is_active, target_isr=list(isr),
                                                target_leader_recovery_state=RECOVERED if recovered else None)
        if change is None:
            return -1
        self._latency()
        base = self._commit([change])
        if was_reassigning and not (partition.adding_replicas or partition.removing_replicas):
            self.facts.reassignments.append(Reassignment(base, "completed", name, partition.topic.topic_id_str, pid,
                                                         tuple(partition.replicas)))
        return base

    def shrink_isr(self, name: str, pid: int, drop: Iterable[int]) -> int:
        """Followers fell behind: the leader removes them from the ISR."""
        partition = self.partition(name, pid)
        gone = set(drop)
        return self.alter_isr(name, pid, [r for r in partition.isr if r not in gone])

    def expand_isr(self, name: str, pid: int, add: Iterable[int]) -> int:
        """Followers caught up: the leader adds them to the ISR."""
        partition = self.partition(name, pid)
        extra = [r for r in add if r not in partition.isr]
        return self.alter_isr(name, pid, [*partition.isr, *extra])

    def recover(self, name: str, pid: int) -> int:
        """The uncleanly elected leader finished recovery: leaderRecoveryState back to RECOVERED."""
        partition = self.partition(name, pid)
        if partition.leader_recovery_state != RECOVERING:
            raise SimulationError(f"{name}-{pid} is not recovering")
        return self.alter_isr(name, pid, list(partition.isr), recovered=True)

    def reassign(self, name: str, pid: int, target: list[int]) -> int:
        """AlterPartitionReassignments: replicas = target + removing, with adding/removing set."""
        partition = self.partition(name, pid)
        if partition.adding_replicas or partition.removing_replicas:
            raise SimulationError(f"{name}-{pid} is already being reassigned")
        if len(set(target)) != len(target) or not target:
            raise SimulationError(f"bad target replicas {target}")
        for replica in target:
            self._broker(replica)
        removing = [r for r in partition.replicas if r not in target]
        adding = [r for r in target if r not in partition.replicas]
        merged = [*target, *removing]
        self._latency()
        change, unclean = self.build_partition_change(partition, self.is_active, target_replicas=merged,
                                                      target_removing=removing, target_adding=adding)
        if change is None:
            return -1
        base = self._commit([change], {0: "unclean"} if unclean else None)
        topic_id = partition.topic.topic_id_str
        self.facts.reassignments.append(Reassignment(base, "started", name, topic_id, pid, tuple(target)))
        if not partition.adding_replicas and not partition.removing_replicas:  # nothing to add: Kafka completes it
            self.facts.reassignments.append(Reassignment(base, "completed", name, topic_id, pid,
                                                         tuple(partition.replicas)))
        return base

    def cancel_reassignment(self, name: str, pid: int) -> int:
        """Revert to the original replicas (PartitionReassignmentRevert)."""
        partition = self.partition(name, pid)
        if not (partition.adding_replicas or partition.removing_replicas):
            raise SimulationError(f"{name}-{pid} has no reassignment in progress")
        replicas = [r for r in partition.replicas if r not in partition.adding_replicas]
        isr = [r for r in partition.isr if r not in partition.adding_replicas]
        if not isr:
            raise SimulationError(f"{name}-{pid}: reverting would leave an empty ISR (not simulated)")
        return self._change(partition, "cancelled", target_replicas=replicas, target_isr=isr,
                            target_removing=[], target_adding=[])

    def elect_leaders(self, name: str, pid: int, *, unclean: bool = False) -> int:
        """ElectLeaders (kafka-leader-election): preferred, or unclean from outside the ISR."""
        partition = self.partition(name, pid)
        return self._change(partition, election=Election.UNCLEAN if unclean else Election.PREFERRED)

    def preferred_election(self, brokers: Iterable[int] | None = None) -> int:
        """Auto leader rebalance: preferred elections for imbalanced partitions (non-atomic batches).
        Returns how many partitions changed leader."""
        keys: Iterable[int] = self.imbalanced
        if brokers is not None:
            wanted = set(brokers)
            keys = [k for k in self.imbalanced if self.partitions[k].replicas[0] in wanted]
        records: list[MetadataRecord] = []
        for key in sorted(keys):
            change, _ = self.build_partition_change(self.partitions[key], self.is_active,
                                                    election=Election.PREFERRED)
            if change is not None:
                records.append(change)
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
            partition = self.partitions[key]
            if broker_id in partition.isr or partition.leader == NO_LEADER or broker_id not in self.active:
                continue
            self.expand_isr(partition.topic.name, partition.partition_id, [broker_id])
            done += 1
        return done

    def _generate_leader_and_isr_updates(self, broker_to_remove: int, broker_to_add: int, keys: Iterable[int],
                                         records: list[MetadataRecord], marks: dict[int, str]) -> None:
        """``ReplicationControlManager.generateLeaderAndIsrUpdates`` over ``keys`` (in key order): the broker to
        remove leaves each ISR and may not lead; the broker to add may lead although not yet active."""
        active = self.active

        def is_acceptable_leader(replica: int) -> bool:
            return replica != broker_to_remove and (replica == broker_to_add or replica in active)

        for key in sorted(keys):
            partition = self.partitions[key]
            election = Election.UNCLEAN if self._unclean_enabled(partition.topic) else Election.ONLINE
            isr = ([r for r in partition.isr if r != broker_to_remove] if broker_to_remove in partition.isr
                   else partition.isr)
            change, unclean = self.build_partition_change(partition, is_acceptable_leader, target_isr=isr,
                                                          election=election)
            if change is not None:
                if unclean:
                    marks[len(records)] = "unclean"
                records.append(change)
