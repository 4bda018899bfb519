"""The three real KRaft logs in ../shared decode completely, with the counts and values they hold."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from records.model import LogEntry, ReadMode, uuid_to_str
from records.sources import ReadReport, read_entries

PRODUCER_STATE_NOTE = "producer-state snapshot (Kafka's *.snapshot files hold producer ids, not metadata); skipped"


def _read(path: Path) -> tuple[list[LogEntry], ReadReport]:
    report = ReadReport()
    return list(read_entries(path, report=report)), report


def _counts(entries: list[LogEntry]) -> dict[tuple[str, int], int]:
    return dict(Counter((e.type_name, e.version) for e in entries))


def _topics(entries: list[LogEntry]) -> dict[str, str]:
    return {e.record["name"]: uuid_to_str(e.record["topicId"]) for e in entries
            if e.type_name == "TopicRecord"}


def _at(entries: list[LogEntry], offset: int) -> LogEntry:
    entry = entries[offset]
    assert entry.offset == offset
    return entry


def _assert_complete(entries: list[LogEntry], last: int) -> None:
    assert [e.offset for e in entries] == list(range(last + 1))
    assert {e.read_mode for e in entries} == {ReadMode.EXACT}


def test_ldi_poc_kafka_3_7(real_log: Callable[[str], Path]) -> None:
    entries, report = _read(real_log("ldi-poc"))
    _assert_complete(entries, 4928)
    assert report.cluster_id == "q1w2e3r4t5y6u7i8o9p0"
    assert not report.issues
    assert _counts(entries) == {
        ("LeaderChangeMessage", 0): 1, ("BeginTransactionRecord", 0): 1, ("FeatureLevelRecord", 0): 1,
        ("ZkMigrationStateRecord", 0): 1, ("EndTransactionRecord", 0): 1, ("RegisterControllerRecord", 0): 1,
        ("RegisterBrokerRecord", 3): 2, ("NoOpRecord", 0): 4801, ("BrokerRegistrationChangeRecord", 0): 2,
        ("BrokerRegistrationChangeRecord", 1): 1, ("TopicRecord", 0): 5, ("ConfigRecord", 0): 3,
        ("PartitionRecord", 1): 54, ("PartitionChangeRecord", 1): 54, ("ProducerIdsRecord", 0): 1}
    # one control record at offset 0, 4,928 metadata records at 1..4928
    assert [e.offset for e in entries if e.is_control] == [0]
    assert _at(entries, 0).record.data == {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
                                           "grantingVoters": [{"voterId": 1}]}
    assert _at(entries, 2).record.data == {"name": "metadata.version", "featureLevel": 19}
    broker = _at(entries, 6).record
    assert broker.type_name == "RegisterBrokerRecord" and broker["brokerId"] == 1
    assert broker["brokerEpoch"] == 6 and broker["fenced"] is True
    assert broker["endPoints"] == [{"name": "PLAINTEXT", "host": "kafka", "port": 9092, "securityProtocol": 0}]
    assert _topics(entries)["__consumer_offsets"] == "gSnfpEbtQfSDpxM2lhEn9A"
    assert "TestTopicPatient" in _topics(entries)
    partition = _at(entries, 420).record
    assert (partition["partitionId"], partition["replicas"], partition["isr"], partition["leader"]) == (0, [1], [1], 1)
    # The incident at the end: controlled shutdown, 54 partitions lose their leader, then the fence.
    assert _at(entries, 4871).record.data == {"brokerId": 1, "brokerEpoch": 8, "fenced": 0,
                                              "inControlledShutdown": 1}
    changes = [e.record for e in entries[4872:4926]]
    assert {c.type_name for c in changes} == {"PartitionChangeRecord"}
    assert {c["leader"] for c in changes} == {-1} and {c["isr"] is None for c in changes} == {True}
    assert _at(entries, 4926).record.data == {"brokerId": 1, "brokerEpoch": 8, "fenced": 1}
    assert {e.raft_leader_epoch for e in entries} == {1}


def test_nurlan_pre_3_3_three_brokers(real_log: Callable[[str], Path]) -> None:
    entries, report = _read(real_log("nurlan-3broker-pre33"))
    _assert_complete(entries, 187)
    assert report.cluster_id == "EP6hyiddQNW5FPrAvR9kWw"
    assert _counts(entries) == {
        ("LeaderChangeMessage", 0): 3, ("RegisterBrokerRecord", 0): 3, ("FenceBrokerRecord", 0): 3,
        ("UnfenceBrokerRecord", 0): 3, ("TopicRecord", 0): 3, ("PartitionRecord", 0): 54,
        ("PartitionChangeRecord", 0): 115, ("ConfigRecord", 0): 4}
    assert _topics(entries) == {"_schemas": "63PU6i9-Tb6YLAtiOJydAQ",
                                "__consumer_offsets": "GvlhOvYeRNGJQgNm7jrSTQ",
                                "iot-sensors": "6-tydMKdQbO5RazHt_Y8-Q"}
    assert [(e.offset, e.record.data) for e in entries if e.type_name == "UnfenceBrokerRecord"] == [
        (4, {"id": 1, "epoch": 0}), (5, {"id": 3, "epoch": 2}), (6, {"id": 2, "epoch": 3})]
    assert [(e.offset, e.record.data) for e in entries if e.type_name == "FenceBrokerRecord"] == [
        (148, {"id": 1, "epoch": 0}), (165, {"id": 2, "epoch": 3}), (187, {"id": 3, "epoch": 2})]
    schemas_p0 = _at(entries, 9).record
    assert schemas_p0["replicas"] == [1, 2, 3] and schemas_p0["isr"] == [1, 2, 3] and schemas_p0["leader"] == 1
    change = _at(entries, 68).record
    assert (change["partitionId"], change["isr"], change["leader"], change["replicas"]) == (2, [3], 3, None)
    assert {e.raft_leader_epoch for e in entries} == {1, 2, 3}
    assert any(note.endswith(PRODUCER_STATE_NOTE) and "00000000000000000188.snapshot" in note
               for note in report.notes)


def test_gani_guru_kafka_4_2(real_log: Callable[[str], Path]) -> None:
    entries, report = _read(real_log("gani-guru-kafka42"))
    _assert_complete(entries, 3512)
    assert report.cluster_id == "5L6g3nShT-eMCtK--X86sw"
    assert _counts(entries) == {
        ("LeaderChangeMessage", 0): 2, ("BeginTransactionRecord", 0): 1, ("FeatureLevelRecord", 0): 6,
        ("ConfigRecord", 0): 7, ("EndTransactionRecord", 0): 1, ("RegisterControllerRecord", 0): 2,
        ("RegisterBrokerRecord", 3): 2, ("BrokerRegistrationChangeRecord", 0): 3,
        ("BrokerRegistrationChangeRecord", 1): 1, ("NoOpRecord", 0): 3295, ("TopicRecord", 0): 8,
        ("PartitionRecord", 2): 81, ("PartitionChangeRecord", 2): 100, ("RemoveTopicRecord", 0): 4}
    assert _at(entries, 2).record.data == {"name": "metadata.version", "featureLevel": 29}
    assert uuid_to_str(_at(entries, 880).record["topicId"]) == "UDhsDF_6SPamELUIv_BS0A"
    elr = _at(entries, 1719).record
    assert (elr["isr"], elr["leader"], elr["eligibleLeaderReplicas"], elr["lastKnownElr"]) == ([], -1, [1], [1])
    assert _at(entries, 1777).record.data == {"brokerId": 1, "brokerEpoch": 1774, "fenced": -1}
    assert _at(entries, 18).record["eligibleLeaderReplicas"] is None  # v2 PartitionRecord, ELR untouched
    assert {e.raft_leader_epoch for e in entries} == {1, 2}
    # Kafka 4.2 writes no version newer than the October-2024 definitions knew (RegisterBrokerRecord v4 and
    # BrokerRegistrationChangeRecord v3 came with 4.3): every record is read in its own version's layout, so none
    # was reported under another version before the 4.4 definitions either.
    newest_42 = {"RegisterBrokerRecord": 3, "BrokerRegistrationChangeRecord": 2}
    assert all(e.record.layout_version == e.version <= newest_42.get(e.type_name, e.version) for e in entries)
    # The bootstrap transaction sets min.insync.replicas with ELR enabled, without a ClearElrRecord: Kafka adds one
    # only to an incrementalAlterConfigs result, and this log never has one.
    assert _at(entries, 3).record.data == {"name": "eligible.leader.replicas.version", "featureLevel": 1}
    assert _at(entries, 8).record["name"] == "min.insync.replicas"
    assert _at(entries, 9).type_name == "EndTransactionRecord"
    assert not any(e.type_name in ("ClearElrRecord", "UnregisterControllerRecord") for e in entries)
    assert any("00000000000000001772.snapshot" in note and note.endswith(PRODUCER_STATE_NOTE)
               for note in report.notes)


@pytest.mark.parametrize(("name", "expected"), [
    ("ldi-poc", [("SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": 0}),
                 ("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 19}),
                 ("SnapshotFooterRecord", {"version": 0})]),
    ("gani-guru-kafka42", [("SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": 0}),
                           ("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 29}),
                           ("FeatureLevelRecord", {"name": "eligible.leader.replicas.version",
                                                   "featureLevel": 1}),
                           ("FeatureLevelRecord", {"name": "group.version", "featureLevel": 1}),
                           ("FeatureLevelRecord", {"name": "share.version", "featureLevel": 1}),
                           ("FeatureLevelRecord", {"name": "streams.version", "featureLevel": 1}),
                           ("FeatureLevelRecord", {"name": "transaction.version", "featureLevel": 2}),
                           ("SnapshotFooterRecord", {"version": 0})]),
])
def test_bootstrap_checkpoints(real_log: Callable[[str], Path], name: str,
                               expected: list[tuple[str, dict]]) -> None:
    entries, _ = _read(real_log(name) / "bootstrap.checkpoint")
    assert [(e.type_name, e.record.data) for e in entries] == expected
    assert [e.offset for e in entries] == list(range(len(expected)))
    assert [e.is_control for e in entries] == [True] + [False] * (len(expected) - 2) + [True]


def test_producer_state_snapshot_is_refused_with_a_clear_message(real_log: Callable[[str], Path]) -> None:
    from records.errors import RecordsError
    path = real_log("nurlan-3broker-pre33") / "__cluster_metadata-0" / "00000000000000000188.snapshot"
    with pytest.raises(RecordsError, match=r"producer-state snapshot \(\*\.snapshot\), not metadata"):
        list(read_entries(path))
