"""Kafka's ``PartitionRegistration`` (``records/partition_registration.py``): the rule functions called directly, and
the registration built and merged in both forms its holders keep directory ids in (the reference fold's printed
Uuids, the simulator's 16 bytes), and the simulator's own partition taking the rule's values. How the reference fold
words a refusal is tests/test_metadata_delta.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from records.kafka_constants import LENGTHS, MIGRATING_DIR
from records.model import uuid_from_str, uuid_to_str
from records.partition_registration import (
    PRINTED_DIRECTORY_IDS,
    RECORDED_DIRECTORY_IDS,
    REGISTRATION_FIELDS,
    DirectoriesMismatch,
    InvalidLeaderRecoveryState,
    PartitionRegistration,
    default_to_migrating,
    has_elr,
    leader_recovery_state_of,
)
from simulator.model import Partition as SimulatedPartition
from simulator.model import Topic
from tests.reference_fold_support import D1, D2, D3, change, partition

MIGRATING_ID = uuid_from_str(MIGRATING_DIR)


def test_leader_recovery_state_of_accepts_recovered_and_recovering_only() -> None:
    assert leader_recovery_state_of(0) == 0
    assert leader_recovery_state_of(1) == 1
    for value in (2, -1, 5):
        with pytest.raises(InvalidLeaderRecoveryState) as refused:
            leader_recovery_state_of(value)
        assert refused.value.state == value


def test_default_to_migrating() -> None:
    assert default_to_migrating((), (1, 2), MIGRATING_DIR) == (MIGRATING_DIR, MIGRATING_DIR)
    assert default_to_migrating((MIGRATING_DIR,), (1, 2, 3), MIGRATING_DIR) == (MIGRATING_DIR,) * 3
    explicit = (uuid_to_str(D1), uuid_to_str(D2))
    assert default_to_migrating(explicit, (1, 2), MIGRATING_DIR) == explicit
    with pytest.raises(DirectoriesMismatch, match=f"^{LENGTHS}$"):
        default_to_migrating(explicit, (1, 2, 3), MIGRATING_DIR)


def test_the_same_rule_in_both_directory_forms() -> None:
    record = partition(replicas=(4, 5), leader=5, directories=[D1, D2])
    printed = PartitionRegistration.from_record(record, PRINTED_DIRECTORY_IDS)
    recorded = PartitionRegistration.from_record(record, RECORDED_DIRECTORY_IDS)
    assert printed.directories == (uuid_to_str(D1), uuid_to_str(D2)) and recorded.directories == (D1, D2)
    moved = change(replicas=[4, 5, 6], directories=[D2, D1, D3], leader=6)
    printed, recorded = printed.merge(moved, PRINTED_DIRECTORY_IDS), recorded.merge(moved, RECORDED_DIRECTORY_IDS)
    assert recorded.directories == (D2, D1, D3) and printed.directories == tuple(map(uuid_to_str, (D2, D1, D3)))
    assert (recorded.replicas, recorded.leader, recorded.leader_epoch, recorded.partition_epoch) == ((4, 5, 6), 6, 1, 1)
    assert replace(printed, directories=()) == replace(recorded, directories=())


def test_a_record_without_directories_leaves_every_replica_migrating() -> None:
    registration = PartitionRegistration.from_record(partition(replicas=(1, 2)), RECORDED_DIRECTORY_IDS)
    assert registration.directories == (MIGRATING_ID,) * 2
    grown = registration.merge(change(replicas=[1, 2, 3]), RECORDED_DIRECTORY_IDS)
    assert grown.directories == (MIGRATING_ID,) * 3


def test_refusals() -> None:
    with pytest.raises(DirectoriesMismatch):  # checkDirectories
        PartitionRegistration.from_record(partition(replicas=(4, 5), directories=[D3]), RECORDED_DIRECTORY_IDS)
    with pytest.raises(InvalidLeaderRecoveryState):
        PartitionRegistration.from_record(partition(leaderRecoveryState=3), RECORDED_DIRECTORY_IDS)
    registration = PartitionRegistration.from_record(partition(directories=[D1, D2, D3]), RECORDED_DIRECTORY_IDS)
    with pytest.raises(DirectoriesMismatch):  # checkDirectories
        registration.merge(change(replicas=[1, 2, 3], directories=[D1, D2]), RECORDED_DIRECTORY_IDS)
    with pytest.raises(DirectoriesMismatch):  # the constructor: the old directories for fewer replicas
        registration.merge(change(replicas=[1, 2]), RECORDED_DIRECTORY_IDS)
    with pytest.raises(InvalidLeaderRecoveryState):  # LeaderRecoveryState.changeTo comes before the constructor
        registration.merge(change(replicas=[1, 2], leaderRecoveryState=7), RECORDED_DIRECTORY_IDS)


def test_clearing_the_elr_is_a_merge() -> None:
    record = partition(eligibleLeaderReplicas=[2], lastKnownElr=[3], leaderEpoch=4, partitionEpoch=7)
    registration = PartitionRegistration.from_record(record, PRINTED_DIRECTORY_IDS)
    assert has_elr(registration)
    cleared = registration.elr_cleared(PRINTED_DIRECTORY_IDS)
    assert (cleared.eligible_leader_replicas, cleared.last_known_elr, cleared.partition_epoch) == ((), (), 8)
    assert not has_elr(cleared) and (cleared.leader, cleared.leader_epoch, cleared.isr) == (1, 4, (1, 2, 3))


def test_the_simulated_controller_takes_each_value_by_its_name() -> None:
    """The simulator's mutable partition unpacks the rule's values in the order of REGISTRATION_FIELDS: each of its
    fields holds the value the immutable registration holds under the same name (as a list), and a merge keeps the
    lists it does not change."""
    record = partition(replicas=(4, 5, 6), leader=5, isr=[5, 6], removingReplicas=[6], addingReplicas=[4],
                       leaderRecoveryState=1, leaderEpoch=3, partitionEpoch=9, directories=[D1, D2, D3],
                       eligibleLeaderReplicas=[7], lastKnownElr=[8])
    moved = change(isr=[5], leader=6, lastKnownElr=[9])
    immutable = PartitionRegistration.from_record(record, RECORDED_DIRECTORY_IDS)
    mutable = SimulatedPartition(0, Topic("t", b"\x01" * 16), 0)
    mutable.register(record)
    replicas = mutable.replicas
    for registration in (immutable, immutable.merge(moved, RECORDED_DIRECTORY_IDS)):
        for name in REGISTRATION_FIELDS:
            value = getattr(registration, name)
            assert getattr(mutable, name) == (list(value) if isinstance(value, tuple) else value), name
        mutable.merge(moved)
    assert mutable.replicas is replicas
