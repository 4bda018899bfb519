"""``configs --topic``: one topic's audited configs in force at an offset, each with the layer it came from
(``replay.audit.effective_configs`` resolves them as the controller does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import CONFIG_HISTORY, TOPIC_HISTORY
from records.kafka_topic_configs import AUDITED_KEYS
from replay.audit.effective_configs import SOURCE_SUFFIX, config_column, configs_in_force, with_effective_configs
from replay.query.state import QueryError, as_of, history_table, resolve_cluster, resolve_offset


def topic_configs_at(spark: SparkSession, lake: Lake, topic: str, offset: int | None = None,
                     time: datetime | str | None = None, cluster_id: str | None = None,
                     static: Mapping[str, str] | None = None, keys: Sequence[str] = AUDITED_KEYS
                     ) -> tuple[int, DataFrame]:
    """(the offset used, one row per key: ``topic_name``, ``name``, ``value``, ``source``) for ``topic`` as of
    ``offset`` (or ``time``), sorted by key. QueryError when the lake has no ``config_history`` or the topic does
    not exist then."""
    # here, not at the top: replay.query.state imports replay.store.runs, which reads this module

    cluster = resolve_cluster(spark, lake, cluster_id)
    at = resolve_offset(spark, lake, cluster, offset, time)
    configs = configs_in_force(spark, lake, static=dict(static or {}))
    if configs is None:
        raise QueryError(f"no {CONFIG_HISTORY} in {lake.root}: run `kraft-replay replay` again (a lake replayed "
                         "before configs were replayed)")
    topics = as_of(history_table(spark, lake, TOPIC_HISTORY, cluster), at).where(F.col("name") == topic)
    if topics.isEmpty():
        raise QueryError(f"no topic {topic!r} in cluster {cluster} as of offset {at}")
    ask = spark.createDataFrame([(cluster, topic, at)], "cluster_id STRING, topic_name STRING, offset BIGINT")
    answer = with_effective_configs(ask, configs.history.where(F.col("cluster_id") == cluster), configs.controllers,
                                    configs.static, keys=keys)
    rows = F.explode(F.array(*[F.struct(F.lit(key).alias("name"), F.col(config_column(key)).alias("value"),
                                        F.col(config_column(key) + SOURCE_SUFFIX).alias("source"))
                               for key in keys])).alias("config")
    return at, answer.select("topic_name", rows).select("topic_name", "config.*").orderBy("name")


__all__ = ["topic_configs_at"]
