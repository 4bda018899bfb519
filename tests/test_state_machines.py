"""replay/audit/state_machines.py: Kafka's replica and partition state machines, on stories built with the simulator.

The stories are one lake replayed once per run (tests/state_machines_support.py, session fixtures of
tests/conftest.py); the election audit, what-if and the incremental refresh of the derived tables on the same
stories are tested in test_elections.py, test_whatif.py and test_derived.py.
"""

from __future__ import annotations

import itertools

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from replay.audit.state_machines import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    _valid,
    is_valid_transition,
)
from tests.state_machines_support import (
    Story,
    _partition_at,
    _states_at,
    _table,
    _transitions,
)

pytestmark = pytest.mark.spark


# The table, written out independently of the implementation: state ← valid previous states.
REPLICA_TABLE = {
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    "ReplicaDeletionIneligible": {"OfflineReplica", "ReplicaDeletionStarted"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
    "NewReplica": {"NonExistentReplica"},
}


PARTITION_TABLE = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}


@pytest.mark.parametrize(("table", "expected"), [(REPLICA_VALID_PREVIOUS, REPLICA_TABLE),
                                                 (PARTITION_VALID_PREVIOUS, PARTITION_TABLE)])
def test_every_transition_is_judged_as_kafka_does(spark: SparkSession, table: dict[str, tuple[str, ...]],
                                                  expected: dict[str, set[str]]) -> None:
    """All 49 replica and 16 partition (previous, state) pairs, in Python and as the Spark column."""
    pairs = list(itertools.product(expected, expected))
    want = {(p, s): p in expected[s] for p, s in pairs}
    assert {(p, s): is_valid_transition(p, s, table) for p, s in pairs} == want
    judged = spark.createDataFrame(pairs, "previous_state string, state string").withColumn("ok", _valid(table))
    assert {(r["previous_state"], r["state"]): r["ok"] for r in judged.collect()} == want
    assert sum(want.values()) == (14 if table is REPLICA_VALID_PREVIOUS else 8)


def test_rf1_partitions_go_offline_with_their_broker_and_come_back(spark: SparkSession, lake: Lake,
                                                                   stories: dict[str, Story]) -> None:
    k = stories["rf1"].key
    b0, b1 = k["b0"], k["b1"]
    # p1's broker fenced: p1 Offline (leader -1), its replica Offline; p0 untouched
    after1 = k["fence1"]
    assert _partition_at(spark, lake, "rf1", after1, "rf1", 1)["leader"] == -1
    assert _states_at(spark, lake, "rf1", after1, "partition_state_history") == {
        ("rf1", 0): "OnlinePartition", ("rf1", 1): "OfflinePartition"}
    assert _states_at(spark, lake, "rf1", after1) == {("rf1", 0, b0): "OnlineReplica", ("rf1", 1, b1): "OfflineReplica"}
    # then p0's broker: both Offline
    after0 = k["fence0"]
    assert _states_at(spark, lake, "rf1", after0, "partition_state_history") == {
        ("rf1", 0): "OfflinePartition", ("rf1", 1): "OfflinePartition"}
    assert _states_at(spark, lake, "rf1", after0) == {("rf1", 0, b0): "OfflineReplica",
                                                      ("rf1", 1, b1): "OfflineReplica"}
    # both back: Online, led by their broker again with the leader epoch bumped twice (lost, re-elected)
    end = k["back0"] + 1
    assert _states_at(spark, lake, "rf1", end, "partition_state_history") == {
        ("rf1", 0): "OnlinePartition", ("rf1", 1): "OnlinePartition"}
    assert _states_at(spark, lake, "rf1", end) == {("rf1", 0, b0): "OnlineReplica", ("rf1", 1, b1): "OnlineReplica"}
    for pid, broker in ((0, b0), (1, b1)):
        row = _partition_at(spark, lake, "rf1", end, "rf1", pid)
        assert (row["leader"], row["leader_epoch"], row["isr"]) == (broker, 2, [broker])
    # the replica of p1: created, Online, Offline at the fence, Online at the unfence
    assert [t[1:] for t in _transitions(spark, lake, "rf1", partition_id=1)] == [
        ("NonExistentReplica", "NewReplica", True), ("NewReplica", "OnlineReplica", True),
        ("OnlineReplica", "OfflineReplica", True), ("OfflineReplica", "OnlineReplica", True)]
    offline_at = [t[0] for t in _transitions(spark, lake, "rf1", partition_id=1)][2]
    assert offline_at == k["fence1"]


def test_rf2_offline_keeps_the_last_isr_member_without_unclean_election(spark: SparkSession, lake: Lake,
                                                                        stories: dict[str, Story]) -> None:
    k = stories["rf2-clean"].key
    after = _partition_at(spark, lake, "rf2-clean", k["fence_first"], "rf2", 0)
    assert (after["leader"], after["isr"]) == (k["last"], [k["last"]])
    offline = _partition_at(spark, lake, "rf2-clean", k["fence_last"], "rf2", 0)
    assert (offline["leader"], offline["isr"], offline["leader_epoch"]) == (-1, [k["last"]], 1)
    # the non-ISR replica came back: still offline, the ISR still the last member
    back = _partition_at(spark, lake, "rf2-clean", k["after_back"], "rf2", 0)
    assert (back["leader"], back["isr"]) == (-1, [k["last"]])
    assert _states_at(spark, lake, "rf2-clean", k["after_back"], "partition_state_history") == {
        ("rf2", 0): "OfflinePartition"}
    assert _states_at(spark, lake, "rf2-clean", k["after_back"]) == {
        ("rf2", 0, k["first"]): "OnlineReplica", ("rf2", 0, k["last"]): "OfflineReplica"}
    period = _table(spark, lake, "leaderless_periods", "rf2-clean").collect()
    assert len(period) == 1 and period[0]["valid_to_offset"] is None and period[0]["ended_by"] is None
    assert (period[0]["cause"], period[0]["cause_broker"]) == ("fenced", k["last"])


def test_deletion_waits_for_the_fenced_broker(spark: SparkSession, lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["deleted"].key
    up, down, delete, back = k["up"], k["down"], k["delete"], k["back"]
    assert [t[1:] for t in _transitions(spark, lake, "deleted", broker_id=up)] == [
        ("NonExistentReplica", "NewReplica", True), ("NewReplica", "OnlineReplica", True),
        ("OnlineReplica", "OfflineReplica", True), ("OfflineReplica", "ReplicaDeletionStarted", True),
        ("ReplicaDeletionStarted", "ReplicaDeletionSuccessful", True),
        ("ReplicaDeletionSuccessful", "NonExistentReplica", True)]
    assert [t[0] for t in _transitions(spark, lake, "deleted", broker_id=up)][2:] == [delete] * 4
    down_steps = _transitions(spark, lake, "deleted", broker_id=down)
    assert [(o, p, s) for o, p, s, _ in down_steps][2:] == [
        (k["fence"], "OnlineReplica", "OfflineReplica"),
        (delete, "OfflineReplica", "ReplicaDeletionStarted"),
        (delete, "ReplicaDeletionStarted", "ReplicaDeletionIneligible"),
        (back, "ReplicaDeletionIneligible", "OfflineReplica"),
        (back, "OfflineReplica", "ReplicaDeletionStarted"),
        (back, "ReplicaDeletionStarted", "ReplicaDeletionSuccessful"),
        (back, "ReplicaDeletionSuccessful", "NonExistentReplica")]
    assert all(ok for *_, ok in down_steps)
    # in between, the fenced broker's replica is visible as ReplicaDeletionIneligible; afterwards nothing
    assert _states_at(spark, lake, "deleted", delete) == {("doomed", 0, down): "ReplicaDeletionIneligible"}
    assert _states_at(spark, lake, "deleted", back) == {}
    assert [t[1:] for t in _transitions(spark, lake, "deleted", "partition_state_history")][-2:] == [
        ("OnlinePartition", "OfflinePartition", True), ("OfflinePartition", "NonExistentPartition", True)]


def test_reassignment_adds_new_replicas_and_deletes_removed_ones(spark: SparkSession, lake: Lake,
                                                                stories: dict[str, Story]) -> None:
    k = stories["moving"].key
    a, c = k["a"], k["c"]
    assert [(o, p, s) for o, p, s, _ in _transitions(spark, lake, "moving", broker_id=c)][:2] == [
        (k["start"], "NonExistentReplica", "NewReplica"), (k["complete"], "NewReplica", "OnlineReplica")]
    reasons = _table(spark, lake, "replica_state_history", "moving").where(
        (F.col("broker_id") == c) & (F.col("valid_from_offset") == k["complete"])).collect()
    assert [r["reason"] for r in reasons] == ["caught up: joined the ISR"]
    assert [(o, s) for o, _, s, _ in _transitions(spark, lake, "moving", broker_id=a)][2:] == [
        (k["complete"], "OfflineReplica"), (k["complete"], "ReplicaDeletionStarted"),
        (k["complete"], "ReplicaDeletionSuccessful"), (k["complete"], "NonExistentReplica")]
    moved = _table(spark, lake, "elections", "moving").where(F.col("offset") == k["complete"]).collect()
    if moved:  # the leader was a (the first replica): it moved away with the reassignment
        assert moved[0]["election_type"] == "reassignment" and moved[0]["deviation"] is None


def test_readding_a_replica_whose_deletion_waits_is_an_invalid_transition(spark: SparkSession, lake: Lake,
                                                                         stories: dict[str, Story]) -> None:
    k = stories["moving"].key
    b_steps = [(o, p, s, ok) for o, p, s, ok in _transitions(spark, lake, "moving", broker_id=k["b"])
               if o >= k["remove_b"]]
    assert b_steps == [
        (k["remove_b"], "OfflineReplica", "ReplicaDeletionStarted", True),
        (k["remove_b"], "ReplicaDeletionStarted", "ReplicaDeletionIneligible", True),
        (k["readd_b"], "ReplicaDeletionIneligible", "NewReplica", False),
        (k["readd_b"], "NewReplica", "OfflineReplica", True)]
    invalid = _table(spark, lake, "replica_state_history", "moving").where(~F.col("valid_transition")).collect()
    assert len(invalid) == 1 and invalid[0]["cause_type"] == "PartitionChangeRecord"
