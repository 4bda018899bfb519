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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import HISTORY_KEYS, PARTITION_KEY, REPLICA_HISTORY
from replay.core.broker_timeline import broker_timeline, is_unfenced
from replay.core.history import collapse
from replay.core.jvm_functions import INTERVAL, JvmFunction, array_of_structs, jvm_call, sorted_structs, typed_fields
from replay.core.partition_edges import SPANS, partition_edges
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
STATE_COLUMNS = ("state", "previous_state", "step", "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
                 "valid_to_time_ms", "cause_offset", "cause_type", "reason", "valid_transition")
# ``step`` values (given by the JVM passes): ordinary versions 0; at the end of a membership the deletion steps 1-4;
# a deletion that completes later (broker back) 5-8; a (re-)creation 10 (New) and 11 (its first real state).


def is_valid_transition(previous: str, state: str, table: dict[str, tuple[str, ...]] | None = None) -> bool:
    """Kafka's rule: ``state`` may be entered from ``previous`` (replica table unless ``table`` is given)."""
    return previous in (table or REPLICA_VALID_PREVIOUS).get(state, ())


def _valid(table: dict[str, tuple[str, ...]]) -> Column:
    allowed = F.create_map(*[x for state, prev in table.items() for x in (F.lit(state), F.array(*map(F.lit, prev)))])
    return F.coalesce(F.array_contains(allowed[F.col("state")], F.col("previous_state")), F.lit(False))


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


# The structs the state machines' JVM passes read (``kraftreplay.audit.ReplicaStates``, ``PartitionStates``), fields
# in their order and types: a replica or partition version (the values its state is read from), a broker's unfenced
# periods, the stored open rows a resumed derivation goes on from; and the rows they give. (A replica's pass reads its
# partition's edges too: ``replay.core.partition_edges.PARTITION_EDGE``.)
REPLICA_STATE_INPUT = (*INTERVAL, ("topic_name", "string"), ("in_isr", "boolean"), ("adding", "boolean"),
                       ("broker_fenced", "boolean"))
UNFENCED_PERIOD = (("up_from", "bigint"), ("up_to", "bigint"), ("up_from_time", "bigint"),
                   ("up_cause_offset", "bigint"), ("up_cause_type", "string"))
OPENED_STATE = ((SAFE_POINT, "bigint"), ("state", "string"), ("previous_state", "string"), ("step", "int"),
                ("valid_from_offset", "bigint"), ("valid_from_time_ms", "bigint"), ("cause_offset", "bigint"),
                ("cause_type", "string"), ("reason", "string"), ("topic_name", "string"))
PARTITION_STATE_INPUT = (*INTERVAL, ("topic_name", "string"), ("leader", "int"), ("isr", "array<int>"))
STATE_RESULT = (("topic_name", "string"), ("state", "string"), ("previous_state", "string"), ("step", "int"),
                *INTERVAL, ("reason", "string"))
REPLICA_STATES = JvmFunction("kraft_replica_states", "kraftreplay.audit.ReplicaStates", array_of_structs(STATE_RESULT))
PARTITION_STATES = JvmFunction("kraft_partition_states", "kraftreplay.audit.PartitionStates",
                               array_of_structs(STATE_RESULT))


def _stored(opened: DataFrame, key: tuple[str, ...]) -> DataFrame:
    """The stored open rows a resumed derivation goes on from, one array per ``key`` (``_opened``)."""
    return opened.groupBy(*key).agg(F.collect_list(F.struct(*typed_fields(OPENED_STATE))).alias("_opened"))


def _judged(states: Column, rows: DataFrame, key: tuple[str, ...], table: dict[str, tuple[str, ...]]) -> DataFrame:
    """The ``states`` a JVM pass gave each of ``rows`` (an array of ``STATE_RESULT``), each transition judged by the
    controller's ``table`` of valid previous states: the state table's rows."""
    exploded = rows.select(*key, F.explode(states).alias("_s"))
    return exploded.select(*key, *[F.col(f"_s.{name}").alias(name) for name, _ in STATE_RESULT]).withColumn(
        "valid_transition", _valid(table)).select(*key, "topic_name", *STATE_COLUMNS)


def grouped_state_inputs(replica_history: DataFrame, partition_history: DataFrame) -> DataFrame:
    """Each replica's versions as its state pass reads them (``REPLICA_KEY``, ``_versions``, ``_spans``), from rows of
    ``replica_history`` and their partitions' rows of ``partition_history`` (their edges)."""
    versions = replica_history.groupBy(*REPLICA_KEY).agg(sorted_structs(REPLICA_STATE_INPUT).alias("_versions"))
    return versions.join(partition_edges(partition_history), list(PARTITION_KEY), "left")


def state_inputs(replica_versions: DataFrame) -> DataFrame:
    """Each replica's versions as its state pass reads them (``REPLICA_KEY``, ``_versions``, ``_spans``), from the
    fold's groups (``replay.fold.replicas.replica_versions``: the same versions in the same order, more fields, and
    their partition's edges): the replica versions are not grouped again."""
    def projected(version: Column) -> Column:
        return F.struct(*[version[name].alias(name) for name, _ in REPLICA_STATE_INPUT])

    return replica_versions.select(*REPLICA_KEY, F.transform("_versions", projected).alias("_versions"), SPANS)


def replica_state_history(replica_versions: DataFrame, broker_history: DataFrame,
                          opened: DataFrame | None = None) -> DataFrame:
    """Every replica state and transition (see the module docstring), keyed like ``replica_history``: each replica's
    versions (``replica_versions``: ``grouped_state_inputs`` or ``state_inputs``) in one pass in the JVM
    (``replay/jvm``: ``kraftreplay.audit.ReplicaStates``), its partition's edges (``replay.core.partition_edges``:
    where a life of the partition starts, which record a membership's end is) and its broker's unfenced periods
    beside them.

    Resumed from a checkpoint C (``opened`` given): the histories hold only the versions live after C, and
    ``opened`` the stored open rows of their replicas with ``_c`` (the state at C: a membership's state, or a
    deletion still waiting for its broker). The rows about offsets after C, and the open rows continued, are
    then the ones a run over the whole history gives (rows about offsets up to C come out too, or wrong: the
    caller drops them)."""
    spark = replica_versions.sparkSession
    versions = replica_versions
    if opened is None:
        versions = versions.withColumn("_opened", F.lit(None).cast(array_of_structs(OPENED_STATE)))
    else:
        # a replica whose deletion waits may have no version after C: every replica of either side
        versions = versions.join(_stored(opened, REPLICA_KEY), list(REPLICA_KEY), "full")
    # the brokers' periods are few next to the replicas: one row per broker, broadcast to its replicas
    periods = _alive_periods(broker_history).groupBy("cluster_id", "broker_id").agg(
        sorted_structs(UNFENCED_PERIOD).alias("_periods"))
    rows = versions.join(F.broadcast(periods), ["cluster_id", "broker_id"], "left")
    states = jvm_call(spark, REPLICA_STATES, F.col("broker_id"), F.col("_versions"), F.col(SPANS),
                      F.col("_periods"), F.col("_opened"))
    return _judged(states, rows, REPLICA_KEY, REPLICA_VALID_PREVIOUS)


# --- partitions ----------------------------------------------------------------------------------


def partition_state_history(partition_history: DataFrame, opened: DataFrame | None = None) -> DataFrame:
    """Every partition state and transition: New at creation, Online/Offline by leader, NonExistent at deletion;
    each partition's versions in one pass in the JVM (``replay/jvm``: ``kraftreplay.audit.PartitionStates``).
    ``opened``: resumed from a checkpoint C, as in ``replica_state_history`` (a partition with an open row is live
    at C: it has versions after C)."""
    versions = partition_history.groupBy(*PARTITION_KEY).agg(
        sorted_structs(PARTITION_STATE_INPUT).alias("_versions"))
    if opened is None:
        versions = versions.withColumn("_opened", F.lit(None).cast(array_of_structs(OPENED_STATE)))
    else:
        # the open rows of the partitions an increment touched: few next to their versions, broadcast (no shuffle)
        versions = versions.join(F.broadcast(_stored(opened, PARTITION_KEY)), list(PARTITION_KEY), "left")
    states = jvm_call(partition_history.sparkSession, PARTITION_STATES, F.col("_versions"), F.col("_opened"))
    return _judged(states, versions, PARTITION_KEY, PARTITION_VALID_PREVIOUS)
