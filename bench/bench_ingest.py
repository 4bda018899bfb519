"""End-to-end ingest benchmark: a generated N-record metadata log into a fresh lake, then offset lookups.

Run ``python -m bench.bench_ingest --records 10000000 --out /tmp/kraft-bench``. The log is generated (and
cached) with the decode benchmark's generator (valid Kafka segments of a busy cluster's record mix), sized
from its records-per-MB ratio. The ingest runs with ``local[2]`` and ``spark.driver.memory=2g``; the
report gives wall time, records/s, the peak RSS of the driver Python process and of the Spark JVM
(``VmHWM``), and cold/warm times of a one-offset lookup through ``Lake.read_offsets`` (file skipping by
Delta statistics).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

from bench.bench_decode import generate
from records.batch import Compression

RECORDS_PER_MB = 13_600  # measured on the generator's mix (136,438 records in 10 MB)


def _peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/kraft-bench"))
    parser.add_argument("--segment-mb", type=int, default=128)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    size_mb = max(1, round(args.records / RECORDS_PER_MB))
    started = time.perf_counter()
    partition, manifest = generate(args.out, size_mb, 1, Compression.NONE, args.segment_mb)
    print(f"log: {partition.parent} {manifest['records']:,} records, {manifest['bytes'] / 2**20:,.0f} MB, "
          f"{manifest['segments']} segments (generated/cached in {time.perf_counter() - started:.0f}s)", flush=True)

    from kraft_replay.formatting import format_ingest_summary
    from lakehouse.ingest import ingest
    from lakehouse.lake import Lake
    from lakehouse.spark import SparkOptions, get_spark
    from lakehouse.spark_settings import file_statistics
    from lakehouse.tables import METADATA_LOG

    lake_root = args.out / f"lake-{manifest['records']}"
    shutil.rmtree(lake_root, ignore_errors=True)
    started = time.perf_counter()
    spark = get_spark(SparkOptions(master=args.master, driver_memory="2g"))
    spark_s = time.perf_counter() - started
    lake = Lake(lake_root)
    summary = ingest(spark, lake, partition.parent)
    wall = time.perf_counter() - started
    print("\n".join(format_ingest_summary(summary)), flush=True)

    cluster = summary.cluster_ids[0]
    target = manifest["records"] // 2 + 7
    lookups = []
    for _ in range(4):
        t = time.perf_counter()
        with file_statistics(spark):  # as a replay reads the log past its checkpoint
            rows = lake.read_offsets(spark, METADATA_LOG, cluster, target, target).select("offset", "record_type"
                                                                                          ).collect()
        lookups.append(time.perf_counter() - t)
        assert [r["offset"] for r in rows] == [target]
    files = len(lake.delta_table(METADATA_LOG).file_uris())
    jvm = max((_peak_rss_mb(child) for child in _children(os.getpid())), default=float("nan"))
    result = {
        "records": manifest["records"], "input_mb": round(manifest["bytes"] / 2**20), "added": summary.records_added,
        "wall_s_incl_spark_start": round(wall, 1), "spark_start_s": round(spark_s, 1),
        "records_per_s": round(manifest["records"] / wall), "files": files,
        "driver_python_peak_rss_mb": round(_peak_rss_mb(os.getpid())), "jvm_peak_rss_mb": round(jvm),
        "lookup_cold_s": round(lookups[0], 2), "lookup_warm_s": round(min(lookups[1:]), 2),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
