"""Kafka's own metadata fold, timed: how fast Kafka itself (its ``MetadataBatchLoader``, ``MetadataDelta`` and
``MetadataImage``, the referee of tests/test_kafka_referee.py) folds a simulated log to its end, the number the
Spark replay and the reference fold are measured against.

    nice -n 19 .venv/bin/python -m bench.bench_kafka_fold --records 200000 --out /tmp/kraft-bench-replay

The log is ``bench.bench_replay``'s (``bench.logs``: the same sizes, seed and layout under ``--out``), so a log
that benchmark generated is folded as it is with ``--reuse-logs`` (10 M records take long to simulate). Here
``--out`` is never deleted: a directory of other sizes is refused. The fold runs ``tests/referee/KafkaFold.java
--end`` in one JVM per Kafka version: it reads every batch with Kafka's ``FileRecords`` and ``MetadataRecordSerde``,
replays it and publishes an image after every batch, as the referee does (the loader discards an aborted metadata
transaction only at a flush right after its AbortTransactionRecord: flushing less often publishes aborted records),
and prints only the end: the fold's own wall time, the final image's size and the heap (peak, and in use after a
full GC: what the final image holds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.logs import LogMismatchError, add_log_arguments, metadata_log, simulated_log, sizes_of
from lakehouse.jars import KAFKA_VERSIONS
from tests.referee import RefereeUnavailable, compiled, kafka_classpath


def fold(version: str, log_dir: Path, *, heap: str) -> tuple[dict[str, Any], float, int]:
    """Kafka ``version``'s fold of ``log_dir`` to its end: (its end line, the JVM's wall time in seconds including
    start-up, the JVM's peak RSS in bytes)."""
    classpath = os.pathsep.join([str(compiled(version)), kafka_classpath(version).classpath])
    args = ["java", f"-Xmx{heap}", "-cp", classpath, "KafkaFold", str(log_dir), "--end"]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(args, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)  # this JVM's own rusage: its peak RSS
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    if process.returncode != 0:
        raise SystemExit(f"Kafka {version}'s fold of {log_dir} failed:\n{err[-3000:]}")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    faults = [line for line in lines if "fault" in line]
    end = next(line for line in lines if "end" in line)
    if faults:
        print(f"Kafka {version} reported {len(faults)} faults; the first: {faults[0]}", file=sys.stderr)
    rss = usage.ru_maxrss * 1024  # KiB on Linux
    return end, wall, rss


def _mib(value: float) -> str:
    return f"{value / (1 << 20):,.0f}"


HEADER = ("| Kafka | records | batches | images published | fold s | records/s | MB/s | JVM wall s | "
          "heap peak MiB | heap after GC MiB | GC s | JVM peak RSS MiB | final image |")


def timed_row(version: str, log_dir: Path, *, heap: str, size: int) -> dict[str, Any] | None:
    """Fold ``log_dir`` (``size`` bytes of segments) with Kafka ``version`` and print its row under ``HEADER``:
    its end line, or None when that Kafka cannot run here (the row says why)."""
    try:
        end, wall, rss = fold(version, log_dir, heap=heap)
    except RefereeUnavailable as reason:
        print(f"| {version} | skipped: {reason} |")
        return None
    seconds = end["seconds"]
    print(f"| {version} | {end['records']:,} | {end['batches']:,} | {end['published']:,} | {seconds:.1f} | "
          f"{end['records'] / seconds:,.0f} | {size / 1e6 / seconds:.1f} | {wall:.1f} | "
          f"{_mib(end['heapPeakBytes'])} | {_mib(end['heapAfterGcBytes'])} | {end['gcMillis'] / 1000:.1f} | "
          f"{_mib(rss)} | {end['brokers']} brokers, {end['topics']} topics, {end['partitions']} partitions "
          f"at offset {end['lastOffset']} |")
    return end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_log_arguments(parser)
    parser.add_argument("--kafka", default=",".join(KAFKA_VERSIONS),
                        help=f"Kafka versions whose fold to time, comma-separated (default {','.join(KAFKA_VERSIONS)})")
    parser.add_argument("--heap", default="4g", help="the JVM's -Xmx (default 4g)")
    parser.add_argument("--check", action="store_true",
                        help="then fold the log with the reference fold (replay.reference.fold, slow) and compare the "
                             "final image's counts with Kafka's")
    args = parser.parse_args()

    sizes = sizes_of(args.records, args.brokers, args.topics, args.partitions_per_topic)
    try:
        count, _ = simulated_log(args.out, sizes, reuse=args.reuse_logs, replace=False)
    except LogMismatchError as exc:
        raise SystemExit(f"bench_kafka_fold: {exc}") from None
    log_dir, size = metadata_log(args.out)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine {platform.machine()}, {os.cpu_count()} cores; "
          f"log {log_dir} ({count:,} records, {size / 1e6:,.1f} MB); -Xmx{args.heap}; an image after every batch")
    print(HEADER)
    ends: list[dict[str, Any]] = []
    for version in args.kafka.split(","):
        end = timed_row(version, log_dir, heap=args.heap, size=size)
        if end is not None:
            ends.append(end)
    if args.check:
        _check(log_dir, ends)


def _check(log_dir: Path, ends: list[dict[str, Any]]) -> None:
    """Kafka's final image against the reference fold's, by its counts (the referee tests compare every field)."""
    from records.sources import read_entries
    from replay.reference.fold import fold as reference_fold

    started = time.perf_counter()
    image = None
    for commit in reference_fold(read_entries(log_dir), None):
        image = commit.image
    seconds = time.perf_counter() - started
    ours = (0, 0, 0) if image is None else (len(image.brokers), len(image.topics), len(image.partitions))
    for end in ends:
        theirs = (end["brokers"], end["topics"], end["partitions"])
        verdict = "the same" if theirs == ours else f"DIFFERENT: Kafka {theirs}"
        print(f"check: the reference fold ({seconds:.1f} s) ends with {ours[0]} brokers, {ours[1]} topics, "
              f"{ours[2]} partitions: {verdict}")


if __name__ == "__main__":
    main()
