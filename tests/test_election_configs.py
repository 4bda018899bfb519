"""replay/audit/election_configs.py: the election audit judged by the configs in force — an unclean election allowed
by the topic's config, the cluster default or the active controller's node config, or by none (a deviation: an
admin election or a static config), and the ELR checked against the effective min.insync.replicas (2 vs 1) — on
the stories of tests/audit_support.py (one lake per run)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from records.kafka_topic_configs import KAFKA_VERSION
from replay.audit.election_configs import NOT_ALLOWED
from tests.audit_support import AuditStory, table

pytestmark = pytest.mark.spark


def _unclean_row(spark: SparkSession, lake: Lake, cluster: str, story: AuditStory) -> Any:
    rows = table(spark, lake, "elections", cluster).where(F.col("election_type") == "unclean").collect()
    assert [(r["offset"], r["leader"], r["previous_isr"]) for r in rows] == [
        (story.key["unclean"], story.key["first"], [story.key["last"]])]
    return rows[0]


@pytest.mark.parametrize(("cluster", "source", "words"), [
    ("unclean-topic", "DYNAMIC_TOPIC_CONFIG", "the topic's config"),
    ("unclean-default", "DYNAMIC_DEFAULT_BROKER_CONFIG", 'the cluster default (BROKER "")'),
    ("unclean-node", "DYNAMIC_BROKER_CONFIG", "the active controller's node config"),
])
def test_an_unclean_election_the_configs_allowed(spark: SparkSession, audit_lake: Lake,
                                                 audit_stories: dict[str, AuditStory], cluster: str, source: str,
                                                 words: str) -> None:
    row = _unclean_row(spark, audit_lake, cluster, audit_stories[cluster])
    assert (row["unclean_leader_election_enable"], row["unclean_leader_election_enable_source"]) == (True, source)
    assert row["unclean_verdict"] == f"allowed by unclean.leader.election.enable=true in {words}"
    assert row["deviation"] is None
    assert (row["min_insync_replicas"], row["min_insync_replicas_source"]) == (1, "DEFAULT_CONFIG")


@pytest.mark.parametrize("cluster", ["unclean-none", "unclean-other-node"])
def test_an_unclean_election_no_config_allowed_is_a_deviation(spark: SparkSession, audit_lake: Lake,
                                                              audit_stories: dict[str, AuditStory],
                                                              cluster: str) -> None:
    """No config allowed it (another broker's node config is not the controller's): the log cannot tell an admin's
    ElectLeaders UNCLEAN from a static server.properties setting, and says so."""
    row = _unclean_row(spark, audit_lake, cluster, audit_stories[cluster])
    assert (row["unclean_leader_election_enable"], row["unclean_leader_election_enable_source"]) == (
        False, "DEFAULT_CONFIG")
    assert row["unclean_verdict"] == NOT_ALLOWED
    assert row["deviation"] == (f"unclean election although unclean.leader.election.enable was false (Kafka "
                                f"{KAFKA_VERSION}'s default): an admin election (ElectLeaders UNCLEAN) or a static "
                                "config")


def test_the_other_elections_are_judged_but_carry_no_verdict(spark: SparkSession, audit_lake: Lake,
                                                            audit_stories: dict[str, AuditStory]) -> None:
    """The leader lost before the config was set: the configs then (Kafka's default), no verdict (not unclean)."""
    key = audit_stories["unclean-topic"].key
    lost = table(spark, audit_lake, "elections", "unclean-topic").where(F.col("leader") == -1).collect()
    assert [(r["offset"], r["election_type"]) for r in lost] == [(key["fence_last"] - 1, "leader-lost")]
    assert (lost[0]["unclean_leader_election_enable"], lost[0]["unclean_leader_election_enable_source"],
            lost[0]["unclean_verdict"], lost[0]["deviation"]) == (False, "DEFAULT_CONFIG", None, None)


def _leader_failover(spark: SparkSession, lake: Lake, cluster: str, story: AuditStory) -> Any:
    """The election that followed the leader's fence (same batch, just before it)."""
    rows = table(spark, lake, "elections", cluster).where(F.col("offset") == story.key["fence_leader"] - 1).collect()
    assert len(rows) == 1
    return rows[0]


def test_elr_with_min_insync_replicas_2(spark: SparkSession, audit_lake: Lake,
                                        audit_stories: dict[str, AuditStory]) -> None:
    """ISR [leader, second] shrinks to [second] (1 < 2): the leader stays eligible (ELR), as Kafka keeps it."""
    story = audit_stories["elr-2"]
    row = _leader_failover(spark, audit_lake, "elr-2", story)
    assert (row["previous_leader"], row["leader"], row["isr"], row["election_type"]) == (
        story.key["leader"], story.key["second"], [story.key["second"]], "clean")
    partition = (table(spark, audit_lake, "partition_history", "elr-2")
                 .where(F.col("valid_from_offset") == row["offset"]).collect())
    assert partition[0]["eligible_leader_replicas"] == [story.key["leader"]]
    assert (row["min_insync_replicas"], row["min_insync_replicas_source"]) == (2, "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert row["deviation"] is None


def test_elr_with_min_insync_replicas_1(spark: SparkSession, audit_lake: Lake,
                                        audit_stories: dict[str, AuditStory]) -> None:
    """The same failures under Kafka's default 1: an ISR of one member clears the ELR."""
    story = audit_stories["elr-1"]
    row = _leader_failover(spark, audit_lake, "elr-1", story)
    assert (row["leader"], row["isr"]) == (story.key["second"], [story.key["second"]])
    partition = (table(spark, audit_lake, "partition_history", "elr-1")
                 .where(F.col("valid_from_offset") == row["offset"]).collect())
    assert partition[0]["eligible_leader_replicas"] == []
    assert (row["min_insync_replicas"], row["min_insync_replicas_source"], row["deviation"]) == (
        1, "DEFAULT_CONFIG", None)


def test_an_elr_the_min_insync_replicas_in_force_would_clear_is_a_deviation(
        spark: SparkSession, audit_lake: Lake, audit_stories: dict[str, AuditStory]) -> None:
    """The min.insync.replicas 2 log judged as if nothing had set it (its config_history without the key)."""
    story = audit_stories["elr-2-blind"]
    row = _leader_failover(spark, audit_lake, "elr-2-blind", story)
    assert (row["min_insync_replicas"], row["min_insync_replicas_source"]) == (1, "DEFAULT_CONFIG")
    assert row["deviation"] == (f"ELR [{story.key['leader']}] kept although the ISR [{story.key['second']}] has at "
                                f"least min.insync.replicas (1, Kafka {KAFKA_VERSION}'s default) members: Kafka "
                                "clears the ELR")
