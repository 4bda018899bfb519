"""A real log's first answer and its increment beside Kafka's own metadata shell (issue 42, targets 1 and 2).

    nice -n 19 .venv/bin/python -m bench.bench_first_answer --out /tmp/kraft-bench-first-answer

Steps: simulate a data directory the size of a real cluster's log (``bench.logs.real_like_log``: 30,000 records of 3
brokers by default, the whole cluster restarted 60 % into it, then the next 100 in a second directory) → Kafka's shell
(``bench.kafka_shell``: ``MetadataShell --snapshot SEGMENT ls /image/cluster/brokers``, a fresh JVM per run, its answer
checked) → ``kraft-replay run DIR --no-report`` on a new lake as a fresh process, as a new user types it →
``kraft-replay ingest`` of the 100 more records into a copy of that lake, then ``kraft-replay replay`` (the increment)
as a fresh process. ``--runs`` runs of each, the median; every command as its user types it (the default engine, Spark's
start included). Then all of it again with the resident server (``kraft-replay server start``, timed once with its
warm-up, stopped at the end). One table, ready for BENCHMARKS.md: the times and their multiples of the shell's (targets:
the first answer at most 10 times the shell's, the increment at most 5 times).
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_replay import checkout_commit, fresh_cli
from bench.kafka_shell import ShellUnavailableError, shell_classpath, timed_shell
from bench.logs import SEED, real_like_log

FIRST_ANSWER_TARGET = 10  # issue 42: `run DIR --no-report` within 10 times Kafka's shell
INCREMENT_TARGET = 5  # issue 42: `replay` of 100 more records within 5 times Kafka's shell
SHELL_PATH = "/image/cluster/brokers"  # what Kafka's shell is asked: empty until the whole file is read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_log_arguments(parser, runs=3)
    args = parser.parse_args()
    count, more = first_answer_log(args)
    segment = min((args.out / "log" / "__cluster_metadata-0").glob("*.log"))
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {checkout_commit()}, {platform.node()}, "
          f"python {platform.python_version()}; {count:,} records ({args.brokers} brokers, {args.topics} topics x "
          f"{args.partitions_per_topic} partitions) + {more} more; median of {args.runs} runs")
    try:
        classpath = shell_classpath(args.out)
    except ShellUnavailableError as error:
        raise SystemExit(f"Kafka's shell is not available here: {error}") from error
    brokers = shell_brokers(classpath, segment)[0]
    print(f"Kafka's shell: ls {SHELL_PATH} -> {' '.join(brokers)}")
    shell_s = median(args.runs, lambda: shell_brokers(classpath, segment, expected=brokers)[1])
    lake, base = args.out / "lake", args.out / "lake-replayed"
    rows = [("each command starts Spark", measured(args, lake, base, None))]
    server_dir = args.out / "server"
    start_s = command("server", "start", server_dir=server_dir)
    try:
        rows.append((f"with the resident server (`server start` {start_s:.0f} s, once)",
                     measured(args, lake, base, server_dir)))
    finally:
        command("server", "stop", server_dir=server_dir)
    print("| records | Spark | Kafka shell s | `run --no-report` s (x shell) | `ingest` of 100 more s | "
          "`replay` of them s (x shell) |")
    print("|---|---|---|---|---|---|")
    for spark, (run_s, ingest_s, increment_s) in rows:
        print(f"| {count:,} | {spark} | {shell_s:.2f} | {run_s:.1f} ({run_s / shell_s:.1f}x; target <= "
              f"{FIRST_ANSWER_TARGET}x) | {ingest_s:.1f} | {increment_s:.1f} ({increment_s / shell_s:.1f}x; target "
              f"<= {INCREMENT_TARGET}x) |")


def add_log_arguments(parser: argparse.ArgumentParser, runs: int) -> None:
    """The data directory's sizes and place, and how many runs of each command (this bench's and
    ``bench.bench_class_archive``'s)."""
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--more", type=int, default=100)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--out", type=Path, default=Path("/tmp/kraft-bench-first-answer"))
    parser.add_argument("--reuse-logs", action="store_true")


def first_answer_log(args: argparse.Namespace) -> tuple[int, int]:
    """The data directory of ``add_log_arguments``'s sizes (``bench.logs.real_like_log``): (its records, the more
    records after them)."""
    sizes = {"records": args.records, "more": args.more, "brokers": args.brokers, "topics": args.topics,
             "partitions_per_topic": args.partitions_per_topic, "seed": SEED}
    return real_like_log(args.out, sizes, reuse=args.reuse_logs)


def shell_brokers(classpath: str, segment: Path, expected: list[str] | None = None) -> tuple[list[str], float]:
    """Kafka's shell listing the brokers of the segment's last image: (their ids, wall seconds). An empty listing,
    or one other than ``expected``, is a shell that answered before reading the whole file: the bench stops."""
    printed, seconds = timed_shell(classpath, segment, "ls", SHELL_PATH)
    brokers = printed.split()
    if not brokers or (expected is not None and brokers != expected):
        raise SystemExit(f"Kafka's shell listed {brokers} under {SHELL_PATH}, not the whole file's "
                         f"{expected or 'brokers'}: its answer cannot be the yardstick")
    return brokers, seconds


def measured(args: argparse.Namespace, lake: Path, base: Path, server_dir: Path | None) -> tuple[float, float, float]:
    """The medians of the first answer, the ingest of the more records and the increment's replay, each command a
    fresh process (using the resident server of ``server_dir``, if given); ``base`` is left the replayed lake."""

    def first_answer() -> float:
        shutil.rmtree(lake, ignore_errors=True)
        return command("run", str(args.out / "log"), "--lake", str(lake), "--no-report", "--quiet",
                       server_dir=server_dir)

    run_s = median(args.runs, first_answer)
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(lake, base)
    ingests: list[float] = []

    def increment() -> float:
        shutil.rmtree(lake, ignore_errors=True)
        shutil.copytree(base, lake)
        ingests.append(command("ingest", str(args.out / "more"), "--lake", str(lake), "--quiet",
                               server_dir=server_dir))
        return command("replay", "--lake", str(lake), "--quiet", server_dir=server_dir)

    increment_s = median(args.runs, increment)
    return run_s, statistics.median(ingests), increment_s


def median(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def command(*args: str, server_dir: Path | None = None) -> float:
    """``kraft-replay ARGS`` as a fresh process, as a user types it: its wall seconds; a failure stops the bench."""
    done, seconds = fresh_cli(*args, server_dir=server_dir)
    if done.returncode != 0:
        raise SystemExit(f"`kraft-replay {' '.join(args)}` exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


if __name__ == "__main__":
    main()
