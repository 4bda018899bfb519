"""Runtime settings for a block of work in a session: held while the block runs, restored after it (threads of
one session share a hold), and the blocks the replay runs in.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from lakehouse.spark import DELTA_STATS_SKIPPING, LOCAL_SHUFFLE_PARTITIONS, SHUFFLE_PARTITIONS


@dataclass
class _Held:
    """A runtime setting some blocks of ``spark_conf`` hold: the value they set, what it was before, how many."""

    value: str
    previous: str | None
    blocks: int
    outer: _Held | None  # the hold it replaced (a nested block with another value), back in force after it


_HELD: dict[tuple[int, str], _Held] = {}  # (session, key) → its hold
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def spark_conf(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """Set a runtime SQL setting for the block, then restore it (or unset it when it was unset). A setting is
    session-wide: blocks that overlap with the same value (threads of one session, ``lakehouse.concurrent_jobs``)
    share one hold, and the last of them to end restores it, never one that ends while another still writes."""
    where = (id(spark), key)
    with _HELD_LOCK:
        hold = _HELD.get(where)
        if hold is not None and hold.value == value:
            hold.blocks += 1
        else:
            hold = _Held(value, spark.conf.get(key, None), 1, hold)
            spark.conf.set(key, value)
            _HELD[where] = hold
    try:
        yield
    finally:
        with _HELD_LOCK:
            hold.blocks -= 1
            if hold.blocks == 0:
                if hold.previous is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, hold.previous)
                if hold.outer is None:
                    del _HELD[where]
                else:
                    _HELD[where] = hold.outer


def file_statistics(spark: SparkSession, many_files: bool = True) -> contextlib.AbstractContextManager[None]:
    """Delta's data skipping on for the block when the tables read have ``many_files`` to skip (the log past a
    checkpoint, a table's stored versions by key), off when they have not: each read it filters costs a Spark job."""
    return spark_conf(spark, DELTA_STATS_SKIPPING, "true" if many_files else "false")


# Delta's VACUUM lists a table's directories in a Spark job of this many tasks (``VacuumCommand`` reads
# ``parallelPartitionDiscoveryParallelism``; Spark's default 10,000): on a few directories, most of a minute of
# empty tasks per table on two cores.
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def listed_in_session_tasks(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """A listing job of Delta's in the block runs as many tasks as the session's shuffle partitions (the parallelism
    its users gave it), not Spark's default."""
    tasks = spark.conf.get(SHUFFLE_PARTITIONS) or str(LOCAL_SHUFFLE_PARTITIONS)
    return spark_conf(spark, LISTING_PARALLELISM, tasks)


# Adaptive execution plans a query stage by stage as it runs, so a local checkpoint taken under it reports neither
# partitioning nor order (Spark 4.0): every window or aggregate after it shuffles and sorts its rows again.
ADAPTIVE_EXECUTION = "spark.sql.adaptive.enabled"


def planned_ahead(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """Adaptive execution off for the block: a local checkpoint taken in it keeps the partitioning and order its
    plan gave its rows, and the windows and aggregates by the same key after it (adaptive or not) reuse them."""
    return spark_conf(spark, ADAPTIVE_EXECUTION, "false")


# Constraint propagation infers the constraints of every operator of a plan (the IS NOT NULL and equalities its filters,
# joins and aliases imply) to add and drop filters, in each of the optimizer's passes: on the replay's deep, wide plans
# (windows over aliased columns) that is much of planning an increment, and the filters it would add are on keys that
# are never null. The results are the same without it (issue 42: BENCHMARKS.md). Queries keep it: their filters on a
# topic or a partition reach the other side of a join through it, and the scans skip files by them.
CONSTRAINT_PROPAGATION = "spark.sql.constraintPropagation.enabled"


def constraints_not_propagated(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """Constraint propagation off for the block (the replay's)."""
    return spark_conf(spark, CONSTRAINT_PROPAGATION, "false")


# Spark aggregates a ``collect_list`` by hashing (ObjectHashAggregate) and, past a few groups in a task
# (``spark.sql.objectHashAggregate.sortBased.fallbackThreshold``: 128), sorts the task's rows anyway. Rows already
# distributed and sorted by their group's key are aggregated as they come, a group at a time, by a sort aggregate: off
# around the plans of such aggregates (the partition fold's: issue 42, BENCHMARKS.md).
OBJECT_HASH_AGGREGATE = "spark.sql.execution.useObjectHashAggregateExec"


def sort_aggregated(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """Aggregates planned in the block (a ``collect_list`` of rows sorted by its key) are sort aggregates."""
    return spark_conf(spark, OBJECT_HASH_AGGREGATE, "false")


# Spark plans a join without a shuffle only when both sides are hash-partitioned by all its keys (by default): a join
# by a partition's key and an offset of two sides distributed by the partition's key alone shuffles both again. Off
# only around such joins: a side partitioned by a key with few values (a cluster's id) would run in one task.
CO_PARTITION_BY_ALL_KEYS = "spark.sql.requireAllClusterKeysForCoPartition"


def co_partitioned_by_some_keys(spark: SparkSession) -> contextlib.AbstractContextManager[None]:
    """Joins planned in the block reuse sides hash-partitioned by some of their keys (the same for both)."""
    return spark_conf(spark, CO_PARTITION_BY_ALL_KEYS, "false")


def kept_checkpoint(df: DataFrame) -> DataFrame:
    """``df`` checkpointed (``localCheckpoint``) with the partitioning and order its plan gives its rows. ``df``
    must not have run yet: a DataFrame keeps the physical plan it was first given. Joined with another read of the
    same rows, one side is renamed, and keeps the partitioning only where ``df``'s columns carry the qualifier it was
    planned with: no ``alias`` between the shuffle and the checkpoint (tests/test_spark_settings.py)."""
    with planned_ahead(df.sparkSession):
        return df.localCheckpoint(eager=True)


def keyed_checkpoint(df: DataFrame, key: tuple[str, ...], order: tuple[str, ...] = ()) -> DataFrame:
    """``df`` distributed by ``key`` and sorted by ``key`` and ``order`` in each partition, checkpointed keeping
    both: a window by ``key`` (or more columns) in ``order`` over it needs no shuffle, and no sort."""
    return kept_checkpoint(df.repartition(*key).sortWithinPartitions(*key, *order))


def few_partitions(df: DataFrame) -> DataFrame:
    """``df`` in at most ``spark.sql.shuffle.partitions`` partitions, without a shuffle. A union has the partitions
    of all its inputs (an increment's per-cluster reads and seeds: 34 for 15 small clusters, its anomalies 80), and
    each is a task in every stage that reads it; a small union's tasks were most of an increment's fold (issue 20:
    the stories' increment fold 29 -> 13 s)."""
    return df.coalesce(int(df.sparkSession.conf.get(SHUFFLE_PARTITIONS) or LOCAL_SHUFFLE_PARTITIONS))


# Spark compiles Java for each new plan (whole-stage code generation, Janino): on a small input compiling costs
# more than it saves (issue 20: a 176-record replay 51 -> 38 s; a 100,000-record one 69 -> 58 s).
WHOLE_STAGE_CODEGEN = "spark.sql.codegen.wholeStage"
INTERPRETED = {WHOLE_STAGE_CODEGEN: "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextlib.contextmanager
def interpreted(spark: SparkSession, small: bool) -> Iterator[None]:
    """Run the block without generated code when its work is ``small`` (the results are the same)."""
    with contextlib.ExitStack() as settings:
        for key, value in INTERPRETED.items() if small else ():
            settings.enter_context(spark_conf(spark, key, value))
        yield


# --- the size of a replay's input ----------------------------------------------------------------

# A full replay's sort tasks hold about this many records' events at most: at 8 shuffle partitions a 10 M-record
# log gave each task 1.25 M events, and a 2 GiB driver ran out of execution memory (issue 20's note).
RECORDS_PER_SHUFFLE_PARTITION = 250_000
# Below this many records per task, a task's fixed cost outweighs its work: a small replay or increment is planned in
# fewer shuffle partitions than configured (issue 42: a 30,000-record log's full replay, and 100 new records'
# increment, measured at 1 and 8 partitions in BENCHMARKS.md).
RECORDS_PER_TASK_AT_LEAST = 50_000
INTERPRETED_UP_TO = 100_000  # a log of up to this many records is replayed without generated code (measured)
# A log of up to this many records is replayed planned ahead (``planned_ahead``): adaptive execution runs each shuffle
# stage and each broadcast of a query as a Spark job of its own and re-plans the query after it, which on small inputs
# is most of the work (a 100-record increment of a 34,343-record log: 151 jobs in 46 queries), full replay and
# increment alike. A larger log keeps it for its increments (measured: BENCHMARKS.md).
PLANNED_AHEAD_UP_TO = 100_000


def shuffle_partitions_for(records: int, configured: int) -> int:
    """The shuffle partitions of a replay of ``records`` (a full one's, or an increment's new records): the configured
    ones, more for a large log, fewer for a small one (the tables' layout does not depend on them,
    ``replay.store.layout``)."""
    needed = -(-records // RECORDS_PER_SHUFFLE_PARTITION)
    filled = -(-records // RECORDS_PER_TASK_AT_LEAST)
    return max(needed, min(configured, filled), 1)


def shuffle_partitions_held(spark: SparkSession, records: int) -> contextlib.AbstractContextManager[None]:
    """The session's shuffle partitions set for a replay of ``records`` (``shuffle_partitions_for`` of the configured
    ones) while the block runs, restored after it."""
    configured = int(spark.conf.get(SHUFFLE_PARTITIONS) or 0)
    return spark_conf(spark, SHUFFLE_PARTITIONS, str(shuffle_partitions_for(records, configured)))


@contextlib.contextmanager
def sized_for(spark: SparkSession, records: int) -> Iterator[None]:
    """The block planned as a replay of ``records`` records is (``interpreted``, ``planned_ahead`` and its shuffle
    partitions up to the sizes above): the queries of a replayed lake, whose tables a log of that size gives."""
    with (interpreted(spark, records <= INTERPRETED_UP_TO),
          planned_ahead(spark) if records <= PLANNED_AHEAD_UP_TO else contextlib.nullcontext(),
          shuffle_partitions_held(spark, records)):
        yield
