"""Hand-built logs shared by the tests of the reference fold (tests/test_reference_fold.py), of one record's
rule (tests/test_metadata_delta.py) and by the Spark and Kafka comparisons (tests/test_replay_vs_reference.py,
tests/test_kafka_referee.py)."""

from __future__ import annotations

from typing import Any

from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_to_str
from replay.reference import reference_histories

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

