"""Replica and partition state machines, the election audit and what-if, on stories built with the simulator.

Every story is its own cluster of one lake, replayed once (``run_replay``: the derived tables are written
beside the history tables), so the suite pays for Spark's stages once.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from records.model import LogEntry
from replay.layout import mutable_where
from replay.query import as_of
from replay.state_machines import (
    PARTITION_VALID_PREVIOUS,
    REPLICA_VALID_PREVIOUS,
    _valid,
    is_valid_transition,
)
from replay.store import run_replay
from simulator import ControllerSimulator, ScenarioOptions, run_scenario
from simulator.controller import SimConfig
from simulator.facts import ScenarioFacts
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark

UNCLEAN = "unclean.leader.election.enable"

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


@dataclass
class Story:
    entries: list[LogEntry]
    key: dict[str, Any] = field(default_factory=dict)
    facts: ScenarioFacts | None = None


def _cluster(brokers: int, seed: int = 1) -> ControllerSimulator:
    sim = ControllerSimulator(SimConfig(seed=seed, metadata_version="3.9"))
    for b in range(1, brokers + 1):
        sim.register_broker(b)
    for b in range(1, brokers + 1):
        sim.unfence(b)
    return sim


def _come_back(sim: ControllerSimulator, broker: int) -> int:
    sim.register_broker(broker)
    return sim.unfence(broker)


def story_rf1() -> Story:
    """5 brokers, a 2-partition topic of replication factor 1: lose p1's broker, then p0's, then both return."""
    sim = _cluster(5)
    sim.create_topic("rf1", 2, 1)
    b0, b1 = sim.partition("rf1", 0).replicas[0], sim.partition("rf1", 1).replicas[0]
    key = {"b0": b0, "b1": b1, "fence1": sim.crash(b1)}
    key["fence0"] = sim.crash(b0)
    key["back1"] = _come_back(sim, b1)
    key["back0"] = _come_back(sim, b0)
    return Story(sim.entries(), key)


def story_rf2(unclean_later: bool) -> Story:
    """3 brokers, 1 partition of replication factor 2: both replica brokers fail one after the other; the
    non-ISR one returns (the partition stays offline, its last ISR member kept); then, optionally, unclean
    election is enabled and elects it."""
    sim = _cluster(3, seed=2)
    sim.create_topic("rf2", 1, 2)
    p = sim.partition("rf2", 0)
    first, last = p.replicas[1], p.replicas[0]  # the follower fails first, the leader last
    key = {"first": first, "last": last, "fence_first": sim.crash(first)}
    key["fence_last"] = sim.crash(last)
    key["back_first"] = _come_back(sim, first)
    key["after_back"] = sim.next_offset - 1
    if unclean_later:
        sim.set_topic_config("rf2", UNCLEAN, "true")
        key["unclean"] = sim.elect_leaders("rf2", 0, unclean=True)
    return Story(sim.entries(), key)


def story_delete_while_fenced() -> Story:
    """A topic of replication factor 2 is deleted while one replica's broker is fenced; the broker returns."""
    sim = _cluster(3, seed=3)
    sim.create_topic("doomed", 1, 2)
    up, down = sim.partition("doomed", 0).replicas
    key = {"up": up, "down": down, "fence": sim.crash(down)}
    key["delete"] = sim.delete_topic("doomed")
    sim.register_broker(down)
    key["back"] = sim.unfence(down)
    return Story(sim.entries(), key)


def story_reassignment() -> Story:
    """Move a partition from [a, b] to [b, c]: c is new until it catches up, a is deleted when it completes.
    Then b's replica is removed while b is fenced and re-added before b returns (an invalid transition)."""
    sim = _cluster(4, seed=4)
    sim.create_topic("moving", 1, 2)
    a, b = sim.partition("moving", 0).replicas
    c = next(x for x in (1, 2, 3, 4) if x not in (a, b))
    d = next(x for x in (1, 2, 3, 4) if x not in (a, b, c))
    key = {"a": a, "b": b, "c": c, "d": d, "start": sim.reassign("moving", 0, [b, c])}
    key["complete"] = sim.expand_isr("moving", 0, [c])
    key["fence_b"] = sim.crash(b)
    sim.reassign("moving", 0, [c, d])
    key["remove_b"] = sim.expand_isr("moving", 0, [d])  # d caught up: the reassignment completes, b leaves
    key["readd_b"] = sim.reassign("moving", 0, [c, d, b])
    return Story(sim.entries(), key)


def story_catch_up_interrupted() -> Story:
    """c is added to [a, b] and catches up, its broker crashes and comes back before c is in the ISR (it left
    NewReplica: back Online, still catching up), then the ISR changes twice more before c joins it."""
    sim = _cluster(4, seed=8)
    sim.create_topic("slow", 1, 2)
    a, b = sim.partition("slow", 0).replicas
    c = next(x for x in (1, 2, 3, 4) if x not in (a, b))
    key = {"a": a, "b": b, "c": c, "start": sim.reassign("slow", 0, [a, b, c])}
    key["fence_c"] = sim.crash(c)
    key["back_c"] = _come_back(sim, c)
    key["shrink"] = sim.shrink_isr("slow", 0, [b])
    key["joined"] = sim.expand_isr("slow", 0, [c])
    return Story(sim.entries(), key)


def scenario(name: str, options: ScenarioOptions) -> Story:
    run = run_scenario(name, options)
    return Story(list(run.entries()), facts=run.facts)


SCENARIOS = {
    "sc-unclean": ("lost-last-isr-unclean", ScenarioOptions(seed=3, unclean=True)),
    "sc-rolling": ("rolling-restart", ScenarioOptions(seed=1)),
    "sc-shutdown": ("controlled-shutdown", ScenarioOptions(seed=6)),
    "sc-rack": ("rack-outage", ScenarioOptions(seed=2)),
    "sc-flapping": ("flapping-broker", ScenarioOptions(seed=4, metadata_version="3.3")),
    "sc-reassign": ("reassignment-under-failure", ScenarioOptions(seed=5)),
    "sc-recreate": ("topic-recreate", ScenarioOptions(seed=7)),
    "sc-random": ("random", ScenarioOptions(seed=9, events=300, metadata_version="4.0", unclean=True, elr=True)),
}


@pytest.fixture(scope="module")
def stories() -> dict[str, Story]:
    built = {"rf1": story_rf1(), "rf2-clean": story_rf2(False), "rf2-unclean": story_rf2(True),
             "deleted": story_delete_while_fenced(), "moving": story_reassignment(),
             "moving-early": story_reassignment(),  # the same story, cut elsewhere by the increments
             "catch-up": story_catch_up_interrupted()}
    built.update({c: scenario(name, options) for c, (name, options) in SCENARIOS.items()})
    return built


@pytest.fixture(scope="module")
def lake(spark: SparkSession, stories: dict[str, Story], tmp_path_factory: pytest.TempPathFactory) -> Lake:
    lake = Lake(tmp_path_factory.mktemp("state-machine-lake"))
    frames = [entries_frame(spark, story.entries, cluster) for cluster, story in stories.items()]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    lake.write(log, "metadata_log", "append")
    run_replay(spark, lake)
    return lake


def _table(spark: SparkSession, lake: Lake, name: str, cluster: str) -> DataFrame:
    return lake.read(spark, name).where(F.col("cluster_id") == cluster)


def _states_at(spark: SparkSession, lake: Lake, cluster: str, offset: int, table: str = "replica_state_history"
               ) -> dict[tuple[Any, ...], str]:
    df = as_of(_table(spark, lake, table, cluster), offset)
    if table == "replica_state_history":
        return {(r["topic_name"], r["partition_id"], r["broker_id"]): r["state"] for r in df.collect()}
    return {(r["topic_name"], r["partition_id"]): r["state"] for r in df.collect()}


def _partition_at(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str, pid: int) -> Any:
    rows = as_of(_table(spark, lake, "partition_history", cluster), offset).where(
        (F.col("topic_name") == topic) & (F.col("partition_id") == pid)).collect()
    assert len(rows) == 1
    return rows[0]


def _transitions(spark: SparkSession, lake: Lake, cluster: str, table: str = "replica_state_history",
                 **where: Any) -> list[tuple[Any, ...]]:
    df = _table(spark, lake, table, cluster)
    for column, value in where.items():
        df = df.where(F.col(column) == value)
    return [(r["valid_from_offset"], r["previous_state"], r["state"], r["valid_transition"])
            for r in df.orderBy("valid_from_offset", "step").collect()]


# --- the transition tables -----------------------------------------------------------------------


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


# --- story 1: replication factor 1 ---------------------------------------------------------------


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


def test_rf1_offline_periods_are_attributed_to_the_fences(spark: SparkSession, lake: Lake,
                                                           stories: dict[str, Story]) -> None:
    k = stories["rf1"].key
    periods = {r["partition_id"]: r for r in _table(spark, lake, "leaderless_periods", "rf1").collect()}
    for pid, fence, back, broker in ((1, "fence1", "back1", "b1"), (0, "fence0", "back0", "b0")):
        p = periods[pid]
        # the partition change comes just before the fence record, in the fence's batch
        assert p["valid_from_offset"] == k[fence] - 1
        assert (p["cause"], p["cause_broker"], p["cause_offset"]) == ("fenced", k[broker], k[fence])
        assert p["cause_type"] == "BrokerRegistrationChangeRecord"
        assert p["valid_to_offset"] == k[back] + 1 and p["ended_by"] == "clean election"
        assert p["new_leader"] == k[broker] and p["duration_ms"] > 0


# --- story 2: replication factor 2, both brokers lost -------------------------------------------------


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


def test_rf2_unclean_election_of_the_returning_replica_is_flagged(spark: SparkSession, lake: Lake,
                                                                  stories: dict[str, Story]) -> None:
    k = stories["rf2-unclean"].key
    row = _partition_at(spark, lake, "rf2-unclean", k["unclean"], "rf2", 0)
    assert (row["leader"], row["isr"], row["leader_epoch"], row["leader_recovery_state"]) == (
        k["first"], [k["first"]], 2, 1)
    audit = _table(spark, lake, "elections", "rf2-unclean").orderBy("offset").collect()
    assert [(r["offset"], r["election_type"], r["previous_leader"], r["leader"]) for r in audit][-2:] == [
        (k["fence_last"] - 1, "leader-lost", k["last"], -1), (k["unclean"], "unclean", -1, k["first"])]
    unclean = audit[-1]
    assert unclean["previous_isr"] == [k["last"]] and unclean["deviation"] is None
    assert unclean["expected_leader"] == k["first"]
    period = _table(spark, lake, "leaderless_periods", "rf2-unclean").collect()
    assert [(p["valid_from_offset"], p["valid_to_offset"], p["ended_by"], p["new_leader"]) for p in period] == [
        (k["fence_last"] - 1, k["unclean"], "unclean election", k["first"])]


# --- story 3: topic deletion while a replica's broker is fenced ------------------------------------


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


# --- reassignment, and an invalid transition -------------------------------------------------------


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


# --- the audit finds exactly what the simulator injected -------------------------------------------


@pytest.mark.parametrize("cluster", list(SCENARIOS))
def test_audit_matches_the_simulated_incidents(spark: SparkSession, lake: Lake, stories: dict[str, Story],
                                               cluster: str) -> None:
    facts = stories[cluster].facts
    assert facts is not None
    audit = _table(spark, lake, "elections", cluster)
    periods = _table(spark, lake, "leaderless_periods", cluster).collect()
    assert sorted(p["valid_from_offset"] for p in periods) == sorted(f.offset for f in facts.leaderless)
    unclean = audit.where(F.col("election_type") == "unclean").collect()
    assert sorted(r["offset"] for r in unclean) == sorted(f.offset for f in facts.unclean_elections)
    assert sorted((r["offset"], r["leader"]) for r in unclean) == sorted(
        (f.offset, f.leader) for f in facts.unclean_elections)
    assert audit.where(F.col("deviation").isNotNull()).count() == 0, "the simulator follows Kafka's rule"
    # every leader lost to a broker is attributed to a fence, controlled shutdown or unregistration it made
    made = ({("fenced", f.broker_id, f.offset) for f in facts.fenced}
            | {("controlled-shutdown", f.broker_id, f.offset) for f in facts.controlled_shutdowns}
            | {("unregistered", f.broker_id, f.offset) for f in facts.unregistered})
    lost = audit.where(F.col("lost_leader_cause").isNotNull()).collect()
    assert {(r["lost_leader_cause"], r["previous_leader"], r["lost_leader_cause_offset"]) for r in lost} <= made
    for period in periods:
        if period["previous_leader"] is not None:
            assert period["cause"] is not None, period
    for table in ("replica_state_history", "partition_state_history"):
        bad = _table(spark, lake, table, cluster).where(~F.col("valid_transition")).count()
        assert bad == 0, f"{table}: Kafka's controller would not make these transitions"


def test_controlled_shutdown_elections_are_classified(spark: SparkSession, lake: Lake,
                                                      stories: dict[str, Story]) -> None:
    facts = stories["sc-shutdown"].facts
    assert facts is not None and facts.controlled_shutdowns
    audit = _table(spark, lake, "elections", "sc-shutdown")
    moved = audit.where(F.col("election_type") == "controlled-shutdown").collect()
    assert moved, "leaders moved away from the broker shutting down"
    shutdowns = {(f.broker_id, f.offset) for f in facts.controlled_shutdowns}
    assert {(r["previous_leader"], r["lost_leader_cause_offset"]) for r in moved} <= shutdowns
    assert all(r["lost_leader_cause"] == "controlled-shutdown" for r in moved)
    preferred = audit.where(F.col("election_type") == "preferred").collect()
    assert preferred and all(r["leader"] == r["replicas"][0] for r in preferred)


# --- what-if -------------------------------------------------------------------------------------


def test_whatif_predicts_what_the_controller_then_did(spark: SparkSession, tmp_path: Path) -> None:
    """Fail broker X in a what-if at offset N, then really crash X in the simulator: the same leaders and ISRs."""
    from replay.incidents import what_if_at

    sim = _cluster(5, seed=11)
    for t in range(3):
        sim.create_topic(f"w{t}", 6, 3)
    sim.crash(2)
    at = sim.next_offset - 1
    before = sim.entries()
    victim = 4
    sim.crash(victim)
    after = sim.entries()
    lake = Lake(tmp_path / "whatif-lake")
    lake.write(entries_frame(spark, before + after, "w"), "metadata_log", "append")
    run_replay(spark, lake)
    offset, answer = what_if_at(spark, lake, [victim], offset=at)
    assert offset == at
    predicted = {(r["topic_name"], r["partition_id"]): (r["leader_after"], r["isr_after"])
                 for r in answer.partitions.collect()}
    actual = {(r["topic_name"], r["partition_id"]): (r["leader"], r["isr"])
              for r in as_of(lake.read(spark, "partition_history"), after[-1].offset).collect()}
    assert predicted == actual
    s = answer.summary
    assert s["partitions"] == 18 and s["offline_after"] == sum(1 for v in actual.values() if v[0] == -1)
    assert s["leaders_lost"] == sum(1 for r in answer.partitions.collect() if r["leader"] == victim)


def test_whatif_unclean_elects_outside_the_isr(spark: SparkSession, lake: Lake, stories: dict[str, Story]) -> None:
    """rf2-clean, after the non-ISR replica came back: failing nobody else, only --unclean gets a leader."""
    from replay.incidents import what_if_at

    k = stories["rf2-clean"].key
    other = next(b for b in (1, 2, 3) if b not in (k["first"], k["last"]))
    _, clean = what_if_at(spark, lake, [other], offset=k["after_back"], cluster_id="rf2-clean")
    row = clean.partitions.collect()[0]
    assert (row["leader_after"], row["outcome"]) == (-1, "still-offline")
    _, unclean = what_if_at(spark, lake, [other], offset=k["after_back"], unclean=True, cluster_id="rf2-clean")
    row = unclean.partitions.collect()[0]
    assert (row["leader_after"], row["isr_after"], row["outcome"]) == (k["first"], [k["first"]], "unclean-election")
    assert unclean.summary["unclean_elections"] == 1 and unclean.summary["offline_after"] == 0


# --- CLI -----------------------------------------------------------------------------------------


def _cli(lake: Lake, *args: str) -> Any:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    return CliRunner().invoke(app, [*args, "--lake", str(lake.root)], env={"COLUMNS": "250"})


def test_cli_incidents_json_and_table(lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["rf2-unclean"].key
    result = _cli(lake, "incidents", "--cluster-id", "rf2-unclean", "--format", "json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert [p["validFromOffset"] for p in found["offlinePeriods"]] == [k["fence_last"] - 1]
    assert found["offlinePeriods"][0]["cause"] == "fenced"
    assert [(e["offset"], e["leader"]) for e in found["uncleanElections"]] == [(k["unclean"], k["first"])]
    assert found["invalidTransitions"] == [] and found["electionDeviations"] == []
    table = _cli(lake, "incidents", "--cluster-id", "moving")
    assert table.exit_code == 0, table.output
    assert "invalid state transitions (1)" in table.stdout
    assert "ReplicaDeletionIneligible" in table.stdout and "NewReplica" in table.stdout
    ranged = _cli(lake, "incidents", "--cluster-id", "rf2-unclean", "--from", str(k["unclean"] + 1),
                  "--format", "json")
    assert json.loads(ranged.stdout)["uncleanElections"] == []


def test_cli_whatif(lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["rf1"].key
    result = _cli(lake, "whatif", "--cluster-id", "rf1", "--offset", str(k["fence1"] - 2),
                  "--fail-brokers", str(k["b0"]), "--format", "json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["summary"]["offlineAfter"] == 1 and answer["summary"]["leadersLost"] == 1
    assert [(p["partitionId"], p["leaderAfter"], p["outcome"]) for p in answer["partitions"]] == [(0, -1, "offline")]
    text = _cli(lake, "whatif", "--cluster-id", "rf1", "--offset", "5", "--fail-brokers", "x")
    assert text.exit_code == 2 and "broker ids separated by commas" in text.output
    unknown = _cli(lake, "whatif", "--cluster-id", "rf1", "--offset", str(k["fence1"]), "--fail-brokers", "99")
    assert unknown.exit_code == 2 and "not registered" in unknown.output


def test_cli_state_and_history_show_the_controller_states(lake: Lake, stories: dict[str, Story]) -> None:
    k = stories["deleted"].key
    table = _cli(lake, "state", "--cluster-id", "deleted", "--offset", str(k["delete"]), "--states")
    assert table.exit_code == 0, table.output
    assert "controller states (1)" in table.stdout and "ReplicaDeletionIneligible" in table.stdout
    as_json = _cli(lake, "state", "--cluster-id", "deleted", "--offset", str(k["fence"]), "--states",
                   "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert [(p["partitionId"], p["state"]) for p in doc["partitionStates"]] == [(0, "OnlinePartition")]
    assert sorted((r["brokerId"], r["state"]) for r in doc["replicaStates"]) == sorted(
        [(k["up"], "OnlineReplica"), (k["down"], "OfflineReplica")])
    history = _cli(lake, "history", "--cluster-id", "deleted", "--topic", "doomed", "--partition", "0", "--states")
    assert history.exit_code == 0, history.output
    lines = history.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("state-machine transitions"))
    # partition: 4 (created, online, offline, gone); replica up: 6; fenced replica: 9 (waits, then deleted)
    assert lines[start].startswith("state-machine transitions (19)")
    assert sum("ReplicaDeletionIneligible" in line for line in lines[start:]) == 2


# --- incremental replays refresh the derived tables -------------------------------------------------

DERIVED = ("replica_state_history", "partition_state_history", "elections", "leaderless_periods")


def _cuts(stories: dict[str, Story]) -> dict[str, tuple[int, int]]:
    """Per cluster, the two last offsets of the first and second increment: cut between a leader's loss and
    the fence that explains it, between a deletion and the broker's return, inside a reassignment."""
    k = {name: story.key for name, story in stories.items()}
    cuts = {
        "rf1": (k["rf1"]["fence1"] - 1, k["rf1"]["fence0"] - 1),
        "rf2-clean": (k["rf2-clean"]["fence_first"] - 1, k["rf2-clean"]["fence_last"] - 1),
        "rf2-unclean": (k["rf2-unclean"]["fence_last"] - 1, k["rf2-unclean"]["back_first"]),
        "deleted": (k["deleted"]["delete"], k["deleted"]["back"] - 1),  # back - 1: registered, still fenced
        "moving": (k["moving"]["remove_b"], k["moving"]["readd_b"] - 1),
        # while c catches up (NewReplica across the checkpoint), and while b's replica is offline
        "moving-early": (k["moving-early"]["start"], k["moving-early"]["fence_b"]),
        # c is back Online but still catching up at the checkpoint: it must not turn NewReplica again after it
        "catch-up": (k["catch-up"]["start"], k["catch-up"]["back_c"]),
    }
    for name, story in stories.items():
        if name not in cuts:
            last = story.entries[-1].offset
            cuts[name] = (last // 3, last * 2 // 3)
    return cuts


def _rows(spark: SparkSession, lake: Lake, name: str) -> list[Any]:
    return sorted_rows([r.asDict(recursive=True) for r in lake.read(spark, name).collect()])


def _closed_files(spark: SparkSession, lake: Lake, name: str) -> set[str]:
    """The files holding only settled rows: on delta-rs those under ``open=false/``; on delta-spark (no split
    directories) the files with no row ``mutable_where`` selects."""
    paths = lake.file_paths(name)
    if any("/open=" in f"/{path}" for path in paths):
        return {path for path in paths if "/open=false/" in f"/{path}"}
    rows = lake.read(spark, name)
    holding = {Path(row["file"]).name for row in rows.where(mutable_where(name, rows.columns))
               .select(F.col("_metadata.file_path").alias("file")).distinct().collect()}
    return {path for path in paths if Path(path).name not in holding}


@pytest.fixture(scope="module")
def increments(spark: SparkSession, stories: dict[str, Story], tmp_path_factory: pytest.TempPathFactory
               ) -> dict[str, Any]:
    lake = Lake(tmp_path_factory.mktemp("incremental-state-machines"))
    cuts = _cuts(stories)
    seen: dict[str, Any] = {"summaries": [], "elections": [], "replicas": [], "closed": [], "catching_up": []}
    for step in range(3):
        frames = []
        for cluster, story in stories.items():
            low = -1 if step == 0 else cuts[cluster][step - 1]
            high = cuts[cluster][step] if step < 2 else story.entries[-1].offset
            frames.append(entries_frame(spark, [e for e in story.entries if low < e.offset <= high], cluster))
        lake.write(functools.reduce(DataFrame.unionByName, frames), "metadata_log", "append")
        seen["summaries"].append(run_replay(spark, lake))
        seen["elections"].append(_table(spark, lake, "elections", "rf1").collect())
        seen["replicas"].append(_table(spark, lake, "replica_state_history", "deleted").collect())
        seen["catching_up"].append(_table(spark, lake, "replica_state_history", "catch-up").where(
            F.col("broker_id") == stories["catch-up"].key["c"]).orderBy("valid_from_offset", "step").collect())
        seen["closed"].append({name: _closed_files(spark, lake, name) for name in DERIVED})
    seen["lake"] = lake
    return seen


def test_incremental_replays_refresh_the_derived_tables_as_a_full_replay_builds_them(
        spark: SparkSession, lake: Lake, increments: dict[str, Any]) -> None:
    assert [s.mode for s in increments["summaries"]] == ["full", "incremental", "incremental"]
    assert not any("rebuilt whole" in note for s in increments["summaries"] for note in s.notes)
    for name in (*DERIVED, "partition_history", "replica_history", "broker_history"):
        assert _rows(spark, increments["lake"], name) == _rows(spark, lake, name), name


def test_an_increment_explains_a_leader_loss_recorded_before_its_fence(stories: dict[str, Story],
                                                                      increments: dict[str, Any]) -> None:
    """rf1's leader is lost at fence1 - 1, the last offset of the first replay: its cause (the fence) is only
    in the second increment, which fills it in."""
    k = stories["rf1"].key
    loss = [[(e["previous_leader"], e["leader"], e["lost_leader_cause"], e["lost_leader_cause_offset"])
             for e in elections if e["offset"] == k["fence1"] - 1] for elections in increments["elections"]]
    assert loss[0] == [(k["b1"], -1, None, None)]
    assert loss[1] == loss[2] == [(k["b1"], -1, "fenced", k["fence1"])]


def test_an_increment_completes_a_deletion_that_waited_for_its_broker(stories: dict[str, Story],
                                                                      increments: dict[str, Any]) -> None:
    k = stories["deleted"].key

    def waiting(rows: list[Any]) -> list[tuple[Any, Any]]:
        return [(r["valid_from_offset"], r["valid_to_offset"]) for r in rows
                if r["broker_id"] == k["down"] and r["state"] == "ReplicaDeletionIneligible"]

    assert [waiting(rows) for rows in increments["replicas"]] == [
        [(k["delete"], None)], [(k["delete"], None)], [(k["delete"], k["back"])]]
    assert max(r["valid_from_offset"] for r in increments["replicas"][2]) == k["back"]


def test_an_increment_continues_a_replica_catching_up_across_the_checkpoint(
        stories: dict[str, Story], increments: dict[str, Any]) -> None:
    """The increments cut when c is added (NewReplica, open) and when its broker is back (OnlineReplica, open,
    still catching up): each open row keeps its start, previous state, cause and reason and only gets its end;
    the versions after the cut do not make c NewReplica again (it left that state when its broker was fenced)."""
    k = stories["catch-up"].key

    def rows(step: int) -> list[tuple[Any, ...]]:
        return [(r["state"], r["previous_state"], r["valid_from_offset"], r["valid_to_offset"], r["cause_offset"],
                 r["reason"]) for r in increments["catching_up"][step] if r["valid_from_offset"] >= k["start"]]

    c = k["c"]
    new = ("NewReplica", "NonExistentReplica", k["start"])
    offline = ("OfflineReplica", "NewReplica", k["fence_c"])
    back = ("OnlineReplica", "OfflineReplica", k["back_c"])
    assert rows(0) == [(*new, None, k["start"], "added by a reassignment")]
    assert rows(1) == [(*new, k["fence_c"], k["start"], "added by a reassignment"),
                       (*offline, k["back_c"], k["fence_c"], f"broker {c} fenced"),
                       (*back, None, k["back_c"], f"broker {c} unfenced")]
    assert rows(2) == [*rows(1)[:2], (*back, None, k["back_c"], f"broker {c} unfenced")]
    assert k["back_c"] < k["shrink"] < k["joined"]


def test_increments_keep_every_file_of_settled_derived_rows(increments: dict[str, Any]) -> None:
    """Rows that no later record can change live in files an increment never rewrites."""
    for before, after in itertools.pairwise(increments["closed"]):
        for name in DERIVED:
            assert before[name] <= after[name], f"{name}: a file of settled rows was rewritten"
    assert all(increments["closed"][-1][name] for name in DERIVED)
    assert all(increments["closed"][0][name] for name in DERIVED if name != "leaderless_periods")
