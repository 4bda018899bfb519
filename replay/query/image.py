"""Questions to the rest of Kafka's ``MetadataImage`` (issue 19): features, controllers, configs, client quotas,
ACLs, SCRAM credentials, delegation tokens and producer ids, as of an offset, their history and a diff.

Each part is one history table (``lakehouse.tables``) read by the one "as of offset N" rule of
``replay.query.state.as_of``; its JSON names are Kafka's (``records.vocabulary``) and its lists are sorted by the
part's key, so the same lake always gives the same answer. A lake replayed before a part existed has no table for
it: the part reads empty until ``kraft-replay replay --full`` writes it. No secret is in these tables (the
ingest redacts them, ``records.redaction``); a redacted value keeps its fingerprint, which the diff compares.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import (
    IMAGE_SCHEMAS,
    REPLAY_SCHEMAS,
)
from replay.query.image_sections import (
    INTERVAL_FIELDS,
    NO_PRODUCER_ID,
    PARTS,
    SECTIONS,
    Part,
    acl_sql,
    compared_fields,
    config_sql,
    next_producer_id_of,
    parse_resource,
    part_history_fields,
    part_history_order,
    user_principal,
    user_sql,
)
from replay.query.image_terms import code_name, resource_label, term_column
from replay.query.state import (
    as_of,
    diff,
    entity_diff,
    history_table,
    json_items,
    resolve_cluster,
    resolve_offset,
)


def part_table(spark: SparkSession, lake: Lake, part: Part, cluster: str) -> DataFrame:
    """Every version of ``part`` in ``cluster``; no rows when the lake has no table for it yet."""
    if lake.table_exists(part.table):
        return history_table(spark, lake, part.table, cluster)
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = REPLAY_SCHEMAS.get(part.table) or IMAGE_SCHEMAS[part.table]
    return spark.createDataFrame([], from_arrow_schema(schema))


def image_at(spark: SparkSession, lake: Lake, cluster: str, offset: int) -> dict[str, DataFrame]:
    """Each part as of ``offset`` (a resolved cluster and offset: ``replay.query.state.state_at`` gives both), sorted
    by its order, by section name."""
    image = {section: as_of(part_table(spark, lake, part, cluster), offset) for section, part in PARTS.items()}
    return {section: frame.orderBy(*PARTS[section].order) if PARTS[section].order else frame
            for section, frame in image.items()}


def next_producer_id(producer_ids: DataFrame) -> int:
    """The image's ``nextProducerId``: the one row's, or -1 before any ProducerIdsRecord."""
    return next_producer_id_of(producer_ids.select("next_producer_id").first())


# --- history -------------------------------------------------------------------------------------


def part_history(spark: SparkSession, lake: Lake, section: str, where: str | None = None,
                 cluster_id: str | None = None) -> DataFrame:
    """Every version of one part (those matching ``where``, SQL), oldest first, then by the part's order."""
    versions = part_table(spark, lake, PARTS[section], resolve_cluster(spark, lake, cluster_id))
    if where is not None:
        versions = versions.where(F.expr(where))
    return versions.orderBy(*part_history_order(section))


def part_history_json(section: str, versions: DataFrame) -> Iterator[str]:
    """One JSON object per version (``replay.query.image_sections.part_history_fields``), as Spark writes it."""
    return json_items(versions.withColumn("part", F.lit(section)), part_history_fields(section))


def config_history(spark: SparkSession, lake: Lake, resource: str, cluster_id: str | None = None) -> DataFrame:
    """Every version of every config of one resource (``TOPIC:orders``, ``BROKER:1``, ``BROKER:``)."""
    return part_history(spark, lake, "configs", config_sql(resource), cluster_id)


def acl_history(spark: SparkSession, lake: Lake, principal: str | None = None, resource: str | None = None,
                cluster_id: str | None = None) -> DataFrame:
    """Every version of the ACLs (of this principal, ``User:alice``; on exactly this resource pattern name,
    ``TOPIC:payments`` by Kafka's ``ResourceType`` name)."""
    return part_history(spark, lake, "acls", acl_sql(principal, resource), cluster_id)


def user_history(spark: SparkSession, lake: Lake, user: str, cluster_id: str | None = None
                 ) -> dict[str, DataFrame]:
    """What the log says of one user: its SCRAM credentials, the client quotas naming it (``user`` entity) and
    the ACLs of ``User:<user>``, each part's versions oldest first."""
    return {section: part_history(spark, lake, section, where, cluster_id)
            for section, where in user_sql(user).items()}


# --- diff ----------------------------------------------------------------------------------------

def image_diff(spark: SparkSession, lake: Lake, from_offset: int, to_offset: int, cluster_id: str | None = None
               ) -> DataFrame:
    """What changed between two offsets in every part of the image: ``replay.query.state.diff``'s brokers, topics and
    partitions, then the features, controllers, configs, quotas, ACLs, SCRAM credentials, tokens and producer
    ids added, removed or changed (``entity, key, change, before, after``; a new secret fingerprint is a change)."""
    cluster = resolve_cluster(spark, lake, cluster_id)
    before_at = resolve_offset(spark, lake, cluster, from_offset)
    after_at = resolve_offset(spark, lake, cluster, to_offset)
    frames = [diff(spark, lake, from_offset, to_offset, cluster, ordered=False)]
    for part in PARTS.values():
        versions = part_table(spark, lake, part, cluster)
        frames.append(entity_diff(
            part.entity, as_of(versions, before_at), as_of(versions, after_at), part.key or ("cluster_id",),
            compared_fields(part), term_column(part.diff.label), tuple(term_column(term) for term in part.diff.sort)))
    both = frames[0]
    for frame in frames[1:]:
        both = both.unionByName(frame)
    return both.orderBy("_rank", "_sort0", "_sort1", "_sort2", "change").select(
        "entity", "key", "change", "before", "after")


__all__ = ["INTERVAL_FIELDS", "NO_PRODUCER_ID", "PARTS", "SECTIONS", "Part", "acl_history",
           "code_name", "config_history", "image_at", "image_diff", "next_producer_id", "parse_resource",
           "part_history", "part_history_json", "part_table", "resource_label", "user_history", "user_principal"]
