"""Client quotas: Kafka's ``ClientQuotasDelta`` as window functions.

A ClientQuotaRecord sets (or, with ``remove``, deletes) one quota key of one entity (``ClientQuotaDelta.replay``).
The entity is Kafka's ``ClientQuotaEntity``: ``ClientQuotaImage.dataToEntity`` puts the record's ``(entityType,
entityName)`` pairs in a map, so an entity type named twice keeps its last name, and the order of the pairs does not
matter; a null name is the type's default entity. The table holds the entity as that map's entries sorted by type.
An entity whose last key is removed disappears (``ClientQuotasDelta.apply`` drops an empty ``ClientQuotaImage``):
here it has no open version left. Nothing is refused: removing a key that is not set changes nothing.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from records.vocabulary import column_name
from replay.core.events import kafka_columns, kafka_default, parsed, struct_columns
from replay.core.image_parts import IMAGE_PARTS
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

QUOTA = IMAGE_PARTS["clientQuotas"].puts
ENTITY_TYPE = column_name("entityType")  # the field of an ``entity`` element Kafka's map is keyed by


def entity(pairs: Column) -> Column:
    """``ClientQuotaImage.dataToEntity``: the (entity_type, entity_name) pairs as a map (a later pair replaces an
    earlier one of the same type), its entries sorted by type."""
    nothing = F.filter(pairs, lambda pair: F.lit(False))  # an empty array of the pairs' own type
    as_map = F.aggregate(pairs, nothing, lambda kept, pair: F.concat(
        F.filter(kept, lambda earlier: earlier[ENTITY_TYPE] != pair[ENTITY_TYPE]), F.array(pair)))
    return F.array_sort(as_map)


def quota_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """One row per quota change: a set (``value``) or a removal (``is_tombstone``)."""
    records = parsed(events, QUOTA, shapes).select(
        *EVENT_COLUMNS, struct_columns(QUOTA, "entity"), *kafka_columns(QUOTA, "key", "value"),
        kafka_default(QUOTA, "remove").alias("is_tombstone"))
    return records.withColumn("entity", entity(F.col("entity")))
