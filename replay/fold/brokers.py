"""Brokers, controllers and features: Kafka's ``ClusterDelta`` and ``FeaturesDelta`` as window functions.

A RegisterBrokerRecord replaces the registration and starts a *registration*; fence, unfence,
registration changes and unregistration apply only to a registered broker and only when they name
its current epoch (``ClusterDelta.getBrokerOrThrow``), else they are refused and reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from records.kafka_constants import (
    FENCING_AS_BOOLEAN,
    FENCING_CODES,
    IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN,
    IN_CONTROLLED_SHUTDOWN_CODES,
    ZK_MIGRATION_NONE,
    ZK_MIGRATION_STATE_FEATURE,
    ZK_MIGRATION_STATES,
)
from records.vocabulary import field
from replay.core.events import (
    kafka_columns,
    kafka_default,
    kafka_field,
    last_non_null,
    ordered,
    parsed,
    running,
    struct_columns,
)
from replay.core.refusal_columns import reason_column
from replay.core.refusals import (
    BROKER_EPOCH_BACKWARDS,
    INVALID_ZK_MIGRATION_STATE,
    STALE_BROKER_EPOCH,
    UNKNOWN_BROKER,
    UNKNOWN_FENCING_CHANGE,
    UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE,
)
from replay.core.shapes import RecordShapes

EVENT_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
BROKER_VALUES = ("broker_epoch", "incarnation_id", "fenced", "in_controlled_shutdown", "rack", "endpoints",
                 "features", "log_dirs", "is_migrating_zk_broker")
REGISTER, FENCE_RECORD, UNFENCE_RECORD = "RegisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord"
CHANGE, UNREGISTER = "BrokerRegistrationChangeRecord", "UnregisterBrokerRecord"
CONTROLLER = "RegisterControllerRecord"
FEATURE, ZK_MIGRATION = "FeatureLevelRecord", "ZkMigrationStateRecord"


@dataclass(frozen=True)
class BrokersResult:
    states: DataFrame  # per applied event, the registration after it; unregistrations are tombstones
    anomalies: DataFrame



def as_boolean(code: Column, values: dict[int, bool]) -> Column:
    """Kafka's ``asBoolean()`` of a BrokerRegistrationChangeRecord code: the value it sets; null (nothing) for
    NONE."""
    return reduce(lambda otherwise, item: F.when(code == item[0], item[1]).otherwise(otherwise), values.items(),
                  F.lit(None).cast("boolean"))


def broker_states(events: DataFrame, shapes: RecordShapes) -> BrokersResult:
    """``ClusterDelta``: the registration after every applied broker record, and the refused records."""
    registers = parsed(events, REGISTER, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(REGISTER, "brokerId"), F.lit("register").alias("kind"),
        kafka_field(REGISTER, "brokerEpoch").alias("epoch"),
        *kafka_columns(REGISTER, "incarnationId", "fenced"),
        *kafka_columns(REGISTER, "inControlledShutdown", defaults=True), *kafka_columns(REGISTER, "rack"),
        struct_columns(REGISTER, "endPoints"), struct_columns(REGISTER, "features"),
        *kafka_columns(REGISTER, "logDirs", "isMigratingZkBroker", defaults=True))
    fences = parsed(events, FENCE_RECORD, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(FENCE_RECORD, "id", "epoch"), F.lit("change").alias("kind"),
        F.lit(True).alias("fenced"))
    unfences = parsed(events, UNFENCE_RECORD, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(UNFENCE_RECORD, "id", "epoch"), F.lit("change").alias("kind"),
        F.lit(False).alias("fenced"))
    fencing, shutdown = kafka_field(CHANGE, "fenced"), kafka_default(CHANGE, "inControlledShutdown")
    changes = parsed(events, CHANGE, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(CHANGE, "brokerId"), F.lit("change").alias("kind"),
        kafka_field(CHANGE, "brokerEpoch").alias("epoch"),
        as_boolean(fencing, FENCING_AS_BOOLEAN).alias("fenced"),
        as_boolean(shutdown, IN_CONTROLLED_SHUTDOWN_AS_BOOLEAN).alias("in_controlled_shutdown"),
        fencing.alias("fencing_change"), shutdown.alias("in_controlled_shutdown_change"),
        # an empty list (Kafka's default) changes nothing
        F.when(F.size(kafka_default(CHANGE, "logDirs")) > 0, kafka_field(CHANGE, "logDirs")).alias("log_dirs"))
    unregisters = parsed(events, UNREGISTER, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(UNREGISTER, "brokerId"), F.lit("unregister").alias("kind"),
        kafka_field(UNREGISTER, "brokerEpoch").alias("epoch"))
    stream = registers.unionByName(fences, allowMissingColumns=True).unionByName(
        unfences, allowMissingColumns=True).unionByName(changes, allowMissingColumns=True).unionByName(
        unregisters, allowMissingColumns=True)

    keyed = ("cluster_id", "broker_id")
    stream = stream.withColumn("registration", F.sum(F.when(F.col("kind") == "register", 1).otherwise(0)).over(
        running(*keyed)))
    registration = running(*keyed, "registration")  # one registration's events up to this one
    stream = stream.withColumn("current_epoch", F.first("epoch").over(registration))
    names_current = (F.col("registration") > 0) & (F.col("epoch") == F.col("current_epoch"))
    # ClusterDelta removes a broker on UnregisterBrokerRecord without checking it (flagged here when
    # the broker is unknown or the epoch stale); fence, unfence and registration changes go through
    # getBrokerOrThrow: refused unless the broker is registered and the epoch is its current one.
    before = ordered(*keyed, "registration").rowsBetween(Window.unboundedPreceding, -1)
    stream = stream.withColumn("gone", F.coalesce(F.max(
        F.when(F.col("kind") == "unregister", 1).otherwise(0)).over(before), F.lit(0)) == 1)
    is_unregister = F.col("kind") == "unregister"
    known = (F.col("registration") > 0) & ~F.col("gone")
    # ClusterDelta.replay(BrokerRegistrationChangeRecord): after getBrokerOrThrow, a code that
    # BrokerRegistrationFencingChange.fromValue or BrokerRegistrationInControlledShutdownChange.fromValue
    # does not know throws: the record is refused.
    unknown_fencing = F.coalesce(~F.col("fencing_change").isin(*FENCING_CODES), F.lit(False))
    unknown_shutdown = F.coalesce(~F.col("in_controlled_shutdown_change").isin(*IN_CONTROLLED_SHUTDOWN_CODES),
                                  F.lit(False))
    current = names_current & ~F.col("gone")
    accepted = current & ~unknown_fencing & ~unknown_shutdown  # a fence, unfence or change Kafka applies
    applies = (F.col("kind") == "register") | (is_unregister & known) | accepted
    problem = F.when(~known, reason_column(UNKNOWN_BROKER, broker_id="broker_id")).when(
        ~current, reason_column(STALE_BROKER_EPOCH, epoch="epoch", broker_id="broker_id",
                                current_epoch="current_epoch")).when(
        unknown_fencing, reason_column(UNKNOWN_FENCING_CHANGE, code="fencing_change"),
    ).otherwise(reason_column(UNKNOWN_IN_CONTROLLED_SHUTDOWN_CHANGE, code="in_controlled_shutdown_change"))
    flagged = stream.where((F.col("kind") != "register") & ~accepted)
    refused = flagged.select(
        "cluster_id", "offset", "record_type",
        F.when(is_unregister, F.lit("invariant")).otherwise(F.lit("refused")).alias("kind"),
        problem.alias("reason"))
    prev_register_epoch = F.lag("epoch").over(ordered(*keyed))
    registers_only = stream.where(F.col("kind") == "register").withColumn("prev_epoch", prev_register_epoch)
    backwards = registers_only.where(F.col("epoch") < F.col("prev_epoch")).select(
        "cluster_id", "offset", "record_type", F.lit("invariant").alias("kind"),
        reason_column(BROKER_EPOCH_BACKWARDS, broker_id="broker_id", previous_epoch="prev_epoch",
                      epoch="epoch").alias("reason"))

    applied = stream.where(applies)
    live = applied.where(F.col("kind") != "unregister")
    states = live.select(
        *EVENT_COLUMNS, "broker_id", "kind",
        F.col("current_epoch").alias("broker_epoch"),
        F.first("incarnation_id").over(registration).alias("incarnation_id"),
        last_non_null("fenced", registration).alias("fenced"),
        last_non_null("in_controlled_shutdown", registration).alias("in_controlled_shutdown"),
        F.first("rack").over(registration).alias("rack"),
        F.first("endpoints").over(registration).alias("endpoints"),
        F.first("features").over(registration).alias("features"),
        last_non_null("log_dirs", registration).alias("log_dirs"),
        F.first("is_migrating_zk_broker").over(registration).alias("is_migrating_zk_broker"),
        F.lit(False).alias("is_tombstone"))
    tombstones = applied.where(F.col("kind") == "unregister").select(
        *EVENT_COLUMNS, "broker_id", "kind", F.lit(True).alias("is_tombstone"))
    return BrokersResult(states.unionByName(tombstones, allowMissingColumns=True),
                         refused.unionByName(backwards))


def controller_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """Every RegisterControllerRecord replaces that controller's registration; an UnregisterControllerRecord
    (Kafka 4.4) removes it, whatever there is (``ClusterDelta`` does not check)."""
    registered = parsed(events, CONTROLLER, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(CONTROLLER, "controllerId", "incarnationId"),
        *kafka_columns(CONTROLLER, "zkMigrationReady", defaults=True),
        struct_columns(CONTROLLER, "endPoints"), struct_columns(CONTROLLER, "features"),
        F.lit(False).alias("is_tombstone"))
    unregistered = parsed(events, "UnregisterControllerRecord", shapes).select(
        *EVENT_COLUMNS, *kafka_columns("UnregisterControllerRecord", "controllerId"),
        F.lit(True).alias("is_tombstone"))
    return registered.unionByName(unregistered, allowMissingColumns=True)


def feature_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """FeatureLevelRecord sets a finalized feature level; level 0 removes the feature."""
    return parsed(events, FEATURE, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(FEATURE, "name", "featureLevel"),
        (kafka_field(FEATURE, "featureLevel") == 0).alias("is_tombstone"))


@dataclass(frozen=True)
class ZkMigrationResult:
    states: DataFrame  # feature rows of ZK_MIGRATION_STATE, one per record Kafka applies
    anomalies: DataFrame


def zk_migration_states(events: DataFrame, shapes: RecordShapes) -> ZkMigrationResult:
    """ZkMigrationStateRecord as Kafka 3.9's ``FeaturesDelta`` keeps it: the state as the level of the feature row
    ``zkMigrationState`` (FeaturesImage's field, no finalized feature's name); NONE, the empty image's state, removes
    the row as level 0 removes a feature; a value ``ZkMigrationState.of`` does not know throws, so the record is
    refused. (Kafka 4.x's ``MetadataDelta`` ignores the record: its image keeps no migration state.)"""
    level = field(FEATURE, "featureLevel").column
    rows = parsed(events, ZK_MIGRATION, shapes).select(
        *EVENT_COLUMNS, F.lit(ZK_MIGRATION_STATE_FEATURE).alias(field(FEATURE, "name").column),
        kafka_field(ZK_MIGRATION, "zkMigrationState").cast("int").alias(level),
        (kafka_field(ZK_MIGRATION, "zkMigrationState") == ZK_MIGRATION_NONE).alias("is_tombstone"))
    state = F.col(level)
    known = state.isin(*ZK_MIGRATION_STATES)
    refused = rows.where(~known).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        reason_column(INVALID_ZK_MIGRATION_STATE, state=state).alias("reason"))
    return ZkMigrationResult(rows.where(known), refused)
