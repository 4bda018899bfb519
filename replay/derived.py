"""Tables derived from the replayed history: the controller state machines and the election audit.

They are functions of ``partition_history``, ``replica_history`` and ``broker_history`` alone, so every
replay (full or incremental) recomputes them from the history tables it has just written.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from replay.elections import elections, leaderless_periods
from replay.state_machines import PARTITION_KEY, REPLICA_KEY, partition_state_history, replica_state_history

# table → the sort order it is written in (a unique key, so the layout is deterministic)
DERIVED_ORDER: dict[str, tuple[str, ...]] = {
    "replica_state_history": (*REPLICA_KEY, "valid_from_offset", "step"),
    "partition_state_history": (*PARTITION_KEY, "valid_from_offset", "step"),
    "elections": (*PARTITION_KEY, "offset"),
    "leaderless_periods": (*PARTITION_KEY, "valid_from_offset"),
}
DERIVED_TABLES: tuple[str, ...] = tuple(DERIVED_ORDER)


def derived_tables(history: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """``history``: at least partition_history, replica_history and broker_history."""
    # Every derived table is a set of windows and aggregates per partition (or per replica of a partition):
    # distributed by partition once here, none of them shuffles the history again.
    partitions = history["partition_history"].repartition(*PARTITION_KEY).localCheckpoint(eager=True)
    replicas = history["replica_history"].repartition(*PARTITION_KEY)
    brokers = history["broker_history"]
    audit = elections(partitions, brokers).localCheckpoint(eager=True)
    return {
        "replica_state_history": replica_state_history(replicas, partitions, brokers),
        "partition_state_history": partition_state_history(partitions),
        "elections": audit,
        "leaderless_periods": leaderless_periods(partitions, audit),
    }
