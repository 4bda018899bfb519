"""Hand-built logs for every branch of the image parts' rules (configs, client quotas, ACLs, SCRAM credentials,
delegation tokens, producer ids, the ZK migration state), each a cluster of ONE Spark replay that
``tests/conftest.py`` computes once per run (session fixture ``image_parts``) for the test module of each fold
(tests/test_configurations.py, test_client_quotas.py, test_acls.py, test_scram.py, test_delegation_tokens.py,
test_producer_ids.py, test_brokers.py).

Offsets are the records' positions, append times ``1000 + offset`` (``reference_fold_support.entries``). The
``secret_fingerprint`` a redacting ingest gives a record is set on the log's rows by offset (``FINGERPRINTS``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.log_rows import entries_frame
from lakehouse.tables import SECRET_FINGERPRINT
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_to_str
from replay.fold.engine import replay
from tests.reference_fold_support import T1, T2, entries, marker, topic

TOPIC, BROKER = 2, 4  # ConfigResource.Type ids
A1, A2, A3, A4, A5 = (bytes([n]) * 16 for n in (0xA1, 0xA2, 0xA3, 0xA4, 0xA5))
A1S, A2S, A3S, A4S, A5S = (uuid_to_str(a) for a in (A1, A2, A3, A4, A5))
REDACTED = "(redacted)"


def config(resource_type: int, resource: str, name: str, value: str | None) -> MetadataRecord:
    return make_record("ConfigRecord", 0, resourceType=resource_type, resourceName=resource, name=name, value=value)


def quota(entity: list[tuple[str, str | None]], key: str, value: float = 0.0, remove: bool = False,
          ) -> MetadataRecord:
    return make_record("ClientQuotaRecord", 0, entity=[{"entityType": t, "entityName": n} for t, n in entity],
                       key=key, value=value, remove=remove)


def acl(acl_id: bytes, operation: int = 4, host: str = "*", resource_type: int = 2) -> MetadataRecord:
    """An ACL of User:alice on TOPIC (2) "orders", LITERAL (3), ALLOW (3)."""
    return make_record("AccessControlEntryRecord", 0, id=acl_id, resourceType=resource_type, resourceName="orders",
                       patternType=3, principal="User:alice", host=host, operation=operation, permissionType=3)


def remove_acl(acl_id: bytes) -> MetadataRecord:
    return make_record("RemoveAccessControlEntryRecord", 0, id=acl_id)


def scram(name: str, mechanism: int, iterations: int) -> MetadataRecord:
    """The salt and keys as a redacting ingest leaves them: empty."""
    return make_record("UserScramCredentialRecord", 0, name=name, mechanism=mechanism, salt=b"", storedKey=b"",
                       serverKey=b"", iterations=iterations)


def remove_scram(name: str, mechanism: int) -> MetadataRecord:
    return make_record("RemoveUserScramCredentialRecord", 0, name=name, mechanism=mechanism)


def token(token_id: str, expiration: int, owner: str = "User:alice", renewers: tuple[str, ...] = ("User:bob",),
          ) -> MetadataRecord:
    return make_record("DelegationTokenRecord", 0, tokenId=token_id, owner=owner, requester=owner,
                       renewers=list(renewers), issueTimestamp=1000, maxTimestamp=9000,
                       expirationTimestamp=expiration)


def producer_ids(broker: int, epoch: int, next_id: int) -> MetadataRecord:
    return make_record("ProducerIdsRecord", 0, brokerId=broker, brokerEpoch=epoch, nextProducerId=next_id)


def zk_migration(state: int) -> MetadataRecord:
    return make_record("ZkMigrationStateRecord", 0, zkMigrationState=state)


LOGS: dict[str, list[LogEntry]] = {
    "configs": entries(
        topic(T1, "orders"),  # 0
        config(TOPIC, "orders", "retention.ms", "604800000"),  # 1
        config(TOPIC, "orders", "cleanup.policy", "compact"),  # 2
        config(TOPIC, "orders", "retention.ms", "86400000"),  # 3: overwritten
        config(TOPIC, "orders", "cleanup.policy", None),  # 4: deleted
        config(BROKER, "", "min.insync.replicas", "2"),  # 5: the cluster default
        config(BROKER, "1", "ssl.keystore.password", REDACTED),  # 6: fingerprint fp-a
        config(BROKER, "1", "ssl.keystore.password", REDACTED),  # 7: the same secret: no change
        config(BROKER, "1", "ssl.keystore.password", REDACTED),  # 8: fingerprint fp-b: a new password
        make_record("RemoveTopicRecord", 0, topicId=T1),  # 9: orders' configs go
        topic(T2, "orders"),  # 10: re-created, no configs
        config(TOPIC, "orders", "segment.bytes", "1048576"),  # 11
        config(99, "x", "a", "1"),  # 12: a type Kafka does not know: UNKNOWN (0)
        config(BROKER, "", "min.insync.replicas", None),  # 13: the cluster default emptied
        make_record("RemoveTopicRecord", 0, topicId=T1),  # 14: refused (gone): the new orders keeps its configs
        marker("BeginTransactionRecord"), config(TOPIC, "orders", "max.message.bytes", "1000"),  # 15, 16
        make_record("AbortTransactionRecord", 0),  # 17: never visible
        config(TOPIC, "orders", "segment.bytes", "1048576"),  # 18: the value it has: no change
        marker("BeginTransactionRecord"), config(TOPIC, "orders", "segment.bytes", "2097152"),  # 19, 20
        config(TOPIC, "orders", "retention.ms", "1000"), marker("EndTransactionRecord")),  # 21, 22: visible at 22
    "quotas": entries(
        quota([("user", "alice")], "producer_byte_rate", 1024.0),  # 0
        quota([("client-id", "app"), ("user", "alice")], "consumer_byte_rate", 2048.0),  # 1: a two-part entity
        quota([("user", "alice"), ("client-id", "app")], "consumer_byte_rate", 4096.0),  # 2: the same entity
        quota([("user", None)], "request_percentage", 50.0),  # 3: the default user
        quota([("user", "alice")], "producer_byte_rate", remove=True),  # 4: removed, the entity is empty
        quota([("user", None)], "request_percentage", 50.0),  # 5: the value it has: no change
        quota([("user", "bob"), ("user", "carol")], "x", 1.0),  # 6: a type named twice keeps its last name
        quota([("client-id", "app"), ("user", "alice")], "consumer_byte_rate", remove=True),  # 7
        quota([("user", "dave")], "k", remove=True)),  # 8: nothing to remove
    "acls": entries(
        acl(A1), acl(A2, operation=3),  # 0, 1
        acl(A1),  # 2: the same ACL again: no change
        acl(A1, host="10.0.0.1"),  # 3: replaced
        remove_acl(A2),  # 4
        remove_acl(A2), remove_acl(A3),  # 5, 6: refused, no such ACL
        marker("BeginTransactionRecord"), acl(A3), remove_acl(A3), marker("EndTransactionRecord"),  # 7..10
        marker("BeginTransactionRecord"), acl(A4), make_record("AbortTransactionRecord", 0),  # 11..13
        remove_acl(A4),  # 14: refused, A4 never became visible
        acl(A5, operation=42, resource_type=12)),  # 15: codes Kafka does not know: UNKNOWN (0)
    "scram": entries(
        scram("alice", 1, 4096),  # 0: SCRAM-SHA-256, fingerprint s1
        scram("alice", 2, 8192),  # 1: SCRAM-SHA-512, s2
        scram("alice", 1, 4096),  # 2: a new password (s3), same iterations
        remove_scram("alice", 2),  # 3
        remove_scram("bob", 1),  # 4: nothing to remove, no error
        scram("alice", 7, 1),  # 5: a mechanism Kafka does not know: UNKNOWN (0)
        remove_scram("alice", 9)),  # 6: UNKNOWN too: removes it
    "tokens": entries(
        token("tok1", 1500),  # 0
        token("tok1", 1800),  # 1: renewed
        token("tok2", 1500, owner="alice"),  # 2: refused, not a principal
        token("tok3", 1500, renewers=("User:bob", "carol")),  # 3: refused, a renewer is not a principal
        make_record("RemoveDelegationTokenRecord", 0, tokenId="tok1"),  # 4
        make_record("RemoveDelegationTokenRecord", 0, tokenId="tok9"),  # 5: nothing to remove, no error
        token("tok3", 1600, owner="User:dave", renewers=())),  # 6
    "producer-ids": entries(
        producer_ids(1, 5, 1000), producer_ids(2, 7, 2000), producer_ids(2, 7, 2000),  # 2: no change
        marker("BeginTransactionRecord"), producer_ids(3, 9, 3000), make_record("AbortTransactionRecord", 0)),
    "zk-migration": entries(
        zk_migration(2),  # 0: PRE_MIGRATION
        zk_migration(2),  # 1: no change
        zk_migration(1),  # 2: MIGRATION
        zk_migration(9),  # 3: refused
        make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=21),  # 4
        zk_migration(0)),  # 5: NONE, the empty image's state: no row
}
# cluster → offset → the keyed fingerprint of the secret the ingest redacted from that record
FINGERPRINTS: dict[str, dict[int, str]] = {"configs": {6: "fp-a", 7: "fp-a", 8: "fp-b"},
                                           "scram": {0: "s1", 1: "s2", 2: "s3", 5: "s4"}}


def with_fingerprints(log: DataFrame, fingerprints: dict[str, dict[int, str]]) -> DataFrame:
    """``log`` with ``secret_fingerprint`` set by (cluster, offset), null elsewhere (replacing any the rows had)."""
    column = F.lit(None).cast("string")
    for cluster, by_offset in fingerprints.items():
        for offset, fingerprint in by_offset.items():
            column = F.when((F.col("cluster_id") == cluster) & (F.col("offset") == offset),
                            F.lit(fingerprint)).otherwise(column)
    return log.withColumn(SECRET_FINGERPRINT, column)


def log_frame(spark: SparkSession, logs: dict[str, list[LogEntry]]) -> DataFrame:
    frames = [entries_frame(spark, log, cluster) for cluster, log in logs.items()]
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return with_fingerprints(out, FINGERPRINTS)


def collected(tables: dict[str, DataFrame], anomalies: DataFrame) -> dict[str, list[dict[str, Any]]]:
    out = {name: [row.asDict(recursive=True) for row in df.collect()] for name, df in tables.items()}
    out["replay_anomalies"] = [row.asDict() for row in anomalies.collect()]
    return out


def image_parts(spark: SparkSession) -> dict[str, list[dict[str, Any]]]:
    """Every log of ``LOGS`` replayed by Spark as clusters of ONE input: table → rows."""
    result = replay(log_frame(spark, LOGS))
    return collected(result.tables, result.anomalies)


def versions(rows: list[dict[str, Any]], cluster: str, *columns: str) -> list[tuple[Any, ...]]:
    """``columns`` + (valid_from_offset, valid_to_offset, cause_offset) of a cluster's rows, sorted."""
    return sorted(((*[r[c] for c in columns], r["valid_from_offset"], r["valid_to_offset"], r["cause_offset"])
                   for r in rows if r["cluster_id"] == cluster), key=repr)


def refusals(tables: dict[str, list[dict[str, Any]]], cluster: str) -> list[tuple[int, str, str, str]]:
    return sorted((a["offset"], a["record_type"], a["kind"], a["reason"]) for a in tables["replay_anomalies"]
                  if a["cluster_id"] == cluster)
