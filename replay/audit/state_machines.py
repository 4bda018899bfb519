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
from replay.core.broker_timeline import broker_timeline, is_unfenced, open_end
from replay.core.history import collapse
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


def _life_starts(partition_history: DataFrame) -> DataFrame:
    """``PARTITION_KEY``, ``valid_from_offset`` of the versions that start a life of their partition (no version
    of it ends there): its creation, or its re-creation. Small: one row per life. From the versions live after
    C it gives the starts after C exactly (a version ending after C is live too)."""
    by_partition = Window.partitionBy(*PARTITION_KEY).orderBy("valid_from_offset")
    versions = partition_history.select(*PARTITION_KEY, "valid_from_offset", F.coalesce(
        F.lag("valid_to_offset").over(by_partition) != F.col("valid_from_offset"), F.lit(True)).alias("_starts"))
    return versions.where("_starts").select(*PARTITION_KEY, "valid_from_offset", F.lit(True).alias("_created"))


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


def replica_state_history(replica_history: DataFrame, partition_history: DataFrame, broker_history: DataFrame,
                          opened: DataFrame | None = None) -> DataFrame:
    """Every replica state and transition (see the module docstring), keyed like ``replica_history``.

    Resumed from a checkpoint C (``opened`` given): the histories hold only the versions live after C, and
    ``opened`` the stored open rows of their replicas with ``_c`` (the state at C: a membership's state, or a
    deletion still waiting for its broker). The rows about offsets after C, and the open rows continued, are
    then the ones a run over the whole history gives (rows about offsets up to C come out too, or wrong: the
    caller drops them)."""
    alive = F.coalesce(~F.col("broker_fenced"), F.lit(False))
    catching_up = alive & F.col("adding") & ~F.col("in_isr")
    members = None if opened is None else opened.where(F.col("state") != DELETION_INELIGIBLE)
    rows = _islands(replica_history, REPLICA_KEY)
    carry = F.lit(0)
    if members is not None:
        # The membership live at C continues: it has left NewReplica already unless its stored state is NewReplica.
        rows = rows.join(F.broadcast(members.select(*REPLICA_KEY, F.col("state").alias("_state_at_c"))),
                         list(REPLICA_KEY), "left")
        carry = F.when((F.col("_life") == 1) & (F.col("_state_at_c") != NEW_REPLICA), 1).otherwise(0)
    by_replica = Window.partitionBy(*REPLICA_KEY).orderBy("valid_from_offset")
    running = by_replica.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # Still NewReplica while every version of the run so far is catching up: no version that is not
    # catching up since the run's start (the count of those up to here equals the count before the run).
    rows = rows.withColumn("_left", F.sum(F.when(catching_up, 0).otherwise(1)).over(running))
    rows = rows.withColumn("_left_before_run", F.max(F.when(
        F.col("_starts"), F.col("_left") - F.when(catching_up, 0).otherwise(1))).over(running))
    left_new = F.col("_left") - F.col("_left_before_run") + carry
    rows = rows.withColumn("state", F.when(left_new == 0, F.lit(NEW_REPLICA))
                           .when(alive, F.lit(ONLINE_REPLICA)).otherwise(F.lit(OFFLINE_REPLICA)))
    rows = rows.withColumn("fenced_text", F.when(F.col("broker_fenced").isNull(), F.lit(" not registered"))
                           .otherwise(F.lit(" fenced")))
    # Runs never touch each other, so merging equal touching versions per replica never merges across runs.
    versions = collapse(rows.select(*REPLICA_KEY, "topic_name", "_life", "state", "fenced_text",
                                    "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
                                    "valid_to_time_ms", "cause_offset", "cause_type"),
                        REPLICA_KEY, ("state", "_life"))
    first = _first_in_island(by_replica)
    previous = F.lag("state").over(by_replica)
    # created with its partition: the membership starts where a life of the partition starts
    versions = versions.join(F.broadcast(_life_starts(partition_history)), [*PARTITION_KEY, "valid_from_offset"],
                             "left")
    versions = versions.withColumn("_first", first).withColumn("previous_state", previous).withColumn(
        "_created", F.col("_created").isNotNull())
    origin = F.when(F.col("_created"), F.lit("partition created")).otherwise(F.lit("added by a reassignment"))
    reason = (F.when(F.col("state") == OFFLINE_REPLICA, F.concat(_broker(), F.col("fenced_text")))
              .when(F.col("_first"), origin)
              .when(F.col("previous_state") == NEW_REPLICA, F.lit("caught up: joined the ISR"))
              .otherwise(F.concat(_broker(), F.lit(" unfenced"))))
    ordinary = versions.select(
        *REPLICA_KEY, "topic_name", "_life", "state",
        F.when(F.col("_first") & (F.col("state") == NEW_REPLICA), F.lit(NON_EXISTENT_REPLICA))
        .when(F.col("_first"), F.lit(NEW_REPLICA)).otherwise(F.col("previous_state")).alias("previous_state"),
        F.when(F.col("_first") & (F.col("state") != NEW_REPLICA), F.lit(_STEP_FIRST))
        .when(F.col("_first"), F.lit(_STEP_CREATE)).otherwise(F.lit(0)).alias("step"),
        "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
        "cause_type", reason.alias("reason"))
    ordinary = kept_checkpoint(_continued(ordinary, members, REPLICA_KEY))

    creations = _creations(ordinary, REPLICA_KEY, NEW_REPLICA, NON_EXISTENT_REPLICA, F.col("reason"))
    ordinary = ordinary.drop("_spliced")
    waiting = None if opened is None else opened.where(F.col("state") == DELETION_INELIGIBLE)
    # A membership that starts while the deletion of the previous one still waits starts from
    # ReplicaDeletionIneligible (NewReplica ← ReplicaDeletionIneligible is invalid, and flagged). The row before a
    # creation is a deletion step of the membership before (every ended one has them, from its end to the next
    # start; its versions all lie before its end) or none: the window orders those two kinds of rows alone, not
    # every state (2.7 of 11.7 M rows at 10 M records).
    edges = creations.unionByName(_deletions(ordinary, partition_history, broker_history, waiting))
    state_before = F.lag("state").over(Window.partitionBy(*REPLICA_KEY).orderBy("valid_from_offset", "step"))
    edges = edges.withColumn("previous_state", F.when(
        (F.col("step") == _STEP_CREATE) & state_before.isNotNull(), state_before).otherwise(F.col("previous_state")))
    states = ordinary.unionByName(edges)
    return states.withColumn("valid_transition", _valid(REPLICA_VALID_PREVIOUS)).select(
        *REPLICA_KEY, "topic_name", *STATE_COLUMNS)


def _deletions(ordinary: DataFrame, partition_history: DataFrame, broker_history: DataFrame,
               waiting: DataFrame | None = None) -> DataFrame:
    """The deletion transitions of every membership that ended (its last version has an end). ``waiting``:
    stored open ``ReplicaDeletionIneligible`` rows, the deletions of memberships that ended at or before C
    and still wait for their broker; each goes on as the membership before the first one of ``ordinary``."""
    islands = ordinary.groupBy(*REPLICA_KEY, "topic_name", "_life").agg(
        F.max_by("state", "valid_from_offset").alias("last_state"),
        F.max_by("valid_to_offset", "valid_from_offset").alias("end"),
        F.max_by("valid_to_time_ms", "valid_from_offset").alias("end_time"),
        F.min("valid_from_offset").alias("start"),
        F.min_by("valid_from_time_ms", "valid_from_offset").alias("start_time"),
        F.lit(None).cast("long").alias("_waiting_offset"), F.lit(None).cast("string").alias("_waiting_type"))
    if waiting is not None:
        # its partition version at the end is not in the history any more: the cause comes from the stored row
        islands = islands.unionByName(waiting.select(
            *REPLICA_KEY, "topic_name", F.lit(0).cast(islands.schema["_life"].dataType).alias("_life"),
            F.lit(OFFLINE_REPLICA).alias("last_state"), F.col("valid_from_offset").alias("end"),
            F.col("valid_from_time_ms").alias("end_time"), F.col("valid_from_offset").alias("start"),
            F.col("valid_from_time_ms").alias("start_time"), F.col("cause_offset").alias("_waiting_offset"),
            F.col("cause_type").alias("_waiting_type")))
    by_island = Window.partitionBy(*REPLICA_KEY).orderBy("_life")
    ends = (islands.withColumn("next_start", F.lead("start").over(by_island))
            .withColumn("next_start_time", F.lead("start_time").over(by_island))
            .where(F.col("end").isNotNull()).drop("start", "start_time"))
    # Removed by a reassignment when the partition goes on at that offset; else the topic was deleted.
    goes_on = partition_history.select(*PARTITION_KEY, F.col("valid_from_offset").alias("end"),
                                       F.col("cause_offset").alias("change_offset"),
                                       F.col("cause_type").alias("change_type"))
    ends = (ends.join(goes_on, [*PARTITION_KEY, "end"], "left")
            .withColumn("change_offset", F.coalesce("_waiting_offset", "change_offset"))
            .withColumn("change_type", F.coalesce("_waiting_type", "change_type"))
            .drop("_waiting_offset", "_waiting_type"))
    up = F.broadcast(_alive_periods(broker_history)).alias("u")
    ended = ends.alias("e")
    reaches = ((F.col("e.cluster_id") == F.col("u.cluster_id")) & (F.col("e.broker_id") == F.col("u.broker_id"))
               & (open_end("u.up_to") > F.col("e.end")))
    first_up = Window.partitionBy(*[F.col(f"e.{k}") for k in REPLICA_KEY], F.col("e._life")).orderBy(
        F.col("u.up_from"))
    matched = (ended.join(up, reaches, "left").withColumn("_rank", F.row_number().over(first_up))
               .where(F.col("_rank") == 1)
               .select("e.*", F.when(open_end("e.next_start") >= F.col("u.up_from"),
                                     F.greatest(F.col("u.up_from"), F.col("e.end"))).alias("back"),
                       F.col("u.up_from").alias("up_from"), F.col("u.up_from_time").alias("up_from_time"),
                       F.col("u.up_cause_offset").alias("back_offset"), F.col("u.up_cause_type").alias("back_type")))
    matched = matched.withColumn("back_time", F.when(F.col("back") > F.col("end"), F.col("up_from_time"))
                                 .when(F.col("back").isNotNull(), F.col("end_time")))
    removed = F.col("change_offset").isNotNull()
    cause_offset = F.coalesce(F.col("change_offset"), F.col("end"))
    cause_type = F.coalesce(F.col("change_type"), F.lit("RemoveTopicRecord"))
    why = F.when(removed, F.lit("removed by a reassignment")).otherwise(F.lit("topic deleted"))
    now = F.col("back") == F.col("end")
    later = F.col("back").isNotNull() & (F.col("back") > F.col("end"))
    was_live = F.col("last_state") != OFFLINE_REPLICA
    steps = [
        F.when(was_live, _step(OFFLINE_REPLICA, NEW_REPLICA, 1, "end", "end_time", cause_offset, cause_type, why)),
        _step(DELETION_STARTED, OFFLINE_REPLICA, 2, "end", "end_time", cause_offset, cause_type, why),
        F.when(now, _step(DELETION_SUCCESSFUL, DELETION_STARTED, 3, "end", "end_time", cause_offset, cause_type,
                          F.concat(_broker(), F.lit(" deleted the replica"))))
        .otherwise(_step(DELETION_INELIGIBLE, DELETION_STARTED, 3, "end", "end_time", cause_offset, cause_type,
                         F.concat(_broker(), F.lit(" is down: deletion waits for it")),
                         to=F.coalesce("back", "next_start"), to_time=F.coalesce("back_time", "next_start_time"))),
        F.when(now, _step(NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 4, "end", "end_time", cause_offset,
                          cause_type, why)),
    ]
    retry = F.concat(_broker(), F.lit(" is back: deletion retried"))
    back_offset, back_type = F.col("back_offset"), F.col("back_type")
    steps += [F.when(later, _step(state, previous, step, "back", "back_time", back_offset, back_type, retry))
              for state, previous, step in ((OFFLINE_REPLICA, DELETION_INELIGIBLE, 5),
                                            (DELETION_STARTED, OFFLINE_REPLICA, 6),
                                            (DELETION_SUCCESSFUL, DELETION_STARTED, 7),
                                            (NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 8))]
    generated = _exploded(matched, (*REPLICA_KEY, "topic_name", "_life", "last_state"), steps)
    # the first step leaves whatever state the membership ended in
    return generated.withColumn("previous_state", F.when(F.col("step") == 1, F.col("last_state"))
                                .otherwise(F.col("previous_state"))).drop("last_state")


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
