"""replay/query/changes.py: the change log of every part, between offsets or times, on the lake of
tests/image_lake_support.py (built once per run)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.lake import Lake
from replay.query.changes import CHANGE_COLUMNS, PARTS, all_changes, bound, change_log
from replay.query.state import QueryError, iso_ms
from tests.image_lake_support import ACL_READ, ACL_WRITE, CLUSTER, ImageLog

pytestmark = pytest.mark.spark

SIX = ("config", "clientQuota", "acl", "scramCredential", "delegationToken", "producerIds")
WRITE = "User:alice ALLOW WRITE on TOPIC:payments (LITERAL) from host *"
TOKEN = ("owner=User:alice requester=User:alice renewers=User:bob maxTimestamp=1767830400000 "
         "expirationTimestamp=1767312000000")


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(row[c] for c in ("offset", "record_type", "part", "entity", "key", "change", "old_value",
                                   "new_value")) for row in frame.collect()]


def test_every_change_of_the_six_parts(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    config, quota, scram = "ConfigRecord", "ClientQuotaRecord", "UserScramCredentialRecord"
    assert _rows(change_log(spark, image_lake, parts=SIX)) == [
        (k["retention-1"], config, "config", "topic orders", "retention.ms", "added", None, "604800000"),
        (k["retention-2"], config, "config", "topic orders", "retention.ms", "changed", "604800000", "86400000"),
        (k["min-isr"], config, "config", "broker (cluster default)", "min.insync.replicas", "added", None, "2"),
        (k["keystore-1"], config, "config", "broker 1", "ssl.keystore.password", "added", None, "(redacted)"),
        (k["quota-alice-1"], quota, "clientQuota", "quota user=alice", "producer_byte_rate", "added", None,
         "1048576.0"),
        (k["quota-default"], quota, "clientQuota", "quota user=<default>", "consumer_byte_rate", "added", None,
         "2097152.0"),
        (k["acl-write"], "AccessControlEntryRecord", "acl", f"acl {ACL_WRITE}", "", "added", None, WRITE),
        (k["acl-read"], "AccessControlEntryRecord", "acl", f"acl {ACL_READ}", "", "added", None,
         "User:bob ALLOW READ on TOPIC:payments (PREFIXED) from host *"),
        (k["scram-1"], scram, "scramCredential", "user alice", "SCRAM-SHA-256", "added", None, "iterations=4096"),
        (k["token"], "DelegationTokenRecord", "delegationToken", "token token-1", "", "added", None, TOKEN),
        (k["pids-1"], "ProducerIdsRecord", "producerIds", "producer ids", "nextProducerId", "added", None, "1000"),
        # a new secret: its fingerprint changed, the secret itself is nowhere
        (k["keystore-2"], config, "config", "broker 1", "ssl.keystore.password", "changed", "(redacted)",
         "(redacted, changed)"),
        (k["quota-alice-2"], quota, "clientQuota", "quota user=alice", "producer_byte_rate", "changed", "1048576.0",
         "2097152.0"),
        # a removal's record is the log's record at the offset the version ends
        (k["acl-removed"], "RemoveAccessControlEntryRecord", "acl", f"acl {ACL_WRITE}", "", "removed", WRITE, None),
        (k["scram-2"], scram, "scramCredential", "user alice", "SCRAM-SHA-256", "changed", "iterations=4096",
         "iterations=8192 (redacted, changed)"),
        (k["token-removed"], "RemoveDelegationTokenRecord", "delegationToken", "token token-1", "", "removed", TOKEN,
         None),
        (k["pids-2"], "ProducerIdsRecord", "producerIds", "producer ids", "nextProducerId", "changed", "1000", "2000"),
        (k["quota-alice-removed"], quota, "clientQuota", "quota user=alice", "producer_byte_rate", "removed",
         "2097152.0", None)]


def test_the_cluster_parts_too(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    topic = next(e for e in image_log.entries if e.type_name == "TopicRecord")
    rows = _rows(change_log(spark, image_lake, parts=("topic", "partition")))
    assert rows[0][:6] == (topic.offset, "TopicRecord", "topic", "topic orders", "topicId", "added")
    assert rows[1][:6] == (topic.offset + 1, "PartitionRecord", "partition", "partition orders-0", "", "added")
    assert rows[1][7].startswith("leader=") and " isr=" in rows[1][7]
    brokers = _rows(change_log(spark, image_lake, parts=("broker",)))
    assert [(r[3], r[5]) for r in brokers[:3]] == [("broker 1", "added"), ("broker 2", "added"), ("broker 3", "added")]
    assert "fenced=true" in brokers[0][7]
    unfenced = [r for r in brokers if r[5] == "changed"]
    assert len(unfenced) == 3 and all("fenced=true" in r[6] and "fenced=false" in r[7] for r in unfenced)


def test_between_offsets_and_times(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k, time = image_log.key, image_log.time
    by_offset = _rows(change_log(spark, image_lake, from_offset=k["keystore-2"], to_offset=k["scram-2"]))
    assert [r[0] for r in by_offset] == [k["keystore-2"], k["quota-alice-2"], k["acl-removed"], k["scram-2"]]
    by_time = change_log(spark, image_lake, from_time=iso_ms(time[k["keystore-2"]]),
                         to_time=iso_ms(time[k["scram-2"]]), cluster_id=CLUSTER)
    assert _rows(by_time) == by_offset
    assert change_log(spark, image_lake, from_offset=k["quota-alice-removed"] + 1).count() == 0
    assert change_log(spark, image_lake, to_time="2000-01-01T00:00:00Z").count() == 0
    with pytest.raises(QueryError, match="--from 9 is after --to 3"):
        change_log(spark, image_lake, from_offset=9, to_offset=3)
    with pytest.raises(QueryError, match="unknown part quotas: the parts are config, clientQuota"):
        change_log(spark, image_lake, parts=("quotas",))


def test_bounds_are_offsets_or_times() -> None:
    assert bound(None) == (None, None)
    assert bound("8812") == (8812, None)
    assert bound("2026-03-02T10:14Z") == (None, "2026-03-02T10:14Z")
    with pytest.raises(QueryError, match="cannot read 'yesterday' as an ISO-8601 time"):
        bound("yesterday")


def test_all_clusters_for_the_sql_view(spark: SparkSession, image_lake: Lake) -> None:
    every = all_changes(spark, image_lake)
    assert tuple(every.columns[:len(CHANGE_COLUMNS)]) == CHANGE_COLUMNS
    assert {row["part"] for row in every.select("part").distinct().collect()} == set(PARTS)
    assert {row["cluster_id"] for row in every.select("cluster_id").distinct().collect()} == {CLUSTER}
