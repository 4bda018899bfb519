"""The topic configs in force at an offset, resolved as Kafka's controller resolves them when it elects a leader.

``ConfigurationControlManager.getTopicConfig`` (Kafka 4.4) asks ``KafkaConfigSchema.resolveEffectiveTopicConfig``
with four maps, and the first that holds the key wins (``records.kafka_topic_configs``): the topic's own configs
(``DYNAMIC_TOPIC_CONFIG``); the broker synonyms of the key in the dynamic config of the controller's own node,
BROKER ``<node id>`` (``DYNAMIC_BROKER_CONFIG``; the node is the active controller, the leader of the last
``LeaderChangeMessage``: the controller that wrote the election); the same synonyms in the cluster default, BROKER
``""`` (``DYNAMIC_DEFAULT_BROKER_CONFIG``); the controller's static ``server.properties``
(``STATIC_BROKER_CONFIG``); else the TOPIC ConfigDef's default (``DEFAULT_CONFIG``). A partition leader's own
BROKER config plays no part: the controller decides.

Static ``server.properties`` are not in the metadata log: only the values a user passes (``static``) stand for
them; without them the answer falls through to Kafka's default, and says so (its source is ``DEFAULT_CONFIG``).

Set-based: each question (cluster, topic, offset) looks up the few ``config_history`` versions of the keys asked by
resource (broadcast joins, the questions not shuffled), the best layer kept per key; nothing is collected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.tables import CONFIG_HISTORY, METADATA_LOG
from records.kafka_constants import CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC
from records.kafka_topic_configs import (
    AUDITED_KEYS,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    MIN_IN_SYNC_REPLICAS,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIG_DEFAULTS,
    TOPIC_CONFIG_SYNONYMS,
    UNCLEAN_LEADER_ELECTION_ENABLE,
)
from replay.core.broker_timeline import open_end
from replay.core.history import holds_at

CLUSTER_DEFAULT = ""  # ConfigurationControlManager.DEFAULT_NODE: BROKER with an empty name
SOURCE_SUFFIX = "_source"
CONTROLLER_COLUMNS = ("cluster_id", "controller_id", "valid_from_offset", "valid_to_offset")


@dataclass(frozen=True)
class ConfigsInForce:
    """What the audit resolves configs from: ``config_history`` rows, the active controllers
    (``replay.audit.effective_configs.active_controllers``; None: the controller's node config is not consulted) and the
    static ``server.properties`` a user passes (the replay has none)."""

    history: DataFrame
    controllers: DataFrame | None = None
    static: dict[str, str] = field(default_factory=dict)


def configs_in_force(spark: SparkSession, lake: Lake, history: DataFrame | None = None,
                     static: dict[str, str] | None = None) -> ConfigsInForce | None:
    """The configs of ``lake`` (``history``: its ``config_history`` as the caller read it), or None when it has
    none (a lake replayed before the configs were). The log's controllers are read only when a node's own
    config (BROKER ``<id>``) sets a key the audit reads."""
    if history is None:
        if not lake.table_exists(CONFIG_HISTORY):
            return None
        history = lake.read(spark, CONFIG_HISTORY)
    synonyms = sorted({name for key in AUDITED_KEYS for name in TOPIC_CONFIG_SYNONYMS[key]})
    per_node = history.where((F.col("resource_type") == CONFIG_RESOURCE_BROKER)
                             & (F.col("resource_name") != CLUSTER_DEFAULT) & F.col("name").isin(synonyms))
    controllers = (active_controllers(lake.read_as_files(spark, METADATA_LOG).select(
        "cluster_id", "offset", "record_type", "payload_json")) if not per_node.isEmpty() else None)
    return ConfigsInForce(history, controllers, dict(static or {}))


def config_column(key: str) -> str:
    """The column holding a config key's value: ``min.insync.replicas`` → ``min_insync_replicas``."""
    return key.replace(".", "_")


def unclean_allowed(value: Column) -> Column:
    """``uncleanLeaderElectionEnabledForTopic``: ``Boolean.parseBoolean`` of the value (false when empty)."""
    return F.coalesce(F.lower(value) == "true", F.lit(False))


def effective_min_isr(value: Column, replicas: Column) -> Column:
    """``getTopicEffectiveMinIsr``: the value as an int, at most the replication factor."""
    return F.least(value.cast("int"), F.size(replicas))


def active_controllers(log: DataFrame) -> DataFrame:
    """The active controller of each offset range (``CONTROLLER_COLUMNS``): the leader each
    ``LeaderChangeMessage`` of ``log`` (rows of ``metadata_log``) announces, until the next one."""
    changes = log.where(F.col("record_type") == "LeaderChangeMessage").select(
        "cluster_id", F.get_json_object("payload_json", "$.leaderId").cast("int").alias("controller_id"),
        F.col("offset").alias("valid_from_offset"))
    by_cluster = Window.partitionBy("cluster_id").orderBy("valid_from_offset")
    return changes.withColumn("valid_to_offset", F.lead("valid_from_offset").over(by_cluster)).select(
        *CONTROLLER_COLUMNS)


def _lookups(spark: SparkSession, keys: Sequence[str]) -> DataFrame:
    """Which config record answers which key: (name, key, is_topic, position) for the key itself in TOPIC
    configs and each broker synonym, ``position`` its place in Kafka's synonym order."""
    rows = [(key, key, True, 0) for key in keys]
    rows += [(synonym, key, False, position) for key in keys
             for position, synonym in enumerate(TOPIC_CONFIG_SYNONYMS[key])]
    return spark.createDataFrame(rows, "name STRING, _key STRING, _is_topic BOOLEAN, _position INT")


def with_effective_configs(rows: DataFrame, configs: DataFrame | None, controllers: DataFrame | None = None,
                           static: Mapping[str, str] | None = None, *, topic: str = "topic_name",
                           offset: str = "offset", keys: Sequence[str] = AUDITED_KEYS) -> DataFrame:
    """``rows`` (with ``cluster_id`` and the ``topic`` name and ``offset`` columns) plus, for each of ``keys``,
    its value in force at the offset (``config_column(key)``, Kafka's string) and where it came from
    (``config_column(key) + "_source"``, a ``ConfigEntry.ConfigSource`` name).

    ``configs``: ``config_history`` rows; None when the configs were not replayed: every value and source is then
    null (unknown, not Kafka's default). ``controllers``: ``active_controllers``; without it the controller's
    own node config is not consulted. ``static``: the controller's ``server.properties`` as the user knows them.
    """
    names = [config_column(key) for key in keys]
    if configs is None:
        return rows.select("*", *[F.lit(None).cast("string").alias(c) for c in names],
                           *[F.lit(None).cast("string").alias(c + SOURCE_SUFFIX) for c in names])
    spark = rows.sparkSession
    if controllers is not None:
        running = F.broadcast(controllers.select(*CONTROLLER_COLUMNS)).alias("_running")
        asked = rows.alias("_rows").join(running, (F.col("_rows.cluster_id") == F.col("_running.cluster_id"))
                                         & holds_at(F.col(f"_rows.{offset}"), "_running"),
                                         "left").select("_rows.*", F.col("_running.controller_id").cast("string")
                                                        .alias("_node"))
    else:
        asked = rows.withColumn("_node", F.lit(None).cast("string"))
    # The few versions of the keys asked, each labelled with the key it answers, listed per config resource; each
    # row looks its three resources up by name (broadcast joins: the rows are not shuffled, 2.7 M elections of a
    # 10 M log): the topic's TOPIC config, the controller's BROKER node config, the cluster default (BROKER "").
    labelled = configs.select("cluster_id", "resource_type", "resource_name", "name", "value", "valid_from_offset",
                              "valid_to_offset").join(F.broadcast(_lookups(spark, keys)), ["name"])
    resources = labelled.groupBy("cluster_id", "resource_type", "resource_name").agg(F.collect_list(F.struct(
        "_key", "_is_topic", "_position", "value", "valid_from_offset", "valid_to_offset")).alias("_versions"))
    layers = ((CONFIG_RESOURCE_TOPIC, F.col(topic), DYNAMIC_TOPIC_CONFIG),
              (CONFIG_RESOURCE_BROKER, F.col("_node"), DYNAMIC_BROKER_CONFIG),
              (CONFIG_RESOURCE_BROKER, F.lit(CLUSTER_DEFAULT), DYNAMIC_DEFAULT_BROKER_CONFIG))
    for rank, (kind, name, _) in enumerate(layers):
        side = F.broadcast(resources.where(F.col("resource_type") == kind).select(
            F.col("cluster_id").alias("_cluster"), F.col("resource_name").alias("_name"),
            F.col("_versions").alias(f"_layer{rank}")))
        asked = asked.join(side, (F.col("cluster_id") == F.col("_cluster")) & (name == F.col("_name")),
                           "left").drop("_cluster", "_name")
    at = F.col(offset)

    def in_force(key: str) -> Column:
        """The best layer's version of ``key`` in force at the offset (Kafka's precedence: the layers in order,
        then the synonym's position), as (position, value, source); null when no layer has one."""
        return F.coalesce(*[_layer_version(F.col(f"_layer{rank}"), key, rank == 0, at, source)
                            for rank, (_, _, source) in enumerate(layers)])

    asked_at = F.col("cluster_id").isNotNull() & F.col(topic).isNotNull() & at.isNotNull()
    answers = [_resolved(in_force(key), key, static or {}) for key in keys]
    return asked.select(
        *[F.col(f"`{c}`") for c in rows.columns],
        *[F.when(asked_at, answer["value"]).alias(c) for answer, c in zip(answers, names, strict=True)],
        *[F.when(asked_at, answer["source"]).alias(c + SOURCE_SUFFIX) for answer, c in zip(answers, names,
                                                                                            strict=True)])


def _layer_version(versions: Column, key: str, topic_layer: bool, at: Column, source: str) -> Column:
    """Of one layer's ``versions`` (its resource's config versions, labelled), the one answering ``key`` in force
    at offset ``at``: the first synonym in Kafka's order, as (position, value, source); null when none."""
    return F.array_min(F.transform(
        F.filter(versions, lambda v: (v["_key"] == key) & (v["_is_topic"] == F.lit(topic_layer))
                 & (v["valid_from_offset"] <= at) & (open_end(v["valid_to_offset"]) > at)),
        lambda v: F.struct(v["_position"].alias("position"), v["value"].alias("value"), F.lit(source).alias("source"))))


def _resolved(found: Column, key: str, static: Mapping[str, str]) -> Column:
    """The log's answer when it has one, else the static config (the first synonym the user passed), else
    Kafka's default: a struct (value, source)."""
    passed = next((static[s] for s in TOPIC_CONFIG_SYNONYMS[key] if s in static), None)
    value, source = (passed, STATIC_BROKER_CONFIG) if passed is not None else (TOPIC_CONFIG_DEFAULTS[key],
                                                                                  DEFAULT_CONFIG)
    fallback = F.struct(F.lit(value).cast("string").alias("value"), F.lit(source).alias("source"))
    return F.when(found.isNotNull(), F.struct(found["value"].alias("value"), found["source"].alias("source"))
                  ).otherwise(fallback)


__all__ = [
    "CONTROLLER_COLUMNS",
    "MIN_IN_SYNC_REPLICAS",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "ConfigsInForce",
    "active_controllers",
    "config_column",
    "configs_in_force",
    "effective_min_isr",
    "unclean_allowed",
    "with_effective_configs",
]
