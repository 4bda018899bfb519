"""What ``kraft-replay lake optimize`` and ``lake vacuum`` take on a replayed lake of the default engine (delta-spark),
each a fresh process as a user types it.

    nice -n 19 .venv/bin/python -m bench.bench_maintenance --reuse-logs --out /tmp/kraft-bench-first-answer

The first-answer bench's data directory (``bench.bench_first_answer.first_answer_log``: 30,000 records of 3 brokers,
then 100 more): ``run DIR --no-report``, ``ingest`` of the 100 more and their ``replay`` make a lake whose tables hold
replaced files. Then, ``--runs`` times, on a fresh copy of it: ``lake optimize`` (every table), then ``lake vacuum
--retention-hours 0`` (deletes the files the replay and the compaction left unreferenced). One table of medians for
BENCHMARKS.md; run it at two commits to compare them.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_first_answer import add_log_arguments, command, first_answer_log
from bench.bench_replay import checkout_commit

STEPS = ("optimize", "vacuum")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_log_arguments(parser, runs=3)
    args = parser.parse_args()
    count, more = first_answer_log(args)
    replayed = args.out / "lake-maintenance-replayed"
    shutil.rmtree(replayed, ignore_errors=True)
    command("run", str(args.out / "log"), "--lake", str(replayed), "--no-report", "--quiet")
    command("ingest", str(args.out / "more"), "--lake", str(replayed), "--quiet")
    command("replay", "--lake", str(replayed), "--quiet")
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {checkout_commit()}, {platform.node()}, "
          f"python {platform.python_version()}; {count:,} records + {more} more, replayed; {args.runs} runs")
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    for _ in range(args.runs):
        for step, seconds in maintained(replayed, args.out / "lake-maintenance").items():
            times[step].append(seconds)
    print("| command (fresh process) | median s | runs s |")
    print("|---|---|---|")
    for step, runs in times.items():
        print(f"| `lake {step}` | {statistics.median(runs):.1f} | {', '.join(f'{s:.1f}' for s in runs)} |")
    shutil.rmtree(replayed, ignore_errors=True)


def maintained(replayed: Path, lake: Path) -> dict[str, float]:
    """``lake optimize`` then ``lake vacuum --retention-hours 0`` on a fresh copy of the replayed lake: wall seconds."""
    shutil.rmtree(lake, ignore_errors=True)
    shutil.copytree(replayed, lake)
    try:
        return {"optimize": command("lake", "optimize", "--lake", str(lake)),
                "vacuum": command("lake", "vacuum", "--lake", str(lake), "--retention-hours", "0")}
    finally:
        shutil.rmtree(lake, ignore_errors=True)


if __name__ == "__main__":
    main()
