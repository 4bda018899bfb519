"""Kafka's leader election rule, written once for the election audit (``replay.audit.elections``) and the what-if
(``replay.audit.whatif``).

``PartitionChangeBuilder.electAnyLeader`` (``Election.ONLINE``, and ``Election.UNCLEAN`` when the topic allows it)
keeps the leader while it is a valid new leader; else it elects the first valid new leader in replica order
(``targetReplicas``); else, in an unclean election only, the first acceptable replica, and ``tryElection`` then
sets the ISR to just that leader. A valid new leader (``isValidNewLeader``) is in the target ISR, or in the target
ELR when the ISR is empty, and acceptable. ``ReplicationControlManager`` builds ``isAcceptableLeader`` as
``r -> r != brokerToRemove && clusterControl.isActive(r)``: the broker timeline's ``ACTIVE``, not removed.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from records.kafka_constants import NO_LEADER
from replay.core.broker_timeline import UNREGISTERED, is_active

# The audit's kinds of leader change (``elections.election_type``): Kafka's ``Election`` says how a leader may be
# chosen, these say why the leader the log shows changed.
CLEAN = "clean"
UNCLEAN = "unclean"
PREFERRED = "preferred"
CONTROLLED_SHUTDOWN_MOVE = "controlled-shutdown"  # moved off a broker in controlled shutdown
REASSIGNMENT = "reassignment"
LEADER_LOST = "leader-lost"  # no leader elected
ELECTION_TYPES = (CLEAN, UNCLEAN, PREFERRED, CONTROLLED_SHUTDOWN_MOVE, REASSIGNMENT, LEADER_LOST)


def is_acceptable_leader(state: Column, removed: Column) -> Column:
    """``isAcceptableLeader``: the candidate's broker is active (``state`` null: not registered) and the candidate
    is not the broker being removed (``removed``)."""
    return is_active(F.coalesce(state, F.lit(UNREGISTERED))) & ~removed


def is_valid_new_leader(candidate: Column, target_isr: Column, target_elr: Column, acceptable: Column) -> Column:
    """``isValidNewLeader``: in the target ISR, or in the target ELR when the ISR is empty, and acceptable."""
    in_target = F.when(F.size(target_isr) > 0, F.array_contains(target_isr, candidate)).otherwise(
        F.coalesce(F.array_contains(target_elr, candidate), F.lit(False)))
    return in_target & acceptable


# A candidate's position and broker id as one long (broker ids are non-negative ints): its minimum is a fixed-width
# aggregate, which Spark computes by hashing, where the minimum of a struct sorts every candidate row first.
_POSITION = 1 << 32


def first_candidate(condition: Column) -> Column:
    """In an aggregation over ``pos``/``candidate`` rows (a posexplode of the replicas): the first candidate
    in replica order meeting ``condition`` (``targetReplicas.stream().filter(...).findFirst()``)."""
    packed = F.col("pos").cast("long") * _POSITION + F.col("candidate")
    return (F.min(F.when(condition, packed)) % _POSITION).cast("int")


def elect_any_leader(leader: Column, leader_valid: Column, online_choice: Column, unclean_choice: Column,
                     unclean_allowed: bool | Column) -> tuple[Column, Column]:
    """``electAnyLeader``: (the leader after the election, NO_LEADER when none; whether it was unclean).
    ``online_choice``/``unclean_choice``: the first valid new leader / acceptable replica, null when none;
    ``unclean_allowed``: ``Election.UNCLEAN`` for every partition, or a column saying it per partition."""
    allowed = unclean_allowed if isinstance(unclean_allowed, Column) else F.lit(unclean_allowed)
    elected_unclean = (~leader_valid & online_choice.isNull() & F.coalesce(allowed, F.lit(False))
                       & unclean_choice.isNotNull())
    elected = (F.when(leader_valid, leader).when(online_choice.isNotNull(), online_choice)
               .when(elected_unclean, unclean_choice).otherwise(F.lit(NO_LEADER)))
    return elected, elected_unclean


def was_unclean(leader: Column, previous_isr: Column, previous_elr: Column, isr: Column) -> Column:
    """An unclean ``ElectionResult`` as the records show it: the new leader was in neither the previous ISR nor
    ELR, and the ISR restarts without the previous members (a reassignment completing in the same record may
    elect a replica that joins the ISR with them: clean)."""
    return (~F.coalesce(F.array_contains(previous_isr, leader), F.lit(False))
            & ~F.coalesce(F.array_contains(previous_elr, leader), F.lit(False))
            & (F.size(F.array_intersect(isr, F.coalesce(previous_isr, F.array().cast("array<int>")))) == 0))
