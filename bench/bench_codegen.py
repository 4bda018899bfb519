"""A full replay with Spark's generated code and interpreted, at small scales, in one process and one session: the
measurement behind ``lakehouse.spark_settings.INTERPRETED_UP_TO`` (compiling each new plan's Java costs more than it
saves on a small log).

    nice -n 19 .venv/bin/python -m bench.bench_codegen --scales 1000,100000 --out /tmp/kraft-bench-codegen

Per scale: simulate the log (``bench.logs``), ingest it into a fresh lake, then full replays in the order
generated, interpreted, generated, interpreted: the first of each warms the JVM up; the table gives the second.
"""

from __future__ import annotations

import argparse
import os
import platform
from datetime import UTC, datetime
from functools import partial

from bench.clock import timed
from bench.logs import add_log_arguments, simulated_log, sizes_of
from lakehouse import spark_settings
from lakehouse.ingest import IngestOptions, ingest
from lakehouse.lake import Lake
from lakehouse.spark import SparkOptions, get_spark
from replay.store import runs as store

CLUSTER = "bench-codegen"
MODES = {"generated code": -1, "interpreted": 2**62}  # mode → the INTERPRETED_UP_TO that forces it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_log_arguments(parser)
    parser.add_argument("--scales", default="1000,100000", help="record counts, comma-separated")
    args = parser.parse_args()
    spark = get_spark(SparkOptions())
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, {os.cpu_count()} cores; "
          f"master {spark.sparkContext.master}")
    rows = []
    for records in (int(scale) for scale in args.scales.split(",")):
        out = args.out / str(records)
        count, _ = simulated_log(out, sizes_of(records, args.brokers, args.topics, args.partitions_per_topic),
                                 reuse=args.reuse_logs)
        lake = Lake(out / "lake")
        if not lake.table_exists(store.METADATA_LOG):
            ingest(spark, lake, str(out / "log"), IngestOptions(cluster_id=CLUSTER))
        seconds: dict[str, float] = {}
        for mode in [*MODES, *MODES]:
            spark_settings.INTERPRETED_UP_TO = MODES[mode]
            _, seconds[mode] = timed(partial(store.run_replay, spark, lake, full=True))
            print(f"{count:,} records, {mode}: {seconds[mode]:.1f} s")
        rows.append(f"| {count:,} | {seconds['generated code']:.1f} | {seconds['interpreted']:.1f} |")
    print("\n| records | full replay, generated code s | interpreted s |\n|---|---|---|", *rows, sep="\n")


if __name__ == "__main__":
    main()
