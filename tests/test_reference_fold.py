"""The reference fold (the oracle of the Spark replay): Kafka's rules on hand-built logs, the real
logs in ../shared and every simulator scenario."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import simulator
from records.kafka_constants import MIGRATING_DIR, UNASSIGNED_DIR
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_to_str
from records.sources import read_entries
from replay.reference import (
    TABLES,
    VERSION_COLUMNS,
    current_rows,
    image_at,
    reference_histories,
)

REAL = Path("/work/shared/data/real")
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


# --- Partitions ----------------------------------------------------------------------------------


def test_partition_record_defaults_and_row_shape() -> None:
    h = history(topic(), partition(directories=[]))
    (row,) = part_rows(h)
    assert row == {
        "cluster_id": "c1", "topic_id": T1S, "topic_name": "t", "partition_id": 0, "leader": 1, "leader_epoch": 0,
        "partition_epoch": 0, "isr": [1, 2, 3], "replicas": [1, 2, 3], "adding_replicas": [],
        "removing_replicas": [], "eligible_leader_replicas": [], "last_known_elr": [], "leader_recovery_state": 0,
        "directories": [MIGRATING_DIR] * 3, "valid_from_offset": 1, "valid_to_offset": None,
        "valid_from_time_ms": 1001, "valid_to_time_ms": None, "cause_offset": 1, "cause_type": "PartitionRecord"}
    assert MIGRATING_DIR == "AAAAAAAAAAAAAAAAAAAAAA" and UNASSIGNED_DIR == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert set(h) == set(TABLES)
    for table in TABLES[:-1]:
        assert all(set(VERSION_COLUMNS) <= set(r) for r in h[table])


def test_leader_no_change_vs_naming_the_current_leader() -> None:
    h = history(topic(), partition(), change(isr=[1, 2]), change(leader=1), change(leader=-1), change(leader=2))
    rows = part_rows(h)
    assert [(r["leader"], r["leader_epoch"], r["partition_epoch"]) for r in rows] == [
        (1, 0, 0), (1, 0, 1), (1, 1, 2), (-1, 2, 3), (2, 3, 4)]
    assert [r["isr"] for r in rows] == [[1, 2, 3], [1, 2], [1, 2], [1, 2], [1, 2]]
    assert [(r["valid_from_offset"], r["valid_to_offset"]) for r in rows] == [
        (1, 2), (2, 3), (3, 4), (4, 5), (5, None)]
    assert rows[0]["valid_to_time_ms"] == 1002 and rows[-1]["cause_type"] == "PartitionChangeRecord"


def test_a_change_that_changes_nothing_still_is_a_version() -> None:
    rows = part_rows(history(topic(), partition(), change()))
    assert [r["partition_epoch"] for r in rows] == [0, 1]
    assert rows[0]["leader_epoch"] == rows[1]["leader_epoch"] == 0


def test_null_arrays_keep_and_empty_arrays_set() -> None:
    h = history(topic(), partition(addingReplicas=[3], removingReplicas=[2]),
                change(eligibleLeaderReplicas=[2], lastKnownElr=[3]),
                change(isr=[1]),
                change(addingReplicas=[], removingReplicas=[], eligibleLeaderReplicas=[]))
    rows = part_rows(h)
    assert [(r["adding_replicas"], r["removing_replicas"]) for r in rows] == [([3], [2])] * 3 + [([], [])]
    assert [(r["eligible_leader_replicas"], r["last_known_elr"]) for r in rows] == [
        ([], []), ([2], [3]), ([2], [3]), ([], [3])]
    assert [r["isr"] for r in rows] == [[1, 2, 3], [1, 2, 3], [1], [1]]


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


def test_clear_elr_empties_elr_and_last_known_elr_where_there_are() -> None:
    h = history(*(e.record for e in elr_clears_log()))
    assert [(r["valid_from_offset"], r["eligible_leader_replicas"], r["last_known_elr"], r["partition_epoch"],
             r["leader"], r["leader_epoch"], r["cause_type"]) for r in part_rows(h, T1S, 0)] == [
        (1, [2], [3], 0, 1, 0, "PartitionRecord"), (6, [], [], 1, 1, 0, "ClearElrRecord"),
        (14, [], [], 3, 2, 1, "ClearElrRecord")]
    assert [(r["valid_from_offset"], r["last_known_elr"], r["partition_epoch"])
            for r in part_rows(h, T1S, 1)] == [(2, [], 0), (7, [3], 1), (9, [], 2)]
    assert [(r["valid_from_offset"], r["eligible_leader_replicas"], r["partition_epoch"], r["cause_type"])
            for r in part_rows(h, T2S, 0)] == [(4, [], 0, "PartitionRecord"), (5, [2, 3], 1, "PartitionChangeRecord"),
                                               (9, [], 2, "ClearElrRecord"), (10, [3], 3, "PartitionChangeRecord"),
                                               (15, [], 4, "ClearElrRecord")]
    assert [(a["offset"], a["reason"]) for a in anomalies(h, "refused")] == [(8, "ELR clear of an unknown topic nope")]
    in_elr = [(r["valid_from_offset"], r["in_elr"]) for r in h["replica_history"]
              if r["topic_id"] == T2S and r["broker_id"] == 2]
    assert in_elr == [(4, False), (5, True), (9, False)]


def test_leader_recovery_state() -> None:
    rows = part_rows(history(topic(), partition(), change(leader=2, leaderRecoveryState=1), change(isr=[2]),
                             change(leaderRecoveryState=0)))
    assert [r["leader_recovery_state"] for r in rows] == [0, 1, 1, 0]


def test_directories_explicit_kept_as_they_are() -> None:
    # Kafka 3.9 and 4.x (PartitionRegistration.merge): a change without directories keeps the old list, position
    # by position, even when the replicas change (the controller writes directories with every new assignment)
    d = [uuid_to_str(x) for x in (D1, D2, D3)]
    rows = part_rows(history(
        topic(), partition(directories=[D1, D2, D3]),
        change(isr=[1, 2]),  # no replicas, no directories: unchanged
        change(replicas=[3, 1, 4], isr=[3, 1]),  # replicas changed, directories not: the same list
        change(directories=[D2, D2, D1]),  # explicit
        change(replicas=[4], isr=[4], directories=[D3])))
    assert [r["directories"] for r in rows] == [d, d, d, [d[1], d[1], d[0]], [d[2]]]


def test_directories_of_another_length_are_refused() -> None:
    h = history(topic(), partition(directories=[D1, D2, D3]),
                change(replicas=[4, 2], isr=[2]),  # 2 replicas, the 3 old directories: Kafka refuses it
                change(replicas=[]),  # refused too
                change(directories=[D1, D2]),  # 2 directories for 3 replicas: refused
                change(replicas=[4, 2], directories=[D1]))  # checkDirectories
    assert [a["offset"] for a in anomalies(h, "refused")] == [2, 3, 4, 5]
    assert [r["directories"] for r in part_rows(h)] == [[uuid_to_str(x) for x in (D1, D2, D3)]]


def test_directories_missing_default_to_migrating_for_the_new_replicas() -> None:
    # defaultToMigrating: no directories (a log before JBOD, metadata.version < 3.7) are MIGRATING for every
    # replica of the new assignment, whatever its count; an empty replica list is accepted then
    rows = part_rows(history(topic(), make_record("PartitionRecord", 0, partitionId=0, topicId=T1, replicas=[1, 2],
                                                  isr=[1, 2], leader=1, leaderEpoch=0, partitionEpoch=0),
                             make_record("PartitionChangeRecord", 0, partitionId=0, topicId=T1, replicas=[2, 5, 6],
                                         addingReplicas=[5, 6]),
                             change(replicas=[5], directories=[]), change(replicas=[])))
    assert [r["directories"] for r in rows] == [[MIGRATING_DIR] * 2, [MIGRATING_DIR] * 3, [MIGRATING_DIR], []]


def test_partition_record_replaces_a_partition() -> None:
    rows = part_rows(history(topic(), partition(), change(leader=2), partition(replicas=(4,), leader=4,
                                                                             leaderEpoch=7, partitionEpoch=9)))
    assert [(r["leader"], r["leader_epoch"], r["partition_epoch"], r["replicas"]) for r in rows] == [
        (1, 0, 0, [1, 2, 3]), (2, 1, 1, [1, 2, 3]), (4, 7, 9, [4])]


# --- Topics --------------------------------------------------------------------------------------


def test_topic_removal_and_recreation_under_the_same_name() -> None:
    h = history(topic(T1, "orders"), partition(T1), partition(T1, 1),
                make_record("RemoveTopicRecord", 0, topicId=T1),
                topic(T2, "orders"), partition(T2))
    assert [(r["topic_id"], r["name"], r["valid_from_offset"], r["valid_to_offset"]) for r in h["topic_history"]] == [
        (T1S, "orders", 0, 3), (T2S, "orders", 4, None)]
    assert [(r["partition_id"], r["valid_to_offset"]) for r in h["partition_history"] if r["topic_id"] == T1S] == [
        (0, 3), (1, 3)]
    assert all(r["valid_to_offset"] == 3 for r in h["replica_history"] if r["topic_id"] == T1S)
    image = image_at(entries(topic(T1, "orders"), partition(T1), partition(T1, 1),
                             make_record("RemoveTopicRecord", 0, topicId=T1), topic(T2, "orders"), partition(T2)), 5)
    assert image.topics == {T2S: "orders"} and list(image.partitions) == [(T2S, 0)]
    assert not h["replay_anomalies"]


def test_refusals() -> None:
    h = history(
        partition(T2),  # 0: partition of an unknown topic
        topic(),  # 1
        change(pid=5, isr=[1]),  # 2: unknown partition
        change(T2, isr=[1]),  # 3: change of an unknown topic
        make_record("RemoveTopicRecord", 0, topicId=T2),  # 4: removal of an unknown topic
        make_record("FenceBrokerRecord", 0, id=7, epoch=1),  # 5: unknown broker
        broker(1, 10),  # 6
        make_record("UnfenceBrokerRecord", 0, id=1, epoch=9),  # 7: stale epoch
        make_record("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=3, fenced=-1),  # 8: stale
        make_record("BrokerRegistrationChangeRecord", 1, brokerId=2, brokerEpoch=3, fenced=-1),  # 9: unknown
    )
    refused = anomalies(h, "refused")
    assert [(a["offset"], a["record_type"]) for a in refused] == [
        (0, "PartitionRecord"), (2, "PartitionChangeRecord"), (3, "PartitionChangeRecord"),
        (4, "RemoveTopicRecord"), (5, "FenceBrokerRecord"), (7, "UnfenceBrokerRecord"),
        (8, "BrokerRegistrationChangeRecord"), (9, "BrokerRegistrationChangeRecord")]
    reasons = [a["reason"] for a in refused]
    assert "unknown topic" in reasons[0] and "unknown partition" in reasons[1] and "unknown topic" in reasons[2]
    assert "unknown topic" in reasons[3] and "unknown broker 7" in reasons[4]
    assert "stale epoch 9 vs current 10" in reasons[5] and "stale epoch 3 vs current 10" in reasons[6]
    assert "unknown broker 2" in reasons[7]
    assert not h["partition_history"]
    assert [r["fenced"] for r in h["broker_history"]] == [True]  # nothing refused was applied


def test_invariants() -> None:
    h = history(topic(), partition(replicas=(1, 2), leader=3, isr=[1, 2, 5]), change(leader=1, isr=[1]),
                broker(1, 10), broker(1, 4))
    inv = anomalies(h, "invariant")
    assert [(a["offset"], a["record_type"]) for a in inv] == [
        (1, "PartitionRecord"), (1, "PartitionRecord"), (4, "RegisterBrokerRecord")]
    assert "leader 3 not in replicas" in inv[0]["reason"] and "ISR [1, 2, 5]" in inv[1]["reason"]
    assert "10 -> 4" in inv[2]["reason"]
    assert part_rows(h)[0]["leader"] == 3  # applied all the same
    assert [r["broker_epoch"] for r in h["broker_history"]] == [10, 4]


# --- Brokers, controllers, features --------------------------------------------------------------


def test_broker_fencing_and_registration_changes() -> None:
    h = history(
        broker(1, 10, rack="r1", logDirs=[D1]),  # 0
        make_record("UnfenceBrokerRecord", 0, id=1, epoch=10),  # 1
        make_record("UnfenceBrokerRecord", 0, id=1, epoch=10),  # 2: no change, no version
        make_record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=10, inControlledShutdown=1),  # 3
        make_record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=10, fenced=1),  # 4
        make_record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=10, fenced=0,
                    logDirs=[D2, D3]),  # 5
        make_record("BrokerRegistrationChangeRecord", 2, brokerId=1, brokerEpoch=10, fenced=-1),  # 6
        broker(1, 10, rack="r1", logDirs=[D2, D3]),  # 7: re-registration, same values: still a version
        make_record("UnregisterBrokerRecord", 0, brokerId=1, brokerEpoch=10),  # 8
    )
    rows = h["broker_history"]
    assert [(r["valid_from_offset"], r["valid_to_offset"], r["fenced"], r["in_controlled_shutdown"]) for r in rows] == [
        (0, 1, True, False), (1, 3, False, False), (3, 4, False, True), (4, 5, True, True), (5, 6, True, True),
        (6, 7, False, True), (7, 8, True, False)]
    assert rows[0]["log_dirs"] == [uuid_to_str(D1)] and rows[4]["log_dirs"] == [uuid_to_str(D2), uuid_to_str(D3)]
    assert rows[0]["endpoints"] == [{"name": "PLAINTEXT", "host": "b1", "port": 9092, "security_protocol": 0}]
    assert rows[0]["rack"] == "r1" and rows[0]["incarnation_id"] == uuid_to_str(INC)
    assert rows[0]["is_migrating_zk_broker"] is False and rows[-1]["cause_type"] == "RegisterBrokerRecord"
    assert not h["replay_anomalies"]


def test_controllers_and_features() -> None:
    h = history(
        make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=19),
        make_record("FeatureLevelRecord", 0, name="kraft.version", featureLevel=1),
        make_record("FeatureLevelRecord", 0, name="kraft.version", featureLevel=1),
        make_record("FeatureLevelRecord", 0, name="kraft.version", featureLevel=0),
        make_record("RegisterControllerRecord", 0, controllerId=3000, incarnationId=INC, zkMigrationReady=True,
                    endPoints=[{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}],
                    features=[{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}]))
    assert [(r["feature"], r["level"], r["valid_from_offset"], r["valid_to_offset"])
            for r in h["feature_history"]] == [("metadata.version", 19, 0, None), ("kraft.version", 1, 1, 3)]
    (c,) = h["controller_history"]
    assert c["controller_id"] == 3000 and c["zk_migration_ready"] is True
    assert c["features"] == [{"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 19}]


def test_unregister_controller_ends_its_registration() -> None:
    register = make_record("RegisterControllerRecord", 0, controllerId=3000, incarnationId=INC,
                           endPoints=[{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}])
    h = history(register, make_record("UnregisterControllerRecord", 0, controllerId=3000),
                make_record("UnregisterControllerRecord", 0, controllerId=3001), register)
    assert [(c["controller_id"], c["valid_from_offset"], c["valid_to_offset"]) for c in h["controller_history"]] == [
        (3000, 0, 1), (3000, 3, None)]
    assert h["replay_anomalies"] == []


def test_replica_history_follows_partitions_and_brokers() -> None:
    h = history(broker(1, 10), broker(2, 11), topic(), partition(replicas=(1, 2), directories=[D1, D2]),  # 0..3
                make_record("UnfenceBrokerRecord", 0, id=1, epoch=10),  # 4: replica 1 changes
                change(isr=[1]),  # 5: replica 2 leaves the ISR
                change(),  # 6: nothing for a replica
                make_record("UnregisterBrokerRecord", 0, brokerId=2, brokerEpoch=11))  # 7
    r1 = [r for r in h["replica_history"] if r["broker_id"] == 1]
    r2 = [r for r in h["replica_history"] if r["broker_id"] == 2]
    assert [(r["valid_from_offset"], r["broker_fenced"], r["is_leader"], r["in_isr"], r["cause_offset"]) for r in r1] \
        == [(3, True, True, True, 3), (4, False, True, True, 4)]
    assert [(r["valid_from_offset"], r["broker_fenced"], r["in_isr"]) for r in r2] == [
        (3, True, True), (5, True, False), (7, None, False)]
    assert r1[0]["directory"] == uuid_to_str(D1) and r2[0]["topic_name"] == "t"


# --- Transactions --------------------------------------------------------------------------------


def test_transaction_commits_at_its_end_as_one_version() -> None:
    log = entries(topic(), partition(),  # 0, 1
                  marker("BeginTransactionRecord"),  # 2
                  change(leader=2), change(isr=[2, 3]),  # 3, 4
                  make_record("NoOpRecord", 0),  # 5
                  marker("EndTransactionRecord"))  # 6
    h = reference_histories(log, "c1")
    rows = part_rows(h)
    assert [(r["valid_from_offset"], r["leader"], r["leader_epoch"], r["partition_epoch"], r["isr"], r["cause_offset"])
            for r in rows] == [(1, 1, 0, 0, [1, 2, 3], 1), (6, 2, 1, 2, [2, 3], 4)]
    assert rows[1]["valid_from_time_ms"] == 1006
    assert image_at(log, 5).partitions[(T1S, 0)].leader == 1  # the state before stays visible
    assert image_at(log, 6).partitions[(T1S, 0)].leader == 2


def test_aborted_and_open_transactions_never_become_visible() -> None:
    log = entries(topic(), partition(),
                  marker("BeginTransactionRecord"), change(leader=2), topic(T2, "gone"),  # 2..4
                  make_record("AbortTransactionRecord", 0, reason="failover"),  # 5
                  change(leader=3),  # 6
                  marker("BeginTransactionRecord"), change(leader=1))  # 7, 8: open at the end
    h = reference_histories(log, "c1")
    assert [(r["valid_from_offset"], r["leader"], r["leader_epoch"]) for r in part_rows(h)] == [(1, 1, 0), (6, 3, 1)]
    assert [r["topic_id"] for r in h["topic_history"]] == [T1S]
    assert image_at(log, 8).partitions[(T1S, 0)].leader == 3


def test_refusals_inside_a_transaction_are_judged_at_the_end() -> None:
    h = history(marker("BeginTransactionRecord"), partition(), topic(), partition(),
                marker("EndTransactionRecord"))
    # the PartitionRecord before its TopicRecord is refused, the one after it applies; both at the End
    assert [(a["offset"], a["kind"]) for a in h["replay_anomalies"]] == [(1, "refused")]
    assert [(r["valid_from_offset"], r["cause_offset"]) for r in part_rows(h)] == [(4, 3)]


def test_transaction_markers_out_of_place_are_refused() -> None:
    h = history(marker("EndTransactionRecord"), make_record("AbortTransactionRecord", 0))
    assert [a["kind"] for a in h["replay_anomalies"]] == ["refused", "refused"]


# --- Snapshot base -------------------------------------------------------------------------------


def test_snapshot_base_is_the_whole_image() -> None:
    snapshot = (10, [topic(T2, "snap"), partition(T2, leader=2, leaderEpoch=4, partitionEpoch=6), broker(1, 3)])
    log = entries(topic(), partition(), broker(9, 1))  # offsets 0..2: before the snapshot, ignored
    log += [LogEntry(offset=10, record=change(T2, leader=3), append_time_ms=2010),
            LogEntry(offset=11, record=make_record("UnfenceBrokerRecord", 0, id=1, epoch=3), append_time_ms=2011)]
    h = reference_histories(log, "c1", base_snapshot=snapshot)
    assert [r["topic_id"] for r in h["topic_history"]] == [T2S]
    rows = part_rows(h, T2S)
    assert [(r["valid_from_offset"], r["valid_from_time_ms"], r["leader"], r["leader_epoch"], r["partition_epoch"])
            for r in rows] == [(9, None, 2, 4, 6), (10, 2010, 3, 5, 7)]
    assert [(r["broker_id"], r["fenced"]) for r in h["broker_history"]] == [(1, True), (1, False)]
    assert not h["replay_anomalies"]
    image = image_at(log, 11, base_snapshot=snapshot)
    assert set(image.topics) == {T2S} and set(image.brokers) == {1}


# --- Real logs -----------------------------------------------------------------------------------


def real(name: str) -> list[LogEntry]:
    path = REAL / name
    if not path.exists():
        pytest.skip(f"real log {path} is not present")
    return list(read_entries(path))


def test_ldi_poc() -> None:
    log = real("ldi-poc")
    h = reference_histories(log, "q1w2e3r4t5y6u7i8o9p0")
    assert not h["replay_anomalies"]
    parts = h["partition_history"]
    at_4870 = current_rows(parts, 4870)
    assert len(at_4870) == 54 and {r["leader"] for r in at_4870} == {1}
    at_4925 = current_rows(parts, 4925)
    assert len(at_4925) == 54
    assert {(r["leader"], r["leader_epoch"], r["partition_epoch"], tuple(r["isr"])) for r in at_4925} == {
        (-1, 1, 1, (1,))}
    (b1,) = [r for r in current_rows(h["broker_history"], 4927) if r["broker_id"] == 1]
    assert b1["fenced"] is True and b1["in_controlled_shutdown"] is True
    image = image_at(log, 4925)
    assert len(image.partitions) == 54 and {p.leader for p in image.partitions.values()} == {-1}


def test_nurlan_fence_at_148() -> None:
    log = real("nurlan-3broker-pre33")
    assert log[148].type_name == "FenceBrokerRecord"
    h = reference_histories(log, "nurlan")
    assert not anomalies(h, "refused")
    (before,) = [r for r in current_rows(h["broker_history"], 147) if r["broker_id"] == 1]
    (after,) = [r for r in current_rows(h["broker_history"], 148) if r["broker_id"] == 1]
    assert before["fenced"] is False and after["fenced"] is True and after["broker_epoch"] == 0
    assert (after["valid_from_offset"], after["cause_type"]) == (148, "FenceBrokerRecord")


def test_gani_guru_topic_removal_at_880() -> None:
    log = real("gani-guru-kafka42")
    assert log[880].type_name == "RemoveTopicRecord"
    gone = "UDhsDF_6SPamELUIv_BS0A"
    h = reference_histories(log, "gani")
    assert not anomalies(h, "refused")
    (t,) = [r for r in h["topic_history"] if r["topic_id"] == gone]
    assert t["valid_to_offset"] == 880
    rows = [r for r in h["partition_history"] if r["topic_id"] == gone]
    assert rows and all(r["valid_to_offset"] is not None and r["valid_to_offset"] <= 880 for r in rows)
    assert [r for r in current_rows(h["partition_history"], 879) if r["topic_id"] == gone]
    assert not [r for r in current_rows(h["replica_history"], 880) if r["topic_id"] == gone]
    image = image_at(log, 880)
    assert gone not in image.topics and not any(tid == gone for tid, _ in image.partitions)


# --- Simulator -----------------------------------------------------------------------------------


def _leaderless_transitions(rows: list[dict[str, Any]]) -> set[tuple[int, str, int, int, int]]:
    """(cause offset, topic id, partition, leader epoch, previous leader) of every change to leader -1."""
    out = set()
    by_key: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault((r["topic_id"], r["partition_id"]), []).append(r)
    for versions in by_key.values():
        for prev, cur in pairwise(versions):
            if cur["leader"] == -1 and prev["leader"] != -1 and prev["valid_to_offset"] == cur["valid_from_offset"]:
                out.add((cur["cause_offset"], cur["topic_id"], cur["partition_id"], cur["leader_epoch"],
                         prev["leader"]))
    return out


SIM_OPTIONS = [simulator.ScenarioOptions(),
               simulator.ScenarioOptions(unclean=True, elr=True, seed=3, metadata_version="4.0"),
               simulator.ScenarioOptions(metadata_version="3.3", seed=5, racks=2)]


@pytest.mark.parametrize("options", SIM_OPTIONS, ids=["3.9", "4.0-unclean-elr", "3.3"])
@pytest.mark.parametrize("scenario", sorted(simulator.SCENARIOS))
def test_simulator_scenarios(scenario: str, options: simulator.ScenarioOptions) -> None:
    try:
        run = simulator.run_scenario(scenario, options)
        log = list(run.entries())
    except simulator.SimulationError as exc:
        pytest.skip(f"{scenario} does not run with these options: {exc}")
    h = reference_histories(log, "sim")
    assert not h["replay_anomalies"], h["replay_anomalies"][:5]
    for r in h["partition_history"]:
        assert r["leader"] == -1 or r["leader"] in r["replicas"]
        assert set(r["isr"]) <= set(r["replicas"])
        assert len(r["directories"]) == len(r["replicas"])
    facts = {(f.offset, f.topic_id, f.partition, f.leader_epoch, f.previous_leader) for f in run.facts.leaderless}
    assert facts == _leaderless_transitions(h["partition_history"])
    if scenario == "lost-last-isr-unclean":
        assert facts  # the story's leaderless partition
    # every open version agrees with the image at the end of the log
    end = log[-1].offset
    image = image_at(log, end)
    assert {(r["topic_id"], r["partition_id"]) for r in current_rows(h["partition_history"], end)} == set(
        image.partitions)
    assert {r["broker_id"] for r in current_rows(h["broker_history"], end)} == set(image.brokers)
    for r in h["replica_history"]:
        assert r["valid_to_offset"] is None or r["valid_from_offset"] < r["valid_to_offset"]
