"""Kafka's ``PartitionChangeBuilder``: the PartitionChangeRecord a partition change needs, with Kafka's election,
ELR and reassignment rules; each step is named after the Kafka method it follows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from records.kafka_constants import NO_LEADER, NO_LEADER_CHANGE, NO_RECOVERY_STATE_CHANGE
from records.model import MetadataRecord
from simulator.model import RECOVERING, UNASSIGNED_DIR_ID, Election, Partition

if TYPE_CHECKING:
    from simulator.model import Broker, Topic
    from simulator.versions import MetadataVersion


class PartitionChangeBuilder:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: deciding partition changes."""

    if TYPE_CHECKING:  # what it uses of the controller it is mixed into (for type checkers only)
        _partition_change_version: int
        brokers: dict[int, Broker]
        elr: bool
        mv: MetadataVersion

        def _min_isr(self, topic: Topic) -> int: ...

    def _dir_of(self, broker_id: int) -> bytes:
        """The broker's log directory (``DefaultDirProvider``); UNASSIGNED for a broker not registered."""
        broker = self.brokers.get(broker_id)
        return broker.log_dir if broker is not None else UNASSIGNED_DIR_ID

    def build_partition_change(self, partition: Partition, is_acceptable_leader: Callable[[int], bool], *,
                               target_isr: list[int] | None = None, target_replicas: list[int] | None = None,
                               target_removing: list[int] | None = None, target_adding: list[int] | None = None,
                               election: Election = Election.ONLINE,
                               target_leader_recovery_state: int | None = None,
                               ) -> tuple[MetadataRecord | None, bool]:
        """Kafka's ``PartitionChangeBuilder.build()``: the change record (None for a no-op) and
        whether its election was unclean. Balanced recovery (last-known-leader election) is off."""
        if target_isr is None:
            target_isr = partition.isr
        if target_replicas is None:
            target_replicas = partition.replicas
        if target_removing is None:
            target_removing = partition.removing_replicas
        if target_adding is None:
            target_adding = partition.adding_replicas
        if target_leader_recovery_state is None:
            target_leader_recovery_state = partition.leader_recovery_state
        target_elr, target_last_known_elr = partition.eligible_leader_replicas, partition.last_known_elr
        elr_enabled = self.elr
        # completeReassignmentIfNeeded
        if target_removing or target_adding:
            new_isr, new_replicas, complete = target_isr, target_replicas, True
            if target_removing:
                new_isr = [r for r in target_isr if r not in target_removing]
                new_replicas = [r for r in target_replicas if r not in target_removing]
                complete = bool(new_isr) and bool(new_replicas)
            if complete and all(r in new_isr for r in new_replicas):
                target_isr, target_replicas, target_removing, target_adding = new_isr, new_replicas, [], []
        # maybePopulateTargetElr
        if elr_enabled:
            if len(target_isr) >= self._min_isr(partition.topic):
                target_elr, target_last_known_elr = [], []
            else:
                isr_set = set(target_isr)
                candidates = set(target_elr) | set(partition.isr)
                target_elr = [r for r in sorted(candidates) if r not in isr_set]
                candidates |= set(target_last_known_elr)
                target_last_known_elr = [r for r in sorted(candidates) if r not in isr_set and r not in target_elr]
        # tryElection
        record_leader, record_isr, record_leader_recovery_state = NO_LEADER_CHANGE, None, NO_RECOVERY_STATE_CHANGE
        unclean = False

        def is_valid_new_leader(replica: int) -> bool:
            assert target_isr is not None  # set above when None; mypy does not narrow it inside this closure
            return ((replica in target_isr or (not target_isr and replica in target_elr))
                    and is_acceptable_leader(replica))

        current_leader = partition.leader
        # electLeader: electPreferredLeader, else electAnyLeader
        if election is Election.PREFERRED and is_valid_new_leader(target_replicas[0]):
            new_leader = target_replicas[0]
        elif current_leader != NO_LEADER and is_valid_new_leader(current_leader):
            new_leader = current_leader
        else:
            candidates_in_order = target_replicas[1:] if election is Election.PREFERRED else target_replicas
            new_leader = next((r for r in candidates_in_order if is_valid_new_leader(r)), NO_LEADER)
            if new_leader == NO_LEADER and election is Election.UNCLEAN:
                new_leader = next((r for r in target_replicas if is_acceptable_leader(r)), NO_LEADER)
                unclean = new_leader != NO_LEADER
        if new_leader != current_leader:
            if new_leader != NO_LEADER and new_leader in target_elr:
                target_isr = [new_leader]
                target_elr = [r for r in target_elr if r != new_leader]
            record_leader = new_leader
            if unclean:
                record_isr = [new_leader]
                if partition.leader_recovery_state != RECOVERING and self.mv.leader_recovery:
                    record_leader_recovery_state = RECOVERING
        # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
        if record_leader == NO_LEADER_CHANGE and not all(r in target_replicas for r in partition.replicas):
            record_leader = current_leader
        # maybeUpdateRecordElr (no balanced recovery)
        record_elr = record_last_known_elr = None
        if record_isr is not None or not elr_enabled:
            target_elr, target_last_known_elr = [], []
        if target_elr != partition.eligible_leader_replicas:
            record_elr = target_elr
        if target_last_known_elr != partition.last_known_elr:
            record_last_known_elr = target_last_known_elr
        if record_isr is None and (target_isr or elr_enabled) and target_isr != partition.isr:
            record_isr = list(target_isr)
        # triggerLeaderEpochBumpForIsrShrinkIfNeeded
        if (self.mv.epoch_bump_on_isr_shrink and record_leader == NO_LEADER_CHANGE and record_isr is not None
                and not all(r in record_isr for r in partition.isr)):
            record_leader = current_leader
        # setAssignmentChanges
        record_directories = record_replicas = record_removing = record_adding = None
        if target_replicas:
            if self._partition_change_version >= 1:
                existing = dict(zip(partition.replicas, partition.directories, strict=False))
                directories = [existing.get(r) or self._dir_of(r) for r in target_replicas]
                if directories != partition.directories:
                    record_directories = directories
            if target_replicas != partition.replicas:
                record_replicas = list(target_replicas)
        if target_removing != partition.removing_replicas:
            record_removing = list(target_removing)
        if target_adding != partition.adding_replicas:
            record_adding = list(target_adding)
        if target_leader_recovery_state != partition.leader_recovery_state:
            record_leader_recovery_state = target_leader_recovery_state
        # changeRecordIsNoOp
        if (record_isr is None and record_elr is None and record_last_known_elr is None
                and record_leader == NO_LEADER_CHANGE and record_replicas is None and record_removing is None
                and record_adding is None and record_leader_recovery_state == NO_RECOVERY_STATE_CHANGE
                and record_directories is None):
            return None, False
        data: dict[str, Any] = {
            "partitionId": partition.partition_id, "topicId": partition.topic.topic_id, "isr": record_isr,
            "leader": record_leader, "replicas": record_replicas, "removingReplicas": record_removing,
            "addingReplicas": record_adding, "leaderRecoveryState": record_leader_recovery_state,
        }
        version = self._partition_change_version
        if version >= 1:
            data["directories"] = record_directories
        if version >= 2:
            data["eligibleLeaderReplicas"] = record_elr
            data["lastKnownElr"] = record_last_known_elr
        return MetadataRecord("PartitionChangeRecord", version, data), unclean
