"""Tables derived from the replayed history: the controller state machines and the election audit.

They are functions of ``partition_history``, ``replica_history`` and ``broker_history`` alone, one partition
at a time (the brokers are the only input shared by partitions). A full replay computes them from the
history tables it has just written. An incremental replay recomputes only the partitions the new records can
change (``affected_partitions``) and replaces only the files of rows that may still change (``mutable`` in
``replay.layout``): every derived row is causal, a row about offsets up to the checkpoint C depends only on
the history up to C, except the rows kept apart as mutable (open versions, an election's lost leader not yet
explained), so the rows of other files are the same whether computed before or after C.
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from replay.elections import (
    broker_status,
    elections,
    explained_losses,
    leaderless_periods,
    resumed_leaderless_periods,
)
from replay.layout import mutable
from replay.state_machines import (
    DELETION_INELIGIBLE,
    PARTITION_KEY,
    REPLICA_KEY,
    partition_state_history,
    replica_state_history,
)

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


# table → its offset columns: a row with one of them after the checkpoint C was made (or changed) by the records
# after C; a row with none, and not mutable, was written as it is by an earlier replay.
_OFFSETS: dict[str, tuple[str, ...]] = {
    "replica_state_history": ("valid_to_offset",),
    "partition_state_history": ("valid_to_offset",),
    "elections": ("offset", "lost_leader_cause_offset"),
    "leaderless_periods": ("valid_to_offset", "cause_offset"),
}
GROWING_HISTORY = ("partition_history", "replica_history")


def _mutable(name: str, columns: list[str]) -> Column:
    rows = mutable(name, columns)
    assert rows is not None, f"{name} has no mutable rows"
    return rows


def _late(columns: tuple[str, ...]) -> Column:
    """One of ``columns`` is after the row's cluster's checkpoint ``_c`` (a null one is not)."""
    return reduce(or_, [F.coalesce(F.col(c) > F.col("_c"), F.lit(False)) for c in columns])


def affected_partitions(changed: dict[str, DataFrame], brokers: DataFrame, waiting: dict[str, DataFrame],
                        checkpoints: DataFrame) -> DataFrame:
    """The partitions whose derived rows an increment may change (``cluster_id, topic_id, partition_id``).

    ``changed``: the rows of partition_history and replica_history the increment wrote; ``brokers``: the
    whole broker_history; ``waiting``: the stored mutable rows of the derived tables; ``checkpoints``:
    ``cluster_id, _c`` of the clusters with new records. A partition is affected when one of its versions
    starts or ends after C, when a deletion of one of its replicas waits for a broker that changed after C,
    or when an election of it waits for the next state change of the broker that lost the leader."""
    cps = F.broadcast(checkpoints)

    def after(df: DataFrame, *columns: str) -> DataFrame:
        return df.join(cps, ["cluster_id"]).where(_late(columns))

    parts = [after(changed[name], "valid_from_offset", "valid_to_offset").select(*PARTITION_KEY)
             for name in GROWING_HISTORY]
    moved = F.broadcast(after(brokers, "valid_from_offset", "valid_to_offset")
                        .select("cluster_id", "broker_id").distinct())
    deletions = waiting["replica_state_history"].where(
        (F.col("state") == DELETION_INELIGIBLE) & F.col("valid_to_offset").isNull())
    parts.append(deletions.join(moved, ["cluster_id", "broker_id"]).select(*PARTITION_KEY))
    losses = waiting["elections"].where(mutable("elections", waiting["elections"].columns))
    parts.append(losses.join(moved.withColumnRenamed("broker_id", "previous_leader"),
                             ["cluster_id", "previous_leader"]).select(*PARTITION_KEY))
    return reduce(DataFrame.unionByName, parts).distinct()


def resumed_partitions(live: dict[str, DataFrame], brokers: DataFrame, stored: dict[str, DataFrame],
                       affected: DataFrame, checkpoints: DataFrame) -> dict[str, DataFrame]:
    """The derived rows of the ``affected`` partitions from their checkpoint C on, without their history
    before C: the windows run over the versions live after C (``live``: rows of partition_history and
    replica_history that hold at least those) and go on from the stored mutable rows (``stored``), the state
    at C, as an incremental replay goes on from its seeds. ``brokers``: the whole broker_history.

    Rows about offsets up to C come out too, some of them not as a full replay has them: ``refreshed_rows``
    keeps only the late and mutable ones, which are exact."""
    keys = F.broadcast(affected)
    cps = F.broadcast(checkpoints)

    def after_c(df: DataFrame) -> DataFrame:
        return (df.join(keys, list(PARTITION_KEY), "left_semi").join(cps, ["cluster_id"])
                .where(F.col("valid_to_offset").isNull() | (F.col("valid_to_offset") > F.col("_c"))).drop("_c"))

    # distributed by partition once, as in ``derived_tables``
    partitions = after_c(live["partition_history"]).repartition(*PARTITION_KEY).localCheckpoint(eager=True)
    replicas = after_c(live["replica_history"]).repartition(*PARTITION_KEY)
    opened = {name: df.join(keys, list(PARTITION_KEY), "left_semi").where(_mutable(name, df.columns))
              .join(cps, ["cluster_id"]).localCheckpoint(eager=True) for name, df in stored.items()}
    status = broker_status(brokers).localCheckpoint(eager=True)
    audit = elections(partitions, brokers, status).unionByName(
        explained_losses(opened["elections"].drop("_c"), status)).localCheckpoint(eager=True)
    return {
        "replica_state_history": replica_state_history(replicas, partitions, brokers,
                                                       opened["replica_state_history"]),
        "partition_state_history": partition_state_history(partitions, opened["partition_state_history"]),
        "elections": audit,
        "leaderless_periods": resumed_leaderless_periods(partitions, audit, opened["leaderless_periods"],
                                                         checkpoints),
    }


def refreshed_rows(name: str, stored: DataFrame, recomputed: DataFrame, affected: DataFrame,
                   checkpoints: DataFrame) -> DataFrame:
    """What replaces the ``stored`` files of derived table ``name`` (those of its mutable rows; every file of a
    table not written split): their rows of the partitions not affected and their settled rows, and the
    recomputed rows of the affected partitions that are mutable or have an offset after C (the settled ones
    are in the files that stay, or among the stored settled rows)."""
    keys = F.broadcast(affected)
    kept = stored.join(keys, list(PARTITION_KEY), "left_anti").unionByName(
        stored.join(keys, list(PARTITION_KEY), "left_semi").where(~_mutable(name, stored.columns)))
    fresh = recomputed.join(F.broadcast(checkpoints), ["cluster_id"]).where(
        _late(_OFFSETS[name]) | _mutable(name, recomputed.columns)).select(*recomputed.columns)
    return kept.select(*recomputed.columns).unionByName(fresh)
