"""The election audit: every leader change classified, checked against Kafka's rule, and every leaderless
period with the broker event that caused it.

Kafka's controller (``PartitionChangeBuilder.electLeader``, written once in ``replay.audit.election_rule``) keeps the
current leader while it is still acceptable; otherwise it elects the first replica, in replica order, that is in
the ISR (the ELR when the ISR is empty) and acceptable — its broker active: registered, unfenced and not in
controlled shutdown — and only when unclean election is allowed and no such replica exists, the first acceptable
replica outside the ISR. The audit rebuilds that choice from the broker timeline's states at the offset of each
change (``replay.core.broker_timeline``) and flags any leader that differs. Brokers are judged as of the change:
Kafka writes a broker's fence *after* the partition changes it causes (one batch), so the losing leader itself
is never a candidate, and the loss is attributed to the broker's state at the change or, failing that, to its
next state change (the fence that follows).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakehouse.spark_settings import co_partitioned_by_some_keys, kept_checkpoint
from lakehouse.tables import PARTITION_KEY
from records.kafka_constants import NO_LEADER
from replay.audit.effective_configs import ConfigsInForce
from replay.audit.election_configs import CONFIG_COLUMNS, judged_by_configs
from replay.audit.election_rule import (
    CLEAN,
    CONTROLLED_SHUTDOWN_MOVE,
    LEADER_LOST,
    PREFERRED,
    REASSIGNMENT,
    UNCLEAN,
    first_candidate,
    is_acceptable_leader,
    is_valid_new_leader,
    was_unclean,
)
from replay.core.broker_timeline import ACTIVE, CONTROLLED_SHUTDOWN, broker_timeline, is_active
from replay.core.history import collapse, holds_at
from replay.core.safe_points import SAFE_POINT, SafePoints

ELECTION_COLUMNS = (
    *PARTITION_KEY, "topic_name", "offset", "time_ms", "cause_offset", "cause_type", "election_type",
    "previous_leader", "leader", "leader_epoch", "previous_isr", "isr", "replicas", "leader_recovery_state",
    "lost_leader_cause", "lost_leader_cause_offset", "lost_leader_cause_type", "expected_leader", "deviation",
    *CONFIG_COLUMNS)
# ``lost_leader_cause`` holds the broker timeline's states as they are (``replay.core.broker_timeline``); the
# ``CONFIG_COLUMNS`` judge the election by the configs in force (``replay.audit.election_configs``).


def broker_status(broker_history: DataFrame) -> DataFrame:
    """The broker timeline (``state``: active, fenced, controlled-shutdown, unregistered), each interval with the
    state and record of the next one (``next_state``, ``next_cause_offset``, ``next_cause_type``)."""
    by_broker = Window.partitionBy("cluster_id", "broker_id").orderBy("valid_from_offset")
    return (broker_timeline(broker_history)
            .withColumn("next_state", F.lead("state").over(by_broker))
            .withColumn("next_cause_offset", F.lead("cause_offset").over(by_broker))
            .withColumn("next_cause_type", F.lead("cause_type").over(by_broker)))


def _at(left: DataFrame, status: DataFrame, broker: str, offset: str, how: str = "left") -> DataFrame:
    """``left`` (alias ``l``) joined with the state (alias ``s``) of broker column ``broker`` as of offset column
    ``offset``."""
    states = F.broadcast(status).alias("s")  # a few intervals per broker: small next to the rows asking
    on = ((F.col("l.cluster_id") == F.col("s.cluster_id")) & (F.col(f"l.{broker}") == F.col("s.broker_id"))
          & holds_at(F.col(f"l.{offset}"), "s"))
    return left.alias("l").join(states, on, how)


def elections(partition_history: DataFrame, broker_history: DataFrame, status: DataFrame | None = None,
              configs: ConfigsInForce | None = None) -> DataFrame:
    """One row per leader change (leader differs from the previous version's), classified and checked;
    checkpointed (runs its jobs). ``partition_history``: distributed by partition and sorted by offset
    (``replay.store.derived.distributed_partitions``); ``status``: ``broker_status(broker_history)`` when the caller
    has it already; ``configs``: the configs the elections are judged by (None: the lake has no config_history, the
    config columns stay null)."""
    by_partition = Window.partitionBy(*PARTITION_KEY).orderBy("valid_from_offset")
    versions = partition_history.select(
        *PARTITION_KEY, "topic_name", "leader", "leader_epoch", "isr", "replicas", "eligible_leader_replicas",
        "leader_recovery_state", "valid_from_offset", "valid_from_time_ms", "cause_offset", "cause_type",
        F.lag("leader").over(by_partition).alias("previous_leader"),
        F.lag("isr").over(by_partition).alias("previous_isr"),
        F.lag("replicas").over(by_partition).alias("previous_replicas"),
        F.lag("eligible_leader_replicas").over(by_partition).alias("previous_elr"),
        F.lag("valid_to_offset").over(by_partition).alias("previous_to"))
    changes = versions.where((F.col("previous_to") == F.col("valid_from_offset"))
                             & (F.col("leader") != F.col("previous_leader"))).withColumnRenamed(
        "valid_from_offset", "offset").withColumnRenamed("valid_from_time_ms", "time_ms").drop("previous_to")
    # kept distributed by partition: the candidates' choice below is aggregated where they are (no shuffle)
    changes = kept_checkpoint(changes)
    if status is None:
        status = broker_status(broker_history).localCheckpoint(eager=True)

    # Every replica of the new assignment as a candidate, judged by its broker's state at the change; the
    # losing leader is the broker being removed (Kafka writes its fence after the changes it causes).
    candidates = changes.select(*PARTITION_KEY, "offset", "previous_leader", "isr", "eligible_leader_replicas",
                                "previous_isr", "previous_elr",
                                F.posexplode("replicas").alias("pos", "candidate"))
    judged = _at(candidates, status, "candidate", "offset").select(
        "l.*", is_acceptable_leader(F.col("s.state"), F.col("candidate") == F.col("previous_leader"))
        .alias("acceptable"))
    acceptable = F.col("acceptable")
    valid = is_valid_new_leader(F.col("candidate"), F.col("isr"), F.col("eligible_leader_replicas"), acceptable)
    was_clean = (F.coalesce(F.array_contains("previous_isr", F.col("candidate")), F.lit(False))
                 | F.coalesce(F.array_contains("previous_elr", F.col("candidate")), F.lit(False)))
    choice = judged.groupBy(*PARTITION_KEY, "offset").agg(
        first_candidate(valid).alias("expected_clean"),
        first_candidate(acceptable).alias("expected_unclean"),
        first_candidate(acceptable & was_clean).alias("clean_candidate"))

    # the losing leader's state looked up on each change (no leader before: no broker, the state is null)
    audit = _lost_leader_state(changes, status).join(choice, [*PARTITION_KEY, "offset"], "left")
    leader, previous = F.col("leader"), F.col("previous_leader")
    reassigned = (F.col("replicas") != F.col("previous_replicas")) | (
        (previous >= 0) & ~F.array_contains("replicas", previous))
    kind = (F.when(leader == NO_LEADER, F.lit(LEADER_LOST))
            .when(was_unclean(leader, F.col("previous_isr"), F.col("previous_elr"), F.col("isr")), F.lit(UNCLEAN))
            .when(reassigned, F.lit(REASSIGNMENT))
            .when(F.col("p_state") == CONTROLLED_SHUTDOWN, F.lit(CONTROLLED_SHUTDOWN_MOVE))
            .when(is_active(F.col("p_state")) & F.array_contains("isr", previous)
                  & (leader == F.element_at("replicas", 1)), F.lit(PREFERRED))
            .otherwise(F.lit(CLEAN)))
    unclean = F.col("election_type") == UNCLEAN
    expected = F.when(unclean, F.col("expected_unclean")).otherwise(
        F.coalesce(F.col("expected_clean"), F.lit(NO_LEADER)))
    broker = F.col("expected_leader").cast("string")
    deviation = (
        F.when((leader == NO_LEADER) & (F.col("expected_leader") >= 0),
               F.concat(F.lit("no leader elected although broker "), broker, F.lit(" was an acceptable ISR member")))
        .when(unclean & F.col("clean_candidate").isNotNull(),
              F.concat(F.lit("unclean election although broker "), F.col("clean_candidate").cast("string"),
                       F.lit(" of the ISR was acceptable")))
        .when((leader >= 0) & (leader != F.coalesce(F.col("expected_leader"), F.lit(NO_LEADER))),
              F.concat(F.lit("Kafka would elect "),
                       F.coalesce(F.concat(F.lit("broker "), broker), F.lit("no leader")),
                       F.when(unclean, F.lit(" (first acceptable replica in replica order)"))
                       .otherwise(F.lit(" (first acceptable ISR replica in replica order)")))))
    judged = judged_by_configs(_with_lost_cause(audit.withColumn("election_type", kind))
                               .withColumn("expected_leader", expected)
                               .withColumn("deviation", deviation), configs).select(*ELECTION_COLUMNS)
    # the changes and their choices both distributed by partition: joined where they are, by partition and offset
    with co_partitioned_by_some_keys(judged.sparkSession):
        return judged.localCheckpoint(eager=True)


def _lost_leader_state(rows: DataFrame, status: DataFrame) -> DataFrame:
    """``rows`` (with ``offset``, ``previous_leader``) plus the losing leader's state at the change and its next
    state (the fence that follows in the batch): ``p_state``, ``p_cause_*``, ``p_next_*``."""
    return _at(rows, status, "previous_leader", "offset").select(
        "l.*", F.col("s.state").alias("p_state"), F.col("s.cause_offset").alias("p_cause_offset"),
        F.col("s.cause_type").alias("p_cause_type"), F.col("s.next_state").alias("p_next_state"),
        F.col("s.next_cause_offset").alias("p_next_offset"), F.col("s.next_cause_type").alias("p_next_type"))


def _with_lost_cause(rows: DataFrame) -> DataFrame:
    """The ``lost_leader_cause*`` columns: the losing leader's broker state that took the leadership away, at
    the change or else its next state change; none when an election moved the leader with a choice."""
    broker_caused = _taken_by_broker(F.col("p_state") == CONTROLLED_SHUTDOWN)
    down_now = F.col("p_state") != ACTIVE
    down_next = F.col("p_next_state").isNotNull() & (F.col("p_next_state") != ACTIVE)
    now, later = broker_caused & down_now, broker_caused & down_next
    return (rows.withColumn("lost_leader_cause", F.when(now, F.col("p_state")).when(later, F.col("p_next_state")))
            .withColumn("lost_leader_cause_offset", F.when(now, F.col("p_cause_offset"))
                        .when(later, F.col("p_next_offset")))
            .withColumn("lost_leader_cause_type", F.when(now, F.col("p_cause_type")).when(
                later, F.coalesce(F.col("p_next_type"), F.lit("UnregisterBrokerRecord")))))


def explained_losses(unexplained: DataFrame, status: DataFrame) -> DataFrame:
    """Stored election rows whose lost leader was not explained yet (``unexplained_loss``), with the lost-leader
    columns derived again from the broker states known now (``status``: ``broker_status``). The rest of a row
    depends only on the brokers' states at its offset, which later records do not change."""
    lost = _lost_leader_state(unexplained, status)
    return _with_lost_cause(lost.drop("lost_leader_cause", "lost_leader_cause_offset", "lost_leader_cause_type")
                            ).select(*ELECTION_COLUMNS)


# SQL text, not only Columns: the lake's delta-spark engine replaces the rows these select (``replaceWhere``).
_STILL_A_REPLICA = "previous_leader >= 0 AND array_contains(replicas, previous_leader)"
_LEFT_ISR_OR_NO_LEADER = f"(NOT array_contains(isr, previous_leader) OR leader = {NO_LEADER})"
UNEXPLAINED_LOSS = f"{_STILL_A_REPLICA} AND {_LEFT_ISR_OR_NO_LEADER} AND lost_leader_cause IS NULL"


def _taken_by_broker(also: Column | None = None) -> Column:
    """The leader was taken away by its broker's state (not moved by an election that had a choice): it stays a
    replica but left the ISR, or no leader was elected, or ``also``."""
    lost = F.expr(_LEFT_ISR_OR_NO_LEADER)
    return F.expr(_STILL_A_REPLICA) & (lost if also is None else lost | also)


def unexplained_loss() -> Column:
    """An election row whose lost leader was taken away by its broker, with no cause found yet: the broker had
    no state change after the election so far, so a later record (the fence that follows) may still explain
    it. ``elections`` gives the cause only once that change is in the log."""
    return F.expr(UNEXPLAINED_LOSS)


LEADERLESS_COLUMNS = (
    *PARTITION_KEY, "topic_name", "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
    "duration_ms", "previous_leader", "isr", "cause", "cause_broker", "cause_offset", "cause_type", "ended_by",
    "new_leader", "reason")


def _offline_runs(partition_history: DataFrame) -> DataFrame:
    """Each partition's runs of touching versions without a leader, the first version's isr and cause kept.

    Collapsed from the leaderless versions alone (0.1 % of a 10 M log's): a partition's versions are disjoint and
    never empty (``replay.core.history.to_intervals``), so two leaderless versions touch only when no version lies
    between them, and the runs are those of the whole history."""
    offline = partition_history.where(F.col("leader") == NO_LEADER).withColumn("offline", F.lit(True))
    return collapse(offline.select(*PARTITION_KEY, "topic_name", "offline", "isr", "valid_from_offset",
                                   "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms", "cause_offset",
                                   "cause_type"),
                    PARTITION_KEY, ("offline",)).drop("offline")


def _ended_by(end_type: Column) -> Column:
    return (F.when(F.col("valid_to_offset").isNull(), F.lit(None).cast("string"))
            .when(end_type.isNotNull(), F.concat(end_type, F.lit(" election")))
            .otherwise(F.lit("partition deleted")))


def _period_rows(joined: DataFrame) -> DataFrame:
    """Leaderless rows from runs joined with what started them (``previous_leader``, ``cause``, ``lost_offset``,
    ``lost_type``: the election at the start) and ended them (``ended_by``, ``new_leader``)."""
    cause_broker = F.when(F.col("cause").isNotNull(), F.col("previous_leader"))
    reason = (F.when(F.col("previous_leader").isNull(), F.lit("created without a leader"))
              .otherwise(F.concat(
                  F.lit("leader "), F.col("previous_leader").cast("string"), F.lit(" lost"),
                  F.when(F.col("cause").isNotNull(), F.concat(
                      F.lit(": broker "), F.col("previous_leader").cast("string"), F.lit(" "),
                      F.when(F.col("cause") == CONTROLLED_SHUTDOWN, F.lit("in controlled shutdown"))
                      .otherwise(F.col("cause")), F.lit(" ("), F.col("lost_type"), F.lit(" at offset "),
                      F.col("lost_offset").cast("string"), F.lit(")"))).otherwise(F.lit("")),
                  F.lit("; no other ISR member could lead (ISR ["), F.array_join("isr", ", "), F.lit("])"))))
    return joined.select(
        *PARTITION_KEY, "topic_name", "valid_from_offset", "valid_to_offset", "valid_from_time_ms",
        "valid_to_time_ms", (F.col("valid_to_time_ms") - F.col("valid_from_time_ms")).alias("duration_ms"),
        "previous_leader", "isr", "cause", cause_broker.alias("cause_broker"),
        F.coalesce(F.col("lost_offset"), F.col("cause_offset")).alias("cause_offset"),
        F.coalesce(F.col("lost_type"), F.col("cause_type")).alias("cause_type"), "ended_by", "new_leader",
        reason.alias("reason"))


# A leaderless run starts at an election to no leader and ends at one from no leader (the versions are unique per
# offset and touch): only those elections are joined (a few thousand of 2.7 M at 10 M records).
def _starts(audit: DataFrame) -> DataFrame:
    return audit.where(F.col("leader") == NO_LEADER).select(
        *PARTITION_KEY, F.col("offset").alias("valid_from_offset"), "previous_leader",
        F.col("lost_leader_cause").alias("cause"), F.col("lost_leader_cause_offset").alias("lost_offset"),
        F.col("lost_leader_cause_type").alias("lost_type"))


def _ends(audit: DataFrame) -> DataFrame:
    return audit.where(F.col("previous_leader") == NO_LEADER).select(
        *PARTITION_KEY, F.col("offset").alias("valid_to_offset"), F.col("election_type").alias("end_type"),
        F.col("leader").alias("new_leader"))


def _periods(runs: DataFrame, audit: DataFrame) -> DataFrame:
    joined = (runs.join(_starts(audit), [*PARTITION_KEY, "valid_from_offset"], "left")
              .join(_ends(audit), [*PARTITION_KEY, "valid_to_offset"], "left"))
    return _period_rows(joined.withColumn("ended_by", _ended_by(F.col("end_type"))))


def leaderless_periods(partition_history: DataFrame, audit: DataFrame) -> DataFrame:
    """Every period a partition had no leader, with what started it (the broker event) and ended it."""
    return _periods(_offline_runs(partition_history), audit)


def resumed_leaderless_periods(partition_history: DataFrame, audit: DataFrame, opened: DataFrame,
                               checkpoints: SafePoints) -> DataFrame:
    """``leaderless_periods`` resumed from a checkpoint C: ``partition_history`` holds the versions live after
    C, ``audit`` the elections after C and the stored ones whose lost leader was not explained (now derived
    again), ``opened`` the stored mutable periods, ``checkpoints`` each cluster's C (``_c``). Gives the
    periods starting after C, and the stored mutable ones with the end and cause known now."""
    runs = checkpoints.join(_offline_runs(partition_history))
    new = _periods(runs.where(F.col("valid_from_offset") > F.col(SAFE_POINT)).drop(SAFE_POINT), audit)
    # The run live at C (it starts at or before C) is the stored open period going on: its new end.
    going_on = runs.where(F.col("valid_from_offset") <= F.col(SAFE_POINT)).select(
        *PARTITION_KEY, F.col("valid_to_offset").alias("_to"), F.col("valid_to_time_ms").alias("_to_time"))
    # evaluated once, before the end is replaced (as in ``replay.fold.incremental._merge``)
    stored = opened.join(going_on, list(PARTITION_KEY), "left").withColumn(
        "_reopened", F.col("valid_to_offset").isNull())
    reopened = F.col("_reopened")
    stored = (stored.withColumn("valid_to_offset", F.when(reopened, F.col("_to")).otherwise(F.col("valid_to_offset")))
              .withColumn("valid_to_time_ms", F.when(reopened, F.col("_to_time"))
                          .otherwise(F.col("valid_to_time_ms"))))
    # What started it: the election at its start when that one was derived again, else the stored values.
    started = _starts(audit).select(*PARTITION_KEY, "valid_from_offset",
                                    *[F.col(c).alias(f"_a_{c}") for c in ("previous_leader", "cause", "lost_offset",
                                                                          "lost_type")])
    known = F.col("cause").isNotNull()
    stored = stored.join(started, [*PARTITION_KEY, "valid_from_offset"], "left")
    again = F.col("_a_previous_leader").isNotNull()
    stored = stored.select(
        "*", F.when(again, F.col("_a_lost_offset")).when(known, F.col("cause_offset")).alias("lost_offset"),
        F.when(again, F.col("_a_lost_type")).when(known, F.col("cause_type")).alias("lost_type"))
    stored = (stored.withColumn("cause", F.when(again, F.col("_a_cause")).otherwise(F.col("cause")))
              .withColumn("previous_leader", F.when(again, F.col("_a_previous_leader"))
                          .otherwise(F.col("previous_leader"))))
    # What ended it: for a period open at C, the election at its new end.
    stored = stored.join(_ends(audit).withColumnRenamed("new_leader", "_end_leader"),
                         [*PARTITION_KEY, "valid_to_offset"], "left")
    stored = (stored.withColumn("ended_by", F.when(F.col("_reopened"), _ended_by(F.col("end_type")))
                                .otherwise(F.col("ended_by")))
              .withColumn("new_leader", F.when(F.col("_reopened"), F.col("_end_leader"))
                          .otherwise(F.col("new_leader"))))
    return new.unionByName(_period_rows(stored))
