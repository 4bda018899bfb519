"""Configs: Kafka's ``ConfigurationsDelta`` as window functions.

A ConfigRecord sets one key of one resource ``(resourceType, resourceName)``; a null value deletes the key
(``ConfigurationDelta.replay``). The resource is Kafka's ``ConfigResource``: ``Type.forId`` reads a type id it does
not know as UNKNOWN, so such records share the (UNKNOWN, name) resource. A resource whose last key is deleted
disappears (``ConfigurationsDelta.apply`` drops an empty ``ConfigurationImage``): here it has no open version left.
BROKER with an empty name is the cluster-wide default broker config, an ordinary resource to the fold.

A RemoveTopicRecord that Kafka applies deletes every config of the topic's *name* (``MetadataDelta`` hands the name
``TopicsDelta`` removed to ``ConfigurationsDelta.replay(RemoveTopicRecord, topicName)``, which ``deleteAll``s the
TOPIC resource): a topic re-created under the same name starts with none. A refused removal (unknown topic id)
deletes nothing: Kafka throws before it reaches the configs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import SECRET_FINGERPRINT
from records.kafka_constants import CONFIG_RESOURCE_TOPIC, CONFIG_RESOURCE_TYPES, CONFIG_RESOURCE_UNKNOWN
from replay.core.events import kafka_columns, kafka_field, parsed, running
from replay.core.image_parts import IMAGE_PARTS
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

CONFIG = IMAGE_PARTS["configs"].puts


def resource_type(type_id: Column) -> Column:
    """``ConfigResource.Type.forId``: the id of a type Kafka knows, else UNKNOWN's."""
    return F.when(type_id.isin(*CONFIG_RESOURCE_TYPES), type_id).otherwise(F.lit(CONFIG_RESOURCE_UNKNOWN)).cast("int")


def config_states(events: DataFrame, shapes: RecordShapes, topic_events: DataFrame) -> DataFrame:
    """One row per config change Kafka applies: a set (``value``, and the fingerprint of the secret the ingest
    redacted from it) or a deletion (``is_tombstone``). ``topic_events``: the topic creations and removals Kafka
    applies (``replay.fold.partitions.topic_events``), whose removals delete their topic's configs."""
    records = parsed(events, CONFIG, shapes).select(
        *EVENT_COLUMNS, resource_type(kafka_field(CONFIG, "resourceType")).alias("resource_type"),
        *kafka_columns(CONFIG, "resourceName", "name", "value"),
        F.col(SECRET_FINGERPRINT).alias("value_fingerprint"),
        kafka_field(CONFIG, "value").isNull().alias("is_tombstone"))
    # The name each removed topic had: its last creation's (a removal applies only to a live topic).
    removals = (topic_events
                .withColumn("topic_name", F.last("name", ignorenulls=True).over(running("cluster_id", "topic_id")))
                .where(F.col("kind") == "remove")
                .select(*EVENT_COLUMNS, F.col("topic_name").alias("resource_name")))
    # deleteAll: every key the topic's resource ever had gets a deletion at the removal (one of a key that is not
    # live then changes nothing).
    topic_keys = records.where(F.col("resource_type") == CONFIG_RESOURCE_TOPIC).select(
        "cluster_id", "resource_name", "name").distinct()
    deletions = removals.join(topic_keys, ["cluster_id", "resource_name"]).select(
        *EVENT_COLUMNS, F.lit(CONFIG_RESOURCE_TOPIC).alias("resource_type"), "resource_name", "name",
        F.lit(True).alias("is_tombstone"))
    return records.unionByName(deletions, allowMissingColumns=True)
