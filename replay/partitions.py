"""Partitions and topics: Kafka's ``TopicsDelta``/``PartitionRegistration.merge`` as window functions.

Each partition's events (PartitionRecord = create, PartitionChangeRecord = change, the partitions
of a RemoveTopicRecord = delete, the partitions a ClearElrRecord names = clear) are ordered as Kafka
applies them. A *generation* starts at every create or delete; inside a create generation each field
is the last value a record set (``null`` arrays, leader ``-2`` and recovery state ``-1`` set nothing),
the leader epoch is the created epoch plus the number of records that named a leader, the partition
epoch the created epoch plus the number of changes (a clear counts only where it emptied an ELR).
Changes Kafka would refuse (unknown partition, removed topic, a clear of an unknown topic name) and
PartitionRecords of unknown topics are not applied and come out as anomalies.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lakehouse.spark import spark_conf
from replay.events import MIGRATING_DIR, UNASSIGNED_DIR, last_non_null, ordered, parsed, running
from replay.shapes import RecordShapes

KEY = ("topic_id", "partition_id")
ARRAYS = ("replicas", "isr", "adding_replicas", "removing_replicas", "eligible_leader_replicas", "last_known_elr")
EVENT_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
CLEAR_ELR = "ClearElrRecord"
CHANGES = ("change", "clear")  # the event kinds that merge into a live partition (PartitionRegistration.merge)


@dataclass(frozen=True)
class TopicsResult:
    topic_events: DataFrame  # valid create/remove events of topics
    anomalies: DataFrame


def topic_events(events: DataFrame, shapes: RecordShapes) -> TopicsResult:
    """Topic creations and removals; a removal of a topic id that is not live is refused."""
    created = parsed(events, "TopicRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.topicId").alias("topic_id"), F.col("r.name").alias("name"),
        F.lit("create").alias("kind"))
    removed = parsed(events, "RemoveTopicRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.topicId").alias("topic_id"), F.lit(None).cast("string").alias("name"),
        F.lit("remove").alias("kind"))
    both = created.unionByName(removed)
    w = ordered("cluster_id", "topic_id")
    with_prev = both.withColumn("prev_kind", F.lag("kind").over(w))
    # A removal applies only to a live topic: the previous *applied* event is its creation. Two
    # removals in a row: the second finds the topic gone (lag sees the first removal).
    after_create = F.coalesce(F.col("prev_kind") == "create", F.lit(False))
    valid = (F.col("kind") == "create") | after_create
    with_prev = with_prev.withColumn("replaces", (F.col("kind") == "create") & after_create)
    anomalies = with_prev.where(~valid).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.concat(F.lit("RemoveTopicRecord of unknown topic id "), F.col("topic_id")).alias("reason"))
    return TopicsResult(with_prev.where(valid).drop("prev_kind"), anomalies)


def topic_live_intervals(topics: DataFrame) -> DataFrame:
    """[from, to) positions (visible offset, offset) in which each topic id is live."""
    w = ordered("cluster_id", "topic_id")
    return (topics.withColumn("to_visible", F.lead("visible_offset").over(w))
            .withColumn("to_offset", F.lead("offset").over(w))
            .withColumn("to_seq", F.lead("seq").over(w))
            .where(F.col("kind") == "create")
            .select("cluster_id", "topic_id", "name", F.col("visible_offset").alias("from_visible"),
                    F.col("offset").alias("from_offset"), F.col("seq").alias("from_seq"), "to_visible", "to_offset",
                    "to_seq"))


def _after(v: Column, o: Column, s: Column, v0: Column, o0: Column, s0: Column) -> Column:
    """(v, o, s) comes at or after (v0, o0, s0) in Kafka's apply order."""
    return (v > v0) | ((v == v0) & ((o > o0) | ((o == o0) & (s >= s0))))


def _while_live(e: str, t: str) -> Column:
    """Event alias ``e`` comes while the topic interval alias ``t`` (``topic_live_intervals``) is live."""
    v, o, s = F.col(f"{e}.visible_offset"), F.col(f"{e}.offset"), F.col(f"{e}.seq")
    return ((F.col(f"{e}.cluster_id") == F.col(f"{t}.cluster_id"))
            & _after(v, o, s, F.col(f"{t}.from_visible"), F.col(f"{t}.from_offset"), F.col(f"{t}.from_seq"))
            & (F.col(f"{t}.to_visible").isNull()
               | ~_after(v, o, s, F.col(f"{t}.to_visible"), F.col(f"{t}.to_offset"), F.col(f"{t}.to_seq"))))


@dataclass(frozen=True)
class ClearsResult:
    clears: DataFrame  # one "clear" event per partition key ever created under a topic id the record names
    anomalies: DataFrame


def elr_clears(records: DataFrame, live: DataFrame, keys: DataFrame) -> ClearsResult:
    """``TopicsDelta.replay(ClearElrRecord)``: the partitions of the topic live under that name (of every live
    topic when the name is empty) get their ELR and last known ELR emptied, as a PartitionChangeRecord setting
    both to ``[]`` would; a name no live topic has is refused. ``records``: ClearElrRecord events typed as ``r``;
    ``live``: ``topic_live_intervals``; ``keys``: the partitions ever created. Which clears change a partition
    (an ELR to empty) is decided with the partition's state: ``_effective_clears``."""
    c, t = records.alias("c"), live.alias("t")
    name = F.coalesce(F.col("c.r.topicName"), F.lit(""))
    named = (name == "") | (F.col("t.name") == name)
    matched = c.join(F.broadcast(t), _while_live("c", "t") & named, "left").select(
        *[F.col(f"c.{column}") for column in EVENT_COLUMNS], name.alias("topic_name"), F.col("t.topic_id"))
    refused = matched.where(F.col("topic_id").isNull() & (F.col("topic_name") != "")).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.concat(F.lit("ClearElrRecord of unknown topic "), F.col("topic_name")).alias("reason"))
    empty = F.array().cast("array<int>")
    clears = matched.join(keys, ["cluster_id", "topic_id"]).select(
        *EVENT_COLUMNS, *KEY, F.lit("clear").alias("kind"),
        empty.alias("eligible_leader_replicas"), empty.alias("last_known_elr"))
    return ClearsResult(clears, refused)


def _effective_clears(events: DataFrame, keyed: tuple[str, ...]) -> DataFrame:
    """``events`` without the clears that found no ELR and no last known ELR: Kafka merges a partition only where
    one of them is not empty, so only there does a clear move the partition epoch on and make a version."""
    before = ordered(*keyed, "generation").rowsBetween(Window.unboundedPreceding, -1)
    had = F.lit(False)
    for column in ("eligible_leader_replicas", "last_known_elr"):
        had = had | F.coalesce(F.size(F.last(column, ignorenulls=True).over(before)) > 0, F.lit(False))
    return events.withColumn("_had_elr", had).where((F.col("kind") != "clear") | F.col("_had_elr")).drop("_had_elr")


@dataclass(frozen=True)
class PartitionsResult:
    states: DataFrame  # one row per applied event: the partition after it
    anomalies: DataFrame


def partition_states(events: DataFrame, topics: DataFrame, shapes: RecordShapes,
                     others: DataFrame | None = None) -> PartitionsResult:
    """The partition registration after every applied Partition/PartitionChange record and ELR clear.
    ``others``: the events without Partition(Change)Records, where ClearElrRecords are looked for (default
    ``events``); a log without one runs the plan it always ran."""
    created = parsed(events, "PartitionRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.topicId").alias("topic_id"), F.col("r.partitionId").alias("partition_id"),
        F.lit("create").alias("kind"),
        F.col("r.replicas").alias("replicas"), F.col("r.isr").alias("isr"),
        F.coalesce("r.addingReplicas", F.array().cast("array<int>")).alias("adding_replicas"),
        F.coalesce("r.removingReplicas", F.array().cast("array<int>")).alias("removing_replicas"),
        F.coalesce("r.eligibleLeaderReplicas", F.array().cast("array<int>")).alias("eligible_leader_replicas"),
        F.coalesce("r.lastKnownElr", F.array().cast("array<int>")).alias("last_known_elr"),
        F.col("r.leader").alias("leader"), F.col("r.leaderEpoch").alias("base_leader_epoch"),
        F.col("r.partitionEpoch").alias("base_partition_epoch"),
        F.coalesce("r.leaderRecoveryState", F.lit(0)).alias("leader_recovery_state"),
        # PartitionRegistration: no directories → MIGRATING for every replica.
        F.when(F.size(F.coalesce("r.directories", F.array())) > 0, F.col("r.directories"))
        .otherwise(F.array_repeat(F.lit(MIGRATING_DIR), F.size("r.replicas"))).alias("explicit_dirs"))
    changed = parsed(events, "PartitionChangeRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.topicId").alias("topic_id"), F.col("r.partitionId").alias("partition_id"),
        F.lit("change").alias("kind"),
        F.col("r.replicas").alias("replicas"), F.col("r.isr").alias("isr"),
        F.col("r.addingReplicas").alias("adding_replicas"), F.col("r.removingReplicas").alias("removing_replicas"),
        F.col("r.eligibleLeaderReplicas").alias("eligible_leader_replicas"),
        F.col("r.lastKnownElr").alias("last_known_elr"),
        # leader -2 (absent from Kafka's JSON) = no change; anything else sets it and bumps the epoch
        F.when(F.col("r.leader").isNotNull() & (F.col("r.leader") != -2), F.col("r.leader")).alias("leader"),
        F.lit(None).cast("int").alias("base_leader_epoch"), F.lit(None).cast("int").alias("base_partition_epoch"),
        F.when(F.col("r.leaderRecoveryState").isNotNull() & (F.col("r.leaderRecoveryState") != -1),
               F.col("r.leaderRecoveryState")).alias("leader_recovery_state"),
        F.when(F.size(F.coalesce("r.directories", F.array())) > 0, F.col("r.directories")).alias("explicit_dirs"))

    # PartitionRecords need a live topic (TopicsDelta.getOrCreateTopicDelta throws otherwise).
    live = topic_live_intervals(topics).alias("t")
    c = created.alias("c")
    in_topic = (F.col("c.topic_id") == F.col("t.topic_id")) & _while_live("c", "t")
    matched = c.join(live, in_topic, "left").select("c.*", F.col("t.topic_id").isNotNull().alias("topic_live"))
    matched = matched.localCheckpoint(eager=True)  # the creations and their refusals: one parse, one join
    refused_creates = matched.where(~F.col("topic_live")).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.concat(F.lit("PartitionRecord of unknown topic id "), F.col("topic_id"),
                 F.lit(" (partition "), F.col("partition_id").cast("string"), F.lit(")")).alias("reason"))
    creates = matched.where(F.col("topic_live")).drop("topic_live")

    # RemoveTopicRecord deletes every partition ever created under that topic id; a TopicRecord for a
    # live topic id replaces the topic with no partitions (TopicsDelta), which deletes them too.
    removes = topics.where((F.col("kind") == "remove") | F.col("replaces")).select(
        "cluster_id", "topic_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
    keys = creates.select("cluster_id", *KEY).distinct()
    deletes = removes.join(keys, ["cluster_id", "topic_id"]).select(
        *EVENT_COLUMNS, "topic_id", "partition_id", F.lit("delete").alias("kind"))
    clear_records = parsed(events if others is None else others, CLEAR_ELR, shapes).localCheckpoint(eager=True)
    clearing = not clear_records.isEmpty()  # rare records: without them, no clear events and no extra window
    if clearing:
        cleared = elr_clears(clear_records, live, keys)

    # PartitionRegistration's constructor throws (so Kafka's replay refuses the record) when the
    # directories it would build do not match the replicas: an empty replica list leaves MIGRATING
    # directories for the old replicas; an explicit directory list must have one entry per replica.
    malformed = F.col("replicas").isNotNull() & (
        ((F.size("replicas") == 0) & F.col("explicit_dirs").isNull())
        | (F.col("explicit_dirs").isNotNull() & (F.size("explicit_dirs") != F.size("replicas"))))
    # Malformed changes stay in the stream (flagged; a change never starts a generation) so the log's
    # largest record type is parsed once: the refusals below read the checkpointed stream.
    changed = changed.withColumn("malformed", malformed)
    stream = (creates.withColumn("malformed", F.lit(False)).unionByName(changed)
              .unionByName(deletes, allowMissingColumns=True))
    if clearing:
        stream = stream.unionByName(cleared.clears, allowMissingColumns=True)
    stream = stream.withColumn("malformed", F.coalesce("malformed", F.lit(False)))
    keyed = ("cluster_id", *KEY)
    stream = stream.withColumn("generation", F.sum(F.when(~F.col("kind").isin(*CHANGES), 1).otherwise(0)).over(
        running(*keyed)))
    stream = stream.withColumn("generation_kind", F.first("kind").over(
        Window.partitionBy(*keyed, "generation").orderBy("visible_offset", "offset", "seq")))
    stream = stream.localCheckpoint(eager=True)  # read by the states, the tombstones and the refusals
    applied = ~F.col("malformed") & ((F.col("kind") == "create")
                                     | (F.col("kind").isin(*CHANGES) & (F.col("generation_kind") == "create")))
    # Both refusals of a change in one scan of the stream: malformed, or no live partition to apply it to.
    partition = F.concat(F.col("topic_id"), F.lit("-"), F.col("partition_id").cast("string"))
    refused_changes = stream.where((F.col("kind") == "change") & ~applied).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.when(F.col("malformed"), F.concat(F.lit("PartitionChangeRecord of "), partition,
                                            F.lit(": directories would not match the replicas")))
        .otherwise(F.concat(F.lit("PartitionChangeRecord of unknown partition "), partition)).alias("reason"))
    tombstones = stream.where(F.col("kind") == "delete")
    live_events = stream.where(applied)
    if clearing:
        live_events = _effective_clears(live_events, keyed)

    g = running(*keyed, "generation")
    state = live_events.select(
        *EVENT_COLUMNS, *KEY, "kind", "generation",
        *[last_non_null(name, g).alias(name) for name in ARRAYS],
        last_non_null("leader", g).alias("leader"),
        (F.first("base_leader_epoch").over(g)
         + F.sum(F.when((F.col("kind") == "change") & F.col("leader").isNotNull(), 1).otherwise(0)).over(g)
         ).alias("leader_epoch"),
        (F.first("base_partition_epoch").over(g)
         + F.sum(F.when(F.col("kind").isin(*CHANGES), 1).otherwise(0)).over(g)).alias("partition_epoch"),
        last_non_null("leader_recovery_state", g).alias("leader_recovery_state"),
        F.col("replicas").isNotNull().alias("replicas_set"),
        "explicit_dirs",
    )
    # The states feed the history and the invariant checks: checkpointed, so the anomalies do not
    # recompute the windows and the directory join (a third of a full replay's time otherwise).
    # The directories join meets the states on their partition key plus their position: both sides are
    # already distributed by partition, so Spark may join them where they are instead of shuffling both.
    with spark_conf(state.sparkSession, "spark.sql.requireAllClusterKeysForCoPartition", "false"):
        state = _with_directories(state, keyed).localCheckpoint(eager=True)
    where = F.concat_ws("", F.lit("partition "), F.col("topic_id"), F.lit("-"), F.col("partition_id").cast("string"))
    # Both invariant checks in one scan of the states: each version gives zero, one or two reasons.
    leader_outside = F.when((F.col("leader") >= 0) & ~F.array_contains("replicas", F.col("leader")), F.concat_ws(
        "", where, F.lit(": leader "), F.col("leader").cast("string"), F.lit(" not in replicas ["),
        F.array_join("replicas", ", "), F.lit("]")))
    isr_outside = F.when(F.size(F.array_except("isr", "replicas")) > 0, F.concat_ws(
        "", where, F.lit(": ISR ["), F.array_join("isr", ", "), F.lit("] not within replicas ["),
        F.array_join("replicas", ", "), F.lit("]")))
    invariants = state.select(
        "cluster_id", "offset", "record_type", F.lit("invariant").alias("kind"),
        F.explode(F.filter(F.array(leader_outside, isr_outside), lambda reason: reason.isNotNull())).alias("reason"))
    anomalies = refused_creates.unionByName(refused_changes).unionByName(invariants)
    if clearing:
        anomalies = anomalies.unionByName(cleared.anomalies)
    states = state.unionByName(tombstones.select(*EVENT_COLUMNS, *KEY, "kind", "generation"),
                               allowMissingColumns=True)
    return PartitionsResult(states, anomalies)


def _with_directories(state: DataFrame, keyed: tuple[str, ...]) -> DataFrame:
    """Kafka's directory rules: explicit directories win; when only the replicas change, each replica
    keeps the directory it had while it stayed a replica and a newly added one gets UNASSIGNED
    (``DirectoryId.createDirectoriesFrom``); empty → MIGRATING for the previous replica count.

    Only a record that sets the replicas or the directories can change them (most changes move the
    leader or the ISR): those rows are exploded per replica, and every other row carries the directories
    of the last one before it."""
    w = ordered(*keyed, "generation")
    state = state.withColumn("prev_replicas", F.lag("replicas").over(w))
    sets_directories = F.col("explicit_dirs").isNotNull() | F.col("replicas_set")
    per_replica = state.where(sets_directories).select(
        *keyed, "generation", "visible_offset", "offset", "seq", "explicit_dirs", "replicas_set", "prev_replicas",
        F.posexplode("replicas").alias("pos", "broker"))
    joined = (F.col("explicit_dirs").isNull() & F.col("replicas_set")
              & ~F.coalesce(F.array_contains("prev_replicas", F.col("broker")), F.lit(False)))
    starts = F.col("explicit_dirs").isNotNull() | joined
    segment = F.sum(F.when(starts, 1).otherwise(0)).over(
        Window.partitionBy(*keyed, "generation", "broker").orderBy("visible_offset", "offset", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    first_of_segment = Window.partitionBy(*keyed, "generation", "broker", "segment").orderBy(
        "visible_offset", "offset", "seq")
    directory = F.when(F.col("explicit_dirs").isNotNull(),
                       F.coalesce(F.element_at("explicit_dirs", F.col("pos") + 1), F.lit(UNASSIGNED_DIR))
                       ).otherwise(F.lit(UNASSIGNED_DIR))
    event = [*keyed, "generation", "visible_offset", "offset", "seq"]
    dirs = (per_replica.withColumn("segment", segment)
            .withColumn("directory", F.first(directory).over(first_of_segment))
            .groupBy(*event)
            .agg(F.transform(F.array_sort(F.collect_list(F.struct("pos", "directory"))),
                             lambda x: x["directory"]).alias("set_directories")))
    empty = F.array_repeat(F.lit(MIGRATING_DIR), F.coalesce(F.size("prev_replicas"), F.lit(0)))
    state = state.join(dirs, event, "left").withColumn("set_directories", F.when(
        sets_directories, F.when(F.size(F.coalesce("set_directories", F.array())) > 0, F.col("set_directories"))
        .otherwise(empty)))
    return state.withColumn("directories", last_non_null("set_directories", running(*keyed, "generation"))).drop(
        "prev_replicas", "explicit_dirs", "replicas_set", "set_directories")
