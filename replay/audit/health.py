"""Cluster health over the log, as step series computed by Spark from the history tables.

A history version that is "unhealthy" (a partition without a leader, a partition whose ISR is smaller than
its replicas, a fenced broker) counts +1 from its ``valid_from_offset`` and -1 from its ``valid_to_offset``.
Summing those deltas per offset and running the sum over the offsets gives, for every offset where anything
changed, how many partitions were offline or under-replicated and how many brokers were fenced: the event
sourcing of the replay applied once more, with set operations and one window, no per-row Python. Only the
aggregated series (one row per changing offset, capped by ``collect_health``) ever reaches the driver.

The other series here are small by nature: one partition's versions (``partition_timeline``) and each
broker's fenced / unfenced / shutting-down / unregistered spans (``broker_spans``, from the one broker timeline).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from records.kafka_constants import NO_LEADER
from replay.core.broker_timeline import ACTIVE, CONTROLLED_SHUTDOWN, broker_timeline
from replay.core.broker_timeline import FENCED as FENCED_STATE
from replay.core.broker_timeline import UNREGISTERED as UNREGISTERED_STATE

METRICS = ("offline", "under_replicated", "fenced_brokers")
HEALTH_COLUMNS = ("cluster_id", "offset", "time_ms", *METRICS)
MAX_POINTS = 4000

# The report's one mapping of the broker timeline's states (``replay.core.broker_timeline``) to the words it shows
# (the ``state`` of ``broker_spans``, the fencing plot's legend), declared in the order of the legend.
BROKER_STATE_LABELS: dict[str, str] = {ACTIVE: "unfenced", CONTROLLED_SHUTDOWN: "controlled shutdown",
                                       FENCED_STATE: "fenced", UNREGISTERED_STATE: "unregistered"}
UNFENCED, SHUTTING_DOWN, FENCED, UNREGISTERED = BROKER_STATES = tuple(BROKER_STATE_LABELS.values())


def offline_condition() -> Column:
    """No leader: Kafka's OfflinePartitionsCount."""
    return F.col("leader") == NO_LEADER


def under_replicated_condition(leader: str = "leader", isr: str = "isr") -> Column:
    """A led partition whose ISR is smaller than its replicas: Kafka's UnderReplicatedPartitions, which only
    leaders report (an offline partition counts as offline, not as under-replicated)."""
    return (F.col(leader) >= 0) & (F.size(isr) < F.size("replicas"))


def _deltas(history: DataFrame, conditions: dict[str, Column]) -> DataFrame:
    """For each version meeting one of ``conditions`` (metric → condition), a row where it starts and one where it
    ends (none for a version still open): +1 (start) or -1 (end) for each metric whose condition it meets, 0 for
    the others (``METRICS``). One read of ``history``, whatever the metrics."""
    flags = {metric: F.when(conditions[metric], 1).otherwise(0) if metric in conditions else F.lit(0)
             for metric in METRICS}
    start = F.struct(F.col("valid_from_offset").alias("offset"), F.col("valid_from_time_ms").alias("time_ms"),
                     *[flag.alias(metric) for metric, flag in flags.items()])
    end = F.when(F.col("valid_to_offset").isNotNull(), F.struct(
        F.col("valid_to_offset").alias("offset"), F.col("valid_to_time_ms").alias("time_ms"),
        *[(-flag).alias(metric) for metric, flag in flags.items()]))
    hit = history.where(reduce(or_, conditions.values()))
    edges = hit.select("cluster_id", F.explode(F.filter(F.array(start, end), lambda edge: edge.isNotNull()))
                       .alias("edge"))
    return edges.select("cluster_id", *[F.col(f"edge.{column}").alias(column) for column in HEALTH_COLUMNS[1:]])


def health_series(partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    """One row per offset where a count changes: ``cluster_id, offset, time_ms`` and the counts after that
    offset (``offline``, ``under_replicated``, ``fenced_brokers``). A count holds until the next row."""
    deltas = _deltas(partitions, {"offline": offline_condition(), "under_replicated": under_replicated_condition()}
                     ).unionByName(_deltas(brokers, {"fenced_brokers": F.col("fenced")}))
    per_offset = deltas.groupBy("cluster_id", "offset").agg(
        F.max("time_ms").alias("time_ms"), *[F.sum(m).alias(m) for m in METRICS])
    running = (Window.partitionBy("cluster_id").orderBy("offset")
               .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return per_offset.select("cluster_id", "offset", "time_ms",
                             *[F.sum(m).over(running).cast("int").alias(m) for m in METRICS])


def health_window(series: DataFrame, from_offset: int | None = None, to_offset: int | None = None) -> DataFrame:
    """The series restricted to ``[from_offset, to_offset]``; the counts in force at ``from_offset`` (set by an
    earlier change) become a first row at ``from_offset`` so the steps start at the right height."""
    if from_offset is None:
        inside = series
    else:
        latest = Window.partitionBy("cluster_id").orderBy(F.col("offset").desc())
        carried = (series.where(F.col("offset") < from_offset).withColumn("_rank", F.row_number().over(latest))
                   .where(F.col("_rank") == 1).drop("_rank")
                   .withColumn("offset", F.lit(from_offset).cast("long"))
                   .withColumn("time_ms", F.lit(None).cast("long")))
        at_start = series.where(F.col("offset") == from_offset).select("cluster_id").withColumn("_taken", F.lit(1))
        carried = carried.join(at_start, ["cluster_id"], "left_anti")
        inside = series.where(F.col("offset") >= from_offset).unionByName(carried)
    if to_offset is not None:
        inside = inside.where(F.col("offset") <= to_offset)
    return inside


@dataclass(frozen=True)
class HealthPoint:
    offset: int
    time_ms: int | None
    offline: int
    under_replicated: int
    fenced_brokers: int


def collect_health(series: DataFrame, max_points: int = MAX_POINTS) -> list[HealthPoint]:
    """The series on the driver, oldest first. Longer series are bucketed by offset range in Spark (each
    bucket keeps its maximum of every count, so no peak disappears from a plot)."""
    ordered = series.orderBy("offset").select("offset", "time_ms", *METRICS)
    rows = ordered.limit(max_points + 1).collect()
    if len(rows) > max_points:
        bounds = series.agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).first()
        assert bounds is not None
        width = max(1, -(-(int(bounds["hi"]) - int(bounds["lo"]) + 1) // max_points))
        bucket = F.floor((F.col("offset") - F.lit(int(bounds["lo"]))) / F.lit(width))
        series = series.groupBy(bucket.alias("_bucket")).agg(
            F.min("offset").alias("offset"), F.min("time_ms").alias("time_ms"),
            *[F.max(m).alias(m) for m in METRICS])
        rows = series.orderBy("offset").select("offset", "time_ms", *METRICS).collect()
    return [HealthPoint(int(r["offset"]), r["time_ms"], int(r["offline"]), int(r["under_replicated"]),
                        int(r["fenced_brokers"])) for r in rows]


# above every negated time: a row of unknown time ranks as the earliest
_LATEST = 2**63 - 1


@dataclass(frozen=True)
class Peak:
    metric: str
    value: int
    offset: int | None  # the first offset at which the count reached ``value``
    time_ms: int | None


def peaks(series: DataFrame) -> dict[str, Peak]:
    """The highest value of each count and where it was first reached, in one aggregate: the largest of
    (value, -offset, -time) is the highest value at its smallest offset (structs compare field by field; an
    unknown time first, as the smallest, among rows of one offset)."""
    earliest = F.coalesce(-F.col("time_ms"), F.lit(_LATEST))
    top = series.agg(*[F.max(F.struct(F.col(m).alias("value"), (-F.col("offset")).alias("at"),
                                      earliest.alias("earliest"), F.col("time_ms").alias("time_ms"))).alias(m)
                       for m in METRICS]).first()
    out: dict[str, Peak] = {}
    for metric in METRICS:
        best = top[metric] if top is not None else None
        if best is None or best["value"] is None or best["value"] <= 0:
            out[metric] = Peak(metric, 0, None, None)
        else:
            out[metric] = Peak(metric, int(best["value"]), -int(best["at"]), best["time_ms"])
    return out


# --- one partition -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelinePoint:
    offset: int  # valid_from_offset of the version
    to_offset: int | None
    time_ms: int | None
    leader: int
    leader_epoch: int
    isr_size: int
    replicas_size: int
    cause_type: str | None


def partition_timeline(partitions: DataFrame, topic: str, partition: int) -> DataFrame:
    """Every version of one partition (all topic ids that had the name), with the ISR and replica counts."""
    return (partitions.where((F.col("topic_name") == topic) & (F.col("partition_id") == partition))
            .select(F.col("valid_from_offset").alias("offset"), F.col("valid_to_offset").alias("to_offset"),
                    F.col("valid_from_time_ms").alias("time_ms"), "leader", "leader_epoch",
                    F.size("isr").alias("isr_size"), F.size("replicas").alias("replicas_size"), "cause_type")
            .orderBy("offset"))


def collect_timeline(timeline: DataFrame, from_offset: int | None = None, to_offset: int | None = None
                     ) -> list[TimelinePoint]:
    """The versions overlapping ``[from_offset, to_offset]``, oldest first."""
    if from_offset is not None:
        timeline = timeline.where(F.col("to_offset").isNull() | (F.col("to_offset") > from_offset))
    if to_offset is not None:
        timeline = timeline.where(F.col("offset") <= to_offset)
    return [TimelinePoint(int(r["offset"]), r["to_offset"], r["time_ms"], int(r["leader"]), int(r["leader_epoch"]),
                          int(r["isr_size"]), int(r["replicas_size"]), r["cause_type"])
            for r in timeline.orderBy("offset").collect()]


def leader_changes(partitions: DataFrame) -> DataFrame:
    """Per partition name: how many versions named another leader than the version before (``-1`` counts)."""
    by_partition = Window.partitionBy("cluster_id", "topic_id", "partition_id").orderBy("valid_from_offset")
    previous = F.lag("leader").over(by_partition)
    changed = partitions.withColumn("_changed", F.when(previous.isNotNull() & (previous != F.col("leader")), 1)
                                    .otherwise(0))
    return changed.groupBy("cluster_id", "topic_name", "partition_id").agg(F.sum("_changed").alias("leader_changes"))


def busiest_partition(partitions: DataFrame) -> tuple[str, int, int] | None:
    """(topic, partition, leader changes) of the partition whose leader changed most; ties go to the first
    by name. None when the table has no partition."""
    row = (leader_changes(partitions).where(F.col("topic_name").isNotNull())
           .orderBy(F.col("leader_changes").desc(), "topic_name", "partition_id").first())
    return None if row is None else (row["topic_name"], int(row["partition_id"]), int(row["leader_changes"]))


# --- brokers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerSpan:
    broker_id: int
    state: str  # one of BROKER_STATES
    from_offset: int
    to_offset: int | None  # None: until the end of the log
    from_time_ms: int | None
    to_time_ms: int | None


def broker_spans(brokers: DataFrame) -> DataFrame:
    """Each broker's consecutive spans in one state from its first registration on (``broker_timeline``), named
    by ``BROKER_STATE_LABELS``: fenced, controlled shutdown (registered, unfenced, shutting down), unfenced, or
    unregistered (between an UnregisterBrokerRecord and the next registration)."""
    labels = F.create_map(*[F.lit(word) for pair in BROKER_STATE_LABELS.items() for word in pair])
    spans = broker_timeline(brokers, before_registration=False)
    return spans.select("cluster_id", "broker_id", labels[F.col("state")].alias("state"),
                        F.col("valid_from_offset").alias("from_offset"), F.col("valid_to_offset").alias("to_offset"),
                        F.col("valid_from_time_ms").alias("from_time_ms"),
                        F.col("valid_to_time_ms").alias("to_time_ms"))


def collect_broker_spans(spans: DataFrame, from_offset: int | None = None, to_offset: int | None = None,
                         max_brokers: int = 60) -> list[BrokerSpan]:
    """The spans overlapping ``[from_offset, to_offset]`` of at most ``max_brokers`` brokers (those fenced
    most often first, then by id), ordered by broker and offset."""
    if from_offset is not None:
        spans = spans.where(F.col("to_offset").isNull() | (F.col("to_offset") > from_offset))
    if to_offset is not None:
        spans = spans.where(F.col("from_offset") <= to_offset)
    chosen = (spans.groupBy("broker_id").agg(F.sum(F.when(F.col("state") == FENCED, 1).otherwise(0)).alias("fences"))
              .orderBy(F.col("fences").desc(), "broker_id").limit(max_brokers).select("broker_id"))
    rows = spans.join(chosen, ["broker_id"]).orderBy("broker_id", "from_offset").collect()
    return [BrokerSpan(int(r["broker_id"]), r["state"], int(r["from_offset"]), r["to_offset"], r["from_time_ms"],
                       r["to_time_ms"]) for r in rows]


__all__ = ["BROKER_STATES", "BROKER_STATE_LABELS", "FENCED", "HEALTH_COLUMNS", "METRICS", "SHUTTING_DOWN",
           "UNFENCED", "UNREGISTERED", "BrokerSpan", "HealthPoint", "Peak", "TimelinePoint", "broker_spans",
           "busiest_partition", "collect_broker_spans", "collect_health", "collect_timeline", "health_series",
           "health_window", "leader_changes", "offline_condition", "partition_timeline", "peaks",
           "under_replicated_condition"]
