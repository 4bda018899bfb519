"""Delegation tokens: Kafka's ``DelegationTokenDelta`` as window functions.

A DelegationTokenRecord puts the token of its id, whatever was there; a RemoveDelegationTokenRecord removes it
(one that is not there: nothing changes, no error). Kafka builds the token with ``DelegationTokenData.fromRecord``,
which parses every renewer, then the owner, then the requester with ``SecurityUtils.parseKafkaPrincipal``: a
principal that is empty or has no ``:`` throws ("expected a string in format principalType:principalName but got
..."), so such a record is refused (an anomaly with Kafka's message for the first bad principal) and the image stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from replay.core.events import kafka_columns, parsed
from replay.core.image_parts import IMAGE_PARTS
from replay.core.refusal_columns import reason_column
from replay.core.refusals import INVALID_PRINCIPAL
from replay.core.shapes import RecordShapes
from replay.fold.brokers import EVENT_COLUMNS

TOKEN, REMOVE_TOKEN = IMAGE_PARTS["delegationTokens"].folded_from


@dataclass(frozen=True)
class TokensResult:
    states: DataFrame  # one row per applied record: the token it puts, or a tombstone for a removal
    anomalies: DataFrame  # the tokens Kafka cannot build


def _not_a_principal(principal: Column) -> Column:
    """``parseKafkaPrincipal`` throws: null, empty, or no ``principalType:`` before a name."""
    return principal.isNull() | (principal == "") | ~principal.contains(":")


def token_states(events: DataFrame, shapes: RecordShapes) -> TokensResult:
    """``DelegationTokenDelta``: the token after every record Kafka applies, and the records it cannot build."""
    upserts = parsed(events, TOKEN, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(TOKEN, "tokenId", "owner", "requester"),
        *kafka_columns(TOKEN, "renewers", defaults=True),
        *kafka_columns(TOKEN, "issueTimestamp", "maxTimestamp", "expirationTimestamp"),
        F.lit(False).alias("is_tombstone"))
    bad_renewer = F.element_at(F.filter(F.col("renewers"), _not_a_principal), 1)
    # fromRecord's order: the renewers, then the owner, then the requester
    bad = (F.when(F.size(F.filter(F.col("renewers"), _not_a_principal)) > 0, F.coalesce(bad_renewer, F.lit("null")))
           .when(_not_a_principal(F.col("owner")), F.coalesce(F.col("owner"), F.lit("null")))
           .when(_not_a_principal(F.col("requester")), F.coalesce(F.col("requester"), F.lit("null"))))
    upserts = upserts.withColumn("_bad", bad)
    refused = upserts.where(F.col("_bad").isNotNull()).select(
        "cluster_id", "offset", "record_type", F.lit("refused").alias("kind"),
        reason_column(INVALID_PRINCIPAL, principal="_bad").alias("reason"))
    removals = parsed(events, REMOVE_TOKEN, shapes).select(
        *EVENT_COLUMNS, *kafka_columns(REMOVE_TOKEN, "tokenId"), F.lit(True).alias("is_tombstone"))
    applied = upserts.where(F.col("_bad").isNull()).drop("_bad")
    return TokensResult(applied.unionByName(removals, allowMissingColumns=True), refused)
