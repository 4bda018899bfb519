"""Kafka's ``PartitionChangeBuilder``: the PartitionChangeRecord a partition change needs, with Kafka's election,
ELR and reassignment rules, and ``ReplicationControlManager.generateLeaderAndIsrUpdates`` over many partitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from records.kafka_constants import NO_LEADER, NO_LEADER_CHANGE
from records.model import MetadataRecord
from simulator.model import UNASSIGNED_DIR_ID, Election, Partition


class PartitionChangeBuilder:
    """Mixin of :class:`~simulator.controller.ControllerSimulator`: deciding partition changes."""

    def _dir_of(self, broker_id: int) -> bytes:
        broker = self.brokers.get(broker_id)
        return broker.log_dir if broker is not None else UNASSIGNED_DIR_ID

    def build_change(self, p: Partition, acceptable: Callable[[int], bool], *,
                     isr: list[int] | None = None, replicas: list[int] | None = None,
                     removing: list[int] | None = None, adding: list[int] | None = None,
                     election: Election = Election.ONLINE,
                     lrs: int | None = None) -> tuple[MetadataRecord | None, bool]:
        """Kafka's ``PartitionChangeBuilder.build()``: the change record (None for a no-op) and
        whether its election was unclean. Balanced recovery (last-known-leader election) is off."""
        t_isr = p.isr if isr is None else isr
        t_rep = p.replicas if replicas is None else replicas
        t_rem = p.removing_replicas if removing is None else removing
        t_add = p.adding_replicas if adding is None else adding
        t_lrs = p.leader_recovery_state if lrs is None else lrs
        t_elr, t_lke = p.elr, p.last_known_elr
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
                if p.leader_recovery_state != 1 and self.mv.leader_recovery:
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
        if t_lke != p.last_known_elr:
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
            if self._partition_change_version >= 1:
                existing = dict(zip(p.replicas, p.directories, strict=False))
                dirs = [existing.get(r) or self._dir_of(r) for r in t_rep]
                if dirs != p.directories:
                    rec_dirs = dirs
            if t_rep != p.replicas:
                rec_rep = list(t_rep)
        if t_rem != p.removing_replicas:
            rec_rem = list(t_rem)
        if t_add != p.adding_replicas:
            rec_add = list(t_add)
        if t_lrs != p.leader_recovery_state:
            rec_lrs = t_lrs
        if (rec_isr is None and rec_elr is None and rec_lke is None and rec_leader == NO_LEADER_CHANGE
                and rec_rep is None and rec_rem is None and rec_add is None and rec_lrs == -1
                and rec_dirs is None):
            return None, False
        data: dict[str, Any] = {
            "partitionId": p.partition_id, "topicId": p.topic.topic_id, "isr": rec_isr, "leader": rec_leader,
            "replicas": rec_rep, "removingReplicas": rec_rem, "addingReplicas": rec_add,
            "leaderRecoveryState": rec_lrs,
        }
        version = self._partition_change_version
        if version >= 1:
            data["directories"] = rec_dirs
        if version >= 2:
            data["eligibleLeaderReplicas"] = rec_elr
            data["lastKnownElr"] = rec_lke
        return MetadataRecord("PartitionChangeRecord", version, data), unclean

    def is_active(self, broker_id: int) -> bool:
        return broker_id in self.active

    def _generate_leader_and_isr_updates(self, remove: int, add: int, keys: Iterable[int],
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
