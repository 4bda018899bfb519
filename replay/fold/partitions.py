"""Partitions and topics: Kafka's ``TopicsDelta``/``PartitionRegistration.merge`` as DataFrame steps.

Each partition's events (PartitionRecord = create, PartitionChangeRecord = change, the partitions
of a RemoveTopicRecord = delete, the partitions a ClearElrRecord names = clear) are ordered as Kafka
applies them. Which topic events and creations apply is decided set-based (joins and windows); each partition's
events are then folded in one pass by a JVM function (``replay/jvm``: ``kraftreplay.fold.PartitionFold``), which
applies a change or clear only to a live partition (created and not deleted since) and merges each record into the
registration before it: every field is the last value a record set (``null`` arrays, leader ``-2`` and recovery
state ``-1`` set nothing), the leader epoch moves on with every record that names a leader, the partition epoch
with every merge (a clear merges only where it empties an ELR).
Changes Kafka would refuse (unknown partition, removed topic, directories that do not match the replicas, a
clear of an unknown topic name) and PartitionRecords of unknown topics are not applied and come out as
anomalies.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from records.kafka_constants import (
    MIGRATING_DIR,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    RECOVERY_STATES,
)
from records.vocabulary import column_name, default
from replay.core.events import kafka_columns, kafka_default, kafka_field, ordered, parsed
from replay.core.history import as_versions
from replay.core.jvm_functions import JvmFunction, array_of_structs, jvm_call, typed_fields
from replay.core.refusal_columns import reason_column
from replay.core.refusals import (
    INVALID_LEADER_RECOVERY_STATE,
    ISR_NOT_WITHIN_REPLICAS,
    LEADER_NOT_IN_REPLICAS,
    LIST_SEPARATOR,
    PARTITION_CHANGE_DIRECTORIES_MISMATCH,
    PARTITION_DIRECTORIES_MISMATCH,
    UNKNOWN_PARTITION_CHANGE,
    UNKNOWN_TOPIC_ELR_CLEAR,
    UNKNOWN_TOPIC_PARTITION,
    UNKNOWN_TOPIC_REMOVAL,
)
from replay.core.shapes import RecordShapes

KEY = ("topic_id", "partition_id")
ARRAYS = ("replicas", "isr", "adding_replicas", "removing_replicas", "eligible_leader_replicas", "last_known_elr")
EVENT_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
CLEAR_ELR = "ClearElrRecord"
TOPIC, REMOVE_TOPIC = "TopicRecord", "RemoveTopicRecord"
PARTITION, CHANGE = "PartitionRecord", "PartitionChangeRecord"
PARTITION_VALUES = ("leader", "leader_epoch", "partition_epoch", *ARRAYS, "leader_recovery_state", "directories")
# The JVM fold of one partition's events (replay/jvm: kraftreplay.fold.PartitionFold): the struct it reads for each
# event, fields in its order and types (the apply order first: sorting the structs sorts the events), and the
# struct it gives back for each, its outcome and the registration after it.
FOLD_EVENT = (("visible_offset", "bigint"), ("offset", "bigint"), ("seq", "bigint"), ("kind", "string"),
              *((name, "array<int>") for name in ARRAYS), ("leader", "int"), ("base_leader_epoch", "int"),
              ("base_partition_epoch", "int"), ("leader_recovery_state", "int"), ("record_dirs", "array<string>"),
              ("visible_time_ms", "bigint"), ("malformed", "boolean"))
APPLY_ORDER = tuple(name for name, _ in FOLD_EVENT[:3])  # the order Kafka applies a partition's events in
FOLD_CARRIED = ("record_type",)  # after the fields it reads, for the rows it gives
OUTCOME = "outcome"
IS_VERSION = "is_version"  # the registration after the last applied event at its visible offset
FOLD_RESULT = ((OUTCOME, "string"), *((name, "array<int>") for name in ARRAYS), ("leader", "int"),
               ("leader_epoch", "bigint"), ("partition_epoch", "bigint"), ("leader_recovery_state", "int"),
               ("directories", "array<string>"), ("valid_to_offset", "bigint"), ("valid_to_time_ms", "bigint"),
               (IS_VERSION, "boolean"), ("leader_outside_replicas", "boolean"), ("isr_outside_replicas", "boolean"))
# its outcomes, as PartitionFold names them: the event made (or deleted) the registration; its directories do not
# match its replicas (refused); a clear with no ELR to clear (not merged); a change Kafka refuses as a record (its
# own directories or recovery state); a change or clear with no live partition (not applied)
APPLIED, DIRECTORIES_REFUSED, NOTHING_TO_CLEAR = "applied", "directories refused", "nothing to clear"
MALFORMED, NO_PARTITION = "malformed", "no partition"
# what the refusal of a change reads of its record (the registration's values are null for it), under these names
REFUSED_RECORD = {"replicas": "record_replicas", "leader_recovery_state": "record_recovery_state",
                  "record_dirs": "record_dirs"}
# the registration's invariants the fold checks (Kafka's controller keeps them; a log may break them)
LEADER_OUTSIDE, ISR_OUTSIDE = "leader_outside_replicas", "isr_outside_replicas"
# the columns the fold's rows carry beside a version's: what its anomalies read
FOLD_COLUMNS = (IS_VERSION, OUTCOME, "kind", *REFUSED_RECORD.values(), LEADER_OUTSIDE, ISR_OUTSIDE)
PARTITION_FOLD = JvmFunction("kraft_partition_fold", "kraftreplay.fold.PartitionFold", array_of_structs(FOLD_RESULT))


@dataclass(frozen=True)
class TopicsResult:
    topic_events: DataFrame  # valid create/remove events of topics
    anomalies: DataFrame


def topic_events(events: DataFrame, shapes: RecordShapes) -> TopicsResult:
    """Topic creations and removals; a removal of a topic id that is not live is refused."""
    created = parsed(events, TOPIC, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(TOPIC, "topicId", "name"), F.lit("create").alias("kind"))
    removed = parsed(events, REMOVE_TOPIC, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(REMOVE_TOPIC, "topicId"), F.lit(None).cast("string").alias("name"),
        F.lit("remove").alias("kind"))
    both = created.unionByName(removed)
    by_topic = ordered("cluster_id", "topic_id")
    with_prev = both.withColumn("prev_kind", F.lag("kind").over(by_topic))
    # A removal applies only to a live topic: the previous *applied* event is its creation. Two
    # removals in a row: the second finds the topic gone (lag sees the first removal).
    after_create = F.coalesce(F.col("prev_kind") == "create", F.lit(False))
    valid = (F.col("kind") == "create") | after_create
    with_prev = with_prev.withColumn("replaces", (F.col("kind") == "create") & after_create)
    anomalies = with_prev.where(~valid).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        reason_column(UNKNOWN_TOPIC_REMOVAL, topic_id="topic_id").alias("reason"))
    return TopicsResult(with_prev.where(valid).drop("prev_kind"), anomalies)


def topic_live_intervals(topics: DataFrame) -> DataFrame:
    """[from, to) positions (visible offset, offset) in which each topic id is live."""
    by_topic = ordered("cluster_id", "topic_id")
    return (topics.withColumn("to_visible", F.lead("visible_offset").over(by_topic))
            .withColumn("to_offset", F.lead("offset").over(by_topic))
            .withColumn("to_seq", F.lead("seq").over(by_topic))
            .where(F.col("kind") == "create")
            .select("cluster_id", "topic_id", "name", F.col("visible_offset").alias("from_visible"),
                    F.col("offset").alias("from_offset"), F.col("seq").alias("from_seq"), "to_visible", "to_offset",
                    "to_seq"))


def _after(position: tuple[Column, Column, Column], start: tuple[Column, Column, Column]) -> Column:
    """``position`` (visible offset, offset, seq) comes at or after ``start`` in Kafka's apply order."""
    (visible, offset, seq), (start_visible, start_offset, start_seq) = position, start
    return (visible > start_visible) | ((visible == start_visible) & (
        (offset > start_offset) | ((offset == start_offset) & (seq >= start_seq))))


def _while_live(event: str, interval: str) -> Column:
    """Event alias ``event`` comes while the topic interval alias ``interval`` (``topic_live_intervals``) is live."""
    position = (F.col(f"{event}.visible_offset"), F.col(f"{event}.offset"), F.col(f"{event}.seq"))

    def bound(prefix: str) -> tuple[Column, Column, Column]:
        return (F.col(f"{interval}.{prefix}_visible"), F.col(f"{interval}.{prefix}_offset"),
                F.col(f"{interval}.{prefix}_seq"))

    return ((F.col(f"{event}.cluster_id") == F.col(f"{interval}.cluster_id")) & _after(position, bound("from"))
            & (F.col(f"{interval}.to_visible").isNull() | ~_after(position, bound("to"))))


@dataclass(frozen=True)
class ClearsResult:
    clears: DataFrame  # one "clear" event per partition key ever created under a topic id the record names
    anomalies: DataFrame


def elr_clears(records: DataFrame, live: DataFrame, keys: DataFrame) -> ClearsResult:
    """``TopicsDelta.replay(ClearElrRecord)``: the partitions of the topic live under that name (of every live
    topic when the name is empty) get their ELR and last known ELR emptied, as a PartitionChangeRecord setting
    both to ``[]`` would; a name no live topic has is refused. ``records``: ClearElrRecord events typed as ``r``;
    ``live``: ``topic_live_intervals``; ``keys``: the partitions ever created. Which clears change a partition
    (an ELR to empty) is decided with the partition's state: ``_registrations``."""
    clear_records, intervals = records.alias("c"), live.alias("t")
    name = F.coalesce(F.col("c.r.topicName"), F.lit(default(CLEAR_ELR, "topicName")))
    named = (name == "") | (F.col("t.name") == name)
    matched = clear_records.join(F.broadcast(intervals), _while_live("c", "t") & named, "left").select(
        *[F.col(f"c.{column}") for column in EVENT_COLUMNS], name.alias("topic_name"), F.col("t.topic_id"))
    refused = matched.where(F.col("topic_id").isNull() & (F.col("topic_name") != "")).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        reason_column(UNKNOWN_TOPIC_ELR_CLEAR, topic_name="topic_name").alias("reason"))
    empty = F.array().cast("array<int>")
    clears = matched.join(keys, ["cluster_id", "topic_id"]).select(
        *EVENT_COLUMNS, *KEY, F.lit("clear").alias("kind"),
        empty.alias("eligible_leader_replicas"), empty.alias("last_known_elr"))
    return ClearsResult(clears, refused)


@dataclass(frozen=True)
class PartitionsResult:
    # the fold's rows: every version (``IS_VERSION``) and every event it refused or found breaking an invariant, in
    # partition_history's columns but the topic's name, with ``FOLD_COLUMNS`` (``partition_versions``,
    # ``partition_anomalies``); not run yet
    folded: DataFrame
    refused: DataFrame  # the anomalies found before the fold: creations Kafka refuses, clears of unknown topics


def partition_states(events: DataFrame, topics: DataFrame, shapes: RecordShapes,
                     others: DataFrame | None = None) -> PartitionsResult:
    """The partition registration after every applied Partition/PartitionChange record and ELR clear, as the fold's
    rows (``PartitionsResult``: the versions, and the events an anomaly reads). ``others``: the events without
    Partition(Change)Records, where ClearElrRecords are looked for (default ``events``); a log without one runs the
    plan it always ran."""
    created = parsed(events, PARTITION, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(PARTITION, "topicId", "partitionId"), F.lit("create").alias("kind"),
        *kafka_columns(PARTITION, "replicas", "isr"),
        *kafka_columns(PARTITION, "addingReplicas", "removingReplicas", defaults=True),
        # PartitionRegistration's constructor: a null ELR or last known ELR (a record before them) is empty
        F.coalesce(kafka_field(PARTITION, "eligibleLeaderReplicas"), F.array().cast("array<int>")).alias(
            column_name("eligibleLeaderReplicas")),
        F.coalesce(kafka_field(PARTITION, "lastKnownElr"), F.array().cast("array<int>")).alias(
            column_name("lastKnownElr")),
        *kafka_columns(PARTITION, "leader"), kafka_field(PARTITION, "leaderEpoch").alias("base_leader_epoch"),
        kafka_field(PARTITION, "partitionEpoch").alias("base_partition_epoch"),
        *kafka_columns(PARTITION, "leaderRecoveryState", defaults=True),
        # PartitionRegistration(PartitionRecord): no directories are none (defaultToMigrating makes them MIGRATING)
        kafka_default(PARTITION, "directories").alias("record_dirs"))
    leader, recovery = kafka_default(CHANGE, "leader"), kafka_default(CHANGE, "leaderRecoveryState")
    changed = parsed(events, CHANGE, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(CHANGE, "topicId", "partitionId"), F.lit("change").alias("kind"),
        # null (Kafka's default) changes nothing
        *kafka_columns(CHANGE, "replicas", "isr", "addingReplicas", "removingReplicas", "eligibleLeaderReplicas",
                       "lastKnownElr"),
        # NO_LEADER_CHANGE (Kafka's default) = no change; anything else sets it and bumps the epoch
        F.when(leader != NO_LEADER_CHANGE, leader).alias("leader"),
        F.lit(None).cast("int").alias("base_leader_epoch"), F.lit(None).cast("int").alias("base_partition_epoch"),
        F.when(recovery != NO_RECOVERY_STATE_CHANGE, recovery).alias("leader_recovery_state"),
        kafka_field(CHANGE, "directories").alias("record_dirs"))  # null: unchanged; [] is a list, of no directories

    # PartitionRecords need a live topic (TopicsDelta.getOrCreateTopicDelta throws otherwise).
    live = topic_live_intervals(topics).alias("t")
    in_topic = (F.col("c.topic_id") == F.col("t.topic_id")) & _while_live("c", "t")
    matched = created.alias("c").join(live, in_topic, "left").select(
        "c.*", F.col("t.topic_id").isNotNull().alias("topic_live"))
    matched = matched.localCheckpoint(eager=True)  # the creations and their refusals: one parse, one join
    malformed = _mismatched_directories() | _invalid_recovery_state()
    refused_creates = matched.where(~F.col("topic_live") | malformed).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.when(~F.col("topic_live"), _partition_reason(UNKNOWN_TOPIC_PARTITION))
        .when(_mismatched_directories(), _partition_reason(PARTITION_DIRECTORIES_MISMATCH))
        .otherwise(_invalid_recovery_state_reason()).alias("reason"))
    creates = matched.where(F.col("topic_live") & ~malformed).drop("topic_live")

    # RemoveTopicRecord deletes every partition ever created under that topic id; a TopicRecord for a
    # live topic id replaces the topic with no partitions (TopicsDelta), which deletes them too.
    removes = topics.where((F.col("kind") == "remove") | F.col("replaces")).select(
        "cluster_id", "topic_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
    keys = creates.select("cluster_id", *KEY).distinct()
    deletes = removes.join(keys, ["cluster_id", "topic_id"]).select(
        *EVENT_COLUMNS, "topic_id", "partition_id", F.lit("delete").alias("kind"))
    clear_records = parsed(events if others is None else others, CLEAR_ELR, shapes).localCheckpoint(eager=True)
    clearing = not clear_records.isEmpty()  # rare records: without them, no clear events and no join
    if clearing:
        cleared = elr_clears(clear_records, live, keys)

    # checkDirectories refuses a change whose own replicas and directories differ in length, and
    # LeaderRecoveryState.changeTo a recovery state Kafka does not know. Malformed changes stay in the stream
    # (flagged; the fold never applies one) so the log's largest record type is parsed once: their refusals, and
    # those of changes with no live partition, come out of the fold with its outcomes.
    changed = changed.withColumn("malformed", _mismatched_directories() | _invalid_recovery_state())
    stream = (creates.withColumn("malformed", F.lit(False)).unionByName(changed)
              .unionByName(deletes, allowMissingColumns=True))
    if clearing:
        stream = stream.unionByName(cleared.clears, allowMissingColumns=True)
    stream = stream.withColumn("malformed", F.coalesce("malformed", F.lit(False)))
    keyed = ("cluster_id", *KEY)
    outcomes = _registrations(stream, keyed)
    # the versions, and the events an anomaly reads: the changes refused and the registrations breaking an invariant
    kept = F.col(IS_VERSION) | _refused_change() | F.col(LEADER_OUTSIDE) | F.col(ISR_OUTSIDE)
    folded = as_versions(outcomes.where(kept), keyed, (*PARTITION_VALUES, *FOLD_COLUMNS))
    before = refused_creates if not clearing else refused_creates.unionByName(cleared.anomalies)
    return PartitionsResult(folded, before)


def partition_versions(folded: DataFrame) -> DataFrame:
    """The partitions' versions from the fold's rows (``PartitionsResult.folded``, with or without the topic's name),
    in partition_history's columns; a filter and projection of them (their partitioning and order kept)."""
    return folded.where(F.col(IS_VERSION)).drop(*FOLD_COLUMNS)


def partition_anomalies(folded: DataFrame, result: PartitionsResult) -> DataFrame:
    """The partitions' anomalies: ``result.refused`` and, from the fold's rows (``result.folded`` as it is or
    checkpointed: ``folded``), the changes refused (malformed, no live partition to apply it to, or directories that
    do not match the merged replicas) and the registrations that break an invariant (zero, one or two reasons). The
    fold's rows are read once: each row's anomalies are an array of (kind, reason), exploded."""
    lengths_refused = _partition_reason(PARTITION_CHANGE_DIRECTORIES_MISMATCH)
    # a refusal reads its record's values (``REFUSED_RECORD``), not the registration's
    record_replicas, record_state = REFUSED_RECORD["replicas"], REFUSED_RECORD["leader_recovery_state"]
    refusal = (F.when(F.col(OUTCOME) == DIRECTORIES_REFUSED, lengths_refused)
               .when((F.col(OUTCOME) == MALFORMED) & _mismatched_directories(record_replicas), lengths_refused)
               .when(F.col(OUTCOME) == MALFORMED, _invalid_recovery_state_reason(record_state))
               .otherwise(_partition_reason(UNKNOWN_PARTITION_CHANGE)))
    replicas = F.array_join("replicas", LIST_SEPARATOR)
    leader_outside = _partition_reason(LEADER_NOT_IN_REPLICAS, skip_nulls=True, leader="leader", replicas=replicas)
    isr_outside = _partition_reason(ISR_NOT_WITHIN_REPLICAS, skip_nulls=True,
                                    isr=F.array_join("isr", LIST_SEPARATOR), replicas=replicas)

    def anomaly(found: Column, kind: str, reason: Column) -> Column:
        return F.when(found, F.struct(F.lit(kind).alias("kind"), reason.alias("reason")))

    found = F.array(anomaly(_refused_change(), "refused", refusal),
                    anomaly(F.col(LEADER_OUTSIDE), "invariant", leader_outside),
                    anomaly(F.col(ISR_OUTSIDE), "invariant", isr_outside))
    flagged = folded.where(_refused_change() | F.col(LEADER_OUTSIDE) | F.col(ISR_OUTSIDE)).select(
        F.col("cluster_id"), F.col("cause_offset").alias("offset"), F.col("cause_type").alias("record_type"),
        F.explode(F.filter(found, lambda row: row.isNotNull())).alias("_anomaly"))
    return result.refused.unionByName(flagged.select(
        "cluster_id", "offset", "record_type", F.col("_anomaly.kind").alias("kind"),
        F.col("_anomaly.reason").alias("reason")))


def _refused_change() -> Column:
    """A fold's row of a change it refused (a clear with no partition is not refused: it names no partition)."""
    return F.col(OUTCOME).isin(MALFORMED, DIRECTORIES_REFUSED) | (
        (F.col("kind") == "change") & (F.col(OUTCOME) == NO_PARTITION))


def _mismatched_directories(replicas: str = "replicas") -> Column:
    """``checkDirectories``: a record that sets replicas (column ``replicas``) and a non-empty directory list of
    another length."""
    return (F.col(replicas).isNotNull() & F.col("record_dirs").isNotNull() & (F.size("record_dirs") > 0)
            & (F.size("record_dirs") != F.size(replicas)))


def _invalid_recovery_state() -> Column:
    """``LeaderRecoveryState.of`` throws for a value other than RECOVERED and RECOVERING (a change's ``NO_CHANGE``
    is null here, and a PartitionRecord's ``NO_CHANGE`` is invalid too)."""
    return F.coalesce(~F.col("leader_recovery_state").isin(*RECOVERY_STATES), F.lit(False))


def _partition_reason(template: str, *, skip_nulls: bool = False, **values: Column | str) -> Column:
    """A reason (``replay.core.refusals``) naming the row's partition: its ``{topic_id}`` and ``{partition_id}``."""
    return reason_column(template, skip_nulls=skip_nulls, topic_id="topic_id", partition_id="partition_id", **values)


def _invalid_recovery_state_reason(state: str = "leader_recovery_state") -> Column:
    """The refusal's reason (the record's state in column ``state``), in the words of Kafka's
    ``LeaderRecoveryState.of``."""
    return reason_column(INVALID_LEADER_RECOVERY_STATE, state=state)


def _registrations(stream: DataFrame, keyed: tuple[str, ...]) -> DataFrame:
    """Every event's outcome and the partition after it (null but where applied): each partition's events folded in
    apply order by the JVM fold ``PARTITION_FOLD`` (``kraftreplay.fold.PartitionFold``), which sees the registration
    before each event. A change or clear applies only to a live partition, a malformed change never.
    ``PartitionRegistration.merge`` keeps the old directories when a change has none, and ``defaultToMigrating``
    turns a list that is all MIGRATING (or empty) into MIGRATING for every replica of the new assignment; a merge
    whose directories then differ from its replicas in length is refused by the registration's constructor and
    changes nothing. A clear merges only where the ELR or the last known ELR is not empty (only there does it move
    the partition epoch on and make a version). A refused change keeps what its refusal reads of its record
    (``REFUSED_RECORD``)."""
    spark = stream.sparkSession
    event = F.struct(*typed_fields(FOLD_EVENT), *FOLD_CARRIED)
    # the structs sort by their first fields, the apply order (visible offset, offset, seq: unique per partition); the
    # events come sorted by partition and in that order, aggregated as they come where the plan is made
    # ``sort_aggregated`` (``replay.fold.engine``)
    ordered = stream.repartition(*keyed).sortWithinPartitions(*keyed, *APPLY_ORDER)
    grouped = ordered.groupBy(*keyed).agg(F.array_sort(F.collect_list(event)).alias("_events"))
    folded = grouped.select(*keyed, "_events", jvm_call(
        spark, PARTITION_FOLD, F.col("_events"), F.lit(MIGRATING_DIR)).alias("_results"))
    refused = F.col(f"_step._results.{OUTCOME}") != APPLIED
    outcomes = folded.select(*keyed, F.explode(F.arrays_zip("_events", "_results")).alias("_step")).select(
        *keyed, *[F.col(f"_step._events.{name}").alias(name) for name in (*EVENT_COLUMNS, "kind")
                  if name not in keyed],
        *[F.col(f"_step._results.{name}").alias(name) for name, _ in FOLD_RESULT],
        *[F.when(refused, F.col(f"_step._events.{name}")).alias(renamed)
          for name, renamed in REFUSED_RECORD.items()])
    return outcomes
