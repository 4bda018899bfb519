"""replay/audit/elections.py: the election audit (every leader change classified and checked against Kafka's rule) and
the leaderless periods with their cause, on the stories of tests/state_machines_support.py (one lake per run)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from tests.state_machines_support import (
    SCENARIOS,
    Story,
    _partition_at,
    _table,
)

pytestmark = pytest.mark.spark


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
