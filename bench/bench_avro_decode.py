"""The replay's typing step: ``from_avro`` on the stored Avro payload against ``from_json`` on payload_json.

    .venv/bin/python -m bench.bench_avro_decode --records 1000000 --out /tmp/kraft-bench-avro

Simulates a log (random scenario) once and keeps its ``metadata_log``-shaped rows as one Parquet file under
``--out`` (reused by later runs of the same size: the lake's files are Parquet of the same columns). Then, in
one Spark session, for each path (``replay.core.shapes.RecordShapes`` with ``avro`` on and off):

* ``events``: ``replay.core.events.visible`` + the local checkpoint the replay takes (each path keeps the payload
  form it reads: the Avro payload, or payload_json);
* ``typing``: every state record type typed from those events (``RecordShapes.typed``, what
  ``replay.core.events.parsed`` runs), all fields of the struct computed (Spark's ``noop`` sink), summed over types.

The paths alternate for ``--rounds`` rounds (after one warm-up of the Avro path); the table gives each round and
the median, then the ratio of the two typing times, overall and per round (a shared machine's load changes
between rounds more than between the two halves of one).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.log_rows import LOG_ROW_SCHEMA, ROW_KIND_RECORD, entry_row, to_record_batches
from lakehouse.spark import SparkOptions, get_spark
from replay.core.events import STATE_TYPES, visible
from replay.core.shapes import RecordShapes, record_shapes
from simulator import ScenarioOptions, run_scenario

GENERATOR_VERSION = 1  # bump when what is written changes, so a cached log is rebuilt


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _write_log(out: Path, records: int, brokers: int, topics: int, partitions: int) -> Path:
    """The simulated log's rows (as ``entries_frame`` builds them) in one Parquet file; cached by its sizes."""
    sizes = {"records": records, "brokers": brokers, "topics": topics, "partitions_per_topic": partitions,
             "seed": 11, "generator": GENERATOR_VERSION}
    path, sizes_file = out / "metadata_log.parquet", out / "sizes.json"
    if path.exists() and sizes_file.exists() and json.loads(sizes_file.read_text()) == sizes:
        return path
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    options = ScenarioOptions(brokers=brokers, topics=topics, partitions_per_topic=partitions, events=10**9, seed=11)
    run = run_scenario("random", options)
    rows = (entry_row(entry, run.sim.cluster_id) for entry in itertools.islice(run.entries(), records))
    with pq.ParquetWriter(path, LOG_ROW_SCHEMA) as writer:
        for batch in to_record_batches(rows, max_rows=65536):
            writer.write_table(pa.Table.from_batches([batch]))
    sizes_file.write_text(json.dumps(sizes))
    return path


def _typing(events: DataFrame, shapes: RecordShapes) -> float:
    """Seconds to type every state record type of ``events`` (each struct computed, nothing kept)."""
    total = 0.0
    for record_type in STATE_TYPES:
        typed = shapes.typed(events.where(F.col("record_type") == record_type), record_type).select("offset", "r")
        total += _timed(lambda t=typed: t.write.format("noop").mode("overwrite").save())
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("/tmp/kraft-bench-avro"))
    args = parser.parse_args()

    started = time.perf_counter()
    path = _write_log(args.out, args.records, args.brokers, args.topics, args.partitions_per_topic)
    prepared = time.perf_counter() - started
    spark = get_spark(SparkOptions())
    avro = record_shapes(spark)
    if not avro.avro:
        raise SystemExit("this Spark session has no spark-avro: run `make setup` (python -m lakehouse.jars fetch)")
    paths = {"from_json": dataclasses.replace(avro, avro=False), "from_avro": avro}
    log = spark.read.parquet(str(path)).where(F.col("row_kind") == ROW_KIND_RECORD)
    profile = log.agg(F.count("*").alias("records"), F.avg(F.length("payload")).alias("avro_bytes"),
                      F.avg(F.length("payload_json")).alias("json_bytes"),
                      F.sum(F.col("record_type").isin(*STATE_TYPES).cast("int")).alias("state")).first()
    assert profile is not None
    mix = {row["record_type"]: row["count"] for row in log.groupBy("record_type").count().collect()}
    _typing(visible(log, avro).localCheckpoint(eager=True), avro)  # warm-up: JIT, class loading
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, shapes in paths.items():
            begun = time.perf_counter()
            events = visible(log, shapes).localCheckpoint(eager=True)
            events_s = time.perf_counter() - begun
            results[name].append((events_s, _typing(events, shapes)))

    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, {os.cpu_count()} cores; "
          f"Python {platform.python_version()}; Spark {spark.version} {spark.sparkContext.master}; "
          f"log prepared in {prepared:.1f} s")
    print(f"{profile['records']:,} records ({profile['state']:,} state records: "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])[:4])
          + f"); payload {profile['avro_bytes']:.1f} B average (Avro), payload_json {profile['json_bytes']:.1f} B")
    print("| path | events s (rounds) | typing s (rounds) | median events s | median typing s | typing records/s |")
    print("|---|---|---|---|---|---|")
    for name, rounds in results.items():
        events_m = statistics.median(e for e, _ in rounds)
        typing_m = statistics.median(t for _, t in rounds)
        print(f"| {name} | {', '.join(f'{e:.1f}' for e, _ in rounds)} | {', '.join(f'{t:.1f}' for _, t in rounds)} "
              f"| {events_m:.1f} | {typing_m:.1f} | {profile['state'] / typing_m:,.0f} |")
    json_t = statistics.median(t for _, t in results["from_json"])
    avro_t = statistics.median(t for _, t in results["from_avro"])
    ratios = [a[1] / j[1] for a, j in zip(results["from_avro"], results["from_json"], strict=True)]
    print(f"typing: from_avro / from_json = {avro_t / json_t:.2f} (medians); per round "
          + ", ".join(f"{r:.2f}" for r in ratios))


if __name__ == "__main__":
    main()
