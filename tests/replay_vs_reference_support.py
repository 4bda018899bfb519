"""The logs the Spark replay is compared on with the reference fold, and the comparisons themselves.

All logs go through ONE Spark replay, as separate clusters of one input, so the suite pays for Spark's stages
once: ``tests/conftest.py`` computes ``compared`` and ``repeated`` once per run (session fixtures) for
tests/test_replay_vs_reference.py and the module tests that read it (test_partitions.py, test_replicas.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lakehouse.log_rows import entries_frame
from records.model import LogEntry
from records.sources import read_entries
from replay.fold.engine import replay
from replay.reference.fold import reference_histories
from simulator import ScenarioOptions, run_scenario
from tests.replay_tables_support import as_ingested

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
# Both folds see what ingest keeps: secrets redacted, their fingerprints under this key (records.redaction)
FINGERPRINT_KEY = b"kraft-replay-tests-fingerprint-key"


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


def compared(spark: SparkSession) -> dict[str, Any]:
    """Every log of ``_logs`` replayed by Spark as clusters of ONE input, and the reference fold of each."""
    shared = Path(__file__).resolve().parents[1].parent / "shared"
    logs = _logs(shared if shared.is_dir() else None)
    frames = [entries_frame(spark, entries, cluster, FINGERPRINT_KEY) for cluster, entries in logs.items()]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    result = replay(log)
    spark_tables = {name: [row.asDict(recursive=True) for row in df.collect()]
                    for name, df in result.tables.items()}
    spark_tables["replay_anomalies"] = [row.asDict() for row in result.anomalies.collect()]
    expected: dict[str, list[dict[str, Any]]] = {name: [] for name in spark_tables}
    for cluster, entries in logs.items():
        for name, rows in reference_histories(as_ingested(entries, FINGERPRINT_KEY), cluster).items():
            expected.setdefault(name, []).extend(rows)  # the reference may fold tables Spark does not yet
    return {"spark": spark_tables, "expected": expected, "logs": logs}


def repeated(spark: SparkSession) -> dict[str, Any]:
    """The Spark replay and the reference fold of a log that repeats replica ids (tests/bad_inputs_support.py)."""
    from tests import bad_inputs_support as bad

    log = bad.repeated_replicas_log()
    result = replay(entries_frame(spark, log, bad.REPEATED))
    spark_tables = {name: [row.asDict(recursive=True) for row in df.collect()] for name, df in result.tables.items()}
    spark_tables["replay_anomalies"] = [row.asDict() for row in result.anomalies.collect()]
    return {"spark": spark_tables, "expected": reference_histories(log, bad.REPEATED)}
