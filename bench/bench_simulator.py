"""Generation rate and peak memory of the KRaft controller simulator (the random scenario).

    .venv/bin/python bench/bench_simulator.py --records 1000000 --brokers 1000 --topics 1000 \
        --partitions-per-topic 100 [--write segments|jsonl --out /tmp/bench-sim]

Prints records/s and peak RSS (resource.getrusage). Records are streamed and dropped, so memory is the
cluster state; with --write they also go through the real segment/JSON-lines writers.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator import ScenarioOptions, run_scenario, write_log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--metadata-version", default="3.9")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", choices=("segments", "jsonl"), default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-simulator"))
    args = parser.parse_args()

    options = ScenarioOptions(brokers=args.brokers, topics=args.topics,
                              partitions_per_topic=args.partitions_per_topic,
                              replication_factor=args.replication_factor, events=10**9, seed=args.seed,
                              metadata_version=args.metadata_version)
    run = run_scenario("random", options)
    entries = itertools.islice(run.entries(), args.records)
    types: Counter[str] = Counter()

    def counted():  # type: ignore[no-untyped-def]
        for entry in entries:
            types[entry.type_name] += 1
            yield entry

    started = time.perf_counter()
    if args.write:
        count, _ = write_log(counted(), args.out, args.write, cluster_id=run.sim.cluster_id, node_id=3000)
    else:
        count = sum(1 for _ in counted())
    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = count / elapsed
    print(f"machine: {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, {platform.system()}")
    print(f"records: {count} in {elapsed:.1f}s = {rate:,.0f} records/s"
          f"{' (including ' + args.write + ' writing)' if args.write else ' (generation only)'}")
    print(f"peak RSS: {peak_mb:,.0f} MB; partitions in state: {len(run.sim.partitions)}, "
          f"brokers: {len(run.sim.brokers)}")
    print(f"10M records extrapolated: {10_000_000 / rate / 60:.1f} min")
    print("by type: " + ", ".join(f"{k} {v}" for k, v in types.most_common()))


if __name__ == "__main__":
    main()
