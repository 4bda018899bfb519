"""Tables derived from the replayed history: the controller state machines and the election audit.

They are functions of ``partition_history``, ``replica_history`` and ``broker_history`` alone, one partition
at a time (the brokers are the only input shared by partitions). A full replay computes them from its fold, not
from the tables it writes (``folded_input``): a small log's while it writes them, a large one's after
(``replay.store.runs``). An incremental replay recomputes only the partitions the new records can
change (``affected_partitions``) and replaces only the files of rows that may still change (``mutable`` in
``replay.store.layout``): every derived row is causal, a row about offsets up to the checkpoint C depends only on
the history up to C, except the rows kept apart as mutable (open versions, an election's lost leader not yet
explained), so the rows of other files are the same whether computed before or after C.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial, reduce
from operator import or_
from typing import TypeVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.spark_settings import keyed_checkpoint
from lakehouse.tables import (
    BROKER_HISTORY,
    ELECTIONS,
    LEADERLESS_PERIODS,
    PARTITION_HISTORY,
    PARTITION_KEY,
    PARTITION_STATE_HISTORY,
    REPLICA_HISTORY,
    REPLICA_STATE_HISTORY,
)
from replay.audit.effective_configs import ConfigsInForce
from replay.audit.elections import (
    broker_status,
    elections,
    explained_losses,
    leaderless_periods,
    resumed_leaderless_periods,
)
from replay.audit.state_machines import (
    DELETION_INELIGIBLE,
    grouped_state_inputs,
    partition_state_history,
    replica_state_history,
    state_inputs,
)
from replay.core.history import lives_after
from replay.core.safe_points import SAFE_POINT, SafePoints
from replay.store.layout import mutable

Result = TypeVar("Result")


@dataclass(frozen=True)
class DerivationInput:
    """What the derived tables read. Every derived table is a set of windows and aggregates per partition (or per
    replica of a partition) in offset order: the partition versions, read by most of them, come distributed by
    partition and sorted by offset in each, so none of them shuffles or sorts them again; each replica's versions
    come grouped, distributed by partition (``replay.audit.state_machines.state_inputs``)."""
    partitions: DataFrame
    replicas: DataFrame
    brokers: DataFrame  # the whole broker_history


def written_input(history: Mapping[str, DataFrame]) -> DerivationInput:
    """The derivation's input from the history tables as written (``history``: at least partition_history,
    replica_history and broker_history), distributed and sorted here (the partitions: a checkpoint, a job)."""
    partitions = distributed_partitions(history[PARTITION_HISTORY])
    return DerivationInput(partitions, distributed_replicas(history[REPLICA_HISTORY], partitions),
                           history[BROKER_HISTORY])


def folded_input(partition_history: DataFrame, replica_versions: DataFrame, broker_history: DataFrame
                 ) -> DerivationInput:
    """The derivation's input from a full replay's fold, not from the tables it writes: its ``partition_history``
    (distributed by partition and sorted by offset, ``replay.fold.engine``), its replicas' versions
    (``replay.fold.replicas.replica_versions``, grouped from those without a shuffle)."""
    return DerivationInput(partition_history, state_inputs(replica_versions), broker_history)


def distributed_partitions(partition_history: DataFrame) -> DataFrame:
    """The partition versions distributed by partition and sorted by offset in each, checkpointed (runs a job)."""
    return keyed_checkpoint(partition_history, PARTITION_KEY, ("valid_from_offset",))


def distributed_replicas(replica_history: DataFrame, partitions: DataFrame) -> DataFrame:
    """Rows of ``replica_history`` distributed by partition and grouped per replica as the replica states read them,
    with the edges of their ``partitions`` (``distributed_partitions``: ``grouped_state_inputs``; no job)."""
    return grouped_state_inputs(replica_history.repartition(*PARTITION_KEY), partitions)


def derived_tables(versions: DerivationInput, configs: ConfigsInForce | None,
                   then: Callable[[str, DataFrame], Result]) -> dict[str, Result]:
    """The derived tables of ``versions``, each passed to ``then`` (name, rows) as soon as it can be computed (its
    write: the replica and partition states do not wait for the election audit); name → what ``then`` gave.
    ``configs``: what the election audit judges elections by (``replay.audit.election_configs``)."""
    partitions, brokers = versions.partitions, versions.brokers
    spark = partitions.sparkSession

    def audit() -> dict[str, Result]:
        found = elections(partitions, brokers, configs=configs)
        return run_concurrently(spark, {ELECTIONS: partial(then, ELECTIONS, found), LEADERLESS_PERIODS: lambda: then(
            LEADERLESS_PERIODS, leaderless_periods(partitions, found))})

    done = run_concurrently(spark, {  # independent, each a few jobs of mostly fixed latency
        ELECTIONS: audit,
        REPLICA_STATE_HISTORY: lambda: {REPLICA_STATE_HISTORY: then(
            REPLICA_STATE_HISTORY, replica_state_history(versions.replicas, brokers))},
        PARTITION_STATE_HISTORY: lambda: {PARTITION_STATE_HISTORY: then(
            PARTITION_STATE_HISTORY, partition_state_history(partitions))}})
    return {name: result for tables in done.values() for name, result in tables.items()}


# table → its offset columns: a row with one of them after the checkpoint C was made (or changed) by the records
# after C; a row with none, and not mutable, was written as it is by an earlier replay.
_OFFSETS: dict[str, tuple[str, ...]] = {
    REPLICA_STATE_HISTORY: ("valid_to_offset",),
    PARTITION_STATE_HISTORY: ("valid_to_offset",),
    ELECTIONS: ("offset", "lost_leader_cause_offset"),
    LEADERLESS_PERIODS: ("valid_to_offset", "cause_offset"),
}
# The history tables an incremental replay updates file by file (only the files of open versions); the small
# ones are rewritten whole.
GROWING_HISTORY = (PARTITION_HISTORY, REPLICA_HISTORY)


def _mutable(name: str) -> Column:
    rows = mutable(name)
    assert rows is not None, f"{name} has no mutable rows"
    return rows


def _late(columns: tuple[str, ...]) -> Column:
    """One of ``columns`` is after the row's cluster's checkpoint ``_c`` (a null one is not)."""
    return reduce(or_, [F.coalesce(F.col(c) > F.col(SAFE_POINT), F.lit(False)) for c in columns])


def affected_partitions(changed: dict[str, DataFrame], brokers: DataFrame, waiting: dict[str, DataFrame],
                        checkpoints: SafePoints) -> DataFrame:
    """The partitions whose derived rows an increment may change (``cluster_id, topic_id, partition_id``).

    ``changed``: the rows of partition_history and replica_history the increment wrote; ``brokers``: the
    whole broker_history; ``waiting``: the stored mutable rows of the derived tables; ``checkpoints``:
    ``cluster_id, _c`` of the clusters with new records. A partition is affected when one of its versions
    starts or ends after C, when a deletion of one of its replicas waits for a broker that changed after C,
    or when an election of it waits for the next state change of the broker that lost the leader."""
    def after(df: DataFrame, *columns: str) -> DataFrame:
        return checkpoints.join(df).where(_late(columns))

    parts = [after(changed[name], "valid_from_offset", "valid_to_offset").select(*PARTITION_KEY)
             for name in GROWING_HISTORY]
    moved = F.broadcast(after(brokers, "valid_from_offset", "valid_to_offset")
                        .select("cluster_id", "broker_id").distinct())
    deletions = waiting[REPLICA_STATE_HISTORY].where(
        (F.col("state") == DELETION_INELIGIBLE) & F.col("valid_to_offset").isNull())
    parts.append(deletions.join(moved, ["cluster_id", "broker_id"]).select(*PARTITION_KEY))
    losses = waiting[ELECTIONS].where(_mutable(ELECTIONS))
    parts.append(losses.join(moved.withColumnRenamed("broker_id", "previous_leader"),
                             ["cluster_id", "previous_leader"]).select(*PARTITION_KEY))
    return reduce(DataFrame.unionByName, parts).distinct()


def resumed_partitions(live: dict[str, DataFrame], brokers: DataFrame, stored: dict[str, DataFrame],
                       affected: DataFrame, checkpoints: SafePoints, configs: ConfigsInForce | None = None
                       ) -> dict[str, DataFrame]:
    """The derived rows of the ``affected`` partitions from their checkpoint C on, without their history
    before C: the windows run over the versions live after C (``live``: rows of partition_history and
    replica_history that hold at least those) and go on from the stored mutable rows (``stored``), the state
    at C, as an incremental replay goes on from its seeds. ``brokers``: the whole broker_history; ``configs``:
    as in ``derived_tables`` (an election's configs are those in force at its offset: causal too).

    Rows about offsets up to C come out too, some of them not as a full replay has them: ``refreshed_rows``
    keeps only the late and mutable ones, which are exact."""
    keys = F.broadcast(affected)

    def after_c(df: DataFrame) -> DataFrame:
        return (checkpoints.join(df.join(keys, list(PARTITION_KEY), "left_semi"))
                .where(lives_after(F.col(SAFE_POINT)))
                .drop(SAFE_POINT))

    # the state at C, the partition versions and the brokers' status, keyed by the table each comes from
    steps: dict[str, Callable[[], DataFrame]] = {
        name: partial(_opened, df, keys, checkpoints, name) for name, df in stored.items()}
    steps[PARTITION_HISTORY] = lambda: distributed_partitions(after_c(live[PARTITION_HISTORY]))
    steps[BROKER_HISTORY] = lambda: broker_status(brokers).localCheckpoint(eager=True)
    cut = run_concurrently(affected.sparkSession, steps)
    partitions, status = cut[PARTITION_HISTORY], cut[BROKER_HISTORY]
    replicas = distributed_replicas(after_c(live[REPLICA_HISTORY]), partitions)
    tables = run_concurrently(affected.sparkSession, {
        # the stored unexplained rows are few: explained again by each reader of the union (no job of its own)
        ELECTIONS: lambda: elections(partitions, brokers, status, configs).unionByName(
            explained_losses(cut[ELECTIONS].drop(SAFE_POINT), status)),
        REPLICA_STATE_HISTORY: lambda: replica_state_history(replicas, brokers, cut[REPLICA_STATE_HISTORY]),
        PARTITION_STATE_HISTORY: lambda: partition_state_history(partitions, cut[PARTITION_STATE_HISTORY])})
    return {**tables, LEADERLESS_PERIODS: resumed_leaderless_periods(
        partitions, tables[ELECTIONS], cut[LEADERLESS_PERIODS], checkpoints)}


def _opened(stored: DataFrame, keys: DataFrame, checkpoints: SafePoints, name: str) -> DataFrame:
    """The stored mutable rows of derived table ``name`` of the ``keys`` partitions, with their cluster's C: the
    state at C a resumed derivation goes on from."""
    return checkpoints.join(stored.join(keys, list(PARTITION_KEY), "left_semi").where(_mutable(name))
                            ).localCheckpoint(eager=True)


def refreshed_rows(name: str, stored: DataFrame, recomputed: DataFrame, affected: DataFrame,
                   checkpoints: SafePoints, columns: list[str]) -> DataFrame:
    """What replaces the ``stored`` files of derived table ``name`` (those of its mutable rows; every file of a
    table not written split): their rows of the partitions not affected and their settled rows, and the
    recomputed rows of the affected partitions that are mutable or have an offset after C (the settled ones
    are in the files that stay, or among the stored settled rows). ``columns``: the table's, in its order (from
    its Delta log: no schema request to Spark)."""
    keys = F.broadcast(affected)
    kept = stored.join(keys, list(PARTITION_KEY), "left_anti").unionByName(
        stored.join(keys, list(PARTITION_KEY), "left_semi").where(~_mutable(name)))
    fresh = checkpoints.join(recomputed).where(
        _late(_OFFSETS[name]) | _mutable(name)).select(*columns)
    return kept.select(*columns).unionByName(fresh)
