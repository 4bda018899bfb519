"""From the stored log to typed, visible events: the input of every state fold.

Two things happen here, both as set-based DataFrame operations:
- **Visibility** (KIP-868, as Kafka's MetadataLoader applies it): a record inside a metadata
  transaction becomes visible at its EndTransactionRecord; an aborted transaction's records never
  do, nor do those of a transaction still open at the end of the log. Every kept record gets a
  ``visible_offset`` (and its append time), and records are ordered by ``(visible_offset, offset, seq)``
  (``seq`` only orders base events that share one offset: a snapshot's records, incremental seeds).
- **Typing**: the Kafka-JSON ``payload_json`` of each record type is parsed natively with
  ``from_json``; fields Kafka prints only when they differ from their default (tagged fields) get
  that default back, so ``-2`` leaders and ``null`` arrays keep Kafka's meaning.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

BEGIN, END, ABORT = "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"
TXN_BUCKET = 1 << 16  # offsets per bucket of the transaction range join; transactions are short
# A transaction still open at the end of the log hides what follows its Begin; a real controller
# closes or aborts a transaction long before 4M further offsets, so that is as far as it reaches.
OPEN_TXN_BUCKETS = 64

ENDPOINT = "ARRAY<STRUCT<name: STRING, host: STRING, port: INT, securityProtocol: INT>>"
FEATURES = "ARRAY<STRUCT<name: STRING, minSupportedVersion: INT, maxSupportedVersion: INT>>"
SCHEMAS: dict[str, str] = {
    "PartitionRecord": "STRUCT<partitionId: INT, topicId: STRING, replicas: ARRAY<INT>, isr: ARRAY<INT>, "
                       "removingReplicas: ARRAY<INT>, addingReplicas: ARRAY<INT>, leader: INT, "
                       "leaderRecoveryState: INT, leaderEpoch: INT, partitionEpoch: INT, "
                       "directories: ARRAY<STRING>, eligibleLeaderReplicas: ARRAY<INT>, lastKnownElr: ARRAY<INT>>",
    "PartitionChangeRecord": "STRUCT<partitionId: INT, topicId: STRING, isr: ARRAY<INT>, leader: INT, "
                             "replicas: ARRAY<INT>, removingReplicas: ARRAY<INT>, addingReplicas: ARRAY<INT>, "
                             "leaderRecoveryState: INT, directories: ARRAY<STRING>, "
                             "eligibleLeaderReplicas: ARRAY<INT>, lastKnownElr: ARRAY<INT>>",
    "TopicRecord": "STRUCT<name: STRING, topicId: STRING>",
    "RemoveTopicRecord": "STRUCT<topicId: STRING>",
    "RegisterBrokerRecord": f"STRUCT<brokerId: INT, isMigratingZkBroker: BOOLEAN, incarnationId: STRING, "
                            f"brokerEpoch: BIGINT, endPoints: {ENDPOINT}, features: {FEATURES}, rack: STRING, "
                            f"fenced: BOOLEAN, inControlledShutdown: BOOLEAN, logDirs: ARRAY<STRING>>",
    "UnregisterBrokerRecord": "STRUCT<brokerId: INT, brokerEpoch: BIGINT>",
    "FenceBrokerRecord": "STRUCT<id: INT, epoch: BIGINT>",
    "UnfenceBrokerRecord": "STRUCT<id: INT, epoch: BIGINT>",
    "BrokerRegistrationChangeRecord": "STRUCT<brokerId: INT, brokerEpoch: BIGINT, fenced: INT, "
                                      "inControlledShutdown: INT, logDirs: ARRAY<STRING>>",
    "FeatureLevelRecord": "STRUCT<name: STRING, featureLevel: INT>",
    "RegisterControllerRecord": f"STRUCT<controllerId: INT, incarnationId: STRING, zkMigrationReady: BOOLEAN, "
                                f"endPoints: {ENDPOINT}, features: {FEATURES}>",
}
STATE_TYPES = tuple(SCHEMAS)
# Apply order inside one offset: 0 for log records; a snapshot's records (all at its end offset - 1) and
# an incremental replay's seeds carry their position here.
SEQ = "seq"
LOG_COLUMNS = ("cluster_id", "offset", "append_time_ms", "record_type", "payload_json")
BASE_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", "payload_json", SEQ)

# Kafka's DirectoryId constants (since apache/kafka#14858, before 3.7.0), as Kafka prints Uuids.
MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0)
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1)


def visible(log: DataFrame) -> DataFrame:
    """The log's state records with ``visible_offset``/``visible_time_ms``; aborted and open-transaction
    records are dropped (they never became visible)."""
    markers = transaction_markers(log).where(F.col("effective"))
    by_offset = Window.partitionBy("cluster_id").orderBy("offset")  # transaction markers only: a handful
    txns = (markers
            .withColumn("close_offset", F.lead("offset").over(by_offset))
            .withColumn("close_type", F.lead("record_type").over(by_offset))
            .withColumn("close_time_ms", F.lead("append_time_ms").over(by_offset))
            .where(F.col("record_type") == BEGIN)
            .select("cluster_id", F.col("offset").alias("begin_offset"),
                    F.when(F.col("close_type").isin(END, ABORT), F.col("close_offset")).alias("close_offset"),
                    F.when(F.col("close_type").isin(END, ABORT), F.col("close_type")).alias("close_type"),
                    F.when(F.col("close_type").isin(END, ABORT), F.col("close_time_ms")).alias("close_time_ms")))
    begin_bucket = (F.col("begin_offset") / TXN_BUCKET).cast("long")
    end_bucket = F.coalesce((F.col("close_offset") / TXN_BUCKET).cast("long"), begin_bucket + OPEN_TXN_BUCKETS)
    spans = txns.withColumn("bucket", F.explode(F.sequence(begin_bucket, end_bucket)))
    # Only what the folds read: the log's other columns (Avro payload, lineage) would otherwise ride along
    # into every checkpoint of the replay.
    state = log.where(F.col("record_type").isin(*STATE_TYPES)).select(*LOG_COLUMNS).withColumn(
        "bucket", (F.col("offset") / TXN_BUCKET).cast("long"))
    inside = ((F.col("s.offset") > F.col("t.begin_offset"))
              & (F.col("t.close_offset").isNull() | (F.col("s.offset") < F.col("t.close_offset"))))
    same_bucket = (F.col("s.cluster_id") == F.col("t.cluster_id")) & (F.col("s.bucket") == F.col("t.bucket"))
    joined = state.alias("s").join(F.broadcast(spans.alias("t")), same_bucket & inside, "left")
    kept = joined.where(F.col("t.begin_offset").isNull() | (F.col("t.close_type") == END))
    return kept.select(
        "s.*",
        F.coalesce(F.col("t.close_offset"), F.col("s.offset")).alias("visible_offset"),
        F.coalesce(F.col("t.close_time_ms"), F.col("s.append_time_ms")).alias("visible_time_ms"),
        F.lit(0).cast("long").alias(SEQ),
    ).drop("bucket")


def with_base(events: DataFrame, base: DataFrame | None) -> DataFrame:
    """``events`` plus already-visible *base* events (a snapshot's records, the seeds of an incremental
    replay): rows with ``cluster_id, offset, visible_offset, visible_time_ms, record_type, payload_json,
    seq`` that come before every log event of their cluster (``seq`` orders the rows of one offset)."""
    if base is None:
        return events
    return events.unionByName(base.select(*BASE_COLUMNS), allowMissingColumns=True)


def transaction_markers(log: DataFrame) -> DataFrame:
    """Begin/End/Abort records and whether each takes effect: like Kafka's MetadataBatchLoader, a
    Begin inside an open transaction and an End or Abort outside one are faults that change nothing."""
    markers = log.where(F.col("record_type").isin(BEGIN, END, ABORT)).select(
        "cluster_id", "offset", "record_type", "append_time_ms")
    previous = F.lag("record_type").over(Window.partitionBy("cluster_id").orderBy("offset"))
    # With those faults ignored, markers alternate Begin, close, Begin, close...: a Begin takes effect
    # when the previous marker is not a Begin; a close when it is.
    return markers.withColumn("effective", F.when(
        F.col("record_type") == BEGIN, F.coalesce(previous != BEGIN, F.lit(True))
    ).otherwise(F.coalesce(previous == BEGIN, F.lit(False))))


def transaction_anomalies(log: DataFrame) -> DataFrame:
    return transaction_markers(log).where(~F.col("effective")).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        F.when(F.col("record_type") == BEGIN, F.lit("BeginTransactionRecord inside an open transaction"))
        .otherwise(F.concat(F.col("record_type"), F.lit(" without an open transaction"))).alias("reason"))


def parsed(events: DataFrame, record_type: str) -> DataFrame:
    """Events of one record type with their Kafka fields as columns of struct ``r``."""
    return (events.where(F.col("record_type") == record_type)
            .withColumn("r", F.from_json("payload_json", SCHEMAS[record_type])))


def ordered(*keys: str) -> Window:
    """Window over an entity's events in the order Kafka applies them."""
    return Window.partitionBy(*keys).orderBy("visible_offset", "offset", SEQ)


def running(*keys: str) -> Window:
    return ordered(*keys).rowsBetween(Window.unboundedPreceding, Window.currentRow)


def last_non_null(column: str | Column, window: Window) -> Column:
    return F.last(column, ignorenulls=True).over(window)
