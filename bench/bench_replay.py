"""Full Spark replay, time-travel query latency, and the naive alternative, on a simulated log.

    .venv/bin/python -m bench.bench_replay --records 200000 --brokers 100 --topics 100 \
        --partitions-per-topic 20 --out /tmp/kraft-bench-replay

Steps: simulate (random scenario) → segments (N records, then 1 % more in a second directory) → ingest
the N into a fresh lake → full replay (timed) → ingest the 1 % → incremental replay (timed) →
full-cluster state at random offsets (warm, timed) → one partition's history (warm, timed) → the
naive alternative: re-folding the log from offset 0 for one query (``replay.reference.image_at``,
streamed from the segments), reported as a ratio to the warm state query. ``--verify``: then copy the lake,
replay it again with ``--full`` and compare every table with the incremental's, row for row. ``--engines``:
each lake engine in turn (delta-spark, delta-rs by default), each on a fresh lake, in one run. ``--kafka 4.4.0``:
then Kafka's own fold of the same N records to their end (``bench.bench_kafka_fold``), in the same run, and one
table with Kafka's fold, our full replay and our state query side by side.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench import bench_kafka_fold as kafka_fold
from bench.logs import add_log_arguments, metadata_log, simulated_log, sizes_of
from lakehouse.ingest import ingest
from lakehouse.jars import KAFKA_VERSIONS
from lakehouse.lake import Lake
from lakehouse.spark import DELTA_RS, DELTA_SPARK, SparkOptions, get_spark
from lakehouse.tables import DERIVED_TABLES, PARTITION_HISTORY, TOPIC_HISTORY
from records.sources import read_entries
from replay.query import history, state_at
from replay.reference import image_at
from replay.store import ANOMALIES, DERIVING, HISTORY_TABLES, run_replay


def _timed(action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


class StageClock:
    """A ``progress`` callback that remembers when each stage of ``run_replay`` started."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float]] = []

    def __call__(self, stage: str) -> None:
        self.starts.append((stage, time.perf_counter()))

    def durations(self) -> list[tuple[str, float]]:
        ends = [t for _, t in self.starts[1:]] + [time.perf_counter()]
        return [(stage, end - start) for (stage, start), end in zip(self.starts, ends, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_log_arguments(parser)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--verify", action="store_true",
                        help="afterwards, a full replay of the same log must leave every table as the incremental did")
    parser.add_argument("--engines", default=f"{DELTA_SPARK},{DELTA_RS}",
                        help="the lake engines to measure, one after the other on the same log, comma-separated")
    parser.add_argument("--kafka", default="",
                        help="Kafka versions whose own fold of the log to time afterwards, comma-separated (e.g. "
                             f"{KAFKA_VERSIONS[0]}; default none)")
    parser.add_argument("--kafka-heap", default="4g", help="the Kafka fold's -Xmx (default 4g)")
    args = parser.parse_args()

    sizes = sizes_of(args.records, args.brokers, args.topics, args.partitions_per_topic)
    count, more = simulated_log(args.out, sizes, reuse=args.reuse_logs)
    spark = get_spark(SparkOptions())
    ours = {engine: _measure(spark, args, Lake(args.out / "lake" / engine, engine=engine), count, more)
            for engine in args.engines.split(",")}
    if args.kafka:
        _beside_kafka(args, count, ours)


def _beside_kafka(args: argparse.Namespace, count: int, ours: dict[str, tuple[float, float]]) -> None:
    """Kafka's own fold of the first ``count`` records, then Kafka's and ours side by side."""
    log_dir, size = metadata_log(args.out)
    print(kafka_fold.HEADER)
    folds = {version: kafka_fold.timed_row(version, log_dir, heap=args.kafka_heap, size=size)
             for version in args.kafka.split(",")}
    print("| records | " + " | ".join(f"Kafka {v} fold to the end s" for v in folds)
          + " | " + " | ".join(f"{e} full replay s | {e} state at offset s" for e in ours) + " |")
    print(f"| {count:,} | " + " | ".join("skipped" if end is None else f"{end['seconds']:.1f}"
                                         for end in folds.values())
          + " | " + " | ".join(f"{replay_s:.1f} | {state_s:.2f}" for replay_s, state_s in ours.values()) + " |")


def _measure(spark: SparkSession, args: argparse.Namespace, lake: Lake, count: int, more: int) -> tuple[float, float]:
    """Ingest, full replay, incremental replay and the queries on one engine's fresh lake: (the full replay's
    seconds, the median warm state query's)."""
    shutil.rmtree(lake.root, ignore_errors=True)
    _, ingest_s = _timed(lambda: ingest(spark, lake, args.out / "log"))
    stages = StageClock()
    full, replay_s = _timed(lambda: run_replay(spark, lake, progress=stages))
    assert full.mode == "full", full.notes
    stage_times = stages.durations()
    ingest(spark, lake, args.out / "more")
    incremental_stages = StageClock()
    incremental, incremental_s = _timed(lambda: run_replay(spark, lake, progress=incremental_stages))
    incremental_times = incremental_stages.durations()  # now: the last stage ends with the replay
    assert incremental.mode == "incremental", incremental.notes
    count += more
    partitions = incremental.rows.get(PARTITION_HISTORY)

    rng = random.Random(5)
    offsets = [rng.randrange(count) for _ in range(args.queries)]
    state_at(spark, lake, offset=offsets[0]).partitions.count()  # warm up
    state_times = []
    for offset in offsets:
        _, seconds = _timed(lambda o=offset: (state_at(spark, lake, offset=o).partitions.count(),
                                              state_at(spark, lake, offset=o).brokers.count()))
        state_times.append(seconds)
    topic = lake.read(spark, TOPIC_HISTORY).select("name").first()["name"]
    history(spark, lake, topic, 0).count()  # warm up
    _, history_s = _timed(lambda: history(spark, lake, topic, 0).count())
    _, naive_s = _timed(lambda: image_at(itertools.takewhile(lambda e: e.offset <= offsets[0],
                                                            read_entries(args.out / "log")), offsets[0]))
    warm_state = sorted(state_times)[len(state_times) // 2]
    print(f"engine {lake.engine(spark)}; date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, "
          f"{os.cpu_count()} cores; Python {platform.python_version()}")
    print("| records | ingest s | full replay s | incremental replay of 1 % more s (share of full) | "
          "state at offset (median warm) s | partition history s | naive re-fold s | naive / state |")
    print(f"| {count:,} | {ingest_s:.1f} | {replay_s:.1f} | {incremental_s:.1f} ({incremental_s / replay_s:.0%}) | "
          f"{warm_state:.2f} | {history_s:.2f} | {naive_s:.2f} | {naive_s / warm_state:.1f}x |")
    def derived(stage: str) -> bool:
        return stage == DERIVING or any(t in stage for t in DERIVED_TABLES)

    derived_s = sum(seconds for stage, seconds in stage_times if derived(stage))
    print(f"full replay {replay_s:.1f} s = history tables {replay_s - derived_s:.1f} s + state machines and "
          f"election audit {derived_s:.1f} s; stages: "
          + "; ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stage_times))
    incremental_derived = sum(seconds for stage, seconds in incremental_times if derived(stage))
    print(f"incremental replay {incremental_s:.1f} s = history tables {incremental_s - incremental_derived:.1f} s "
          f"({(incremental_s - incremental_derived) / (replay_s - derived_s):.0%} of the full replay's) + derived "
          f"tables {incremental_derived:.1f} s; stages: "
          + "; ".join(f"{stage} {seconds:.1f} s" for stage, seconds in incremental_times))
    print(f"partition_history rows: {partitions}; "
          f"{lake.read(spark, PARTITION_HISTORY).where(F.col('valid_to_offset').isNull()).count()} current")
    if args.verify:
        _verify(spark, lake)
    return replay_s, warm_state


def _verify(spark: SparkSession, lake: Lake) -> None:
    """A full replay of a copy of the lake must give every table exactly the incremental's rows."""
    copy = Path(f"{lake.root}-full")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(lake.root, copy)
    full_lake = Lake(copy, engine=lake.engine(spark))
    full, seconds = _timed(lambda: run_replay(spark, full_lake, full=True))
    assert full.mode == "full", full.notes
    print(f"verify: full replay of the same log {seconds:.1f} s")
    for name in (*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES):
        incremental, rebuilt = lake.read(spark, name), full_lake.read(spark, name)
        extra, missing = incremental.exceptAll(rebuilt).count(), rebuilt.exceptAll(incremental).count()
        print(f"verify: {name}: {incremental.count():,} rows; only after the incremental {extra}, "
              f"only after the full replay {missing}")


if __name__ == "__main__":
    main()
