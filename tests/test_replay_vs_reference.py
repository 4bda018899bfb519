"""The Spark replay equals a straightforward record-by-record fold of Kafka's rules, table by table.

Comparing whole history tables (every version with its interval) is comparing the state at every
offset. All logs go through ONE Spark replay, as separate clusters of one input, so the suite pays
for Spark's stages once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.log_rows import entries_frame
from records.model import LogEntry
from records.sources import read_entries
from replay.engine import TABLE_KEYS, replay
from replay.reference import reference_histories
from simulator import ScenarioOptions, run_scenario
from tests.table_rows import sorted_rows

pytestmark = pytest.mark.spark

SIMULATED = [
    ("rolling-restart", ScenarioOptions(seed=1)),
    ("rack-outage", ScenarioOptions(seed=2)),
    ("lost-last-isr-unclean", ScenarioOptions(seed=3, unclean=True)),
    ("flapping-broker", ScenarioOptions(seed=4, metadata_version="3.3")),
    ("reassignment-under-failure", ScenarioOptions(seed=5, metadata_version="3.9")),
    ("controlled-shutdown", ScenarioOptions(seed=6)),
    ("topic-recreate", ScenarioOptions(seed=7)),
    ("aborted-transaction", ScenarioOptions(seed=8, metadata_version="3.9")),
    ("random", ScenarioOptions(seed=9, events=400, metadata_version="4.0", unclean=True, elr=True)),
    ("random", ScenarioOptions(seed=10, events=300, metadata_version="3.0")),
    ("min-isr-change", ScenarioOptions(seed=11, metadata_version="4.0", elr=True)),
]
REAL = ["ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42"]


def _hand_built() -> dict[str, list[LogEntry]]:
    """Small logs for every refusal, invariant and transaction rule (the reference fold's own cases)."""
    from records.kafka_json import make_record
    from tests.bad_inputs_support import bad_inputs_log
    from tests.reference_fold_support import (
        INC,
        T1,
        T2,
        broker,
        change,
        elr_clears_log,
        entries,
        marker,
        partition,
        topic,
    )

    controller = make_record("RegisterControllerRecord", 0, controllerId=3000, incarnationId=INC)

    return {
        "hand-refusals": entries(
            partition(T2), topic(), change(pid=5, isr=[1]), change(T2, isr=[1]),
            make_record("RemoveTopicRecord", 0, topicId=T2), make_record("FenceBrokerRecord", 0, id=7, epoch=1),
            broker(1, 10), make_record("UnfenceBrokerRecord", 0, id=1, epoch=9),
            make_record("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=3, fenced=-1),
            make_record("BrokerRegistrationChangeRecord", 1, brokerId=2, brokerEpoch=3, fenced=-1),
            make_record("UnregisterBrokerRecord", 0, brokerId=1, brokerEpoch=8),
            make_record("FenceBrokerRecord", 0, id=1, epoch=10)),
        "hand-invariants": entries(
            topic(), partition(replicas=(1, 2), leader=3, isr=[1, 2, 5]), change(leader=1, isr=[1]),
            broker(1, 10), broker(1, 4)),
        "hand-transactions": entries(
            topic(), partition(), marker("BeginTransactionRecord"), change(leader=2), topic(T2, "gone"),
            make_record("AbortTransactionRecord", 0, reason="failover"), change(leader=3),
            marker("BeginTransactionRecord"), change(leader=2), change(isr=[2, 3]),
            marker("BeginTransactionRecord"), marker("EndTransactionRecord"), marker("EndTransactionRecord"),
            marker("BeginTransactionRecord"), change(leader=1)),
        "hand-directories": entries(
            topic(), partition(replicas=(1, 2, 3), directories=[b"\x11" * 16, b"\x22" * 16, b"\x33" * 16]),
            change(replicas=[2, 3, 4]), change(replicas=[4, 2]), change(replicas=[4, 2, 1], directories=[
                b"\x44" * 16, b"\x22" * 16, b"\x11" * 16]), change(replicas=[]), change(replicas=[1])),
        "hand-directories-migrating": entries(  # a log before JBOD: MIGRATING for every replica, whatever the count
            topic(), make_record("PartitionRecord", 0, partitionId=0, topicId=T1, replicas=[1, 2], isr=[1, 2],
                                 leader=1, leaderEpoch=0, partitionEpoch=0),
            make_record("PartitionChangeRecord", 0, partitionId=0, topicId=T1, replicas=[2, 5, 6],
                        addingReplicas=[5, 6]),
            change(replicas=[5], directories=[]), change(replicas=[]), change(replicas=[1, 2],
                                                                             directories=[b"\x11" * 16] * 3),
            change(replicas=[3, 4], directories=[b"\x11" * 16, b"\x22" * 16]), change(replicas=[3]),
            change(replicas=[4, 3], isr=[4])),
        "hand-topics": entries(
            topic(T1, "orders"), partition(T1), partition(T1, 1), make_record("RemoveTopicRecord", 0, topicId=T1),
            change(T1, isr=[1]), topic(T2, "orders"), partition(T2), topic(T2, "orders-renamed"), change(T2, isr=[2]),
            partition(T2, 3)),
        "hand-elr-clears": elr_clears_log(),
        "hand-controllers": entries(
            controller, make_record("UnregisterControllerRecord", 0, controllerId=3000),
            make_record("UnregisterControllerRecord", 0, controllerId=3001), controller),
        "hand-bad-inputs": bad_inputs_log(),
    }


def _logs(shared: Path | None) -> dict[str, list[LogEntry]]:
    logs: dict[str, list[LogEntry]] = _hand_built()
    for index, (name, options) in enumerate(SIMULATED):
        logs[f"sim-{index}-{name}"] = list(run_scenario(name, options).entries())
    if shared is not None:
        for name in REAL:
            logs[f"real-{name}"] = list(read_entries(shared / "data" / "real" / name))
    return logs


@pytest.fixture(scope="module")
def compared(spark: SparkSession) -> dict[str, Any]:
    shared = Path(__file__).resolve().parents[1].parent / "shared"
    logs = _logs(shared if shared.is_dir() else None)
    frames = [entries_frame(spark, entries, cluster) for cluster, entries in logs.items()]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    result = replay(log)
    spark_tables = {name: [row.asDict(recursive=True) for row in df.collect()]
                    for name, df in result.tables.items()}
    spark_tables["replay_anomalies"] = [row.asDict() for row in result.anomalies.collect()]
    expected: dict[str, list[dict[str, Any]]] = {name: [] for name in spark_tables}
    for cluster, entries in logs.items():
        for name, rows in reference_histories(entries, cluster).items():
            expected[name].extend(rows)
    return {"spark": spark_tables, "expected": expected, "logs": logs}


@pytest.mark.parametrize("table", [*TABLE_KEYS, "replay_anomalies"])
def test_spark_replay_equals_the_reference_fold(compared: dict[str, Any], table: str) -> None:
    got, want = compared["spark"][table], compared["expected"][table]
    if table == "replay_anomalies":  # the two say why in their own words; what and where must agree
        got = [{k: v for k, v in r.items() if k != "reason"} for r in got]
        want = [{k: v for k, v in r.items() if k != "reason"} for r in want]
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


def test_bad_inputs_as_kafka_replays_them(compared: dict[str, Any]) -> None:
    """Invalid recovery states and unknown broker registration change codes are refused with Kafka's reasons,
    repeated replica ids are kept: the Spark replay gives the same concrete result as the reference fold."""
    from tests import bad_inputs_support as bad

    assert bad.refusals(compared["spark"]["replay_anomalies"]) == bad.REFUSALS
    assert bad.partition_versions(compared["spark"]["partition_history"]) == bad.PARTITION_VERSIONS
    assert bad.broker_versions(compared["spark"]["broker_history"]) == bad.BROKER_VERSIONS


@pytest.fixture(scope="module")
def repeated(spark: SparkSession) -> dict[str, Any]:
    """The Spark replay and the reference fold of a log that repeats replica ids (tests/bad_inputs_support.py)."""
    from tests import bad_inputs_support as bad

    log = bad.repeated_replicas_log()
    result = replay(entries_frame(spark, log, bad.REPEATED))
    spark_tables = {name: [row.asDict(recursive=True) for row in df.collect()] for name, df in result.tables.items()}
    spark_tables["replay_anomalies"] = [row.asDict() for row in result.anomalies.collect()]
    return {"spark": spark_tables, "expected": reference_histories(log, bad.REPEATED)}


def test_repeated_replica_ids_are_kept_as_kafka_keeps_them(repeated: dict[str, Any]) -> None:
    from tests import bad_inputs_support as bad

    assert bad.partition_versions(repeated["spark"]["partition_history"], bad.REPEATED) == bad.REPEATED_VERSIONS
    for table in ("partition_history", "broker_history", "topic_history", "replay_anomalies"):
        assert sorted_rows(repeated["spark"][table]) == sorted_rows(repeated["expected"][table]), table


def test_a_repeated_replica_id_is_one_replica(repeated: dict[str, Any]) -> None:
    from tests import bad_inputs_support as bad

    assert bad.replica_versions(repeated["spark"]["replica_history"]) == bad.REPEATED_REPLICAS


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


def test_replica_history_does_not_depend_on_the_join_buckets(spark: SparkSession, compared: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The replica-broker range join runs on offset buckets (about 16 over the log, at least 4096 offsets
    each, so these small logs use one). Without the minimum they are split into ~16 buckets that versions
    and broker intervals span, and the result must still be exactly the reference fold's replica_history."""
    from replay import replicas

    monkeypatch.setattr(replicas, "MIN_BUCKET", 1)
    clusters = ["sim-2-lost-last-isr-unclean", "sim-4-reassignment-under-failure", "sim-8-random"]
    frames = [entries_frame(spark, compared["logs"][c], c) for c in clusters]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    got = [row.asDict(recursive=True) for row in replay(log).tables["replica_history"].collect()]
    want = [r for r in compared["expected"]["replica_history"] if r["cluster_id"] in clusters]
    assert len(want) > 500 and len(got) == len(want)
    assert sorted_rows(got) == sorted_rows(want)
