"""The main job on the embedded default: an incident, end to end, on this machine.

Simulate a cluster that loses the last in-sync replica of a partition (Kafka's controller records,
written as real segment files), ingest the log into a local Delta lake, replay it with local Spark,
and answer what an operator asks: which partitions went offline when and because of which broker,
which elections were unclean, and what one partition looked like before and during the incident.
Everything stays under one folder; re-running is safe (the simulation is seeded, the ingest exactly
once, the replay deterministic).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from replay.query import iso_ms, state_at
from replay.store import run_replay
from simulator import ScenarioOptions, run_scenario, write_log

SCENARIO = "lost-last-isr-unclean"
CLUSTER_ID = "kRaFtRePlAyDeMoClUsTeR"


@dataclass(frozen=True)
class DemoPaths:
    root: Path

    @property
    def log(self) -> Path:
        return self.root / "cluster"

    @property
    def lake(self) -> Path:
        return self.root / "lake"


def offline_periods(partitions: DataFrame) -> DataFrame:
    """Every interval in which a partition had no leader (leader -1)."""
    return (partitions.where(F.col("leader") == -1)
            .select("topic_name", "partition_id", "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
                    "valid_to_time_ms", "cause_offset", "cause_type")
            .orderBy("valid_from_offset", "topic_name", "partition_id"))


def unclean_elections(partitions: DataFrame) -> DataFrame:
    """Leader changes to a broker that was not in the previous ISR: possible data loss."""
    w = Window.partitionBy("cluster_id", "topic_id", "partition_id").orderBy("valid_from_offset")
    return (partitions.withColumn("previous_isr", F.lag("isr").over(w))
            .withColumn("previous_leader", F.lag("leader").over(w))
            .where((F.col("leader") >= 0) & (F.col("leader") != F.col("previous_leader"))
                   & ~F.array_contains("previous_isr", F.col("leader")))
            .select("topic_name", "partition_id", "leader", "previous_isr", "leader_epoch", "leader_recovery_state",
                    "valid_from_offset", "valid_from_time_ms", "cause_offset")
            .orderBy("valid_from_offset"))


def fences(brokers: DataFrame) -> DataFrame:
    w = Window.partitionBy("cluster_id", "broker_id").orderBy("valid_from_offset")
    return (brokers.withColumn("was_fenced", F.lag("fenced").over(w))
            .where(F.col("fenced") & ~F.coalesce(F.col("was_fenced"), F.lit(True)))
            .select("broker_id", "broker_epoch", "valid_from_offset", "valid_from_time_ms", "cause_type")
            .orderBy("valid_from_offset"))


def run_demo(spark: SparkSession, root: Path, echo: Callable[[str], None]) -> DemoPaths:
    paths = DemoPaths(root.resolve())
    echo(f"1/4 simulating the '{SCENARIO}' incident (seeded, Kafka 3.9 controller records)")
    run = run_scenario(SCENARIO, ScenarioOptions(seed=7, brokers=5, topics=3, partitions_per_topic=4,
                                                 replication_factor=2, unclean=True))
    if paths.log.exists():
        shutil.rmtree(paths.log)  # the seeded log is rewritten identically
    count, files = write_log(run.entries(), paths.log, "segments", cluster_id=CLUSTER_ID, node_id=3000)
    echo(f"    {count} records in {len(files) - 1} segment file(s) under {paths.log}")

    echo(f"2/4 ingesting into the Delta lake at {paths.lake}")
    lake = Lake(paths.lake)
    summary = ingest(spark, lake, paths.log, IngestOptions())
    echo(f"    {summary.records_added} records added, {summary.records_skipped} already present")

    echo("3/4 replaying with Spark")
    replayed = run_replay(spark, lake)
    for line in replayed.lines():
        echo(f"    {line}")

    echo("4/4 what happened")
    partitions = lake.read(spark, "partition_history")
    brokers = lake.read(spark, "broker_history")
    echo("  brokers fenced:")
    for row in fences(brokers).collect():
        echo(f"    broker {row['broker_id']} (epoch {row['broker_epoch']}) fenced at offset "
             f"{row['valid_from_offset']} ({iso_ms(row['valid_from_time_ms'])}) by {row['cause_type']}")
    offline = offline_periods(partitions).collect()
    echo("  partitions offline (no leader):")
    for row in offline:
        until = ("still offline" if row["valid_to_offset"] is None
                 else f"until offset {row['valid_to_offset']} ({iso_ms(row['valid_to_time_ms'])})")
        echo(f"    {row['topic_name']}-{row['partition_id']}: from offset {row['valid_from_offset']} "
             f"({iso_ms(row['valid_from_time_ms'])}) {until}")
    echo("  unclean elections (leader not in the previous ISR: possible data loss):")
    for row in unclean_elections(partitions).collect():
        echo(f"    {row['topic_name']}-{row['partition_id']}: broker {row['leader']} elected at offset "
             f"{row['valid_from_offset']}, previous ISR {row['previous_isr']}, leader epoch {row['leader_epoch']}, "
             f"recovery state {row['leader_recovery_state']}")
    if offline:
        first = offline[0]
        for label, offset in (("before", first["valid_from_offset"] - 1), ("during", first["valid_from_offset"])):
            state = state_at(spark, lake, offset=offset, cluster_id=CLUSTER_ID)
            rows = state.partitions.where((F.col("topic_name") == first["topic_name"])
                                          & (F.col("partition_id") == first["partition_id"])).collect()
            for row in rows:
                echo(f"  {first['topic_name']}-{first['partition_id']} {label} the incident (offset {offset}): "
                     f"leader {row['leader']}, leader epoch {row['leader_epoch']}, ISR {row['isr']}, "
                     f"replicas {row['replicas']}")
    echo(f"Everything is under {paths.root}: the segments in {paths.log}, the lake in {paths.lake}.")
    echo(f"Try: kraft-replay state --lake {paths.lake} --offset {offline[0]['valid_from_offset'] if offline else 0}")
    return paths
