"""Every lake table and the change log by name in plain Spark SQL: the catalog's tables on delta-spark, temporary
views otherwise."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from replay.query.changes import CHANGE_COLUMNS, CHANGES_VIEW, all_changes
from replay.query.state import JSON_OPTIONS


def register_views(spark: SparkSession, lake: Lake, cluster_id: str | None = None) -> list[str]:
    """Every lake table (``metadata_log``, every ``*_history``, ``replay_anomalies``, ``replay_checkpoints``, …)
    reachable by its name, so plain Spark SQL works: ``SELECT * FROM partition_history``.

    On delta-spark they are the catalog's tables ``kraft.<name>`` (``Lake.register``; the current database), so
    Delta's time travel, ``DESCRIBE HISTORY`` and ``table_changes`` work by name too. With ``cluster_id`` (or on
    delta-rs) a temporary view per table shows only that cluster's rows (time travel: ``kraft.<name>``).
    ``changes``, the change log (``replay.query.changes``), is a temporary view over the history tables."""
    log = all_changes(spark, lake)
    if cluster_id is not None:
        log = log.where(F.col("cluster_id") == cluster_id)
    log.select(*CHANGE_COLUMNS).createOrReplaceTempView(CHANGES_VIEW)
    registered = lake.register(spark)
    if cluster_id is None and registered:
        names = registered
        for name in names:
            spark.catalog.dropTempView(name)  # a view of an earlier call would hide the table
        return [*names, CHANGES_VIEW]
    names = lake.table_names()
    for name in names:
        df = lake.read(spark, name)
        if cluster_id is not None and "cluster_id" in df.columns:
            df = df.where(F.col("cluster_id") == cluster_id)
        df.createOrReplaceTempView(name)
    return [*names, CHANGES_VIEW]


def lake_sql(spark: SparkSession, lake: Lake, query: str, cluster_id: str | None = None) -> DataFrame:
    """The result of a Spark SQL ``query`` over the lake, every table (and ``changes``) registered by name
    (``register_views``; with ``cluster_id`` only that cluster's rows)."""
    register_views(spark, lake, cluster_id)
    return spark.sql(query)


def json_lines(df: DataFrame) -> Iterator[str]:
    """Each row of a query's result as one JSON object (Spark's ``to_json``, nulls kept), in its order."""
    texts = df.select(F.to_json(F.struct(*[F.col(f"`{column}`") for column in df.columns]), JSON_OPTIONS).alias("j"))
    for row in texts.toLocalIterator():
        yield row["j"]


__all__ = ["json_lines", "lake_sql", "register_views"]
