"""The main job on the embedded default: an incident, end to end, on this machine.

Simulate a cluster that loses the last in-sync replica of a partition (Kafka's controller records,
written as real segment files), ingest the log into a local Delta lake, replay it with local Spark,
and answer what an operator asks: which partitions went offline when and because of which broker,
which elections were unclean, and what one partition looked like before and during the incident; then
plot it (``report/index.html``). Everything stays under one folder; re-running is safe (the simulation
is seeded, the ingest exactly once, the replay deterministic).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from kraft_replay.formatting import format_replay_summary
from kraft_replay.report import write_report
from kraft_replay.summary import summarize
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from replay.store.runs import run_replay
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

    @property
    def report(self) -> Path:
        return self.root / "report"


def run_demo(spark: SparkSession, root: Path, echo: Callable[[str], None],
             progress: Callable[[str], None] | None = None) -> DemoPaths:
    """The five steps, each announced with ``echo``; ``progress`` is told the stages inside them."""
    tell = progress or (lambda _stage: None)
    paths = DemoPaths(root.resolve())
    tell("simulating the incident")
    echo(f"1/5 simulating the '{SCENARIO}' incident (seeded, Kafka 3.9 controller records)")
    run = run_scenario(SCENARIO, ScenarioOptions(seed=7, brokers=5, topics=3, partitions_per_topic=4,
                                                 replication_factor=2, unclean=True))
    if paths.log.exists():
        shutil.rmtree(paths.log)  # the seeded log is rewritten identically
    count, files = write_log(run.entries(), paths.log, "segments", cluster_id=CLUSTER_ID, node_id=3000)
    echo(f"    {count} records in {len(files) - 1} segment file(s) under {paths.log}")

    echo(f"2/5 ingesting into the Delta lake at {paths.lake}")
    lake = Lake(paths.lake)
    summary = ingest(spark, lake, paths.log, IngestOptions(), progress=tell)
    echo(f"    {summary.records_added} records added, {summary.records_skipped} already present")

    echo("3/5 replaying with Spark")
    replayed = run_replay(spark, lake, progress=tell)
    for line in format_replay_summary(replayed):
        echo(f"    {line}")

    echo("4/5 what happened")
    tell("summarizing what happened")
    told = summarize(spark, lake, CLUSTER_ID)
    for line in told.lines:
        echo(line)

    echo(f"5/5 writing the report (plots and one HTML page) to {paths.report}")
    report = write_report(spark, lake, paths.report, cluster_id=CLUSTER_ID, summary=told, progress=tell)
    for note in report.notes:
        echo(f"    {note}")
    echo(f"Everything is under {paths.root}: the segments in {paths.log}, the lake in {paths.lake}, "
         f"the report in {report.html}.")
    echo(f"Try: kraft-replay state --lake {paths.lake} --offset {told.focus[2] if told.focus else 0}")
    return paths
