"""From the stored log to typed, visible events: the input of every state fold.

Two things happen here, both as set-based DataFrame operations:
- **Visibility** (KIP-868, as Kafka's MetadataLoader applies it): a record inside a metadata
  transaction becomes visible at its EndTransactionRecord; an aborted transaction's records never
  do, nor do those of a transaction still open at the end of the log. Every kept record gets a
  ``visible_offset`` (and its append time), and records are ordered by ``(visible_offset, offset, seq)``
  (``seq`` only orders base events that share one offset: a snapshot's records, incremental seeds).
- **Typing**: each record type's fields become struct ``r``, shaped by the lake's Avro schema registry
  (``replay.core.shapes``): the stored Avro ``payload`` read with ``from_avro`` where spark-avro is there, else
  ``payload_json`` parsed with ``from_json`` into the struct type derived from the same schema. A tagged
  field absent from Kafka's JSON is null there and its Kafka default in the Avro payload: the folds read both
  the same way (``-2`` leaders, ``null`` arrays keep Kafka's meaning).

The log's ``secret_fingerprint`` rides along (null on a lake ingested before it existed): the folds of configs and
SCRAM credentials keep it in place of the secret the ingest redacted.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

from lakehouse.tables import SECRET_FINGERPRINT
from records.kafka_constants import ABORT, BEGIN, END
from records.vocabulary import Field, column_name, field
from replay.core.refusal_columns import reason_column
from replay.core.refusals import BEGIN_INSIDE_TRANSACTION, MARKER_WITHOUT_TRANSACTION
from replay.core.shapes import PAYLOAD_COLUMNS, RecordShapes

TXN_BUCKET = 1 << 16  # offsets per bucket of the transaction range join; transactions are short
# A transaction still open at the end of the log hides what follows its Begin; a real controller
# closes or aborts a transaction long before 4M further offsets, so that is as far as it reaches.
OPEN_TXN_BUCKETS = 64

# The record types the folds apply (their fields: ``replay.core.shapes``, from the Avro schemas).
STATE_TYPES: tuple[str, ...] = (
    "PartitionRecord", "PartitionChangeRecord", "TopicRecord", "RemoveTopicRecord", "ClearElrRecord",
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
    "BrokerRegistrationChangeRecord", "FeatureLevelRecord", "RegisterControllerRecord", "UnregisterControllerRecord",
    "ZkMigrationStateRecord", "ConfigRecord", "ClientQuotaRecord", "AccessControlEntryRecord",
    "RemoveAccessControlEntryRecord", "UserScramCredentialRecord", "RemoveUserScramCredentialRecord",
    "DelegationTokenRecord", "RemoveDelegationTokenRecord", "ProducerIdsRecord")
# Apply order inside one offset: 0 for log records; a snapshot's records (all at its end offset - 1) and
# an incremental replay's seeds carry their position here.
SEQ = "seq"
LOG_COLUMNS = ("cluster_id", "offset", "append_time_ms", "record_type")
BASE_COLUMNS = ("cluster_id", "offset", "visible_offset", "visible_time_ms", "record_type", *PAYLOAD_COLUMNS, SEQ,
                SECRET_FINGERPRINT)


def secret_fingerprint(rows: DataFrame) -> Column:
    """The rows' ``secret_fingerprint``; null where the table has no such column (a lake ingested before it)."""
    if SECRET_FINGERPRINT in rows.columns:
        return F.col(SECRET_FINGERPRINT)
    return F.lit(None).cast("string").alias(SECRET_FINGERPRINT)


def visible(log: DataFrame, shapes: RecordShapes) -> DataFrame:
    """The log's state records with ``visible_offset``/``visible_time_ms``; aborted and open-transaction
    records are dropped (they never became visible). ``shapes`` says which payload columns the typing reads."""
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
    # Only what the folds read: the log's other columns (lineage; the payload form the typing does not read)
    # would otherwise ride along into every checkpoint of the replay.
    state = log.where(F.col("record_type").isin(*STATE_TYPES)).select(
        *LOG_COLUMNS, *shapes.payload_columns(), secret_fingerprint(log)).withColumn(
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


def with_base(events: DataFrame, base: DataFrame | None, shapes: RecordShapes) -> DataFrame:
    """``events`` plus already-visible *base* events (a snapshot's records, the seeds of an incremental
    replay): rows with ``cluster_id, offset, visible_offset, visible_time_ms, record_type, schema_id,
    payload, payload_json, seq, secret_fingerprint`` (null where not known) that come before every log event of their
    cluster (``seq`` orders the rows of one offset). Both kinds have every column (``snapshot_events``, the seeds):
    asking the base's plan for its columns would cost a Spark request."""
    if base is None:
        return events
    base = base.select(*(c for c in BASE_COLUMNS if c not in PAYLOAD_COLUMNS), *shapes.payload_columns())
    return events.unionByName(base, allowMissingColumns=True)


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
        F.when(F.col("record_type") == BEGIN, reason_column(BEGIN_INSIDE_TRANSACTION))
        .otherwise(reason_column(MARKER_WITHOUT_TRANSACTION, record_type="record_type")).alias("reason"))


def parsed(events: DataFrame, record_type: str, shapes: RecordShapes) -> DataFrame:
    """Events of one record type with their Kafka fields as columns of struct ``r`` (``RecordShapes.typed``)."""
    return shapes.typed(events.where(F.col("record_type") == record_type), record_type)


# The element types of Kafka's arrays as the typed struct holds them (UUIDs as Kafka's text)
_SPARK_ELEMENTS = {"int32": "int", "uuid": "string", "string": "string"}


def kafka_field(record_type: str, name: str) -> Column:
    """Kafka field ``name`` of the typed struct ``r``: a KeyError here when Kafka's definition of ``record_type``
    has no such field (``records.vocabulary.field``)."""
    field(record_type, name)
    return F.col(f"r.{name}")


def kafka_default(record_type: str, name: str) -> Column:
    """The field with null (a tagged field absent from Kafka's JSON) read as Kafka's default for it."""
    definition = field(record_type, name)
    if definition.default is None:  # a nullable field: null is Kafka's default, and means something
        raise ValueError(f"{record_type}.{name} defaults to null: read it with kafka_field")
    if definition.type.startswith("[]"):
        fallback = F.array().cast(f"array<{_SPARK_ELEMENTS[definition.type[2:]]}>")
    else:
        fallback = F.lit(definition.default)
    return F.coalesce(kafka_field(record_type, name), fallback)


def kafka_columns(record_type: str, *names: str, defaults: bool = False) -> list[Column]:
    """Kafka fields of ``r`` as columns named by the vocabulary (``Field.column``); ``defaults``: null read as
    Kafka's default (:func:`kafka_default`)."""
    read = kafka_default if defaults else kafka_field
    return [read(record_type, name).alias(field(record_type, name).column) for name in names]


def struct_columns(record_type: str, name: str) -> Column:
    """An array of Kafka structs (``endPoints``, ``features``) as the tables hold it: each element's fields named
    by the rule (``securityProtocol`` → ``security_protocol``), in Kafka's order."""
    nested = field(record_type, name).nested
    return F.transform(kafka_field(record_type, name), lambda element: F.struct(
        *[element[kafka].alias(column_name(kafka)) for kafka in nested])).alias(field(record_type, name).column)


def kafka_struct(record_type: str, *names: str) -> Column:
    """Stored table columns back as the record's Kafka fields (the inverse of :func:`kafka_columns` and
    :func:`struct_columns`): the payload of a record rebuilt from a table row."""
    def kafka_value(definition: Field) -> Column:
        if not definition.nested:
            return F.col(definition.column)
        return F.transform(F.col(definition.column), lambda element: F.struct(
            *[element[column_name(kafka)].alias(kafka) for kafka in definition.nested]))

    return F.struct(*[kafka_value(field(record_type, name)).alias(name) for name in names])


def ordered(*keys: str) -> WindowSpec:
    """Window over an entity's events in the order Kafka applies them."""
    return Window.partitionBy(*keys).orderBy("visible_offset", "offset", SEQ)


def running(*keys: str) -> WindowSpec:
    return ordered(*keys).rowsBetween(Window.unboundedPreceding, Window.currentRow)


def last_non_null(column: str | Column, window: WindowSpec) -> Column:
    return F.last(column, ignorenulls=True).over(window)
