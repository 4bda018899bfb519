"""Warm questions on a replayed lake with Delta's data skipping off (the default of a session started here) and on
(``lakehouse.spark_settings.file_statistics``), interleaved in one session so both see the same machine.

    .venv/bin/python -m bench.bench_questions --lake /tmp/kraft-bench-growth/10m/lake/delta-spark --rounds 7

Each round asks, in each setting: one partition's history (``replay.query.state.history``, counted as bench_replay
counted it until 2026-11-28, and collected as it does now), the full-cluster state at a random offset (its
partitions and brokers counted, as bench_replay times it), and the log's records at 100 random offsets
(``Lake.read_offsets``). A first round warms up; then the medians, one table row per question.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_replay import checkout_commit
from bench.clock import timed
from lakehouse.lake import Lake
from lakehouse.spark import DELTA_STATS_SKIPPING, SparkOptions, get_spark
from lakehouse.spark_settings import file_statistics
from lakehouse.tables import METADATA_LOG, TOPIC_HISTORY
from replay.query.state import history, resolve_cluster, state_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, required=True, help="a lake bench_replay (or `kraft-replay replay`) made")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--driver-memory", default="2g")
    args = parser.parse_args()
    spark = get_spark(SparkOptions(driver_memory=args.driver_memory))
    lake = Lake(args.lake)
    cluster = resolve_cluster(spark, lake, None)
    topics = [row["name"] for row in lake.read(spark, TOPIC_HISTORY).select("name").distinct().limit(200).collect()]
    last = lake.read(spark, METADATA_LOG).agg({"offset": "max"}).first()[0]
    rng = random.Random(5)

    def state() -> None:
        offset = rng.randrange(last + 1)
        state_at(spark, lake, offset=offset).partitions.count()
        state_at(spark, lake, offset=offset).brokers.count()

    def records() -> None:
        first = rng.randrange(last - 100)
        assert lake.read_offsets(spark, METADATA_LOG, cluster, first, first + 99).count() == 100

    questions: dict[str, Callable[[], object]] = {
        "one partition's history (count)": lambda: history(spark, lake, rng.choice(topics), rng.randrange(10)).count(),
        "one partition's history (collect)": lambda: history(spark, lake, rng.choice(topics), rng.randrange(10)
                                                             ).collect(),
        "full-cluster state (partitions and brokers counted)": state,
        "100 records of the log by offset": records,
    }
    def setting(skipping: bool) -> contextlib.AbstractContextManager[None]:
        return file_statistics(spark) if skipping else contextlib.nullcontext()

    seconds: dict[str, dict[bool, list[float]]] = {name: {False: [], True: []} for name in questions}
    for round_number in range(args.rounds + 1):  # round 0 warms up: code generated, snapshots loaded
        for skipping in (False, True):
            with setting(skipping):
                for name, question in questions.items():
                    _, took = timed(question)
                    if round_number:
                        seconds[name][skipping].append(took)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {checkout_commit()}; lake {args.lake}; {args.rounds} "
          f"rounds; session default {DELTA_STATS_SKIPPING}="
          f"{spark.conf.get(DELTA_STATS_SKIPPING, None)}")
    print("| question (warm, median) | Delta's data skipping off s | on s |")
    print("|---|---|---|")
    for name, times in seconds.items():
        print(f"| {name} | {statistics.median(times[False]):.3f} | {statistics.median(times[True]):.3f} |")


if __name__ == "__main__":
    main()
