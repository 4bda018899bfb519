"""SCRAM credentials: Kafka's ``ScramDelta`` as window functions.

A UserScramCredentialRecord puts the credential of (mechanism, user name), whatever was there; a
RemoveUserScramCredentialRecord removes it, and removing one that is not there changes nothing (Kafka records the
removal and ``apply`` removes nothing: no error). The mechanism is Kafka's ``ScramMechanism.fromType``: a type it
does not know is UNKNOWN. The salt and keys never reach the lake (the ingest redacts them); the table keeps the
iterations and the fingerprint of the redacted secret, so a changed password still shows as a change.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakehouse.tables import SECRET_FINGERPRINT
from records.kafka_constants import SCRAM_MECHANISMS, SCRAM_UNKNOWN
from replay.core.events import kafka_columns, kafka_field, parsed
from replay.core.image_parts import IMAGE_PARTS
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

SCRAM, REMOVE_SCRAM = IMAGE_PARTS["scramCredentials"].folded_from


def mechanism(kind: Column) -> Column:
    """``ScramMechanism.fromType``: the type of a mechanism Kafka knows, else UNKNOWN's."""
    return F.when(kind.isin(*SCRAM_MECHANISMS), kind).otherwise(F.lit(SCRAM_UNKNOWN)).cast("int").alias("mechanism")


def scram_states(events: DataFrame, shapes: RecordShapes) -> DataFrame:
    """One row per credential put (iterations, fingerprint), a tombstone per removal."""
    upserts = parsed(events, SCRAM, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(SCRAM, "name"), mechanism(kafka_field(SCRAM, "mechanism")),
        *kafka_columns(SCRAM, "iterations"),
        F.col(SECRET_FINGERPRINT).alias("credential_fingerprint"), F.lit(False).alias("is_tombstone"))
    removals = parsed(events, REMOVE_SCRAM, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(REMOVE_SCRAM, "name"), mechanism(kafka_field(REMOVE_SCRAM, "mechanism")),
        F.lit(True).alias("is_tombstone"))
    return upserts.unionByName(removals, allowMissingColumns=True)
