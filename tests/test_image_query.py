"""replay/query/image.py: every part of the image as of an offset, a part's history, the diff of every part, on
the lake of tests/image_lake_support.py (built once per run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.lake import Lake
from replay.query.image import (
    NO_PRODUCER_ID,
    PARTS,
    acl_history,
    config_history,
    image_at,
    image_diff,
    next_producer_id,
    parse_resource,
    part_history,
    user_history,
)
from replay.query.state import QueryError, kafka_json
from tests.image_lake_support import (
    ACL_READ,
    ACL_WRITE,
    CLUSTER,
    DAY_MS,
    FINGERPRINTS,
    ISSUED_MS,
    WEEK_MS,
    ImageLog,
    image_rows,
)

pytestmark = pytest.mark.spark


def _json(image: dict[str, Any], section: str) -> list[dict[str, Any]]:
    frame = image[section].select(kafka_json(PARTS[section].fields).alias("j"))
    return [json.loads(row["j"]) for row in frame.collect()]


def test_the_replay_wrote_the_six_tables_version_by_version(spark: SparkSession, image_lake: Lake,
                                                            image_log: ImageLog) -> None:
    """The replay's own fold of the hand-built log gives exactly the versions written out by hand: one per entry
    and visible offset, each removal closing the open version, the fingerprints of the redacted records kept."""
    for name, expected in image_rows(image_log).items():
        stored = image_lake.read(spark, name).where(f"cluster_id = '{CLUSTER}'")
        got = sorted((row.asDict(recursive=True) for row in stored.collect()),
                     key=lambda row: (row["valid_from_offset"], json.dumps(row, sort_keys=True, default=str)))
        assert got == sorted(expected, key=lambda row: (row["valid_from_offset"],
                                                        json.dumps(row, sort_keys=True, default=str))), name


def test_every_part_as_of_an_offset(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    image = image_at(spark, image_lake, CLUSTER, k["pids-1"])
    assert _json(image, "configs") == [
        {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "86400000"},
        {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"},
        {"resourceType": 4, "resourceName": "1", "name": "ssl.keystore.password", "value": "(redacted)"}]
    # sorted by entity: the default entity (a null name) before alice
    assert _json(image, "clientQuotas") == [
        {"entity": [{"entityType": "user", "entityName": None}], "key": "consumer_byte_rate", "value": 2097152.0},
        {"entity": [{"entityType": "user", "entityName": "alice"}], "key": "producer_byte_rate",
         "value": 1048576.0}]
    acl = {"resourceType": 2, "resourceName": "payments", "host": "*", "permissionType": 3}
    assert _json(image, "acls") == [
        {"id": ACL_WRITE, **acl, "patternType": 3, "principal": "User:alice", "operation": 4},
        {"id": ACL_READ, **acl, "patternType": 4, "principal": "User:bob", "operation": 3}]
    assert _json(image, "scramCredentials") == [{"name": "alice", "mechanism": 1, "iterations": 4096}]
    assert _json(image, "delegationTokens") == [
        {"tokenId": "token-1", "owner": "User:alice", "requester": "User:alice", "renewers": ["User:bob"],
         "issueTimestamp": ISSUED_MS, "maxTimestamp": ISSUED_MS + WEEK_MS, "expirationTimestamp": ISSUED_MS + DAY_MS}]
    assert next_producer_id(image["producerIds"]) == 1000
    features = {entry.record["name"]: entry.record["featureLevel"] for entry in image_log.entries
                if entry.type_name == "FeatureLevelRecord"}
    # the finalized features; the ZkMigrationStateRecord's state is a row of its own name where it is kept
    finalized = [f for f in _json(image, "features") if f["name"] != "zkMigrationState"]
    assert finalized == [{"name": name, "featureLevel": level} for name, level in sorted(features.items())]
    controllers = sorted(entry.record["controllerId"] for entry in image_log.entries
                         if entry.type_name == "RegisterControllerRecord")
    assert [c["controllerId"] for c in _json(image, "controllers")] == controllers
    assert set(_json(image, "controllers")[0]) == {"controllerId", "incarnationId", "zkMigrationReady", "endPoints",
                                                    "features"}


def test_before_and_after_the_parts_changed(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    before = image_at(spark, image_lake, CLUSTER, k["retention-1"] - 1)
    assert all(before[section].count() == 0 for section in PARTS if section not in ("features", "controllers"))
    assert next_producer_id(before["producerIds"]) == NO_PRODUCER_ID == -1
    last = image_at(spark, image_lake, CLUSTER, k["quota-alice-removed"])
    assert [q["key"] for q in _json(last, "clientQuotas")] == ["consumer_byte_rate"]
    assert [a["id"] for a in _json(last, "acls")] == [ACL_READ]
    assert _json(last, "scramCredentials") == [{"name": "alice", "mechanism": 1, "iterations": 8192}]
    assert _json(last, "delegationTokens") == []
    assert next_producer_id(last["producerIds"]) == 2000


def test_a_lake_without_the_new_tables_reads_them_empty(spark: SparkSession, tmp_path: Path) -> None:
    image = image_at(spark, Lake(tmp_path / "old"), CLUSTER, 10)
    assert {section: frame.count() for section, frame in image.items()} == dict.fromkeys(PARTS, 0)
    assert next_producer_id(image["producerIds"]) == -1


def test_resources_by_kafka_names() -> None:
    assert parse_resource("TOPIC:orders") == (2, "orders")
    assert parse_resource("broker:1") == (4, "1")
    assert parse_resource("BROKER:") == (4, "")
    assert parse_resource("TOPIC:a:b") == (2, "a:b")
    with pytest.raises(QueryError, match=r"unknown config resource type 'QUEUE': one of TOPIC, BROKER, "
                                         r"BROKER_LOGGER, CLIENT_METRICS, GROUP"):
        parse_resource("QUEUE:x")
    with pytest.raises(QueryError, match="'orders' is not TYPE:NAME"):
        parse_resource("orders")


def _versions(frame: Any, *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(row[c] for c in columns) for row in frame.collect()]


def test_history_of_each_part(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    interval = ("valid_from_offset", "valid_to_offset")
    assert _versions(config_history(spark, image_lake, "TOPIC:orders"), *interval, "value") == [
        (k["retention-1"], k["retention-2"], "604800000"), (k["retention-2"], None, "86400000")]
    assert _versions(config_history(spark, image_lake, "BROKER:"), *interval, "name", "value") == [
        (k["min-isr"], None, "min.insync.replicas", "2")]
    assert _versions(config_history(spark, image_lake, "BROKER:1"), "valid_from_offset", "value_fingerprint") == [
        (k["keystore-1"], FINGERPRINTS["keystore-1"]), (k["keystore-2"], FINGERPRINTS["keystore-2"])]
    assert config_history(spark, image_lake, "TOPIC:missing").count() == 0
    assert _versions(acl_history(spark, image_lake), "id") == [(ACL_WRITE,), (ACL_READ,)]
    assert _versions(acl_history(spark, image_lake, principal="User:alice"), *interval) == [
        (k["acl-write"], k["acl-removed"])]
    assert _versions(acl_history(spark, image_lake, resource="TOPIC:payments"), "id") == [(ACL_WRITE,), (ACL_READ,)]
    assert acl_history(spark, image_lake, resource="GROUP:payments").count() == 0
    with pytest.raises(QueryError, match="unknown ACL resource type 'BROKER'"):
        acl_history(spark, image_lake, resource="BROKER:1")
    user = user_history(spark, image_lake, "alice")
    assert _versions(user["scramCredentials"], *interval, "iterations") == [
        (k["scram-1"], k["scram-2"], 4096), (k["scram-2"], None, 8192)]
    assert _versions(user["clientQuotas"], *interval, "value") == [
        (k["quota-alice-1"], k["quota-alice-2"], 1048576.0), (k["quota-alice-2"], k["quota-alice-removed"], 2097152.0)]
    assert _versions(user["acls"], "id") == [(ACL_WRITE,)]
    assert _versions(user_history(spark, image_lake, "bob")["acls"], "id") == [(ACL_READ,)]
    assert _versions(part_history(spark, image_lake, "producerIds"), "next_producer_id", "cause_type") == [
        (1000, "ProducerIdsRecord"), (2000, "ProducerIdsRecord")]


def _diff(spark: SparkSession, lake: Lake, start: int, end: int) -> list[tuple[Any, ...]]:
    rows = image_diff(spark, lake, start, end).collect()
    return [(r["entity"], r["key"], r["change"], json.loads(r["before"]) if r["before"] else None,
             json.loads(r["after"]) if r["after"] else None) for r in rows]


def test_diff_covers_every_part(spark: SparkSession, image_lake: Lake, image_log: ImageLog) -> None:
    k = image_log.key
    assert [row[:3] for row in _diff(spark, image_lake, k["min-isr"], k["quota-alice-removed"])] == [
        ("config", "BROKER:1 ssl.keystore.password", "added"),
        ("clientQuota", "user=<default> consumer_byte_rate", "added"),
        ("acl", ACL_READ, "added"),
        ("scramCredential", "alice SCRAM-SHA-256", "added"),
        ("producerIds", "nextProducerId", "added")]
    changed = _diff(spark, image_lake, k["pids-1"], k["quota-alice-removed"])
    assert [row[:3] for row in changed] == [
        ("config", "BROKER:1 ssl.keystore.password", "changed"),
        ("clientQuota", "user=alice producer_byte_rate", "removed"),
        ("acl", ACL_WRITE, "removed"),
        ("scramCredential", "alice SCRAM-SHA-256", "changed"),
        ("delegationToken", "token-1", "removed"),
        ("producerIds", "nextProducerId", "changed")]
    keystore, scram, pids = changed[0], changed[3], changed[5]
    # the secret is not there, its new fingerprint is: the password changed
    assert keystore[3] == {"resourceType": 4, "resourceName": "1", "name": "ssl.keystore.password",
                           "value": "(redacted)", "valueFingerprint": FINGERPRINTS["keystore-1"]}
    assert keystore[4]["valueFingerprint"] == FINGERPRINTS["keystore-2"]
    assert (scram[3]["iterations"], scram[4]["iterations"], scram[4]["credentialFingerprint"]) == (
        4096, 8192, FINGERPRINTS["scram-2"])
    assert (pids[3], pids[4]) == ({"nextProducerId": 1000}, {"nextProducerId": 2000})
    assert _diff(spark, image_lake, k["pids-1"], k["pids-1"]) == []
