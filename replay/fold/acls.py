"""ACLs: Kafka's ``AclsDelta`` as window functions.

An AccessControlEntryRecord puts the ACL under its id, whatever was there (``AclsDelta.replay``); a
RemoveAccessControlEntryRecord removes the ACL of its id, and Kafka 4.4 throws when no ACL has that id
(``IllegalStateException``: "Failed to find existing ACL with ID ... in either image or changes"): the removal is
refused, a ``refused`` anomaly with Kafka's message, and the image stays as it was. The ACL's codes (resource type,
pattern type, operation, permission type) are what ``StandardAcl.fromRecord`` keeps: each through its enum's
``fromCode``, a code it does not know read as UNKNOWN (0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from records.kafka_constants import (
    ACL_OPERATIONS,
    ACL_PERMISSION_TYPES,
    ACL_RESOURCE_TYPES,
    ACL_UNKNOWN,
    PATTERN_TYPES,
)
from records.vocabulary import column_name
from replay.core.events import kafka_columns, kafka_field, ordered, parsed
from replay.core.image_parts import IMAGE_PARTS
from replay.core.refusal_columns import reason_column
from replay.core.refusals import UNKNOWN_ACL_REMOVAL
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

ACLS = IMAGE_PARTS["acls"]
ACL, REMOVE_ACL = ACLS.folded_from


def code(value: Column, known: Mapping[int, str]) -> Column:
    """``fromCode`` of an ACL enum (ResourceType, PatternType, AclOperation, AclPermissionType): a code it knows,
    else UNKNOWN's."""
    return F.when(value.isin(*known), value).otherwise(F.lit(ACL_UNKNOWN)).cast("int")


@dataclass(frozen=True)
class AclsResult:
    states: DataFrame  # one row per applied record: the ACL it puts, or a tombstone for a removal
    anomalies: DataFrame  # the removals Kafka refuses


def acl_states(events: DataFrame, shapes: RecordShapes) -> AclsResult:
    """``AclsDelta``: the ACL after every record Kafka applies, and the removals it refuses."""
    upserts = parsed(events, ACL, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(ACL, "id"),
        code(kafka_field(ACL, "resourceType"), ACL_RESOURCE_TYPES).alias(column_name("resourceType")),
        *kafka_columns(ACL, "resourceName"),
        code(kafka_field(ACL, "patternType"), PATTERN_TYPES).alias(column_name("patternType")),
        *kafka_columns(ACL, "principal", "host"),
        code(kafka_field(ACL, "operation"), ACL_OPERATIONS).alias(column_name("operation")),
        code(kafka_field(ACL, "permissionType"), ACL_PERMISSION_TYPES).alias(column_name("permissionType")),
        F.lit(False).alias("is_tombstone"))
    removals = parsed(events, REMOVE_ACL, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(REMOVE_ACL, "id"), F.lit(True).alias("is_tombstone"))
    stream = upserts.unionByName(removals, allowMissingColumns=True)
    # An ACL is there when the record before (in apply order) put it: a removal, applied or refused, leaves none.
    present = F.coalesce(~F.lag("is_tombstone").over(ordered(*ACLS.keyed)), F.lit(False))
    stream = stream.withColumn("_applies", ~F.col("is_tombstone") | present)
    refused = stream.where(~F.col("_applies")).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        reason_column(UNKNOWN_ACL_REMOVAL, acl_id="id").alias("reason"))
    return AclsResult(stream.where(F.col("_applies")).drop("_applies"), refused)
