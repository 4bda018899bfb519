"""replay/fold/partitions.py: partitions and topics as Kafka's TopicsDelta replays them (ELR clears, repeated replica
ids), on the one Spark replay compared with the reference fold (session fixtures ``compared`` and ``repeated``
of tests/conftest.py; the whole-table comparison is tests/test_replay_vs_reference.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark


def test_elr_clears_as_kafka_replays_them(compared: dict[str, Any]) -> None:
    """ClearElrRecord: by name, for every topic, inside a transaction, of an unknown name (refused); in the
    simulated min.insync.replicas story, every partition whose ELR it emptied got a version of its own."""
    rows = [r for r in compared["spark"]["partition_history"] if r["cluster_id"] == "hand-elr-clears"]
    cleared = sorted((r["valid_from_offset"], r["topic_name"], r["partition_id"], r["partition_epoch"])
                     for r in rows if r["cause_type"] == "ClearElrRecord")
    assert cleared == [(6, "t", 0, 1), (9, "t", 1, 2), (9, "u", 0, 2), (14, "t", 0, 3), (15, "u", 0, 4)]
    assert all(r["eligible_leader_replicas"] == r["last_known_elr"] == [] for r in rows
               if r["cause_type"] == "ClearElrRecord")
    refused = [(r["offset"], r["reason"]) for r in compared["spark"]["replay_anomalies"]
               if r["cluster_id"] == "hand-elr-clears"]
    assert refused == [(8, "ClearElrRecord of unknown topic nope")]
    simulated = [r for r in compared["spark"]["partition_history"] if r["cluster_id"].endswith("min-isr-change")]
    assert len([r for r in simulated if r["cause_type"] == "ClearElrRecord"]) == 5
    assert not [r for r in simulated if r["valid_to_offset"] is None and r["eligible_leader_replicas"]]


def test_repeated_replica_ids_are_kept_as_kafka_keeps_them(repeated: dict[str, Any]) -> None:
    from tests import bad_inputs_support as bad

    assert bad.partition_versions(repeated["spark"]["partition_history"], bad.REPEATED) == bad.REPEATED_VERSIONS
    for table in ("partition_history", "broker_history", "topic_history", "replay_anomalies"):
        assert sorted_rows(repeated["spark"][table]) == sorted_rows(repeated["expected"][table]), table
