"""Kafka's controller state machines, derived from the KRaft history tables.

KRaft has no replica or partition state machine of its own, but operators explain incidents in the
terms of the ZooKeeper-era controller's two machines (``ReplicaStateMachine``, ``PartitionStateMachine``).
This module derives both from ``replica_history`` and ``partition_history`` (docs/state-machines.md has
the full mapping):

- a replica is ``NewReplica`` from its creation (partition created, or added by a reassignment) while it
  is still catching up (adding and not yet in the ISR), ``OnlineReplica`` while its broker is registered
  and unfenced, ``OfflineReplica`` while it is fenced or not registered;
- when a replica stops being one (topic deleted, or removed by a reassignment) it goes ``Offline`` →
  ``ReplicaDeletionStarted`` → ``ReplicaDeletionSuccessful`` → ``NonExistentReplica`` at once if its broker
  is up, else ``ReplicaDeletionIneligible`` until the broker is unfenced again, when deletion is retried
  (``Ineligible`` → ``Offline`` → ``Started`` → ``Successful`` → ``NonExistent``, as TopicDeletionManager does);
- a partition is ``NewPartition`` at its PartitionRecord, then ``OnlinePartition`` while it has a leader and
  ``OfflinePartition`` while its leader is -1; a deleted partition goes ``Offline`` → ``NonExistentPartition``.

One record can cause several transitions at one offset (creation: ``NonExistent`` → ``New`` → ``Online``):
every transition is a row; ``step`` orders the rows of one offset, and a state that is left at the offset it
was entered is a zero-length version ``[o, o)``, so as-of-offset queries see only the last one. Every
transition is checked against the controller's table of valid previous states; one that is not allowed is
kept and marked ``valid_transition = false`` (Kafka's controller logs it and goes on).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

from lakehouse.spark_settings import kept_checkpoint
from lakehouse.tables import HISTORY_KEYS, REPLICA_HISTORY
from replay.core.broker_timeline import broker_timeline, is_unfenced
from replay.core.history import collapse
from replay.core.jvm_functions import INTERVAL, JvmFunction, array_of_structs, jvm_call, sorted_structs, typed_fields
from replay.core.safe_points import SAFE_POINT

NEW_REPLICA = "NewReplica"
ONLINE_REPLICA = "OnlineReplica"
OFFLINE_REPLICA = "OfflineReplica"
DELETION_STARTED = "ReplicaDeletionStarted"
DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
NON_EXISTENT_REPLICA = "NonExistentReplica"

NEW_PARTITION = "NewPartition"
ONLINE_PARTITION = "OnlinePartition"
OFFLINE_PARTITION = "OfflinePartition"
NON_EXISTENT_PARTITION = "NonExistentPartition"

# Kafka's ReplicaStateMachine / PartitionStateMachine: each state and the states it may be entered from.
REPLICA_VALID_PREVIOUS: dict[str, tuple[str, ...]] = {
    NEW_REPLICA: (NON_EXISTENT_REPLICA,),
    ONLINE_REPLICA: (NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, DELETION_INELIGIBLE),
    OFFLINE_REPLICA: (NEW_REPLICA, ONLINE_REPLICA, OFFLINE_REPLICA, DELETION_INELIGIBLE),
    DELETION_STARTED: (OFFLINE_REPLICA,),
    DELETION_SUCCESSFUL: (DELETION_STARTED,),
    DELETION_INELIGIBLE: (OFFLINE_REPLICA, DELETION_STARTED),
    NON_EXISTENT_REPLICA: (DELETION_SUCCESSFUL,),
}
PARTITION_VALID_PREVIOUS: dict[str, tuple[str, ...]] = {
    NEW_PARTITION: (NON_EXISTENT_PARTITION,),
    ONLINE_PARTITION: (NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION),
    OFFLINE_PARTITION: (NEW_PARTITION, ONLINE_PARTITION, OFFLINE_PARTITION),
    NON_EXISTENT_PARTITION: (OFFLINE_PARTITION,),
}

REPLICA_KEY = HISTORY_KEYS[REPLICA_HISTORY]
PARTITION_KEY = ("cluster_id", "topic_id", "partition_id")
STATE_COLUMNS = ("state", "previous_state", "step", "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
                 "valid_to_time_ms", "cause_offset", "cause_type", "reason", "valid_transition")
# ``step`` values: ordinary versions 0; at the end of a membership the deletion steps 1-4; a deletion that
# completes later (broker back) 5-8; a (re-)creation 10 (New) and 11 (its first real state).
_STEP_CREATE, _STEP_FIRST = 10, 11


def is_valid_transition(previous: str, state: str, table: dict[str, tuple[str, ...]] | None = None) -> bool:
    """Kafka's rule: ``state`` may be entered from ``previous`` (replica table unless ``table`` is given)."""
    return previous in (table or REPLICA_VALID_PREVIOUS).get(state, ())


def _valid(table: dict[str, tuple[str, ...]]) -> Column:
    allowed = F.create_map(*[x for state, prev in table.items() for x in (F.lit(state), F.array(*map(F.lit, prev)))])
    return F.coalesce(F.array_contains(allowed[F.col("state")], F.col("previous_state")), F.lit(False))


def _step(state: str, previous: str, step: int, at: str, at_time: str, cause_offset: Column, cause_type: Column,
          reason: Column, to: Column | None = None, to_time: Column | None = None) -> Column:
    """One generated transition as a struct; ``to`` null = zero-length (left at the offset it was entered)."""
    return F.struct(
        F.lit(state).alias("state"), F.lit(previous).alias("previous_state"), F.lit(step).alias("step"),
        F.col(at).alias("valid_from_offset"), (to if to is not None else F.col(at)).alias("valid_to_offset"),
        F.col(at_time).alias("valid_from_time_ms"),
        (to_time if to_time is not None else F.col(at_time)).alias("valid_to_time_ms"),
        cause_offset.cast("long").alias("cause_offset"), cause_type.alias("cause_type"), reason.alias("reason"))


def _exploded(rows: DataFrame, keys: tuple[str, ...], steps: list[Column]) -> DataFrame:
    generated = rows.select(*keys, F.explode(F.filter(F.array(*steps), lambda s: s.isNotNull())).alias("s"))
    return generated.select(*keys, "s.*")


def _islands(df: DataFrame, key: tuple[str, ...]) -> DataFrame:
    """Number the runs of touching versions of each key (a membership of a replica, a life of a partition):
    ``_life``, and ``_starts`` on a run's first version.

    Everything per run below is computed over the key's window in offset order (the one this sorts by), not
    over a window per (key, ``_life``): Spark then sorts the versions once instead of once per window spec."""
    by_key = Window.partitionBy(*key).orderBy("valid_from_offset")
    starts = F.coalesce(F.lag("valid_to_offset").over(by_key) != F.col("valid_from_offset"), F.lit(True))
    return df.withColumn("_starts", starts).withColumn("_life", F.sum(F.when(F.col("_starts"), 1).otherwise(0)).over(
        by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)))


def _first_in_island(by_key: WindowSpec) -> Column:
    """The version starts its run (``by_key``: the key's window in offset order, over collapsed versions)."""
    return F.coalesce(F.lag("_life").over(by_key) != F.col("_life"), F.lit(True))


def _broker(column: str = "broker_id") -> Column:
    return F.concat(F.lit("broker "), F.col(column).cast("string"))


_CONTINUED = ("previous_state", "step", "valid_from_offset", "valid_from_time_ms", "cause_offset", "cause_type",
              "reason")


def _continued(ordinary: DataFrame, opened: DataFrame | None, key: tuple[str, ...]) -> DataFrame:
    """``ordinary`` with ``_spliced``. Resumed from C (``opened``: the stored open rows with ``_c``), the row
    holding the version open at C (the only one starting at or before C) is the stored open row going on: it
    keeps that row's start, cause, previous state, step and reason (the state is the same) and takes its end."""
    if opened is None:
        return ordinary.withColumn("_spliced", F.lit(False))
    stored = opened.select(*key, SAFE_POINT, *[F.col(c).alias(f"_at_c_{c}") for c in _CONTINUED])
    # the open rows of the partitions an increment touched: few next to their versions, broadcast (no shuffle)
    out = ordinary.join(F.broadcast(stored), list(key), "left").withColumn(
        "_spliced", F.coalesce(F.col("valid_from_offset") <= F.col(SAFE_POINT), F.lit(False)))
    for column in _CONTINUED:
        out = out.withColumn(column, F.when(F.col("_spliced"), F.col(f"_at_c_{column}")).otherwise(F.col(column)))
    return out.drop(SAFE_POINT, *[f"_at_c_{c}" for c in _CONTINUED])


# --- replicas ------------------------------------------------------------------------------------


def _alive_periods(broker_history: DataFrame) -> DataFrame:
    """Merged periods of the broker timeline in which each broker is registered and unfenced
    (``ClusterControlManager.isUnfenced``: a replica on it can be deleted)."""
    alive = collapse(broker_timeline(broker_history).where(is_unfenced(F.col("state"))).select(
        "cluster_id", "broker_id", F.lit(True).alias("up"), "valid_from_offset", "valid_to_offset",
        "valid_from_time_ms", "valid_to_time_ms", "cause_offset", "cause_type"),
        ("cluster_id", "broker_id"), ("up",))
    return alive.select("cluster_id", "broker_id", F.col("valid_from_offset").alias("up_from"),
                        F.col("valid_to_offset").alias("up_to"), F.col("valid_from_time_ms").alias("up_from_time"),
                        F.col("cause_offset").alias("up_cause_offset"), F.col("cause_type").alias("up_cause_type"))


def _creations(ordinary: DataFrame, key: tuple[str, ...], new: str, non_existent: str, reason: Column) -> DataFrame:
    """The creation step before each first version not spliced onto a stored one: NonExistent → New, lasting no
    offset."""
    return ordinary.where((F.col("step") == _STEP_FIRST) & ~F.col("_spliced")).select(
        *key, "topic_name", "_life", F.lit(new).alias("state"), F.lit(non_existent).alias("previous_state"),
        F.lit(_STEP_CREATE).alias("step"), "valid_from_offset", F.col("valid_from_offset").alias("valid_to_offset"),
        "valid_from_time_ms", F.col("valid_from_time_ms").alias("valid_to_time_ms"), "cause_offset", "cause_type",
        reason.alias("reason"))


# The structs the replica states' JVM pass reads (``kraftreplay.audit.ReplicaStates``), fields in its order and types:
# a replica version (the values its state is read from), its broker's unfenced periods, the stored open rows a resumed
# derivation goes on from; and the rows it gives.
REPLICA_STATE_INPUT = (*INTERVAL, ("topic_name", "string"), ("in_isr", "boolean"), ("adding", "boolean"),
                       ("broker_fenced", "boolean"))
UNFENCED_PERIOD = (("up_from", "bigint"), ("up_to", "bigint"), ("up_from_time", "bigint"),
                   ("up_cause_offset", "bigint"), ("up_cause_type", "string"))
OPENED_STATE = ((SAFE_POINT, "bigint"), ("state", "string"), ("previous_state", "string"), ("step", "int"),
                ("valid_from_offset", "bigint"), ("valid_from_time_ms", "bigint"), ("cause_offset", "bigint"),
                ("cause_type", "string"), ("reason", "string"), ("topic_name", "string"))
REPLICA_STATE_RESULT = (("topic_name", "string"), ("state", "string"), ("previous_state", "string"), ("step", "int"),
                        *INTERVAL, ("reason", "string"))
REPLICA_STATES = JvmFunction("kraft_replica_states", "kraftreplay.audit.ReplicaStates",
                             array_of_structs(REPLICA_STATE_RESULT))


def replica_state_history(replica_history: DataFrame, partition_history: DataFrame, broker_history: DataFrame,
                          opened: DataFrame | None = None) -> DataFrame:
    """Every replica state and transition (see the module docstring), keyed like ``replica_history``: each replica's
    versions in one pass in the JVM (``replay/jvm``: ``kraftreplay.audit.ReplicaStates``), its partition's versions
    (where a life of the partition starts, which record a membership's end is) and its broker's unfenced periods
    beside them.

    Resumed from a checkpoint C (``opened`` given): the histories hold only the versions live after C, and
    ``opened`` the stored open rows of their replicas with ``_c`` (the state at C: a membership's state, or a
    deletion still waiting for its broker). The rows about offsets after C, and the open rows continued, are
    then the ones a run over the whole history gives (rows about offsets up to C come out too, or wrong: the
    caller drops them)."""
    spark = replica_history.sparkSession
    versions = replica_history.groupBy(*REPLICA_KEY).agg(sorted_structs(REPLICA_STATE_INPUT).alias("_versions"))
    if opened is None:
        versions = versions.withColumn("_opened", F.lit(None).cast(array_of_structs(OPENED_STATE)))
    else:
        # a replica whose deletion waits may have no version after C: every replica of either side
        stored = opened.groupBy(*REPLICA_KEY).agg(
            F.collect_list(F.struct(*typed_fields(OPENED_STATE))).alias("_opened"))
        versions = versions.join(stored, list(REPLICA_KEY), "full")
    spans = partition_history.groupBy(*PARTITION_KEY).agg(sorted_structs(INTERVAL).alias("_spans"))
    # the brokers' periods are few next to the replicas: one row per broker, broadcast to its replicas
    periods = _alive_periods(broker_history).groupBy("cluster_id", "broker_id").agg(
        sorted_structs(UNFENCED_PERIOD).alias("_periods"))
    rows = versions.join(spans, list(PARTITION_KEY), "left").join(
        F.broadcast(periods), ["cluster_id", "broker_id"], "left")
    states = rows.select(*REPLICA_KEY, F.explode(jvm_call(
        spark, REPLICA_STATES, F.col("broker_id"), F.col("_versions"), F.col("_spans"), F.col("_periods"),
        F.col("_opened"))).alias("_s"))
    return states.select(*REPLICA_KEY, *[F.col(f"_s.{name}").alias(name) for name, _ in REPLICA_STATE_RESULT]
                         ).withColumn("valid_transition", _valid(REPLICA_VALID_PREVIOUS)).select(
        *REPLICA_KEY, "topic_name", *STATE_COLUMNS)


# --- partitions ----------------------------------------------------------------------------------


def partition_state_history(partition_history: DataFrame, opened: DataFrame | None = None) -> DataFrame:
    """Every partition state and transition: New at creation, Online/Offline by leader, NonExistent at deletion.
    ``opened``: resumed from a checkpoint C, as in ``replica_state_history``."""
    rows = _islands(partition_history.withColumn(
        "state", F.when(F.col("leader") >= 0, F.lit(ONLINE_PARTITION)).otherwise(F.lit(OFFLINE_PARTITION))),
        PARTITION_KEY)
    versions = collapse(rows.select(*PARTITION_KEY, "topic_name", "_life", "state", "leader", "isr",
                                    "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
                                    "valid_to_time_ms", "cause_offset", "cause_type"),
                        PARTITION_KEY, ("state", "_life"))
    by_partition = Window.partitionBy(*PARTITION_KEY).orderBy("valid_from_offset")
    reason = F.when(F.col("state") == ONLINE_PARTITION, F.concat(F.lit("leader "), F.col("leader").cast("string"))
                    ).otherwise(F.concat(F.lit("no leader (ISR ["), F.array_join("isr", ", "), F.lit("])")))
    versions = versions.withColumn("_first", _first_in_island(by_partition)).withColumn(
        "_previous", F.when(~F.col("_first"), F.lag("state").over(by_partition)))
    ordinary = versions.select(
        *PARTITION_KEY, "topic_name", "_life", "state",
        F.when(F.col("_first"), F.lit(NEW_PARTITION)).otherwise(F.col("_previous")).alias("previous_state"),
        F.when(F.col("_first"), F.lit(_STEP_FIRST)).otherwise(F.lit(0)).alias("step"),
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type", reason.alias("reason"))
    ordinary = kept_checkpoint(_continued(ordinary, opened, PARTITION_KEY))
    creations = _creations(ordinary, PARTITION_KEY, NEW_PARTITION, NON_EXISTENT_PARTITION, F.lit("partition created"))
    ordinary = ordinary.drop("_spliced")
    last_of_run = F.coalesce(F.lead("_life").over(by_partition) != F.col("_life"), F.lit(True))
    ends = (ordinary.withColumn("_last", last_of_run)
            .where(F.col("_last") & F.col("valid_to_offset").isNotNull())
            .select(*PARTITION_KEY, "topic_name", "_life", F.col("state").alias("last_state"),
                    F.col("valid_to_offset").alias("end"), F.col("valid_to_time_ms").alias("end_time")))
    deleted = F.lit("topic deleted")
    removal = F.lit("RemoveTopicRecord")
    deletions = _exploded(ends, (*PARTITION_KEY, "topic_name", "_life", "last_state"), [
        F.when(F.col("last_state") == ONLINE_PARTITION,
               _step(OFFLINE_PARTITION, ONLINE_PARTITION, 1, "end", "end_time", F.col("end"), removal, deleted)),
        _step(NON_EXISTENT_PARTITION, OFFLINE_PARTITION, 2, "end", "end_time", F.col("end"), removal, deleted),
    ]).drop("last_state")
    states = ordinary.unionByName(creations).unionByName(deletions)
    return states.withColumn("valid_transition", _valid(PARTITION_VALID_PREVIOUS)).select(
        *PARTITION_KEY, "topic_name", *STATE_COLUMNS)
