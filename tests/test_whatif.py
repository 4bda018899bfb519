"""replay/audit/whatif.py: the cluster as of an offset after some brokers fail, by Kafka's election rules (and the
``whatif`` command), on the stories of tests/state_machines_support.py (one lake per run) and, for the configs in
force (unclean election, min.insync.replicas and the ELR), of tests/audit_support.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from replay.query.state import as_of
from replay.store.runs import run_replay
from tests.state_machines_support import (
    Story,
    _cli,
    _cluster,
)

pytestmark = pytest.mark.spark


def test_whatif_predicts_what_the_controller_then_did(spark: SparkSession, tmp_path: Path) -> None:
    """Fail broker X in a what-if at offset N, then really crash X in the simulator: the same leaders and ISRs."""
    from replay.query.incidents import what_if_at

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
    from replay.query.incidents import what_if_at

    k = stories["rf2-clean"].key
    other = next(b for b in (1, 2, 3) if b not in (k["first"], k["last"]))
    _, clean = what_if_at(spark, lake, [other], offset=k["after_back"], cluster_id="rf2-clean")
    row = clean.partitions.collect()[0]
    assert (row["leader_after"], row["outcome"]) == (-1, "still-offline")
    _, unclean = what_if_at(spark, lake, [other], offset=k["after_back"], unclean=True, cluster_id="rf2-clean")
    row = unclean.partitions.collect()[0]
    assert (row["leader_after"], row["isr_after"], row["outcome"]) == (k["first"], [k["first"]], "unclean-election")
    assert unclean.summary["unclean_elections"] == 1 and unclean.summary["offline_after"] == 0


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


def test_whatif_takes_unclean_election_from_the_configs_in_force(spark: SparkSession, audit_lake: Lake,
                                                                 audit_stories: dict[str, Any]) -> None:
    """t-0 offline (its last ISR member fenced), the other replica back: once the topic's config allows it, the
    what-if elects it uncleanly without --unclean; --no-unclean overrides the log; before the config, nothing."""
    from replay.query.incidents import what_if_at

    key = audit_stories["unclean-topic"].key

    def outcome(offset: int, unclean: bool | None = None, cluster: str = "unclean-topic") -> tuple[Any, ...]:
        _, answer = what_if_at(spark, audit_lake, [key["other"]], offset=offset, unclean=unclean, cluster_id=cluster)
        row = answer.partitions.collect()[0]
        return row["leader_after"], row["isr_after"], row["outcome"], row["unclean_allowed"]

    assert outcome(key["config"]) == (key["first"], [key["first"]], "unclean-election", True)
    assert outcome(key["config"], unclean=False) == (-1, [key["last"]], "still-offline", False)
    assert outcome(key["after_back"]) == (-1, [key["last"]], "still-offline", False)
    assert outcome(key["after_back"], cluster="unclean-none") == (-1, [key["last"]], "still-offline", False)
    assert outcome(key["config"], cluster="unclean-default") == (
        key["first"], [key["first"]], "unclean-election", True)


@pytest.mark.parametrize(("cluster", "eligible"), [("elr-2", True), ("elr-1", False)])
def test_whatif_keeps_the_elr_by_the_min_insync_replicas_in_force(spark: SparkSession, audit_lake: Lake,
                                                                   audit_stories: dict[str, Any], cluster: str,
                                                                   eligible: bool) -> None:
    """Fail the leader before the simulator does: the same leader, ISR and ELR as Kafka's controller then wrote
    (min.insync.replicas 2 keeps the old leader eligible, 1 clears the ELR)."""
    from replay.query.incidents import what_if_at

    key = audit_stories[cluster].key
    _, answer = what_if_at(spark, audit_lake, [key["leader"]], offset=key["before_leader_fails"], cluster_id=cluster)
    row = answer.partitions.collect()[0]
    assert answer.configs_known
    actual = as_of(audit_lake.read(spark, "partition_history").where(F.col("cluster_id") == cluster),
                   key["fence_leader"]).collect()[0]
    assert (row["leader_after"], row["isr_after"], row["elr_after"]) == (
        actual["leader"], actual["isr"], actual["eligible_leader_replicas"])
    assert (row["leader_after"], row["isr_after"], row["elr_after"]) == (
        key["second"], [key["second"]], [key["leader"]] if eligible else [])
    assert row["min_insync_replicas"] == (2 if eligible else 1)
