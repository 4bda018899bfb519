"""The Spark replay equals a straightforward record-by-record fold of Kafka's rules, table by table.

Comparing whole history tables (every version with its interval) is comparing the state at every
offset. All logs go through ONE Spark replay, as separate clusters of one input, so the suite pays
for Spark's stages once.
"""

from __future__ import annotations

import math
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
]
REAL = ["ldi-poc", "nurlan-3broker-pre33", "gani-guru-kafka42"]


def _logs(shared: Path | None) -> dict[str, list[LogEntry]]:
    logs: dict[str, list[LogEntry]] = {}
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


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _rows(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted((_canonical(r) for r in rows), key=repr)


@pytest.mark.parametrize("table", [*TABLE_KEYS, "replay_anomalies"])
def test_spark_replay_equals_the_reference_fold(compared: dict[str, Any], table: str) -> None:
    got, want = compared["spark"][table], compared["expected"][table]
    assert len(got) == len(want), f"{table}: {len(got)} rows from Spark, {len(want)} from the fold"
    assert _rows(got) == _rows(want)


def test_the_comparison_covers_real_work(compared: dict[str, Any]) -> None:
    partitions = compared["expected"]["partition_history"]
    clusters = {r["cluster_id"] for r in partitions}
    assert len(clusters) == len(compared["logs"])  # every log produced partition versions
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
