"""The full replay's derivation (state machines and election audit) piece by piece on a replayed lake: where the
stage's time goes, each piece forced on its own (a checkpoint, or a computation into Spark's ``noop`` sink).

    .venv/bin/python -m bench.bench_derivation --lake /tmp/kraft-bench-growth/10m/lake/delta-spark

The pieces are those of ``replay.store.derived.derived_tables``, on the lake's latest history tables: nothing is written
to the lake. Compare two commits by running each in its own process on the same lake.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pyspark.sql import DataFrame

from bench.bench_replay import checkout_commit
from bench.clock import timed
from lakehouse.lake import Lake
from lakehouse.spark import SparkOptions, get_spark
from lakehouse.tables import BROKER_HISTORY, CONFIG_HISTORY, HISTORY_TABLES, PARTITION_HISTORY
from replay.audit.effective_configs import configs_in_force
from replay.audit.elections import elections, leaderless_periods
from replay.audit.state_machines import partition_state_history, replica_state_history
from replay.store.derived import written_input

Result = TypeVar("Result")


def _computed(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, required=True, help="a lake bench_replay (or `kraft-replay replay`) made")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="spark.sql.shuffle.partitions (the full replay's: one per 250,000 records, at least 8)")
    parser.add_argument("--driver-memory", default="2g")
    args = parser.parse_args()
    spark = get_spark(SparkOptions(driver_memory=args.driver_memory, shuffle_partitions=args.shuffle_partitions))
    lake = Lake(args.lake)
    history = {name: lake.read(spark, name) for name in HISTORY_TABLES}
    configs = configs_in_force(spark, lake, history[CONFIG_HISTORY])
    brokers = history[BROKER_HISTORY]
    seconds: list[tuple[str, float]] = []

    def piece(name: str, action: Callable[[], Result]) -> Result:
        result, took = timed(action)
        seconds.append((name, took))
        return result

    derivation = piece(f"{PARTITION_HISTORY} distributed and sorted by partition (checkpoint)",
                       lambda: written_input(history))
    partitions, replicas = derivation.partitions, derivation.replicas
    audit = piece("the election audit (checkpoint)",
                  lambda: elections(partitions, brokers, configs=configs))
    # the state machines are one JVM pass each (``replay.audit.state_machines``): computed whole, nothing checkpointed
    piece("replica_state_history, computed", lambda: _computed(replica_state_history(replicas, brokers)))
    piece("partition_state_history, computed", lambda: _computed(partition_state_history(partitions)))
    piece("leaderless_periods, computed", lambda: _computed(leaderless_periods(partitions, audit)))
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit {checkout_commit()}; lake {args.lake}; "
          f"shuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}")
    print("| piece | s |\n|---|---|")
    for name, took in seconds:
        print(f"| {name} | {took:.1f} |")
    print(f"| the pieces together | {sum(took for _, took in seconds):.1f} |")


if __name__ == "__main__":
    main()
