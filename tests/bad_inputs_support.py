"""Inputs no real controller writes, folded as Kafka replays them (issue 18 item 5): the logs and what they fold
to, shared by tests/test_metadata_delta.py and the Spark and Kafka comparisons.

Kafka 4.4.0 and 3.9.2 (read with ``javap``):
- ``LeaderRecoveryState.of`` throws ``IllegalArgumentException`` for a value other than 0 and 1; a PartitionRecord
  calls it as it is (so ``-1`` is invalid there), ``PartitionRegistration.merge`` through ``changeTo`` (``-1`` is
  ``NO_CHANGE`` there).
- Nothing on the replay path checks for repeated replica ids: ``Replicas.validate`` is the controller's check
  when it makes an assignment, not the image's, so a registration keeps ``replicas``/``isr`` as the record
  gives them.
- ``ClusterDelta.replay(BrokerRegistrationChangeRecord)``: after ``getBrokerOrThrow``,
  ``BrokerRegistrationFencingChange.fromValue`` and then ``BrokerRegistrationInControlledShutdownChange.fromValue``
  throw ``IllegalStateException`` for a code they do not know.
- ``MetadataBatchLoader`` hands a replay's exception to its fault handler and goes on with the next record: the
  record is refused, the image keeps what it had, the log is not stopped.

The same logs feed the Spark replay (``tests/test_replay_vs_reference.py``) and Kafka's own fold
(``tests/test_kafka_referee.py``).
"""

from __future__ import annotations

from typing import Any

from records.kafka_json import make_record
from records.model import LogEntry
from tests.reference_fold_support import broker, change, entries, partition, topic

CLUSTER = "hand-bad-inputs"
REPEATED = "hand-repeated-replicas"
# (offset, record type, kind, reason): what both folds report for bad_inputs_log()
REFUSALS = [
    (1, "PartitionRecord", "refused", "Value 5 is not a valid leader recovery state"),
    (2, "PartitionRecord", "refused", "Value -1 is not a valid leader recovery state"),
    (4, "PartitionChangeRecord", "refused", "Value 2 is not a valid leader recovery state"),
    (7, "BrokerRegistrationChangeRecord", "refused", "unknown value for fenced: 2"),
    (8, "BrokerRegistrationChangeRecord", "refused", "unknown value for inControlledShutdown: 2"),
    (9, "BrokerRegistrationChangeRecord", "refused", "unknown value for fenced: 3"),
    (10, "BrokerRegistrationChangeRecord", "refused", "unknown value for inControlledShutdown: -1"),
]
# (valid_from_offset, replicas, isr, leader, leader_recovery_state, partition_epoch) of partition T1-0
PARTITION_VERSIONS = [(3, [1, 2, 3], [1, 2, 3], 1, 0, 0), (5, [1, 2, 3], [1, 2, 3], 1, 1, 1)]
REPEATED_VERSIONS = [(1, [1, 1, 2], [1, 1], 1, 0, 0), (2, [2, 2, 3], [2, 2], 2, 0, 1),
                     (3, [2, 2, 3], [2, 3, 3], 2, 0, 2)]
# (valid_from_offset, fenced, in_controlled_shutdown) of broker 1
BROKER_VERSIONS = [(6, True, False), (11, False, True)]
# (valid_from_offset, valid_to_offset, broker_id, in_isr) of repeated_replicas_log(): a repeated replica is one
# replica, its directory the first position's (PartitionRegistration.directory)
REPEATED_REPLICAS = [(1, 2, 1, True), (1, 2, 2, False), (2, None, 2, True), (2, 3, 3, False), (3, None, 3, True)]


def _registration_change(**fields: Any) -> Any:
    return make_record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=10, **fields)


def bad_inputs_log() -> list[LogEntry]:
    """Invalid leader recovery states and unknown broker registration change codes."""
    return entries(
        topic(),
        partition(leaderRecoveryState=5),  # 1: refused
        partition(leaderRecoveryState=-1),  # 2: refused (NO_CHANGE is no state of a new registration)
        partition(),
        change(leaderRecoveryState=2),  # 4: refused
        change(leaderRecoveryState=1),  # 5: applied
        broker(1, 10),
        _registration_change(fenced=2),  # 7: refused
        _registration_change(inControlledShutdown=2),  # 8: refused
        _registration_change(fenced=3, inControlledShutdown=2),  # 9: refused for its fencing code, Kafka's first check
        _registration_change(inControlledShutdown=-1),  # 10: refused
        _registration_change(fenced=-1, inControlledShutdown=1))  # 11: applied


def repeated_replicas_log() -> list[LogEntry]:
    """Replica ids repeated in ``replicas`` and ``isr``: every record is applied as it is."""
    return entries(topic(), partition(replicas=(1, 1, 2), isr=[1, 1]),
                   change(replicas=[2, 2, 3], isr=[2, 2], leader=2), change(isr=[2, 3, 3]))


def partition_versions(rows: list[dict[str, Any]], cluster: str = CLUSTER) -> list[tuple[Any, ...]]:
    return sorted((r["valid_from_offset"], r["replicas"], r["isr"], r["leader"], r["leader_recovery_state"],
                   r["partition_epoch"]) for r in rows if r["cluster_id"] == cluster)


def broker_versions(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["valid_from_offset"], r["fenced"], r["in_controlled_shutdown"]) for r in rows
                  if r["cluster_id"] == CLUSTER)


def refusals(rows: list[dict[str, Any]], cluster: str = CLUSTER) -> list[tuple[Any, ...]]:
    return sorted((r["offset"], r["record_type"], r["kind"], r["reason"]) for r in rows
                  if r["cluster_id"] == cluster and r["kind"] == "refused")


def replica_versions(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(((r["valid_from_offset"], r["valid_to_offset"], r["broker_id"], r["in_isr"]) for r in rows
                   if r["cluster_id"] == REPEATED), key=lambda row: (row[0], row[2]))
