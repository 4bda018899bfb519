"""Hand-built logs shared by the tests of the reference fold (tests/test_reference_fold.py), of one record's
rule (tests/test_metadata_delta.py) and by the Spark and Kafka comparisons (tests/test_replay_vs_reference.py,
tests/test_kafka_referee.py)."""

from __future__ import annotations

from typing import Any

from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_to_str
from replay.reference.fold import reference_histories

T1, T2 = bytes(range(1, 17)), bytes(range(101, 117))
T1S, T2S = uuid_to_str(T1), uuid_to_str(T2)
D1, D2, D3 = b"\x11" * 16, b"\x22" * 16, b"\x33" * 16
INC = b"\x99" * 16


def entries(*records: MetadataRecord) -> list[LogEntry]:
    return [LogEntry(offset=i, record=r, append_time_ms=1000 + i) for i, r in enumerate(records)]


def topic(tid: bytes = T1, name: str = "t") -> MetadataRecord:
    return make_record("TopicRecord", 0, name=name, topicId=tid)


def partition(tid: bytes = T1, pid: int = 0, replicas: tuple[int, ...] = (1, 2, 3), leader: int = 1,
              **fields: Any) -> MetadataRecord:
    fields.setdefault("isr", list(replicas))
    fields.setdefault("leaderEpoch", 0)
    fields.setdefault("partitionEpoch", 0)
    return make_record("PartitionRecord", 2, partitionId=pid, topicId=tid, replicas=list(replicas), leader=leader,
                       **fields)


def change(tid: bytes = T1, pid: int = 0, **fields: Any) -> MetadataRecord:
    return make_record("PartitionChangeRecord", 2, partitionId=pid, topicId=tid, **fields)


def broker(bid: int, epoch: int, fenced: bool = True, **fields: Any) -> MetadataRecord:
    return make_record("RegisterBrokerRecord", 3, brokerId=bid, brokerEpoch=epoch, incarnationId=INC, fenced=fenced,
                       endPoints=[{"name": "PLAINTEXT", "host": f"b{bid}", "port": 9092, "securityProtocol": 0}],
                       **fields)


def marker(kind: str) -> MetadataRecord:
    return make_record(kind, 0)


def history(*records: MetadataRecord) -> dict[str, list[dict[str, Any]]]:
    return reference_histories(entries(*records), "c1")


def part_rows(h: dict[str, list[dict[str, Any]]], tid: str = T1S, pid: int = 0) -> list[dict[str, Any]]:
    return [r for r in h["partition_history"] if r["topic_id"] == tid and r["partition_id"] == pid]


def anomalies(h: dict[str, list[dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [a for a in h["replay_anomalies"] if a["kind"] == kind]


def clear_elr(topic_name: str = "") -> MetadataRecord:
    return make_record("ClearElrRecord", 0, topicName=topic_name)


def elr_clears_log() -> list[LogEntry]:
    """Two topics whose partitions have ELRs; ClearElrRecords by name, for every topic, of an unknown name, and
    inside a transaction after a new ELR (Kafka 4.x writes one beside a min.insync.replicas change)."""
    return entries(
        topic(T1, "t"), partition(T1, 0, eligibleLeaderReplicas=[2], lastKnownElr=[3]), partition(T1, 1),
        topic(T2, "u"), partition(T2, 0), change(T2, 0, isr=[1], eligibleLeaderReplicas=[2, 3]),
        clear_elr("t"),  # 6: t-0 cleared (epoch 1); t-1 has no ELR: untouched
        change(T1, 1, lastKnownElr=[3]),
        clear_elr("nope"),  # 8: refused, no such topic
        clear_elr(),  # 9: u-0 and t-1 cleared; t-0 has nothing left
        change(T2, 0, eligibleLeaderReplicas=[3]),
        marker("BeginTransactionRecord"), change(T1, 0, leader=2, eligibleLeaderReplicas=[3]), clear_elr("t"),
        marker("EndTransactionRecord"),  # 14: t-0's new leader and ELR, then cleared, at once
        clear_elr("u"))  # 15: u-0 cleared again



# --- The image's other parts (replay.reference.image_parts_delta) -----------------------------------------------------

ACL1, ACL2, ACL3 = b"\xa1" * 16, b"\xa2" * 16, b"\xa3" * 16
ACL1S, ACL2S, ACL3S = uuid_to_str(ACL1), uuid_to_str(ACL2), uuid_to_str(ACL3)
TOPIC_CONFIG, BROKER_CONFIG = 2, 4  # ConfigResource.Type.TOPIC, BROKER
SHA256, SHA512 = 1, 2  # ScramMechanism.SCRAM_SHA_256, SCRAM_SHA_512


def config(name: str, value: str | None, resource_name: str = "orders", resource_type: int = TOPIC_CONFIG,
           ) -> MetadataRecord:
    return make_record("ConfigRecord", 0, resourceType=resource_type, resourceName=resource_name, name=name,
                       value=value)


def quota(entity: dict[str, str | None], key: str, value: float = 0.0, remove: bool = False) -> MetadataRecord:
    return make_record("ClientQuotaRecord", 0, entity=[{"entityType": t, "entityName": n} for t, n in entity.items()],
                       key=key, value=value, remove=remove)


def acl(acl_id: bytes, resource_type: int = 2, name: str = "orders", pattern: int = 3,
        principal: str = "User:alice", operation: int = 4, permission: int = 3) -> MetadataRecord:
    return make_record("AccessControlEntryRecord", 0, id=acl_id, resourceType=resource_type, resourceName=name,
                       patternType=pattern, principal=principal, host="*", operation=operation,
                       permissionType=permission)


def remove_acl(acl_id: bytes) -> MetadataRecord:
    return make_record("RemoveAccessControlEntryRecord", 0, id=acl_id)


def scram(name: str, mechanism: int, iterations: int) -> MetadataRecord:
    return make_record("UserScramCredentialRecord", 0, name=name, mechanism=mechanism, salt=b"salt-" + name.encode(),
                       storedKey=b"stored", serverKey=b"server", iterations=iterations)


def remove_scram(name: str, mechanism: int) -> MetadataRecord:
    return make_record("RemoveUserScramCredentialRecord", 0, name=name, mechanism=mechanism)


def token(token_id: str, expiration: int, owner: str = "User:alice", renewers: tuple[str, ...] = ("User:bob",),
          ) -> MetadataRecord:
    return make_record("DelegationTokenRecord", 0, owner=owner, requester="User:alice", renewers=list(renewers),
                       issueTimestamp=1_000, maxTimestamp=9_000, expirationTimestamp=expiration, tokenId=token_id)


def remove_token(token_id: str) -> MetadataRecord:
    return make_record("RemoveDelegationTokenRecord", 0, tokenId=token_id)


def producer_ids(broker_id: int, epoch: int, next_id: int) -> MetadataRecord:
    return make_record("ProducerIdsRecord", 0, brokerId=broker_id, brokerEpoch=epoch, nextProducerId=next_id)


def zk_migration(state: int) -> MetadataRecord:
    return make_record("ZkMigrationStateRecord", 0, zkMigrationState=state)


def image_parts_log() -> list[LogEntry]:
    """Every branch of the other image parts' rules that Kafka 4.4 and 3.9 agree on, one record each: configs set,
    overwritten, deleted (a resource emptied), the cluster default, an unknown resource type, a topic's removal and
    re-creation under its name; quotas of a two-part entity, of the default entity, removed; ACLs upserted, removed,
    removed again (refused), an unknown operation; SCRAM per mechanism, removed, removed when absent, an unknown
    mechanism; tokens issued, renewed, removed, one with an owner that is no principal (refused); producer id
    blocks; the ZK migration state."""
    return entries(
        topic(T1, "orders"),
        config("retention.ms", "604800000"), config("cleanup.policy", "compact"),  # 1, 2
        config("min.insync.replicas", "2", "", BROKER_CONFIG),  # 3: the cluster default
        config("log.retention.ms", "1000", "1", BROKER_CONFIG),  # 4
        config("retention.ms", "86400000"),  # 5: overwritten
        config("log.retention.ms", None, "1", BROKER_CONFIG),  # 6: deleted: broker 1's resource is empty, gone
        config("x", "y", "r", 99),  # 7: ConfigResource.Type.forId(99) is UNKNOWN (0)
        quota({"user": "alice", "client-id": None}, "producer_byte_rate", 1024.0),  # 8
        quota({"user": None}, "consumer_byte_rate", 2048.0),  # 9: the default user
        quota({"client-id": None, "user": "alice"}, "producer_byte_rate", remove=True),  # 10: the entity is gone
        acl(ACL1), acl(ACL2, 3, "g", 4, "User:bob", 3),  # 11, 12
        acl(ACL1, operation=3),  # 13: upserted: READ
        remove_acl(ACL2), remove_acl(ACL2),  # 14; 15: refused, no such ACL
        acl(ACL3, operation=99, permission=42),  # 16: unknown codes are UNKNOWN (0)
        scram("alice", SHA256, 4096), scram("alice", SHA512, 8192),  # 17, 18
        remove_scram("alice", SHA256), remove_scram("bob", SHA256),  # 19; 20: absent, no error
        scram("carol", 7, 1000),  # 21: ScramMechanism.fromType(7) is UNKNOWN (0)
        token("tok1", 5_000), token("tok1", 7_000), token("tok2", 6_000, renewers=()),  # 22, 23 (renewed), 24
        remove_token("tok2"), token("tok3", 5_000, owner="alice"),  # 25; 26: refused, not a principal
        producer_ids(1, 5, 1000), producer_ids(2, 7, 2000),  # 27, 28
        zk_migration(3),  # 29: POST_MIGRATION (Kafka 3.9 keeps it; 4.x ignores the record)
        make_record("RemoveTopicRecord", 0, topicId=T1),  # 30: orders' configs go
        topic(T2, "orders"), config("retention.ms", "1"))  # 31, 32: re-created, a config of its own


# The configs (resource type, resource name, key, value) and the next producer id at the end of each real log, as
# the reference fold (tests/test_reference_fold.py) and Kafka's own (tests/test_kafka_referee.py) give them.
CONSUMER_OFFSETS = [(2, "__consumer_offsets", "cleanup.policy", "compact"),
                    (2, "__consumer_offsets", "compression.type", "producer"),
                    (2, "__consumer_offsets", "segment.bytes", "104857600")]
REAL_IMAGE_PARTS = {
    "ldi-poc": (CONSUMER_OFFSETS, 1000),
    "nurlan-3broker-pre33": ([*CONSUMER_OFFSETS, (2, "_schemas", "cleanup.policy", "compact")], None),
    "gani-guru-kafka42": ([*CONSUMER_OFFSETS, (2, "docker-connect-configs", "cleanup.policy", "compact"),
                           (2, "docker-connect-offsets", "cleanup.policy", "compact"),
                           (2, "docker-connect-status", "cleanup.policy", "compact"),
                           (4, "", "min.insync.replicas", "1")], None),
}
