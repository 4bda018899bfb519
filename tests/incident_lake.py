"""The demo's simulated incident as a replayed lake, built once per test run and shared read-only.

A 5-broker cluster (3 topics x 4 partitions, replication factor 2) whose topic-0-0 loses its last in-sync
replica: the ISR shrinks to [5] at offset 37, broker 5 dies (topic-0-0 leader -1 at 64, the other partitions
it led move at 65..68, broker 5 fenced at 69 in the same batch), unclean election of broker 4 at 131,
broker 5 re-registers at 163, is unfenced at 164, catches up (165..169) and leads again at 170..172.
Tests that write to a lake build their own; these tables are only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kraft_replay.demo import CLUSTER_ID, SCENARIO
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from replay.store.runs import run_replay
from simulator import ScenarioOptions, run_scenario, write_log

OPTIONS = ScenarioOptions(seed=7, brokers=5, topics=3, partitions_per_topic=4, replication_factor=2, unclean=True)


@dataclass(frozen=True)
class IncidentLake:
    root: Path
    log: Path
    lake: Lake
    cluster_id: str = CLUSTER_ID


_BUILT: dict[str, IncidentLake] = {}


def write_incident_log(target: Path) -> Path:
    """The demo's segment files (174 records) under ``target``."""
    run = run_scenario(SCENARIO, OPTIONS)
    write_log(run.entries(), target, "segments", cluster_id=CLUSTER_ID, node_id=3000)
    return target


def incident_lake(spark: SparkSession, factory: pytest.TempPathFactory) -> IncidentLake:
    """Simulate, ingest and replay once per process; later calls return the same lake."""
    if "lake" not in _BUILT:
        root = factory.mktemp("incident")
        log = write_incident_log(root / "cluster")
        lake = Lake(root / "lake")
        ingest(spark, lake, log, IngestOptions())
        run_replay(spark, lake)
        _BUILT["lake"] = IncidentLake(root, log, lake)
    return _BUILT["lake"]
