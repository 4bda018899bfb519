"""Brokers, controllers and features: Kafka's ``ClusterDelta`` and ``FeaturesDelta`` as window functions.

A RegisterBrokerRecord replaces the registration and starts a *registration*; fence, unfence,
registration changes and unregistration apply only to a registered broker and only when they name
its current epoch (``ClusterDelta.getBrokerOrThrow``), else they are refused and reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from records.kafka_constants import FENCE, IN_CONTROLLED_SHUTDOWN, NONE, UNFENCE
from replay.events import last_non_null, ordered, parsed, running
from replay.shapes import RecordShapes

EVENT_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", "seq")
BROKER_VALUES = ("broker_epoch", "incarnation_id", "fenced", "in_controlled_shutdown", "rack", "endpoints",
                 "features", "log_dirs", "is_migrating_zk_broker")
ENDPOINTS = "transform(r.endPoints, e -> named_struct('name', e.name, 'host', e.host, 'port', e.port, " \
            "'security_protocol', e.securityProtocol))"
FEATURES = "transform(r.features, f -> named_struct('name', f.name, 'min_supported_version', " \
           "f.minSupportedVersion, 'max_supported_version', f.maxSupportedVersion))"


@dataclass(frozen=True)
class BrokersResult:
    states: DataFrame  # per applied event, the registration after it; unregistrations are tombstones
    anomalies: DataFrame


def broker_states(events: DataFrame, shapes: RecordShapes) -> BrokersResult:
    registers = parsed(events, "RegisterBrokerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.brokerId").alias("broker_id"), F.lit("register").alias("kind"),
        F.col("r.brokerEpoch").alias("epoch"), F.col("r.incarnationId").alias("incarnation_id"),
        F.col("r.fenced").alias("fenced"),
        F.coalesce("r.inControlledShutdown", F.lit(False)).alias("in_controlled_shutdown"),
        F.col("r.rack").alias("rack"), F.expr(ENDPOINTS).alias("endpoints"), F.expr(FEATURES).alias("features"),
        F.coalesce("r.logDirs", F.array().cast("array<string>")).alias("log_dirs"),
        F.coalesce("r.isMigratingZkBroker", F.lit(False)).alias("is_migrating_zk_broker"))
    fences = parsed(events, "FenceBrokerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.id").alias("broker_id"), F.lit("change").alias("kind"),
        F.col("r.epoch").alias("epoch"), F.lit(True).alias("fenced"))
    unfences = parsed(events, "UnfenceBrokerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.id").alias("broker_id"), F.lit("change").alias("kind"),
        F.col("r.epoch").alias("epoch"), F.lit(False).alias("fenced"))
    changes = parsed(events, "BrokerRegistrationChangeRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.brokerId").alias("broker_id"), F.lit("change").alias("kind"),
        F.col("r.brokerEpoch").alias("epoch"),
        F.when(F.col("r.fenced") == FENCE, True).when(F.col("r.fenced") == UNFENCE, False).alias("fenced"),
        F.when(F.col("r.inControlledShutdown") == IN_CONTROLLED_SHUTDOWN, True).alias("in_controlled_shutdown"),
        F.col("r.fenced").alias("fencing_change"),
        F.coalesce("r.inControlledShutdown", F.lit(NONE)).alias("in_controlled_shutdown_change"),
        F.when(F.size(F.coalesce("r.logDirs", F.array())) > 0, F.col("r.logDirs")).alias("log_dirs"))
    unregisters = parsed(events, "UnregisterBrokerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.brokerId").alias("broker_id"), F.lit("unregister").alias("kind"),
        F.col("r.brokerEpoch").alias("epoch"))
    stream = registers.unionByName(fences, allowMissingColumns=True).unionByName(
        unfences, allowMissingColumns=True).unionByName(changes, allowMissingColumns=True).unionByName(
        unregisters, allowMissingColumns=True)

    keyed = ("cluster_id", "broker_id")
    stream = stream.withColumn("registration", F.sum(F.when(F.col("kind") == "register", 1).otherwise(0)).over(
        running(*keyed)))
    reg = running(*keyed, "registration")
    stream = stream.withColumn("current_epoch", F.first("epoch").over(reg))
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
    unknown_fencing = F.coalesce(~F.col("fencing_change").isin(FENCE, NONE, UNFENCE), F.lit(False))
    unknown_shutdown = F.coalesce(~F.col("in_controlled_shutdown_change").isin(NONE, IN_CONTROLLED_SHUTDOWN),
                                  F.lit(False))
    current = names_current & ~F.col("gone")
    accepted = current & ~unknown_fencing & ~unknown_shutdown  # a fence, unfence or change Kafka applies
    applies = (F.col("kind") == "register") | (is_unregister & known) | accepted
    problem = F.when(~known, F.concat(F.lit("unknown broker "), F.col("broker_id").cast("string"))).when(
        ~current, F.concat(F.lit("stale broker epoch "), F.col("epoch").cast("string"), F.lit(" for broker "),
                           F.col("broker_id").cast("string"), F.lit(" (current epoch "),
                           F.col("current_epoch").cast("string"), F.lit(")"))).when(
        unknown_fencing, F.concat(F.lit("unknown value for fenced: "), F.col("fencing_change").cast("string")),
    ).otherwise(F.concat(F.lit("unknown value for inControlledShutdown: "),
                         F.col("in_controlled_shutdown_change").cast("string")))
    flagged = stream.where((F.col("kind") != "register") & ~accepted)
    refused = flagged.select(
        "cluster_id", "offset", "record_type",
        F.when(is_unregister, F.lit("invariant")).otherwise(F.lit("refused")).alias("kind"),
        problem.alias("reason"))
    prev_register_epoch = F.lag("epoch").over(ordered(*keyed))
    registers_only = stream.where(F.col("kind") == "register").withColumn("prev_epoch", prev_register_epoch)
    backwards = registers_only.where(F.col("epoch") < F.col("prev_epoch")).select(
        "cluster_id", "offset", "record_type", F.lit("invariant").alias("kind"),
        F.concat(F.lit("broker "), F.col("broker_id").cast("string"), F.lit(" epoch went backwards: "),
                 F.col("prev_epoch").cast("string"), F.lit(" -> "), F.col("epoch").cast("string")).alias("reason"))

    applied = stream.where(applies)
    live = applied.where(F.col("kind") != "unregister")
    g = running(*keyed, "registration")
    states = live.select(
        *EVENT_COLUMNS, "broker_id", "kind",
        F.col("current_epoch").alias("broker_epoch"),
        F.first("incarnation_id").over(g).alias("incarnation_id"),
        last_non_null("fenced", g).alias("fenced"),
        last_non_null("in_controlled_shutdown", g).alias("in_controlled_shutdown"),
        F.first("rack").over(g).alias("rack"), F.first("endpoints").over(g).alias("endpoints"),
        F.first("features").over(g).alias("features"), last_non_null("log_dirs", g).alias("log_dirs"),
        F.first("is_migrating_zk_broker").over(g).alias("is_migrating_zk_broker"),
        F.lit(False).alias("is_tombstone"))
    tombstones = applied.where(F.col("kind") == "unregister").select(
        *EVENT_COLUMNS, "broker_id", "kind", F.lit(True).alias("is_tombstone"))
    return BrokersResult(states.unionByName(tombstones, allowMissingColumns=True),
                         refused.unionByName(backwards))


def controller_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """Every RegisterControllerRecord replaces that controller's registration; an UnregisterControllerRecord
    (Kafka 4.4) removes it, whatever there is (``ClusterDelta`` does not check)."""
    registered = parsed(events, "RegisterControllerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.controllerId").alias("controller_id"),
        F.col("r.incarnationId").alias("incarnation_id"),
        F.coalesce("r.zkMigrationReady", F.lit(False)).alias("zk_migration_ready"),
        F.expr(ENDPOINTS).alias("endpoints"), F.expr(FEATURES).alias("features"),
        F.lit(False).alias("is_tombstone"))
    unregistered = parsed(events, "UnregisterControllerRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.controllerId").alias("controller_id"), F.lit(True).alias("is_tombstone"))
    return registered.unionByName(unregistered, allowMissingColumns=True)


def feature_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """FeatureLevelRecord sets a finalized feature level; level 0 removes the feature."""
    return parsed(events, "FeatureLevelRecord", shapes).select(
        *EVENT_COLUMNS, F.col("r.name").alias("feature"), F.col("r.featureLevel").alias("level"),
        (F.col("r.featureLevel") == 0).alias("is_tombstone"))
