"""Stories built with the simulator for the controller state machines, the election audit, what-if and the
incremental refresh of the derived tables, and the questions the tests ask of their lake.

Every story is its own cluster of one lake, replayed once (``run_replay``: the derived tables are written
beside the history tables), so the suite pays for Spark's stages once: ``tests/conftest.py`` builds ``stories``,
the lake (``state_machine_lake``) and the ``increments`` once per run (session fixtures) for
test_state_machines.py, test_elections.py, test_whatif.py, test_incidents.py, test_controller_states.py and
test_derived.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from records.model import LogEntry
from replay.query.state import as_of
from replay.store.layout import mutable_where
from replay.store.runs import run_replay
from simulator import ControllerSimulator, ScenarioOptions, run_scenario
from simulator.controller import SimConfig
from simulator.facts import ScenarioFacts
from tests.table_rows import sorted_rows

UNCLEAN = "unclean.leader.election.enable"


@dataclass
class Story:
    entries: list[LogEntry]
    key: dict[str, Any] = field(default_factory=dict)
    facts: ScenarioFacts | None = None


def _cluster(brokers: int, seed: int = 1) -> ControllerSimulator:
    sim = ControllerSimulator(SimConfig(seed=seed, metadata_version="3.9"))
    for b in range(1, brokers + 1):
        sim.register_broker(b)
    for b in range(1, brokers + 1):
        sim.unfence(b)
    return sim


def _come_back(sim: ControllerSimulator, broker: int) -> int:
    sim.register_broker(broker)
    return sim.unfence(broker)


def story_rf1() -> Story:
    """5 brokers, a 2-partition topic of replication factor 1: lose p1's broker, then p0's, then both return."""
    sim = _cluster(5)
    sim.create_topic("rf1", 2, 1)
    b0, b1 = sim.partition("rf1", 0).replicas[0], sim.partition("rf1", 1).replicas[0]
    key = {"b0": b0, "b1": b1, "fence1": sim.crash(b1)}
    key["fence0"] = sim.crash(b0)
    key["back1"] = _come_back(sim, b1)
    key["back0"] = _come_back(sim, b0)
    return Story(sim.entries(), key)


def story_rf2(unclean_later: bool) -> Story:
    """3 brokers, 1 partition of replication factor 2: both replica brokers fail one after the other; the
    non-ISR one returns (the partition stays offline, its last ISR member kept); then, optionally, unclean
    election is enabled and elects it."""
    sim = _cluster(3, seed=2)
    sim.create_topic("rf2", 1, 2)
    p = sim.partition("rf2", 0)
    first, last = p.replicas[1], p.replicas[0]  # the follower fails first, the leader last
    key = {"first": first, "last": last, "fence_first": sim.crash(first)}
    key["fence_last"] = sim.crash(last)
    key["back_first"] = _come_back(sim, first)
    key["after_back"] = sim.next_offset - 1
    if unclean_later:
        sim.set_topic_config("rf2", UNCLEAN, "true")
        key["unclean"] = sim.elect_leaders("rf2", 0, unclean=True)
    return Story(sim.entries(), key)


def story_delete_while_fenced() -> Story:
    """A topic of replication factor 2 is deleted while one replica's broker is fenced; the broker returns."""
    sim = _cluster(3, seed=3)
    sim.create_topic("doomed", 1, 2)
    up, down = sim.partition("doomed", 0).replicas
    key = {"up": up, "down": down, "fence": sim.crash(down)}
    key["delete"] = sim.delete_topic("doomed")
    sim.register_broker(down)
    key["back"] = sim.unfence(down)
    return Story(sim.entries(), key)


def story_reassignment() -> Story:
    """Move a partition from [a, b] to [b, c]: c is new until it catches up, a is deleted when it completes.
    Then b's replica is removed while b is fenced and re-added before b returns (an invalid transition)."""
    sim = _cluster(4, seed=4)
    sim.create_topic("moving", 1, 2)
    a, b = sim.partition("moving", 0).replicas
    c = next(x for x in (1, 2, 3, 4) if x not in (a, b))
    d = next(x for x in (1, 2, 3, 4) if x not in (a, b, c))
    key = {"a": a, "b": b, "c": c, "d": d, "start": sim.reassign("moving", 0, [b, c])}
    key["complete"] = sim.expand_isr("moving", 0, [c])
    key["fence_b"] = sim.crash(b)
    sim.reassign("moving", 0, [c, d])
    key["remove_b"] = sim.expand_isr("moving", 0, [d])  # d caught up: the reassignment completes, b leaves
    key["readd_b"] = sim.reassign("moving", 0, [c, d, b])
    return Story(sim.entries(), key)


def story_catch_up_interrupted() -> Story:
    """c is added to [a, b] and catches up, its broker crashes and comes back before c is in the ISR (it left
    NewReplica: back Online, still catching up), then the ISR changes twice more before c joins it."""
    sim = _cluster(4, seed=8)
    sim.create_topic("slow", 1, 2)
    a, b = sim.partition("slow", 0).replicas
    c = next(x for x in (1, 2, 3, 4) if x not in (a, b))
    key = {"a": a, "b": b, "c": c, "start": sim.reassign("slow", 0, [a, b, c])}
    key["fence_c"] = sim.crash(c)
    key["back_c"] = _come_back(sim, c)
    key["shrink"] = sim.shrink_isr("slow", 0, [b])
    key["joined"] = sim.expand_isr("slow", 0, [c])
    return Story(sim.entries(), key)


def scenario(name: str, options: ScenarioOptions) -> Story:
    run = run_scenario(name, options)
    return Story(list(run.entries()), facts=run.facts)


SCENARIOS = {
    "sc-unclean": ("lost-last-isr-unclean", ScenarioOptions(seed=3, unclean=True)),
    "sc-rolling": ("rolling-restart", ScenarioOptions(seed=1)),
    "sc-shutdown": ("controlled-shutdown", ScenarioOptions(seed=6)),
    "sc-rack": ("rack-outage", ScenarioOptions(seed=2)),
    "sc-flapping": ("flapping-broker", ScenarioOptions(seed=4, metadata_version="3.3")),
    "sc-reassign": ("reassignment-under-failure", ScenarioOptions(seed=5)),
    "sc-recreate": ("topic-recreate", ScenarioOptions(seed=7)),
    "sc-random": ("random", ScenarioOptions(seed=9, events=300, metadata_version="4.0", unclean=True, elr=True)),
}


def stories() -> dict[str, Story]:
    """The hand-made stories and the simulated scenarios, by cluster id."""
    built = {"rf1": story_rf1(), "rf2-clean": story_rf2(False), "rf2-unclean": story_rf2(True),
             "deleted": story_delete_while_fenced(), "moving": story_reassignment(),
             "moving-early": story_reassignment(),  # the same story, cut elsewhere by the increments
             "catch-up": story_catch_up_interrupted()}
    built.update({c: scenario(name, options) for c, (name, options) in SCENARIOS.items()})
    return built


def lake(spark: SparkSession, stories: dict[str, Story], tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """Every story a cluster of one lake, replayed once (``run_replay``: the derived tables beside the history)."""
    lake = Lake(tmp_path_factory.mktemp("state-machine-lake"))
    frames = [entries_frame(spark, story.entries, cluster) for cluster, story in stories.items()]
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    lake.write(log, "metadata_log", "append")
    run_replay(spark, lake)
    return lake


def _table(spark: SparkSession, lake: Lake, name: str, cluster: str) -> DataFrame:
    return lake.read(spark, name).where(F.col("cluster_id") == cluster)


def _states_at(spark: SparkSession, lake: Lake, cluster: str, offset: int, table: str = "replica_state_history"
               ) -> dict[tuple[Any, ...], str]:
    df = as_of(_table(spark, lake, table, cluster), offset)
    if table == "replica_state_history":
        return {(r["topic_name"], r["partition_id"], r["broker_id"]): r["state"] for r in df.collect()}
    return {(r["topic_name"], r["partition_id"]): r["state"] for r in df.collect()}


def _partition_at(spark: SparkSession, lake: Lake, cluster: str, offset: int, topic: str, pid: int) -> Any:
    rows = as_of(_table(spark, lake, "partition_history", cluster), offset).where(
        (F.col("topic_name") == topic) & (F.col("partition_id") == pid)).collect()
    assert len(rows) == 1
    return rows[0]


def _transitions(spark: SparkSession, lake: Lake, cluster: str, table: str = "replica_state_history",
                 **where: Any) -> list[tuple[Any, ...]]:
    df = _table(spark, lake, table, cluster)
    for column, value in where.items():
        df = df.where(F.col(column) == value)
    return [(r["valid_from_offset"], r["previous_state"], r["state"], r["valid_transition"])
            for r in df.orderBy("valid_from_offset", "step").collect()]


def _cli(lake: Lake, *args: str) -> Any:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    return CliRunner().invoke(app, [*args, "--lake", str(lake.root)], env={"COLUMNS": "250"})


DERIVED = ("replica_state_history", "partition_state_history", "elections", "leaderless_periods")


def _cuts(stories: dict[str, Story]) -> dict[str, tuple[int, int]]:
    """Per cluster, the two last offsets of the first and second increment: cut between a leader's loss and
    the fence that explains it, between a deletion and the broker's return, inside a reassignment."""
    k = {name: story.key for name, story in stories.items()}
    cuts = {
        "rf1": (k["rf1"]["fence1"] - 1, k["rf1"]["fence0"] - 1),
        "rf2-clean": (k["rf2-clean"]["fence_first"] - 1, k["rf2-clean"]["fence_last"] - 1),
        "rf2-unclean": (k["rf2-unclean"]["fence_last"] - 1, k["rf2-unclean"]["back_first"]),
        "deleted": (k["deleted"]["delete"], k["deleted"]["back"] - 1),  # back - 1: registered, still fenced
        "moving": (k["moving"]["remove_b"], k["moving"]["readd_b"] - 1),
        # while c catches up (NewReplica across the checkpoint), and while b's replica is offline
        "moving-early": (k["moving-early"]["start"], k["moving-early"]["fence_b"]),
        # c is back Online but still catching up at the checkpoint: it must not turn NewReplica again after it
        "catch-up": (k["catch-up"]["start"], k["catch-up"]["back_c"]),
    }
    for name, story in stories.items():
        if name not in cuts:
            last = story.entries[-1].offset
            cuts[name] = (last // 3, last * 2 // 3)
    return cuts


def _rows(spark: SparkSession, lake: Lake, name: str) -> list[Any]:
    return sorted_rows([r.asDict(recursive=True) for r in lake.read(spark, name).collect()])


def _closed_files(spark: SparkSession, lake: Lake, name: str) -> set[str]:
    """The files holding only settled rows: on delta-rs those under ``open=false/``; on delta-spark (no split
    directories) the files with no row ``mutable_where`` selects."""
    paths = lake.file_paths(name)
    if any("/open=" in f"/{path}" for path in paths):
        return {path for path in paths if "/open=false/" in f"/{path}"}
    rows = lake.read(spark, name)
    holding = {Path(row["file"]).name for row in rows.where(mutable_where(name, rows.columns))
               .select(F.col("_metadata.file_path").alias("file")).distinct().collect()}
    return {path for path in paths if Path(path).name not in holding}


def increments(spark: SparkSession, stories: dict[str, Story], tmp_path_factory: pytest.TempPathFactory
               ) -> dict[str, Any]:
    """The stories replayed in three increments (cut by ``_cuts``), and what each increment left."""
    lake = Lake(tmp_path_factory.mktemp("incremental-state-machines"))
    cuts = _cuts(stories)
    seen: dict[str, Any] = {"summaries": [], "elections": [], "replicas": [], "closed": [], "catching_up": []}
    for step in range(3):
        frames = []
        for cluster, story in stories.items():
            low = -1 if step == 0 else cuts[cluster][step - 1]
            high = cuts[cluster][step] if step < 2 else story.entries[-1].offset
            frames.append(entries_frame(spark, [e for e in story.entries if low < e.offset <= high], cluster))
        lake.write(functools.reduce(DataFrame.unionByName, frames), "metadata_log", "append")
        seen["summaries"].append(run_replay(spark, lake, incremental=True))
        seen["elections"].append(_table(spark, lake, "elections", "rf1").collect())
        seen["replicas"].append(_table(spark, lake, "replica_state_history", "deleted").collect())
        seen["catching_up"].append(_table(spark, lake, "replica_state_history", "catch-up").where(
            F.col("broker_id") == stories["catch-up"].key["c"]).orderBy("valid_from_offset", "step").collect())
        seen["closed"].append({name: _closed_files(spark, lake, name) for name in DERIVED})
    seen["lake"] = lake
    return seen
