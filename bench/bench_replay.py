"""Full Spark replay beside its floor, Kafka's own fold and the naive re-fold; increments, warm and cold queries,
memory; at one scale or several (issue 20's growth table), all in one process and one Spark session.

    nice -n 19 .venv/bin/python -m bench.bench_replay --records 200000 --brokers 100 --topics 100 \
        --partitions-per-topic 20 --out /tmp/kraft-bench-replay

    # issue 20's whole measurement (1 M, 10 M, 30 M records, --kafka 4.4.0, --driver-memory 2g): one command
    bash bench/run_all.sh        # or: make bench

Steps, per scale: simulate (random scenario) → segments (N records, then 1 % more in a second directory) → ingest
the N into a fresh lake → full replay (timed, stage by stage) → the driver's peak memory → the floor
(``bench.floor``: the same columns read, one sort, as many rows written per table, on the same session and lake)
→ ingest the 1 % → incremental replay (timed) → full-cluster state at random offsets (warm, timed) → one
partition's history (warm: as ``kraft-replay history`` reads it, JVM-free, the median of 5; and Spark's DataFrame
collected) → the naive alternative: re-folding the log from offset 0 for one query (``replay.reference.fold.image_at``,
streamed from the segments) → ``kraft-replay state --offset N`` and ``kraft-replay history`` as fresh processes
(process, and where they need one, JVM and session start included; 3 runs each, the median) → with ``--kafka
4.4.0``, Kafka's own fold of the same N records (``bench.bench_kafka_fold``). Then one summary table per scale
(ready for BENCHMARKS.md) with the stage-by-stage table against the floor, and with ``--scales`` one growth table.
``--scales``: each scale's log and lakes under ``OUT/<scale>`` (``OUT/1m``, ``OUT/10m``...; without it, ``OUT``
itself). ``--verify``: then copy the lake, replay it again with ``--full`` and compare every table with the
incremental's, row for row. ``--engines``: each lake engine in turn (delta-spark, delta-rs by default), each on a
fresh lake, in one run. ``--driver-memory 2g``: the driver's heap (default
``lakehouse.spark.local_driver_memory``). Driver peak RSS: the JVM's ``VmHWM``, reset before each full replay
where Linux allows (``clear_refs``), else the peak so far.
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench import bench_kafka_fold as kafka_fold
from bench.clock import StageClock, driver_pid, memory_line, mib, peak_rss, reset_peak_rss, timed
from bench.floor import Floor, measure_floor, multiple, stage_lines
from bench.logs import add_log_arguments, metadata_log, simulated_log, sizes_of
from lakehouse.ingest import ingest
from lakehouse.jars import KAFKA_VERSIONS
from lakehouse.lake import Lake
from lakehouse.server_dir import SERVER_DIR_ENV
from lakehouse.spark import DELTA_RS, DELTA_SPARK, ENGINE_ENV, SparkOptions, SparkUnavailableError, get_spark
from lakehouse.tables import DERIVED_TABLES, PARTITION_HISTORY, TOPIC_HISTORY
from records.sources import read_entries
from replay.query.light_state import light_history
from replay.query.state import history, state_at
from replay.reference.fold import image_at
from replay.store.runs import ANOMALIES, DERIVING, HISTORY_TABLES, run_replay

REPO_ROOT = Path(__file__).resolve().parents[1]
COLD_RUNS = 3


@dataclass(frozen=True)
class Measured:
    """One engine's figures at one scale."""

    engine: str
    records: int  # the N records of the full replay
    replay_seconds: float
    stages: list[tuple[str, float]]
    floor: Floor
    incremental_seconds: float
    warm_state_seconds: float
    history_seconds: float  # JVM-free, as `kraft-replay history` answers (replay.query.light_state.light_history)
    spark_history_seconds: float  # replay.query.state.history collected: the Python API's DataFrame
    naive_seconds: float
    cold_state_seconds: float | None  # None: the command failed (its error was printed)
    cold_history_seconds: float | None
    driver_peak: int | None  # bytes; None over Spark Connect

    @property
    def micros_per_record(self) -> float:
        return self.replay_seconds / self.records * 1e6


def scale_label(records: int) -> str:
    """A scale's directory under ``--out``: ``1m``, ``30m``, ``20k``, else the number."""
    for factor, suffix in ((1_000_000, "m"), (1_000, "k")):
        if records % factor == 0:
            return f"{records // factor}{suffix}"
    return str(records)


def _scales(parser: argparse.ArgumentParser, text: str) -> list[int]:
    try:
        scales = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--scales {text!r}: expected record counts, comma-separated (e.g. 1000000,10000000)")
    if not scales or min(scales) <= 0:
        parser.error(f"--scales {text!r}: expected positive record counts")
    return scales


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_log_arguments(parser)
    parser.add_argument("--scales", default="",
                        help="record counts to measure one after the other, comma-separated, each under "
                             "OUT/<scale> (e.g. 1000000,10000000,30000000; default: just --records, under OUT)")
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--verify", action="store_true",
                        help="afterwards, a full replay of the same log must leave every table as the incremental did")
    parser.add_argument("--engines", default=f"{DELTA_SPARK},{DELTA_RS}",
                        help="the lake engines to measure, one after the other on the same log, comma-separated")
    parser.add_argument("--kafka", default="",
                        help="Kafka versions whose own fold of the log to time afterwards, comma-separated (e.g. "
                             f"{KAFKA_VERSIONS[0]}; default none)")
    parser.add_argument("--kafka-heap", default="4g", help="the Kafka fold's -Xmx (default 4g)")
    parser.add_argument("--driver-memory", default=None,
                        help="the Spark driver's heap, e.g. 4g (default: 2g or $KRAFT_REPLAY_DRIVER_MEMORY)")
    args = parser.parse_args()
    if args.queries < 1:
        parser.error("--queries: at least 1")
    for engine in args.engines.split(","):
        if engine not in (DELTA_SPARK, DELTA_RS):
            parser.error(f"--engines: {engine!r} is not {DELTA_SPARK} or {DELTA_RS}")
    for version in filter(None, args.kafka.split(",")):
        if version not in KAFKA_VERSIONS:
            parser.error(f"--kafka: {version!r} is not one of {', '.join(KAFKA_VERSIONS)}")

    scales = _scales(parser, args.scales) if args.scales else [args.records]
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # a run takes hours: its lines as they come, also into a file
    try:
        spark = get_spark(SparkOptions(driver_memory=args.driver_memory))
    except SparkUnavailableError as exc:
        raise SystemExit(f"bench_replay: {exc}") from None
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {checkout_commit()}; machine {platform.machine()}, "
          f"{os.cpu_count()} cores; Python {platform.python_version()}; driver heap "
          f"{spark.conf.get('spark.driver.memory', 'n/a')}")
    growth: list[Measured] = []
    for records in scales:
        out = args.out / scale_label(records) if args.scales else args.out
        sizes = sizes_of(records, args.brokers, args.topics, args.partitions_per_topic)
        count, more = simulated_log(out, sizes, reuse=args.reuse_logs)
        ours = [_measure(spark, args, out, Lake(out / "lake" / engine, engine=engine), count, more)
                for engine in args.engines.split(",")]
        folds = _kafka_folds(args, out) if args.kafka else {}
        _summary(ours, folds)
        growth += ours
    if len(scales) > 1:
        _growth(growth)
    print(memory_line(spark, "at the end"))


def checkout_commit() -> str:
    """The checkout's commit (``+`` when it has uncommitted changes), or ``unknown``."""
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def _kafka_folds(args: argparse.Namespace, out: Path) -> dict[str, float | None]:
    """Kafka's own fold of the first N records, each version's row printed: version → the fold's seconds (None:
    that Kafka cannot run here)."""
    log_dir, size = metadata_log(out)
    print(kafka_fold.HEADER)
    folds = {version: kafka_fold.timed_row(version, log_dir, heap=args.kafka_heap, size=size)
             for version in args.kafka.split(",")}
    return {version: None if end is None else float(end["seconds"]) for version, end in folds.items()}


def _summary(ours: list[Measured], folds: dict[str, float | None]) -> None:
    """The scale's table for BENCHMARKS.md: every figure of one run side by side, one row per engine."""
    kafka_heads = "".join(f" Kafka {version} fold s |" for version in folds)
    kafka_cells = "".join(" skipped |" if seconds is None else f" {seconds:.1f} |" for seconds in folds.values())
    print()
    print(f"| records | engine | floor s |{kafka_heads} naive re-fold s | full replay s (x floor) | increment s "
          "(share of full) | warm state s | warm partition history s (Spark) | cold `state` s | cold `history` s | "
          "driver peak RSS | µs per record |")
    print("|---" * (12 + len(folds)) + "|")
    for measured in ours:
        cold, cold_history = ("failed" if seconds is None else f"{seconds:.1f}"
                              for seconds in (measured.cold_state_seconds, measured.cold_history_seconds))
        print(f"| {measured.records:,} | {measured.engine} | {measured.floor.seconds:.1f} |{kafka_cells} "
              f"{measured.naive_seconds:.1f} | {measured.replay_seconds:.1f} "
              f"({multiple(measured.replay_seconds, measured.floor.seconds)}) | {measured.incremental_seconds:.1f} "
              f"({measured.incremental_seconds / measured.replay_seconds:.0%}) | {measured.warm_state_seconds:.2f} | "
              f"{measured.history_seconds:.3f} ({measured.spark_history_seconds:.2f}) | {cold} | {cold_history} | "
              f"{mib(measured.driver_peak)} | "
              f"{measured.micros_per_record:.1f} |")
    for measured in ours:
        print()
        print(f"{measured.engine}, {measured.records:,} records: the full replay stage by stage against the floor")
        print("\n".join(stage_lines(measured.stages, measured.floor, measured.replay_seconds)))
    print()


def _growth(measured: list[Measured]) -> None:
    """The growth table: time per record across the scales."""
    print("| records | engine | full replay s | µs per record | increment share | floor s | x floor |")
    print("|---|---|---|---|---|---|---|")
    for row in measured:
        print(f"| {row.records:,} | {row.engine} | {row.replay_seconds:.1f} | {row.micros_per_record:.1f} | "
              f"{row.incremental_seconds / row.replay_seconds:.0%} | {row.floor.seconds:.1f} | "
              f"{multiple(row.replay_seconds, row.floor.seconds)} |")


# the server directory of the cold commands: no server was ever started there
NO_SERVER_DIR = Path(tempfile.gettempdir()) / "kraft-bench-no-resident-server"


def cold_command_env(server_dir: Path | None = None) -> dict[str, str]:
    """The environment of a cold command: this checkout's modules, and the default engine (``KRAFT_REPLAY_ENGINE``
    unset) as a user types the command; naming an engine would send ``state`` down the Spark path
    (``replay.query.state_answer.light_path_serves``). The resident server of ``server_dir`` (``kraft-replay
    server``), or none: a server the user left running is not the bench's."""
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return ({name: value for name, value in os.environ.items() if name != ENGINE_ENV}
            | {"PYTHONPATH": path, SERVER_DIR_ENV: str(server_dir or NO_SERVER_DIR)})


def cold_command(lake: Lake, *args: str) -> float | None:
    """The median wall time of ``kraft-replay ARGS`` as a fresh process (``COLD_RUNS`` runs: process and, where
    the command needs them, JVM and session start included; the answer to /dev/null); None when the command fails
    (its error is printed)."""
    times = []
    for _ in range(COLD_RUNS):
        done, seconds = fresh_cli(*args, "--lake", str(lake.root))
        if done.returncode != 0:
            print(f"cold command: `{' '.join(done.args)}` exited {done.returncode}: {done.stderr[-2000:]}")
            return None
        times.append(seconds)
    return statistics.median(times)


def fresh_cli(*args: str, server_dir: Path | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """``kraft-replay ARGS`` as a fresh process in :func:`cold_command_env` (the answer to /dev/null, the errors
    kept), through the entry point a user types (``kraft_replay.launcher``: the resident command runner of
    ``server_dir`` runs it, when one runs): the finished process and its wall seconds."""
    env = cold_command_env(server_dir)
    return timed(lambda: subprocess.run([sys.executable, "-m", "kraft_replay.launcher", *args], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False))


def _measure(spark: SparkSession, args: argparse.Namespace, out: Path, lake: Lake, count: int, more: int
             ) -> Measured:
    """Ingest, full replay, floor, incremental replay and the queries on one engine's fresh lake."""
    shutil.rmtree(lake.root, ignore_errors=True)
    engine = lake.engine(spark)
    _, ingest_s = timed(lambda: ingest(spark, lake, out / "log"))
    pid = driver_pid(spark)
    peak_reset = pid is not None and reset_peak_rss(pid)
    stages = StageClock()
    full, replay_s = timed(lambda: run_replay(spark, lake, progress=stages))
    assert full.mode == "full", full.notes
    stage_times = stages.durations()
    driver_peak = None if pid is None else peak_rss(pid)
    print(memory_line(spark, "after the full replay" + ("" if peak_reset else " (peak since the process started)")))
    scratch = out / "floor" / engine
    floor = measure_floor(spark, lake, full.rows, scratch)
    shutil.rmtree(scratch, ignore_errors=True)  # as many rows as the replay's tables: disk the next scale needs
    print(f"floor {floor.seconds:.1f} s = read, decode and sort {floor.events:,} events {floor.sort_seconds:.1f} s "
          f"+ writing {sum(full.rows.values()):,} rows to {len(full.rows)} tables "
          f"{sum(floor.write_seconds.values()):.1f} s")
    ingest(spark, lake, out / "more")
    incremental_stages = StageClock()
    incremental, incremental_s = timed(lambda: run_replay(spark, lake, progress=incremental_stages))
    incremental_times = incremental_stages.durations()  # now: the last stage ends with the replay
    assert incremental.mode == "incremental", incremental.notes
    partitions = incremental.rows.get(PARTITION_HISTORY)
    total = count + more

    rng = random.Random(5)
    offsets = [rng.randrange(total) for _ in range(args.queries)]
    state_at(spark, lake, offset=offsets[0]).partitions.count()  # warm up
    state_times = []
    for offset in offsets:
        _, seconds = timed(lambda o=offset: (state_at(spark, lake, offset=o).partitions.count(),
                                             state_at(spark, lake, offset=o).brokers.count()))
        state_times.append(seconds)
    topic = lake.read(spark, TOPIC_HISTORY).select("name").first()["name"]
    history(spark, lake, topic, 0).collect()  # warm up
    # collected, as a notebook shows it: a count reads only the filter's columns (Spark drops the sort)
    _, spark_history_s = timed(lambda: history(spark, lake, topic, 0).collect())
    light_history(str(lake.root), topic, 0)  # warm up (the page cache; each call loads the table anew)
    history_s = statistics.median(timed(lambda: light_history(str(lake.root), topic, 0))[1] for _ in range(5))
    _, naive_s = timed(lambda: image_at(itertools.takewhile(lambda e: e.offset <= offsets[0],
                                                           read_entries(out / "log")), offsets[0]))
    cold_s = cold_command(lake, "state", "--offset", str(offsets[0]))
    cold_history_s = cold_command(lake, "history", "--topic", topic, "--partition", "0")
    warm_state = statistics.median(state_times)
    print(f"engine {engine}; date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, "
          f"{os.cpu_count()} cores; Python {platform.python_version()}")
    print("| records | ingest s | full replay s | incremental replay of 1 % more s (share of full) | "
          "state at offset (median warm) s | partition history s (Spark) | naive re-fold s | naive / state |")
    print(f"| {total:,} | {ingest_s:.1f} | {replay_s:.1f} | {incremental_s:.1f} ({incremental_s / replay_s:.0%}) | "
          f"{warm_state:.2f} | {history_s:.3f} ({spark_history_s:.2f}) | {naive_s:.2f} | {naive_s / warm_state:.1f}x |")
    def derived(stage: str) -> bool:
        return stage == DERIVING or any(t in stage for t in DERIVED_TABLES)

    derived_s = sum(seconds for stage, seconds in stage_times if derived(stage))
    print(f"full replay {replay_s:.1f} s = history tables {replay_s - derived_s:.1f} s + state machines and "
          f"election audit {derived_s:.1f} s; stages: "
          + "; ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stage_times))
    incremental_derived = sum(seconds for stage, seconds in incremental_times if derived(stage))
    # an increment writes its history tables while it refreshes the derived ones: that stage counts as derived
    print(f"incremental replay {incremental_s:.1f} s = folding {incremental_s - incremental_derived:.1f} s "
          f"({(incremental_s - incremental_derived) / (replay_s - derived_s):.0%} of the full replay's history "
          f"tables) + the history and derived tables' writes, at once, {incremental_derived:.1f} s; stages: "
          + "; ".join(f"{stage} {seconds:.1f} s" for stage, seconds in incremental_times))
    print(f"partition_history rows: {partitions}; "
          f"{lake.read(spark, PARTITION_HISTORY).where(F.col('valid_to_offset').isNull()).count()} current")
    if args.verify:
        _verify(spark, lake)
    return Measured(engine=engine, records=count, replay_seconds=replay_s, stages=stage_times, floor=floor,
                    incremental_seconds=incremental_s, warm_state_seconds=warm_state, history_seconds=history_s,
                    spark_history_seconds=spark_history_s, naive_seconds=naive_s, cold_state_seconds=cold_s,
                    cold_history_seconds=cold_history_s, driver_peak=driver_peak)


def _verify(spark: SparkSession, lake: Lake) -> None:
    """A full replay of a copy of the lake must give every table exactly the incremental's rows."""
    copy = Path(f"{lake.root}-full")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(lake.root, copy)
    full_lake = Lake(copy, engine=lake.engine(spark))
    full, seconds = timed(lambda: run_replay(spark, full_lake, full=True))
    assert full.mode == "full", full.notes
    print(f"verify: full replay of the same log {seconds:.1f} s")
    for name in (*HISTORY_TABLES, ANOMALIES, *DERIVED_TABLES):
        incremental, rebuilt = lake.read(spark, name), full_lake.read(spark, name)
        extra, missing = incremental.exceptAll(rebuilt).count(), rebuilt.exceptAll(incremental).count()
        print(f"verify: {name}: {incremental.count():,} rows; only after the incremental {extra}, "
              f"only after the full replay {missing}")


if __name__ == "__main__":
    main()
