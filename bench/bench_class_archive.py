"""What the driver's class archive (``lakehouse.class_archive``) saves each command that starts Spark (issue 42:
the fixed cost of every command).

    nice -n 19 .venv/bin/python -m bench.bench_class_archive --reuse-logs --out /tmp/kraft-bench-first-answer

The first-answer bench's data directory and arguments (``bench.bench_first_answer.first_answer_log``: 30,000 records
of 3 brokers, then 100 more), then, ``--runs`` times, each command as a fresh process with the archive and without it
(``KRAFT_REPLAY_CLASS_ARCHIVE=off``), one after the other (A B A B: the ratio is taken pair by pair, so a machine
whose speed drifts moves both): ``run DIR --no-report`` on a new lake, ``ingest`` of the 100 more records into the
replayed lake, and ``replay`` of them. One table of medians for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_first_answer import add_log_arguments, command, first_answer_log
from bench.bench_replay import checkout_commit
from lakehouse.class_archive import ARCHIVE_ENV, OFF, java_options
from lakehouse.class_archive_build import build

WITH, WITHOUT = "with the archive", "without"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_log_arguments(parser, runs=5)
    args = parser.parse_args()
    count, more = first_answer_log(args)
    print(build())
    if not java_options():  # what a driver maps: none, so nothing to compare
        raise SystemExit(f"no class archive to compare with ({ARCHIVE_ENV} or the build above)")
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {checkout_commit()}, {platform.node()}, "
          f"python {platform.python_version()}; {count:,} records + {more} more; {args.runs} runs of each, "
          "alternated")
    times: dict[str, dict[str, list[float]]] = {step: {WITH: [], WITHOUT: []} for step in ("run", "ingest", "replay")}
    for _ in range(args.runs):
        for archive in (WITH, WITHOUT):
            for step, seconds in commands(args.out, archive == WITH).items():
                times[step][archive].append(seconds)
    print(f"| command (fresh process) | {WITH} s | {WITHOUT} s | saved s (ratio, median of pairs) |")
    print("|---|---|---|---|")
    for step, pair in times.items():
        ratios = [a / b for a, b in zip(pair[WITH], pair[WITHOUT], strict=True)]
        with_s, without_s = statistics.median(pair[WITH]), statistics.median(pair[WITHOUT])
        print(f"| `{step}` | {with_s:.1f} | {without_s:.1f} | {without_s - with_s:.1f} "
              f"({statistics.median(ratios):.2f}) |")


def commands(out: Path, archive: bool) -> dict[str, float]:
    """One first answer, ingest and increment as fresh processes, with the class archive or without: their wall
    seconds."""
    lake = out / "lake-archive-bench"
    saved = os.environ.get(ARCHIVE_ENV)
    if not archive:
        os.environ[ARCHIVE_ENV] = OFF
    try:
        shutil.rmtree(lake, ignore_errors=True)
        run_s = command("run", str(out / "log"), "--lake", str(lake), "--no-report", "--quiet")
        ingest_s = command("ingest", str(out / "more"), "--lake", str(lake), "--quiet")
        replay_s = command("replay", "--lake", str(lake), "--quiet")
    finally:
        if saved is None:
            os.environ.pop(ARCHIVE_ENV, None)
        else:
            os.environ[ARCHIVE_ENV] = saved
    shutil.rmtree(lake, ignore_errors=True)
    return {"run": run_s, "ingest": ingest_s, "replay": replay_s}


if __name__ == "__main__":
    main()
