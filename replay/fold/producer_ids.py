"""Producer ids: Kafka's ``ProducerIdsDelta`` as one column.

Each ProducerIdsRecord sets the cluster's next producer id (the first id of the next block the controller hands
out) to its ``nextProducerId``, whatever it was (``ProducerIdsDelta.replay``: no check); the table keeps the broker
the block was for and its epoch beside it. Before any record Kafka's image holds -1 (``ProducerIdsImage.EMPTY``):
the table has no version then.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from replay.core.events import kafka_columns, parsed
from replay.core.image_parts import IMAGE_PARTS
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

PRODUCER_IDS = IMAGE_PARTS["producerIds"].puts


def producer_id_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """One row per ProducerIdsRecord: the cluster's producer-id block after it."""
    return parsed(events, PRODUCER_IDS, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(PRODUCER_IDS, "nextProducerId", "brokerId"),
        *kafka_columns(PRODUCER_IDS, "brokerEpoch", defaults=True), F.lit(False).alias("is_tombstone"))
