"""The Spark replay equals a straightforward record-by-record fold of Kafka's rules, table by table.

Comparing whole history tables (every version with its interval) is comparing the state at every
offset. All logs go through ONE Spark replay, as separate clusters of one input, so the suite pays
for Spark's stages once: the logs and the comparison are in tests/replay_vs_reference_support.py, computed once
per run by the session fixtures ``compared`` and ``repeated`` of tests/conftest.py. What one replay module's rule
decides, on the same comparison, is tested in that module's test module (test_partitions.py, test_replicas.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replay.fold.engine import TABLE_KEYS
from replay.reference.fold import TABLES as REFERENCE_TABLES
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("table", [t for t in (*TABLE_KEYS, "replay_anomalies") if t in REFERENCE_TABLES])
def test_spark_replay_equals_the_reference_fold(compared: dict[str, Any], table: str) -> None:
    got, want = compared["spark"][table], compared["expected"][table]
    assert len(got) == len(want), f"{table}: {len(got)} rows from Spark, {len(want)} from the fold"
    assert sorted_rows(got) == sorted_rows(want)


def test_anomalies_say_what_kafka_refused(compared: dict[str, Any]) -> None:
    refusals = sorted((r["offset"], r["kind"], r["reason"]) for r in compared["spark"]["replay_anomalies"]
                      if r["cluster_id"] == "hand-refusals")
    assert refusals == [
        (0, "refused", "PartitionRecord of unknown topic id ZWZnaGlqa2xtbm9wcXJzdA (partition 0)"),
        (2, "refused", "PartitionChangeRecord of unknown partition AQIDBAUGBwgJCgsMDQ4PEA-5"),
        (3, "refused", "PartitionChangeRecord of unknown partition ZWZnaGlqa2xtbm9wcXJzdA-0"),
        (4, "refused", "RemoveTopicRecord of unknown topic id ZWZnaGlqa2xtbm9wcXJzdA"),
        (5, "refused", "unknown broker 7"),
        (7, "refused", "stale broker epoch 9 for broker 1 (current epoch 10)"),
        (8, "refused", "stale broker epoch 3 for broker 1 (current epoch 10)"),
        (9, "refused", "unknown broker 2"),
        (10, "invariant", "stale broker epoch 8 for broker 1 (current epoch 10)"),
        (11, "refused", "unknown broker 1"),
    ]


def test_bad_inputs_as_kafka_replays_them(compared: dict[str, Any]) -> None:
    """Invalid recovery states and unknown broker registration change codes are refused with Kafka's reasons,
    repeated replica ids are kept: the Spark replay gives the same concrete result as the reference fold."""
    from tests import bad_inputs_support as bad

    assert bad.refusals(compared["spark"]["replay_anomalies"]) == bad.REFUSALS
    assert bad.partition_versions(compared["spark"]["partition_history"]) == bad.PARTITION_VERSIONS
    assert bad.broker_versions(compared["spark"]["broker_history"]) == bad.BROKER_VERSIONS


def test_the_comparison_covers_real_work(compared: dict[str, Any]) -> None:
    partitions = compared["expected"]["partition_history"]
    clusters = {r["cluster_id"] for r in partitions}
    assert clusters >= {c for c in compared["logs"] if not c.startswith("hand-")}  # all produced partitions
    assert len(partitions) > 2000
    assert any(r["leader"] == -1 for r in partitions)
    assert any(r["leader_recovery_state"] == 1 for r in partitions)  # an unclean election recovering
    assert any(r["adding_replicas"] for r in partitions)  # a reassignment in flight


def test_real_log_values(compared: dict[str, Any], real_log: Callable[[str], Path]) -> None:
    real_log("ldi-poc")
    rows = [r for r in compared["spark"]["partition_history"] if r["cluster_id"] == "real-ldi-poc"]
    at = [r for r in rows if r["valid_from_offset"] <= 4925 and (r["valid_to_offset"] or 1 << 62) > 4925]
    assert len(at) == 54
    assert {(r["leader"], r["leader_epoch"], r["partition_epoch"], tuple(r["isr"])) for r in at} == {(-1, 1, 1, (1,))}
    brokers = [r for r in compared["spark"]["broker_history"] if r["cluster_id"] == "real-ldi-poc"]
    last = max(brokers, key=lambda r: r["valid_from_offset"])
    assert (last["valid_from_offset"], last["fenced"], last["in_controlled_shutdown"]) == (4926, True, True)
