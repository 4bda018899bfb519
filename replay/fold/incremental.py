"""Incremental replay: fold only the records after the last checkpoint into the stored history tables.

The checkpoint of a cluster (``replay_checkpoints.last_offset``) is a *safe point* C: no metadata
transaction is open at C (:func:`safe_offsets` takes the offset before a Begin still open at the end of the
log), so the records after C start in a clean visibility state. An incremental run:

1. reads only ``metadata_log`` rows with offset > C (``Lake.read_offsets``: file statistics skip the rest);
2. finds the entities those records name (topics, partitions, brokers, controllers, features) and *seeds*
   each with its open version from the stored history tables: a synthetic record visible at C that
   rebuilds exactly that state (a PartitionRecord with the leader, both epochs, every array, recovery state
   and directories, so generations, epoch counting and directory rules continue unchanged; a
   RegisterBrokerRecord with epoch, fencing, controlled shutdown and log dirs; a broker whose last version
   is closed gets a register + unregister pair so that its last registered epoch is still checked). The image's
   small parts (configs, client quotas, ACLs, SCRAM credentials, delegation tokens, producer ids) are seeded
   whole: when a record a part is folded from came, every open version of a replayed cluster, as the record
   that puts it, with its secret's fingerprint (``image_seeds``, from each part's entry in
   ``replay.core.image_parts``: its record types, seed fields and fingerprint column);
3. runs the same window fold (``replay.fold.engine.replay``) on seeds + new records, and splits its output:
   versions starting after C are new; the version of a seed (starting at C) carries the new ``valid_to``
   of the stored open version it stands for (a seed never adds a version: it only closes one, or, through
   ``collapse``, extends it; its anomalies are dropped with everything at or before C);
4. recomputes ``replica_history`` from C on for the partitions it touched and the partitions with a
   replica on a touched broker, from their partition and broker intervals live at or after C.

Only the new records and the seeds go through the window fold: the compute is incremental. So is the storage
of the large tables: ``stored`` holds only the files of their open versions (``replay.store.layout``), which are
replaced by (stored open versions not touched) + (those of touched entities with their new ``valid_to``) +
(new versions); the small tables are rewritten whole, when a record they are folded from came (``FOLDED_FROM``;
``replay_anomalies`` when there are new anomalies). Either way the rows are the ones a full replay writes.

Not modelled: a broker registered and unregistered inside one transaction before C leaves no version, so
its registered epoch cannot be seeded (the "epoch went backwards" check of a later re-registration may
then differ from a full replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakehouse.concurrent_jobs import run_concurrently
from lakehouse.spark_settings import few_partitions
from lakehouse.tables import (
    BROKER_HISTORY,
    CONFIG_HISTORY,
    CONTROLLER_HISTORY,
    FEATURE_HISTORY,
    PARTITION_HISTORY,
    PARTITION_KEY,
    REPLAY_ANOMALIES,
    REPLICA_HISTORY,
    SECRET_FINGERPRINT,
    TOPIC_HISTORY,
)
from records.kafka_constants import BEGIN, ZK_MIGRATION_STATE_FEATURE
from records.vocabulary import field
from replay.core.events import BASE_COLUMNS, kafka_struct, transaction_markers
from replay.core.history import lives_after
from replay.core.image_parts import FOLDED_FROM as PARTS_FOLDED_FROM
from replay.core.image_parts import IMAGE_PARTS, WHOLE_PARTS
from replay.core.safe_points import SAFE_POINT, SafePoints
from replay.core.shapes import RecordShapes, record_shapes
from replay.fold.brokers import FEATURE, ZK_MIGRATION
from replay.fold.engine import PARTITION_TYPES, TABLE_KEYS, ReplayResult, replay
from replay.fold.partitions import CLEAR_ELR
from replay.fold.replicas import replica_history

REPLICAS = REPLICA_HISTORY
ANOMALIES = REPLAY_ANOMALIES
# seq of the seeds at offset C: topics before the partitions that need them live, register before unregister
_TOPIC_SEQ, _SEED_SEQ, _GHOST_UNREGISTER_SEQ = 0, 1, 2


def safe_offsets(log: DataFrame, last: dict[str, int] | None = None) -> dict[str, int]:
    """Cluster id → the last offset at which no metadata transaction is open: the offset before a Begin
    still open at the end of the log, else the last offset (``last``: cluster → last offset, if known)."""
    if last is None:
        last = {r["cluster_id"]: int(r["last"]) for r in
                log.groupBy("cluster_id").agg(F.max("offset").alias("last")).collect()}
    markers = transaction_markers(log).where(F.col("effective"))
    latest_first = Window.partitionBy("cluster_id").orderBy(F.col("offset").desc())
    open_begins = (markers.withColumn("_rank", F.row_number().over(latest_first)).where(
        (F.col("_rank") == 1) & (F.col("record_type") == BEGIN)).select("cluster_id", "offset").collect())
    safe = dict(last)
    for row in open_begins:
        safe[row["cluster_id"]] = int(row["offset"]) - 1
    return safe


# --- what the new records touch ------------------------------------------------------------------

# every field that names an entity, in any record type that names one (each type has a subset of them)
_NAMES = ("topicId", "partitionId", "brokerId", "id", "controllerId", "name", "topicName")
_TOPIC_TYPES = ("TopicRecord", "RemoveTopicRecord")
_BROKER_TYPES = ("RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
                 "BrokerRegistrationChangeRecord")
_CONTROLLER_TYPES = IMAGE_PARTS["controllers"].folded_from
_FEATURE_TYPES = IMAGE_PARTS["features"].folded_from
# the tables an increment leaves as stored without a record of the types they are folded from (the image parts,
# ``replay.core.image_parts``: every open version of the parts folded on their own is seeded when one came)
FOLDED_FROM = {TOPIC_HISTORY: _TOPIC_TYPES, BROKER_HISTORY: _BROKER_TYPES, **PARTS_FOLDED_FROM}


def record_types(log: DataFrame) -> set[str]:
    """The record types in ``log`` (the new records: which tables they can change)."""
    return {row["record_type"] for row in log.select("record_type").distinct().collect()}


def left_as_stored(present: set[str]) -> set[str]:
    """The tables of ``FOLDED_FROM`` no record of ``present`` (the new records' types) is folded into: nothing is stored
    after C, so their rows are exactly the stored ones, neither folded nor written again."""
    return {name for name, kinds in FOLDED_FROM.items() if not present & set(kinds)}


@dataclass(frozen=True)
class Touched:
    topics: DataFrame  # cluster_id, topic_id
    partitions: DataFrame  # cluster_id, topic_id, partition_id (named; plus every partition of a touched topic)
    brokers: DataFrame  # cluster_id, broker_id
    controllers: DataFrame  # cluster_id, controller_id
    features: DataFrame  # cluster_id, feature


def touched(log: DataFrame, stored_partitions_open: DataFrame, shapes: RecordShapes,
            stored_topics_open: DataFrame | None = None) -> Touched:
    """The entities the new records name. A ClearElrRecord names a topic (every topic when its name is empty):
    it touches the stored open topics it names and their open partitions that have an ELR or a last known ELR
    (the only ones it changes), given ``stored_topics_open`` and the ELR columns of ``stored_partitions_open``."""
    # One read of the records that name an entity (only their naming fields decoded), cut once: every set below
    # reads that small checkpoint.
    kinds = (*PARTITION_TYPES, *_TOPIC_TYPES, CLEAR_ELR, *_BROKER_TYPES, *_CONTROLLER_TYPES, *_FEATURE_TYPES)
    records = log.where(F.col("record_type").isin(*kinds)).select(
        "cluster_id", "record_type", *shapes.payload_columns())
    names = (shapes.named(records, kinds, _NAMES).select("cluster_id", "record_type", *_NAMES)
             .localCheckpoint(eager=True))

    def ids(types: tuple[str, ...], **columns: Column) -> DataFrame:
        rows = names.where(F.col("record_type").isin(*types)).select(
            "cluster_id", *[column.alias(alias) for alias, column in columns.items()])
        return rows.where(F.col(next(iter(columns))).isNotNull()).distinct()

    named = ids(PARTITION_TYPES, topic_id=F.col("topicId"), partition_id=F.col("partitionId"))
    topic_level = ids(_TOPIC_TYPES, topic_id=F.col("topicId"))
    topics = topic_level.unionByName(named.select("cluster_id", "topic_id")).distinct()
    of_topics = stored_partitions_open.join(F.broadcast(topic_level), ["cluster_id", "topic_id"]).select(
        "cluster_id", "topic_id", "partition_id")
    brokers = ids(_BROKER_TYPES, broker_id=F.coalesce("brokerId", "id"))
    controllers = ids(_CONTROLLER_TYPES, controller_id=F.col("controllerId"))
    # a ZkMigrationStateRecord names the feature row of the migration state
    features = ids((FEATURE,), feature=F.col("name")).unionByName(
        ids((ZK_MIGRATION,), feature=F.lit(ZK_MIGRATION_STATE_FEATURE))).distinct()
    partitions = named.unionByName(of_topics)
    if stored_topics_open is not None:
        clears = names.where(F.col("record_type") == CLEAR_ELR).select(
            "cluster_id", F.coalesce("topicName", F.lit("")).alias("clear_name")).distinct()
        topics_open = stored_topics_open.alias("t")
        wanted = (F.col("t.cluster_id") == F.col("k.cluster_id")) & (
            (F.col("k.clear_name") == "") | (F.col("k.clear_name") == F.col("t.name")))
        cleared = topics_open.join(F.broadcast(clears.alias("k")), wanted).select(
            "t.cluster_id", "t.topic_id", "k.clear_name")
        with_elr = stored_partitions_open.where(
            (F.size(F.coalesce("eligible_leader_replicas", F.array())) > 0)
            | (F.size(F.coalesce("last_known_elr", F.array())) > 0)).select("cluster_id", "topic_id", "partition_id")
        elr_partitions = with_elr.join(cleared.select("cluster_id", "topic_id").distinct(), ["cluster_id", "topic_id"])
        # a named topic is seeded even without an ELR to clear: the record must find it live
        topics = topics.unionByName(cleared.where(F.col("clear_name") != "").select("cluster_id", "topic_id")) \
            .unionByName(elr_partitions.select("cluster_id", "topic_id")).distinct()
        partitions = partitions.unionByName(elr_partitions)
    return Touched(topics, partitions.distinct(), brokers, controllers, features)


# --- seeds ---------------------------------------------------------------------------------------

def _seed(rows: DataFrame, record_type: str, payload: Column, seq: int, fingerprint: str | None = None
          ) -> DataFrame:
    """Base events at the cluster's checkpoint offset ``_c`` carrying ``payload`` as Kafka JSON (no Avro payload:
    the typing parses it with ``from_json`` into the same struct as the stored records); ``fingerprint``: the
    column that holds the stored version's secret fingerprint (the seed's ``secret_fingerprint``)."""
    return rows.select(
        "cluster_id", F.col(SAFE_POINT).alias("offset"), F.col(SAFE_POINT).alias("visible_offset"),
        F.lit(None).cast("long").alias("visible_time_ms"), F.lit(record_type).alias("record_type"),
        F.lit(None).cast("long").alias("schema_id"), F.lit(None).cast("binary").alias("payload"),
        F.to_json(payload).alias("payload_json"), F.lit(seq).cast("long").alias("seq"),
        (F.col(fingerprint) if fingerprint else F.lit(None).cast("string")).alias(SECRET_FINGERPRINT),
    ).select(*BASE_COLUMNS)


def _open(stored: DataFrame, checkpoints: SafePoints, keys: DataFrame, key: tuple[str, ...]) -> DataFrame:
    """Open versions of the touched entities, with their cluster's checkpoint offset ``_c``."""
    return checkpoints.join(stored.where(F.col("valid_to_offset").isNull())).join(F.broadcast(keys),
                                                                                  ["cluster_id", *key])


def seeds(stored: dict[str, DataFrame], checkpoints: SafePoints, entities: Touched) -> DataFrame:
    """One synthetic record per touched entity that rebuilds its stored open version at offset C."""
    topics = _seed(_open(stored[TOPIC_HISTORY], checkpoints, entities.topics, ("topic_id",)), "TopicRecord",
                   kafka_struct("TopicRecord", "name", "topicId"), _TOPIC_SEQ)
    partitions = _seed(
        _open(stored[PARTITION_HISTORY], checkpoints, entities.partitions, ("topic_id", "partition_id")),
        "PartitionRecord", kafka_struct(
            "PartitionRecord", "partitionId", "topicId", "replicas", "isr", "removingReplicas", "addingReplicas",
            "leader", "leaderRecoveryState", "leaderEpoch", "partitionEpoch", "directories",
            "eligibleLeaderReplicas", "lastKnownElr"), _SEED_SEQ)
    # A broker's latest version: open → re-register it as it is; closed (unregistered) → register and
    # unregister it again, so a later record still sees "unknown broker" and its last registered epoch.
    latest = (checkpoints.join(stored[BROKER_HISTORY]).join(F.broadcast(entities.brokers), ["cluster_id", "broker_id"])
        .withColumn("_rank", F.row_number().over(
            Window.partitionBy("cluster_id", "broker_id").orderBy(F.col("valid_from_offset").desc())))
        .where(F.col("_rank") == 1))
    registers = _seed(latest, "RegisterBrokerRecord", kafka_struct(
        "RegisterBrokerRecord", "brokerId", "isMigratingZkBroker", "incarnationId", "brokerEpoch", "endPoints",
        "features", "rack", "fenced", "inControlledShutdown", "logDirs"), _SEED_SEQ)
    unregisters = _seed(latest.where(F.col("valid_to_offset").isNotNull()), "UnregisterBrokerRecord",
                        kafka_struct("UnregisterBrokerRecord", "brokerId", "brokerEpoch"), _GHOST_UNREGISTER_SEQ)
    controllers = _seed(
        _open(stored[CONTROLLER_HISTORY], checkpoints, entities.controllers, ("controller_id",)),
        "RegisterControllerRecord", kafka_struct(
            "RegisterControllerRecord", "controllerId", "incarnationId", "zkMigrationReady", "endPoints",
            "features"), _SEED_SEQ)
    open_features = _open(stored[FEATURE_HISTORY], checkpoints, entities.features, ("feature",))
    is_migration = F.col("feature") == ZK_MIGRATION_STATE_FEATURE
    features = _seed(open_features.where(~is_migration), FEATURE,
                     kafka_struct("FeatureLevelRecord", "name", "featureLevel"), _SEED_SEQ)
    state = field(ZK_MIGRATION, "zkMigrationState").column
    migration = _seed(open_features.where(is_migration).withColumn(state, F.col(field(FEATURE, "featureLevel").column)),
                      ZK_MIGRATION, kafka_struct("ZkMigrationStateRecord", "zkMigrationState"), _SEED_SEQ)
    return (topics.unionByName(partitions).unionByName(registers).unionByName(unregisters)
            .unionByName(controllers).unionByName(features).unionByName(migration))


def image_seeds(stored: dict[str, DataFrame], checkpoints: SafePoints, present: set[str]) -> DataFrame | None:
    """For each image part a record of ``present`` (the new records' types) is folded into: every open version of
    every replayed cluster, as the record that puts it (the parts are small; a config, ACL or credential the new
    records do not name keeps its version, one they name is closed or continued as the full replay does)."""
    seeded = [_seed(checkpoints.join(stored[part.table].where(F.col("valid_to_offset").isNull())), part.puts,
                    kafka_struct(part.puts, *part.seed), _SEED_SEQ, part.fingerprint)
              for part in WHOLE_PARTS if part.seed is not None and present & set(part.folded_from)]
    if not seeded:
        return None
    out = seeded[0]
    for frame in seeded[1:]:
        out = out.unionByName(frame)
    return out


# --- merging the new versions into the stored tables ---------------------------------------------

def _merge(stored: DataFrame, result: DataFrame, checkpoints: SafePoints, key: tuple[str, ...]) -> DataFrame:
    """(stored rows) with the open versions the seeds stand for closed/extended, + (versions after C)."""
    columns = stored.columns
    result = checkpoints.join(result)
    new = result.where(F.col("valid_from_offset") > F.col(SAFE_POINT)).select(*columns)
    closes = result.where(F.col("valid_from_offset") == F.col(SAFE_POINT)).select(
        *key, F.lit(True).alias("_seeded"), F.col("valid_to_offset").alias("_to"),
        F.col("valid_to_time_ms").alias("_to_time"))
    rows = checkpoints.join(stored, "left")
    # nothing of a replayed cluster starts after its safe point (an open transaction is not visible)
    rows = rows.where(F.col(SAFE_POINT).isNull() | (F.col("valid_from_offset") <= F.col(SAFE_POINT)))
    rows = rows.join(closes, list(key), "left")
    # evaluated once, before either column is replaced (the offset's new value must not hide the reopening)
    rows = rows.withColumn("_reopened", F.coalesce(F.col("_seeded"), F.lit(False)) & F.col("valid_to_offset").isNull())
    reopened = F.col("_reopened")
    kept = rows.withColumn("valid_to_offset", F.when(reopened, F.col("_to")).otherwise(F.col("valid_to_offset"))) \
        .withColumn("valid_to_time_ms", F.when(reopened, F.col("_to_time")).otherwise(F.col("valid_to_time_ms")))
    return kept.select(*columns).unionByName(new)


def _live_from(history: DataFrame, checkpoints: SafePoints) -> DataFrame:
    """Versions live at or after the cluster's C, clipped to start no earlier than C."""
    live = checkpoints.join(history)
    live = live.where(lives_after(F.col(SAFE_POINT)))
    clipped = F.col("valid_from_offset") < F.col(SAFE_POINT)
    return (live.withColumn("valid_from_time_ms", F.when(clipped, F.lit(None).cast("long"))
                         .otherwise(F.col("valid_from_time_ms")))
            .withColumn("valid_from_offset", F.greatest("valid_from_offset", SAFE_POINT)))


def _replicas(stored: DataFrame, partitions: DataFrame, brokers: DataFrame, result_partitions: DataFrame,
              checkpoints: SafePoints, entities: Touched) -> DataFrame:
    """``replica_history`` with the pairs of touched partitions and touched brokers recomputed from C on."""
    p_live = _live_from(partitions, checkpoints)
    on_touched_broker = (p_live.select(*PARTITION_KEY, F.explode("replicas").alias("broker_id"))
                         .join(entities.brokers, ["cluster_id", "broker_id"]).select(*PARTITION_KEY))
    affected = result_partitions.select(*PARTITION_KEY).unionByName(on_touched_broker).distinct()
    # The partitions' versions are read twice (for themselves and for the brokers they name): cut once.
    p_in = p_live.join(affected, list(PARTITION_KEY)).drop(SAFE_POINT).localCheckpoint(eager=True)
    b_in = (_live_from(brokers, checkpoints).drop(SAFE_POINT)
            .join(p_in.select("cluster_id", F.explode("replicas").alias("broker_id")).distinct(),
                  ["cluster_id", "broker_id"]))
    # read twice by the merge (the versions it closes, the versions it adds): computed once
    recomputed = replica_history(p_in, b_in).localCheckpoint(eager=True)
    return _merge(stored, recomputed, checkpoints, TABLE_KEYS[REPLICAS])


@dataclass(frozen=True)
class IncrementalResult:
    tables: dict[str, DataFrame]  # every history table, complete (stored rows merged with the new ones)
    anomalies: DataFrame
    unchanged: frozenset[str]  # tables (and replay_anomalies) whose rows are the stored ones: nothing to write


def incremental_replay(spark: SparkSession, new_log: DataFrame, checkpoints: dict[str, int],
                       stored: dict[str, DataFrame], stored_anomalies: DataFrame,
                       shapes: RecordShapes | None = None) -> IncrementalResult:
    """Fold ``new_log`` (records after each cluster's checkpoint offset C in ``checkpoints``) into the
    ``stored`` history tables. Clusters not in ``checkpoints`` keep their stored rows as they are. ``shapes``:
    how records are typed (``replay.core.shapes``), by default the shipped schemas."""
    if shapes is None:
        shapes = record_shapes(spark)
    cps = SafePoints(checkpoints)
    open_partitions = stored[PARTITION_HISTORY].where(F.col("valid_to_offset").isNull()).select(
        "cluster_id", "topic_id", "partition_id", "eligible_leader_replicas", "last_known_elr")
    open_topics = stored[TOPIC_HISTORY].where(F.col("valid_to_offset").isNull()).select(
        "cluster_id", "topic_id", "name")
    entities = touched(new_log, open_partitions, shapes, open_topics)
    present = record_types(new_log)
    base = seeds(stored, cps, entities)
    parts = image_seeds(stored, cps, present)
    # without new rows (anomalies; records a small table is folded from) the merged rows are exactly the stored ones
    unchanged = left_as_stored(present)
    result: ReplayResult = replay(new_log, base if parts is None else base.unionByName(parts), shapes,
                                  parts_wanted=set(TABLE_KEYS) - unchanged)
    # The fold's plan is deep: materialise its (small) output once, so the merges below and the replica
    # recomputation do not re-plan and re-run it for every use.
    # replica_history is recomputed below from the merged tables: the fold's own is never computed.
    folding = {name: df for name, df in result.tables.items() if name != REPLICAS and name not in unchanged}
    # each a small job whose time is mostly fixed latency: at once (``lakehouse.concurrent_jobs``)
    folded = run_concurrently(spark, {name: partial(df.localCheckpoint, eager=True) for name, df in folding.items()})
    tables: dict[str, DataFrame] = {name: stored[name] for name in unchanged}
    for name, key in TABLE_KEYS.items():
        if name != REPLICAS and name not in unchanged:
            tables[name] = _merge(stored[name], folded[name], cps, key)
    # read by the replica recomputation (partitions, brokers) and by the derived tables' refresh, which runs as they
    # are written (``replay.store.runs``; under its plan the merged configs' would be deeper than Spark Connect's
    # messages allow): computed once
    merged = (PARTITION_HISTORY, BROKER_HISTORY, CONFIG_HISTORY)
    tables |= run_concurrently(spark, {name: partial(tables[name].localCheckpoint, eager=True) for name in merged})
    # the replicas (written, and read by the derived tables' refresh as it is written: ``replay.store.runs``) and the
    # new anomalies, each computed once, at once
    done = run_concurrently(spark, {
        REPLICAS: lambda: _replicas(stored[REPLICAS], tables[PARTITION_HISTORY], tables[BROKER_HISTORY],
                                    folded[PARTITION_HISTORY], cps, entities).localCheckpoint(eager=True),
        ANOMALIES: lambda: few_partitions(cps.join(result.anomalies).where(
            F.col("offset") > F.col(SAFE_POINT)).drop(SAFE_POINT)).localCheckpoint(eager=True)})
    tables[REPLICAS], new_anomalies = done[REPLICAS], done[ANOMALIES]
    old = cps.join(stored_anomalies, "left").where(
        F.col(SAFE_POINT).isNull() | (F.col("offset") <= F.col(SAFE_POINT))).drop(SAFE_POINT)
    anomalies = old.unionByName(new_anomalies.select(*old.columns))
    if new_anomalies.isEmpty():
        unchanged.add(ANOMALIES)
    return IncrementalResult(tables, anomalies, frozenset(unchanged))


__all__ = [
    "FOLDED_FROM",
    "IncrementalResult",
    "Touched",
    "incremental_replay",
    "left_as_stored",
    "record_types",
    "safe_offsets",
    "seeds",
    "touched",
]
