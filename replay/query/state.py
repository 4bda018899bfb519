"""Questions to the replayed lake: the cluster as of an offset or a time, a partition's history, a diff.

Every answer is a lazy DataFrame over the history tables written by :func:`replay.store.runs.run_replay`; the
"as of offset N" filter is the one rule of the whole model (``replay.query.rules.as_of_sql``, the SQL text the
JVM-free ``replay.query.light_state`` reads by too)::

    valid_from_offset <= N AND (valid_to_offset IS NULL OR valid_to_offset > N)

Times resolve to offsets through ``metadata_log``: time T means the last offset appended at or before T
(Kafka's append time of the record's batch). ``batch_aligned`` moves an offset to the last offset of its
batch: Kafka's brokers and controllers publish metadata images only at batch boundaries, so that is the
state a broker could actually have seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import (
    BROKER_HISTORY,
    METADATA_LOG,
    PARTITION_HISTORY,
    REPLAY_CHECKPOINTS,
    REPLAY_COVERAGE,
    REPLICA_HISTORY,
    TOPIC_HISTORY,
)
from records.vocabulary import column_name
from replay.core.coverage import ClusterCoverage
from replay.core.image_parts import IMAGE_PARTS
from replay.query.rules import (
    BROKER_FIELDS,
    BROKER_ORDER,
    MACHINE_STATE_NAMES,
    NESTED,
    PARTITION_FIELDS,
    PARTITION_ORDER,
    TOPIC_FIELDS,
    TOPIC_ORDER,
    VERSION_ORDER,
    QueryError,
    as_of_sql,
    cluster_table,
    iso_ms,
    kafka_fields,
    missing_table,
    narrowed_sql,
    pick_cluster,
    resolved_offset,
)

JSON_OPTIONS = {"ignoreNullFields": "false"}


@dataclass(frozen=True)
class ClusterState:
    """The cluster as of ``offset``: one row per live broker, topic, partition and replica."""

    offset: int
    brokers: DataFrame
    topics: DataFrame
    partitions: DataFrame
    replicas: DataFrame
    cluster_id: str | None = None

    def only(self, topic: str | None = None, partition: int | None = None) -> ClusterState:
        """The same state with only this topic's (and partition id's) topics, partitions and replicas."""
        def narrowed(section: str, frame: DataFrame) -> DataFrame:
            where = narrowed_sql(section, topic, partition)
            return frame if where is None else frame.where(F.expr(where))

        return ClusterState(self.offset, self.brokers, narrowed("topics", self.topics),
                            narrowed("partitions", self.partitions), narrowed("replicas", self.replicas),
                            self.cluster_id)


# --- clusters ------------------------------------------------------------------------------------


def _require(lake: Lake, name: str) -> None:
    if not lake.table_exists(name):
        raise missing_table(lake.root, name)


# The clusters of a table version, by (table path, Delta table id, version): a version never changes, and a table
# made anew at the same path has a new id. Every question resolves its cluster first: asked once per version.
_CLUSTERS: dict[tuple[str, str, int], list[str]] = {}


def clusters(spark: SparkSession, lake: Lake) -> list[str]:
    """Cluster ids replayed into the lake (from ``replay_checkpoints``; else those in ``metadata_log``)."""
    name = cluster_table(lake.table_exists)
    _require(lake, name)
    table = lake.delta_table(name)
    version = table.version()
    key = (lake.path(name), str(table.metadata().id), version)
    if key not in _CLUSTERS:
        # the checkpoints are a row per replay and cluster: read by the driver, no Spark job
        rows = (lake.small_rows(name, version) if name == REPLAY_CHECKPOINTS else
                lake.read(spark, name, version=version).select("cluster_id").distinct().collect())
        _CLUSTERS[key] = sorted({row["cluster_id"] for row in rows if row["cluster_id"] is not None})
    return list(_CLUSTERS[key])


def resolve_cluster(spark: SparkSession, lake: Lake, cluster_id: str | None = None) -> str:
    """``cluster_id`` when the lake has it; without one, the lake's only cluster, else a clear error."""
    return pick_cluster(lake.root, clusters(spark, lake), cluster_id)


# --- offsets and times ---------------------------------------------------------------------------


def _aggregate(df: DataFrame) -> Any:
    """The value of a one-row aggregate (``agg`` without groups gives one row, null over no rows)."""
    row = df.first()
    return None if row is None else row[0]


class _SparkLog:
    """``metadata_log`` of one cluster, asked through Spark (``replay.query.rules.StoredLog``)."""

    def __init__(self, spark: SparkSession, lake: Lake, cluster_id: str) -> None:
        self.spark, self.lake, self.cluster_id = spark, lake, cluster_id

    def _log(self) -> DataFrame:
        _require(self.lake, METADATA_LOG)
        return self.lake.read(self.spark, METADATA_LOG).where(F.col("cluster_id") == self.cluster_id)

    def last_offset_until(self, millis: int) -> int | None:
        return _aggregate(self._log().where(F.col("append_time_ms") <= millis).agg(F.max("offset")))

    def first_append_time(self) -> int | None:
        return _aggregate(self._log().agg(F.min("append_time_ms")))

    def batch_of(self, offset: int) -> tuple[bool, int | None]:
        here = self._log().where(F.col("offset") == offset).select("batch_base_offset").first()
        return here is not None, None if here is None else here[0]

    def last_offset_of_batch(self, base: int, offset: int) -> int | None:
        return _aggregate(self._log().where((F.col("batch_base_offset") == base) & (F.col("offset") >= offset))
                          .agg(F.max("offset")))

    def coverage(self) -> ClusterCoverage | None:
        if not self.lake.table_exists(REPLAY_COVERAGE):
            return None
        row = self.lake.read(self.spark, REPLAY_COVERAGE).where(F.col("cluster_id") == self.cluster_id).first()
        return None if row is None else ClusterCoverage.from_row(row.asDict(recursive=True))


def resolve_offset(spark: SparkSession, lake: Lake, cluster_id: str, offset: int | None = None,
                   time: datetime | str | None = None, batch_aligned: bool = False) -> int:
    """The offset a question means (``replay.query.rules.resolved_offset``), the log asked through Spark."""
    return resolved_offset(_SparkLog(spark, lake, cluster_id), cluster_id, offset, time, batch_aligned)


def as_of(df: DataFrame, offset: int) -> DataFrame:
    """The versions of a history table valid at ``offset``."""
    return df.where(F.expr(as_of_sql(offset)))


def history_table(spark: SparkSession, lake: Lake, name: str, cluster_id: str) -> DataFrame:
    _require(lake, name)
    return lake.read(spark, name).where(F.col("cluster_id") == cluster_id)


def state_at(spark: SparkSession, lake: Lake, offset: int | None = None, time: datetime | str | None = None,
             cluster_id: str | None = None, batch_aligned: bool = False) -> ClusterState:
    """The cluster as of an offset (or time): brokers, topics, partitions and replicas, sorted."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    at = resolve_offset(spark, lake, cluster, offset, time, batch_aligned)

    def table(name: str, order: tuple[str, ...]) -> DataFrame:
        return as_of(history_table(spark, lake, name, cluster), at).orderBy(*order)

    return ClusterState(
        offset=at,
        brokers=table(BROKER_HISTORY, BROKER_ORDER),
        topics=table(TOPIC_HISTORY, TOPIC_ORDER),
        partitions=table(PARTITION_HISTORY, PARTITION_ORDER),
        replicas=table(REPLICA_HISTORY, ("topic_name", "partition_id", "broker_id", "topic_id")),
        cluster_id=cluster,
    )


def history(spark: SparkSession, lake: Lake, topic: str, partition: int, cluster_id: str | None = None
            ) -> DataFrame:
    """Every version of partition ``topic``-``partition`` (all topic ids that had that name), oldest first,
    each with the offset, time and record type that caused it."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    versions = history_table(spark, lake, PARTITION_HISTORY, cluster)
    narrowed = narrowed_sql("partitions", topic, partition)
    return (versions if narrowed is None else versions.where(narrowed)).orderBy(*VERSION_ORDER)


# --- Kafka JSON ----------------------------------------------------------------------------------


def _nested(column: str) -> Column:
    """An array of Kafka structs (endpoints, features, a quota's entity) with its members under their Kafka
    names."""
    return F.transform(F.col(column), lambda element: F.struct(
        *[element[column_name(member)].alias(member) for member in NESTED[column]]))


def kafka_struct(fields: tuple[tuple[str, str], ...]) -> Column:
    """A struct of the columns under Kafka's camelCase names (nested endpoints/features too)."""
    return F.struct(*[(_nested(col) if col in NESTED else F.col(col)).alias(name) for col, name in fields])


def kafka_json(fields: tuple[tuple[str, str], ...]) -> Column:
    """``kafka_struct`` as JSON text; null fields are kept (``"rack": null``)."""
    return F.to_json(kafka_struct(fields), JSON_OPTIONS)


# --- diff ----------------------------------------------------------------------------------------

def json_items(df: DataFrame, fields: tuple[tuple[str, str], ...]) -> Iterator[str]:
    """Each row as Kafka JSON text, computed by Spark, streamed in the DataFrame's (sorted) order."""
    for row in df.select(kafka_json(fields).alias("j")).toLocalIterator():
        yield row["j"]


DIFF_COLUMNS = ("entity", "key", "change", "before", "after")
# the order of the parts in a diff: these three, then the rest of the image (replay.core.image_parts)
_ENTITY_RANK = {name: rank for rank, name in enumerate((
    "broker", "topic", "partition", *(part.entity for part in IMAGE_PARTS.values())))}


def _side(df: DataFrame, keys: tuple[str, ...], fields: tuple[tuple[str, str], ...], label: Column,
          sort: tuple[Column, ...]) -> DataFrame:
    return df.select(*keys, label.alias("label"), *[c.alias(f"sort{i}") for i, c in enumerate(sort)],
                     kafka_json(fields).alias("json"))


def entity_diff(entity: str, before: DataFrame, after: DataFrame, keys: tuple[str, ...],
                 fields: tuple[tuple[str, str], ...], label: Column, sort: tuple[Column, ...]) -> DataFrame:
    earlier = _side(before, keys, fields, label, sort).alias("b")
    later = _side(after, keys, fields, label, sort).alias("a")
    # null-safe: a client-quota entity's default names are nulls, and equal
    joined = earlier.join(later, [F.col(f"b.{k}").eqNullSafe(F.col(f"a.{k}")) for k in keys], "full_outer")
    change = (F.when(F.col("b.json").isNull(), "added").when(F.col("a.json").isNull(), "removed")
              .when(F.col("b.json") != F.col("a.json"), "changed"))
    return joined.select(
        F.lit(entity).alias("entity"), F.coalesce("a.label", "b.label").alias("key"), change.alias("change"),
        F.col("b.json").alias("before"), F.col("a.json").alias("after"),
        F.lit(_ENTITY_RANK[entity]).alias("_rank"),
        *[F.coalesce(f"a.sort{i}", f"b.sort{i}").alias(f"_sort{i}") for i in range(len(sort))],
    ).where(F.col("change").isNotNull())


def diff(spark: SparkSession, lake: Lake, from_offset: int, to_offset: int, cluster_id: str | None = None,
         ordered: bool = True) -> DataFrame:
    """What changed between offsets ``from_offset`` and ``to_offset``: one row per broker, topic or partition
    added, removed or changed, with its state before and after as Kafka-JSON text (``entity, key, change, before,
    after``). ``replay.query.image.image_diff`` adds the rest of the image; ``ordered=False`` leaves the rows
    unsorted, with their sort columns (``_rank``, ``_sort0``…), for it."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    before = state_at(spark, lake, offset=from_offset, cluster_id=cluster)
    after = state_at(spark, lake, offset=to_offset, cluster_id=cluster)
    brokers = entity_diff("broker", before.brokers, after.brokers, ("broker_id",), BROKER_FIELDS,
                           F.col("broker_id").cast("string"),
                           (F.lit(""), F.col("broker_id").cast("long"), F.lit("")))
    topics = entity_diff("topic", before.topics, after.topics, ("topic_id",), TOPIC_FIELDS,
                          F.col("name"), (F.col("name"), F.lit(0).cast("long"), F.col("topic_id")))
    label = F.concat_ws("-", F.coalesce("topic_name", "topic_id"), F.col("partition_id").cast("string"))
    partitions = entity_diff("partition", before.partitions, after.partitions, ("topic_id", "partition_id"),
                              PARTITION_FIELDS, label,
                              (F.col("topic_name"), F.col("partition_id").cast("long"), F.col("topic_id")))
    both = brokers.unionByName(topics).unionByName(partitions)
    if not ordered:
        return both
    return both.orderBy("_rank", "_sort0", "_sort1", "_sort2", "change").select(*DIFF_COLUMNS)


__all__ = ["BROKER_FIELDS", "DIFF_COLUMNS", "MACHINE_STATE_NAMES", "PARTITION_FIELDS",
           "TOPIC_FIELDS", "ClusterState", "QueryError", "as_of", "clusters", "diff", "entity_diff", "history",
           "iso_ms", "json_items", "kafka_fields", "kafka_json", "kafka_struct", "resolve_cluster",
           "resolve_offset", "state_at"]
