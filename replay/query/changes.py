"""The change log: every change to any part of the image, one row per entry that was added, changed or removed,
with the value before and after, the offset, the time and the record that made it.

Read from the history tables alone: a version that starts where the entry's previous version ended is a change
from it, one that starts after a gap (or first) is an addition, and a version that ends without a successor is a
removal at its ``valid_to_offset`` (its record type is the log's record at that offset, when ``metadata_log`` is
there). The six parts issue 19 adds come first in each offset, then features and controllers, topics, brokers
and partitions (leader, ISR, replicas).

Who made a change is not in the log: KRaft's records carry what changed, not which client or principal asked for
it (that is in the brokers' request and authorizer logs).

A secret never reaches the history tables (``records.redaction``): a redacted config value reads as stored,
``(redacted)``, and a new fingerprint of a secret (a config value or a SCRAM credential) shows as
``(redacted, changed)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import BROKER_HISTORY, METADATA_LOG, PARTITION_HISTORY, TOPIC_HISTORY
from records.vocabulary import kafka_name
from replay.core.image_parts import CHANGE_ORDER, CHANGE_PARTS, ImagePart
from replay.query.image_terms import pairs_column, term_column
from replay.query.rules import parse_time, to_epoch_ms
from replay.query.state import QueryError, resolve_cluster

CHANGES_VIEW = "changes"  # its name in plain SQL (replay.query.views.register_views)
REDACTED_CHANGED = "(redacted, changed)"  # a secret whose fingerprint differs from the version before
CHANGE_COLUMNS = ("cluster_id", "offset", "time_ms", "record_type", "part", "entity", "key", "change", "old_value",
                  "new_value")
# the change log's JSON names (Kafka's style, by the vocabulary's rule)
CHANGE_FIELDS = tuple((column, kafka_name(column)) for column in CHANGE_COLUMNS)


@dataclass(frozen=True)
class Source:
    """One history table in the change log: what one entry is called (``part``), its key, and how an entry is
    named (``entity``, ``key``) and valued; ``fingerprint``: the column of a redacted secret's fingerprint."""

    part: str
    table: str
    key: tuple[str, ...]
    entity: Column
    item: Column
    value: Column
    fingerprint: str | None = None
    # a secret kept only as a fingerprint (SCRAM): the value says nothing of it, a new one is appended as changed
    secret_only: bool = False


def _part_source(part: ImagePart) -> Source:
    """An image part's source, as its registry entry declares it (``replay.core.image_parts``)."""
    change = part.change
    return Source(part.entity, part.table, part.key, term_column(change.entity), term_column(change.item),
                  term_column(change.value), part.fingerprint, change.secret_only)


def sources() -> tuple[Source, ...]:
    """Every history table of the change log: the image's parts (those folded on their own first), then topics,
    brokers and partitions."""
    partition = F.concat_ws("-", F.coalesce("topic_name", "topic_id"), F.col("partition_id").cast("string"))
    return (
        *(_part_source(part) for part in CHANGE_ORDER),
        Source("topic", TOPIC_HISTORY, ("topic_id",), F.concat(F.lit("topic "), F.col("name")),
               F.lit(kafka_name("topic_id")), F.col("topic_id")),
        Source("broker", BROKER_HISTORY, ("broker_id",), F.concat(F.lit("broker "), F.col("broker_id").cast("string")),
               F.lit(""), pairs_column("broker_epoch", "fenced", "in_controlled_shutdown")),
        Source("partition", PARTITION_HISTORY, ("topic_id", "partition_id"), F.concat(F.lit("partition "), partition),
               F.lit(""), pairs_column("leader", "leader_epoch", "isr", "replicas", "eligible_leader_replicas")),
    )


PARTS = CHANGE_PARTS
_RANK = {part: rank for rank, part in enumerate(PARTS)}


def _source_changes(versions: DataFrame, source: Source) -> DataFrame:
    """One table's versions → its additions, changes (at the version's record) and removals (at its end)."""
    fingerprint = F.col(source.fingerprint) if source.fingerprint else F.lit(None).cast("string")
    rows = versions.select(
        "cluster_id", "valid_from_offset", "valid_to_offset", "valid_from_time_ms", "valid_to_time_ms",
        "cause_offset", "cause_type", source.entity.alias("entity"), source.item.alias("item"),
        source.value.alias("value"), fingerprint.alias("fingerprint"), *[F.col(k).alias(f"_key{i}")
                                                                         for i, k in enumerate(source.key)])
    keyed = ("cluster_id", *[f"_key{i}" for i in range(len(source.key))])
    by_entry = Window.partitionBy(*keyed).orderBy("valid_from_offset")
    rows = (rows.withColumn("prev_to", F.lag("valid_to_offset").over(by_entry))
            .withColumn("prev_value", F.lag("value").over(by_entry))
            .withColumn("prev_fingerprint", F.lag("fingerprint").over(by_entry))
            .withColumn("next_from", F.lead("valid_from_offset").over(by_entry)))
    continued = F.col("prev_to").isNotNull() & (F.col("prev_to") == F.col("valid_from_offset"))
    new_secret = continued & F.col("fingerprint").isNotNull() & ~F.col("fingerprint").eqNullSafe(
        F.col("prev_fingerprint"))
    if source.secret_only:
        new_value = F.when(new_secret, F.concat_ws(" ", F.col("value"), F.lit(REDACTED_CHANGED))).otherwise(
            F.col("value"))
    else:
        new_value = F.when(new_secret, F.lit(REDACTED_CHANGED)).otherwise(F.col("value"))
    starts = rows.select(
        "cluster_id", F.col("cause_offset").alias("offset"), F.col("valid_from_time_ms").alias("time_ms"),
        F.col("cause_type").alias("record_type"), "entity", "item",
        F.when(continued, "changed").otherwise("added").alias("change"),
        F.when(continued, F.col("prev_value")).alias("old_value"), new_value.alias("new_value"))
    starts = starts.where((F.col("change") == "added") | ~F.col("old_value").eqNullSafe(F.col("new_value")))
    ended = F.col("valid_to_offset").isNotNull() & (
        F.col("next_from").isNull() | (F.col("next_from") != F.col("valid_to_offset")))
    removals = rows.where(ended).select(
        "cluster_id", F.col("valid_to_offset").alias("offset"), F.col("valid_to_time_ms").alias("time_ms"),
        F.lit(None).cast("string").alias("record_type"), "entity", "item", F.lit("removed").alias("change"),
        F.col("value").alias("old_value"), F.lit(None).cast("string").alias("new_value"))
    return (starts.unionByName(removals).withColumn("part", F.lit(source.part))
            .withColumn("_rank", F.lit(_RANK[source.part])).withColumnRenamed("item", "key"))


def all_changes(spark: SparkSession, lake: Lake, parts: tuple[str, ...] = PARTS) -> DataFrame:
    """The change log of every cluster in the lake (the ``changes`` SQL view), unsorted; the tables the lake
    does not have yet add nothing."""
    unknown = [part for part in parts if part not in _RANK]
    if unknown:
        raise QueryError(f"unknown part {', '.join(unknown)}: the parts are {', '.join(PARTS)}")
    frames = [_source_changes(lake.read(spark, source.table), source) for source in sources()
              if source.part in parts and lake.table_exists(source.table)]
    if not frames:
        schema = ", ".join(f"{c} {t}" for c, t in zip(CHANGE_COLUMNS, (
            "string", "bigint", "bigint", "string", "string", "string", "string", "string", "string", "string"),
            strict=True))
        return spark.createDataFrame([], schema + ", _rank int")
    changes = frames[0]
    for frame in frames[1:]:
        changes = changes.unionByName(frame)
    changes = changes.select(*CHANGE_COLUMNS, "_rank")
    if lake.table_exists(METADATA_LOG):  # a removal's record: the log's record at the offset it ends
        log = lake.read(spark, METADATA_LOG).select("cluster_id", "offset", F.col("record_type").alias("logged"))
        removed = F.col("change") == "removed"
        named = (changes.where(removed).drop("record_type").join(log, ["cluster_id", "offset"], "left")
                 .withColumnRenamed("logged", "record_type").select(*CHANGE_COLUMNS, "_rank"))
        changes = changes.where(~removed).unionByName(named)
    return changes


def change_log(spark: SparkSession, lake: Lake, cluster_id: str | None = None, from_offset: int | None = None,
               to_offset: int | None = None, from_time: datetime | str | None = None,
               to_time: datetime | str | None = None, parts: tuple[str, ...] = PARTS) -> DataFrame:
    """The changes of one cluster at offsets ``from_offset`` … ``to_offset`` and times ``from_time`` …
    ``to_time`` (every bound inclusive, each optional), oldest first: ``CHANGE_COLUMNS``."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    changes = all_changes(spark, lake, parts).where(F.col("cluster_id") == cluster)
    if from_offset is not None:
        changes = changes.where(F.col("offset") >= from_offset)
    if to_offset is not None:
        changes = changes.where(F.col("offset") <= to_offset)
    if from_time is not None:
        changes = changes.where(F.col("time_ms") >= to_epoch_ms(from_time))
    if to_time is not None:
        changes = changes.where(F.col("time_ms") <= to_epoch_ms(to_time))
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise QueryError(f"--from {from_offset} is after --to {to_offset}")
    return changes.orderBy("offset", "_rank", "entity", "key", "change").select(*CHANGE_COLUMNS)


def bound(text: str | None) -> tuple[int | None, str | None]:
    """A ``--from``/``--to`` as given: an offset (digits) or an ISO-8601 time (read now, so a typo is a clear
    error before any Spark job)."""
    if text is None:
        return None, None
    if text.strip().isdigit():
        return int(text), None
    parse_time(text)
    return None, text


__all__ = ["CHANGES_VIEW", "CHANGE_COLUMNS", "CHANGE_FIELDS", "PARTS", "REDACTED_CHANGED", "Source",
           "all_changes", "bound", "change_log", "sources"]
