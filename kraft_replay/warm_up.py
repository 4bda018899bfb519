"""What a new resident server runs once, so that the commands after it find its JVM warm.

A JVM runs Spark's planning, scheduling and tasks slowly until it has compiled them, and it compiles only what it has
run often: a server warmed up with the bundled sample log (a few dozen records) ran a real log's `run` and its
increments much slower than once a few more had run. So the warm-up is what users do next, at a real log's scale: a
simulated cluster's log (a few brokers, every part of the image, and a whole-cluster restart with its fences,
leaderless partitions and elections: a random log of three brokers holds none, and the audit's plans stayed cold)
ingested, replayed and summarized as ``run`` does, then a hundred more of its records ingested and replayed as
``replay`` does (a small log whole), twice, and a hundred more as an increment (as a larger lake's are), in a lake
deleted afterwards; in several rounds, since a replay is many small plans, each compiled only once it has run often
(the measurements: BENCHMARKS.md, issue 42).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from kraft_replay.summary import summarize
from lakehouse.ingest import ingest
from lakehouse.lake import Lake
from lakehouse.spark import SparkOptions, get_spark
from replay.store.runs import ReplaySummary, run_replay
from simulator import ScenarioOptions, restart_offset, run_scenario, whole_transactions, write_log

WARM_UP_RECORDS = 30_000  # at least this many (the log ends between transactions)
# The simulated cluster: a few brokers, as a real cluster's log has, restarted whole once (its fences, leaderless
# partitions and elections, where the benchmark's real-like log has it: ``simulator.restart_offset``); its first
# records and the increment after them.
WARM_UP_CLUSTER = ScenarioOptions(brokers=3, topics=10, partitions_per_topic=10, events=10**9, seed=11,
                                  cluster_restart_at=restart_offset(WARM_UP_RECORDS))
WARM_UP_INCREMENT = 100
WARM_UP_INCREMENTS = 3  # batches of WARM_UP_INCREMENT more records, one after the other, in every round
WARM_UP_ROUNDS = 4  # three more rounds after the first: the JIT compiles a replay's plans only after many runs of them
NODE_ID = 3000  # the simulated controller's node id in meta.properties


def warm_up(url: str, cluster: ScenarioOptions = WARM_UP_CLUSTER, records: int = WARM_UP_RECORDS,
            rounds: int = WARM_UP_ROUNDS, increments: int = WARM_UP_INCREMENTS) -> list[ReplaySummary]:
    """Run a simulated ``cluster``'s first answer (at least ``records`` records) and ``increments`` increments of it
    through the server at ``url``, ``rounds`` times (each round a new lake: the JVM compiles what it has run often);
    the replays' summaries, in order. Its Connect session is released afterwards."""
    spark = get_spark(SparkOptions(remote=url))
    replayed: list[ReplaySummary] = []
    try:
        with tempfile.TemporaryDirectory(prefix="kraft-replay-warm-up-") as directory:
            first, logs = _simulated_logs(Path(directory), cluster, records, increments)
            for round_number in range(rounds):
                lake = Lake(Path(directory) / f"lake-{round_number}")
                ingested = ingest(spark, lake, first)
                replayed.append(run_replay(spark, lake))
                summarize(spark, lake, ingested.cluster_ids[0])
                for number, more in enumerate(logs, 1):
                    ingest(spark, lake, more)
                    # replayed as `replay` does after new records (a small log whole), the round's last as an
                    # increment though the log is small: the plans of a larger lake's increments are warmed too
                    replayed.append(run_replay(spark, lake, incremental=number == len(logs)))
    finally:
        spark.stop()
    return replayed


def _simulated_logs(directory: Path, cluster: ScenarioOptions, records: int, increments: int
                    ) -> tuple[Path, list[Path]]:
    """Data directories of one simulated cluster: its first records, and the increments that follow them, one
    after the other."""
    run = run_scenario("random", cluster)
    entries = run.entries()
    first = directory / "log"
    write_log(whole_transactions(entries, records), first, "segments", cluster_id=run.sim.cluster_id,
              node_id=NODE_ID)
    logs = [directory / f"more-{number}" for number in range(1, increments + 1)]
    for more in logs:
        write_log(whole_transactions(entries, WARM_UP_INCREMENT), more, "segments", cluster_id=run.sim.cluster_id,
                  node_id=NODE_ID)
    return first, logs


__all__ = ["WARM_UP_CLUSTER", "WARM_UP_INCREMENT", "WARM_UP_INCREMENTS", "WARM_UP_RECORDS", "WARM_UP_ROUNDS",
           "warm_up"]
