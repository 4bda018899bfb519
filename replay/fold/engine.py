"""The replay: a stored metadata log → the cluster's history tables, all as DataFrame operations.

Nothing here collects the log on the driver or runs Python per record; the same plan runs on
``local[*]`` and on a cluster. The output is deterministic: every window has a total order
(``visible_offset``, ``offset``) and every table is sorted by its key before it is written.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial, reduce
from typing import cast

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakehouse.concurrent_jobs import run_ahead, run_concurrently
from lakehouse.spark_settings import few_partitions, kept_checkpoint, sort_aggregated
from lakehouse.tables import (
    BROKER_HISTORY,
    CONTROLLER_HISTORY,
    FEATURE_HISTORY,
    HISTORY_KEYS,
    PARTITION_HISTORY,
    REPLICA_HISTORY,
    TOPIC_HISTORY,
)
from replay.core.events import transaction_anomalies, visible, with_base
from replay.core.history import collapse, to_intervals
from replay.core.image_parts import IMAGE_PARTS, WHOLE_PARTS, ImagePart
from replay.core.shapes import RecordShapes, record_shapes
from replay.fold.acls import AclsResult, acl_states
from replay.fold.brokers import BROKER_VALUES, broker_states, controller_states, feature_states, zk_migration_states
from replay.fold.client_quotas import quota_states
from replay.fold.configurations import config_states
from replay.fold.delegation_tokens import TokensResult, token_states
from replay.fold.partitions import (
    PartitionsResult,
    partition_anomalies,
    partition_states,
    partition_versions,
    topic_events,
)
from replay.fold.producer_ids import producer_id_states
from replay.fold.replicas import replica_history
from replay.fold.scram import scram_states

PARTITION_TYPES = ("PartitionRecord", "PartitionChangeRecord")

TABLE_KEYS = HISTORY_KEYS  # the history tables and their keys, declared in the lake's registry


@dataclass(frozen=True)
class ReplayResult:
    tables: dict[str, DataFrame]  # history tables (unordered; keys in TABLE_KEYS)
    anomalies: DataFrame


def _with_topic_names(partitions: DataFrame, topics: DataFrame) -> DataFrame:
    """The topic's name when each partition version starts (a TopicRecord can rename a live id). The partitions' columns
    stay as they are, unqualified (no ``alias``): a checkpoint of them keeps its partitioning where Spark renames its
    columns, in a join with another checkpoint of the same rows (``lakehouse.spark_settings.kept_checkpoint``)."""
    names = topics.select(F.col("cluster_id").alias("_t_cluster_id"), F.col("topic_id").alias("_t_topic_id"),
                          F.col("valid_from_offset").alias("_t_from"), F.col("valid_to_offset").alias("_t_to"),
                          F.col("name").alias("topic_name"))
    valid = ((F.col("cluster_id") == F.col("_t_cluster_id")) & (F.col("topic_id") == F.col("_t_topic_id"))
             & (F.col("_t_from") <= F.col("valid_from_offset"))
             & (F.col("_t_to").isNull() | (F.col("_t_to") > F.col("valid_from_offset"))))
    return partitions.join(F.broadcast(names), valid, "left").drop("_t_cluster_id", "_t_topic_id", "_t_from", "_t_to")


def _versions(states: DataFrame, part: ImagePart) -> DataFrame:
    """An image part's history: a version per entity and visible offset, a record that changes nothing (the value
    a key already has) continuing the version it finds, as Kafka's image does not change."""
    return collapse(to_intervals(states, part.keyed, part.values), part.keyed, part.values)


def _with_refusals(result: AclsResult | TokensResult) -> tuple[DataFrame, DataFrame | None]:
    return result.states, result.anomalies


# One image part's Spark fold: its states from the small checkpoint of the non-partition events (``topics``: the
# topic events Kafka applies, whose removals delete configs), and the records Kafka refuses (None: none).
PartFold = Callable[[DataFrame, RecordShapes, DataFrame], tuple[DataFrame, DataFrame | None]]
# Each part folded on its own (``replay.core.image_parts.WHOLE_PARTS``), by section: Kafka's ``ConfigurationsDelta``,
# ``ClientQuotasDelta``, ``AclsDelta``, ``ScramDelta``, ``DelegationTokenDelta``, ``ProducerIdsDelta``.
PART_FOLDS: dict[str, PartFold] = {
    "configs": lambda events, shapes, topics: (config_states(events, shapes, topics), None),
    "clientQuotas": lambda events, shapes, _topics: (quota_states(events, shapes), None),
    "acls": lambda events, shapes, _topics: _with_refusals(acl_states(events, shapes)),
    "scramCredentials": lambda events, shapes, _topics: (scram_states(events, shapes), None),
    "delegationTokens": lambda events, shapes, _topics: _with_refusals(token_states(events, shapes)),
    "producerIds": lambda events, shapes, _topics: (producer_id_states(events, shapes), None),
}


@dataclass(frozen=True)
class ImageParts:
    tables: dict[str, DataFrame]  # config_history ... producer_id_history (unordered)
    anomalies: DataFrame | None  # the ACL removals and delegation tokens Kafka refuses (None: no such part folded)


def image_parts(others: DataFrame, shapes: RecordShapes, topics: DataFrame,
                tables_wanted: Collection[str] | None = None) -> ImageParts:
    """The history of the parts folded on their own (``PART_FOLDS``): small families, folded from the small
    checkpoint of the non-partition records. ``topics``: the topic events Kafka applies
    (``replay.fold.partitions.topic_events``), whose removals delete configs. ``tables_wanted``: the parts' tables to
    fold (all by default); a part not folded refuses nothing either (only records of its own types are refused)."""
    tables: dict[str, DataFrame] = {}
    refused: list[DataFrame] = []
    for part in WHOLE_PARTS:
        if tables_wanted is not None and part.table not in tables_wanted:
            continue
        states, refusals = PART_FOLDS[part.section](others, shapes, topics)
        tables[part.table] = _versions(states, part)
        if refusals is not None:
            refused.append(refusals)
    return ImageParts(tables, reduce(DataFrame.unionByName, refused) if refused else None)


def _topic_history(topic_events: DataFrame) -> DataFrame:
    """``topic_history`` from the topic events Kafka applies, checkpointed (a job)."""
    return to_intervals(topic_events.withColumn("is_tombstone", F.col("kind") == "remove"),
                        ("cluster_id", "topic_id"), ("name",)).localCheckpoint(eager=True)


def _broker_history(states: DataFrame) -> DataFrame:
    """``broker_history`` from the brokers' states (a registration starts a new run of versions), checkpointed (a
    job)."""
    return collapse(
        to_intervals(states.withColumn("registers", F.col("kind") == "register"),
                     ("cluster_id", "broker_id"), (*BROKER_VALUES, "registers")),
        ("cluster_id", "broker_id"), BROKER_VALUES, restart="registers").drop("registers").localCheckpoint(eager=True)


def replay(log: DataFrame, base: DataFrame | None = None, shapes: RecordShapes | None = None,
           parts_wanted: Collection[str] | None = None) -> ReplayResult:
    """Replay ``log`` (rows in the ``metadata_log`` shape, one or more clusters).

    ``base``: already-visible events applied before the log of their cluster (``replay.core.events.with_base``):
    the records of the snapshot a truncated log starts from (``replay.store.snapshots``), or the seeds of an
    incremental replay (``replay.fold.incremental``). ``shapes``: how records are typed (``replay.core.shapes``; the
    lake's registry via ``replay.core.shapes.lake_shapes``), by default the shipped schemas.
    ``parts_wanted``: the tables of the parts folded on their own to fold (``image_parts``), all by default."""
    if shapes is None:
        shapes = record_shapes(log.sparkSession)
    # Every table reads the events, and replicas read partitions and brokers: compute each once. A local
    # checkpoint, not persist(): it also cuts the plan, so the plans built on it stay small (persisted
    # plans are re-analysed in full by every query that uses them and stay in the driver's cache manager).
    events = few_partitions(with_base(visible(log, shapes), base, shapes)).localCheckpoint(eager=True)
    # Nearly every record is a Partition(Change)Record; the other folds (and their anomalies) each parse
    # a record type or two, so they scan a small checkpoint of the rest instead of the whole log each time.
    others = events.where(~F.col("record_type").isin(*PARTITION_TYPES)).localCheckpoint(eager=True)
    topics = topic_events(others, shapes)
    brokers = broker_states(others, shapes)
    # independent folds, each a few small jobs whose time is mostly fixed latency: at once; the brokers' (read only by
    # the replicas' cut, after the partitions' checkpoint below) while that checkpoint is taken too
    broker_ahead = run_ahead(log.sparkSession, partial(_broker_history, brokers.states))
    folded = run_concurrently(log.sparkSession, {
        PARTITION_HISTORY: lambda: partition_states(events, topics.topic_events, shapes, others),
        TOPIC_HISTORY: lambda: _topic_history(topics.topic_events)})
    partitions = cast(PartitionsResult, folded[PARTITION_HISTORY])
    topic_history = cast(DataFrame, folded[TOPIC_HISTORY])
    # The fold's rows (the versions, and the events its anomalies read), checkpointed once: distributed by partition
    # as the fold grouped them (``replay.fold.partitions``) and sorted by offset in each, so the versions filtered from
    # them are too: the replicas' versions are grouped from them without a shuffle, and a full replay derives its
    # state machines and election audit from them as they are (``replay.store.derived.folded_input``).
    with sort_aggregated(log.sparkSession):  # each partition's events grouped as they come, sorted
        fold_rows = kept_checkpoint(_with_topic_names(partitions.folded, topic_history).sortWithinPartitions(
            *HISTORY_KEYS[PARTITION_HISTORY], "valid_from_offset"))
    partition_history = partition_versions(fold_rows)
    broker_history = broker_ahead.result()
    zk_migration = zk_migration_states(others, shapes)
    feature_history = _versions(feature_states(others, shapes).unionByName(zk_migration.states),
                                IMAGE_PARTS["features"])
    controllers = IMAGE_PARTS["controllers"]
    controller_history = to_intervals(controller_states(others, shapes), controllers.keyed, controllers.values)
    tables = {
        PARTITION_HISTORY: partition_history,
        BROKER_HISTORY: broker_history,
        TOPIC_HISTORY: topic_history,
        FEATURE_HISTORY: feature_history,
        CONTROLLER_HISTORY: controller_history,
    }
    tables[REPLICA_HISTORY] = replica_history(partition_history, broker_history)
    parts = image_parts(others, shapes, topics.topic_events, parts_wanted)
    tables.update(parts.tables)
    anomalies = (transaction_anomalies(log).unionByName(topics.anomalies)
                 .unionByName(partition_anomalies(fold_rows, partitions))
                 .unionByName(brokers.anomalies).unionByName(zk_migration.anomalies))
    if parts.anomalies is not None:
        anomalies = anomalies.unionByName(parts.anomalies)
    # Unordered: ``replay.store.table_writes.write_sorted`` sorts each table as it writes it (a sort here would make
    # Spark run the whole plan twice, once to sample the range boundaries of the sort).
    return ReplayResult(tables, anomalies)
