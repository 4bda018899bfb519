"""The reference fold (the oracle of the Spark replay): its rows and history, transactions, snapshots, the real
logs in ../shared and every simulator scenario. One record's rule is tests/test_metadata_delta.py."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import simulator
from lakehouse.tables import CONFIG_HISTORY, IMAGE_SCHEMAS
from records.kafka_constants import MIGRATING_DIR, UNASSIGNED_DIR
from records.kafka_json import make_record
from records.model import LogEntry, uuid_to_str
from records.sources import read_entries
from replay.reference.fold import (
    TABLES,
    VERSION_COLUMNS,
    current_rows,
    image_at,
    reference_histories,
)
from tests.reference_fold_support import (
    ACL1,
    ACL1S,
    D1,
    D2,
    REAL_IMAGE_PARTS,
    SHA256,
    T1,
    T1S,
    T2,
    T2S,
    acl,
    anomalies,
    broker,
    change,
    config,
    entries,
    history,
    image_parts_log,
    marker,
    part_rows,
    partition,
    producer_ids,
    quota,
    scram,
    token,
    topic,
    zk_migration,
)

REAL = Path("/work/shared/data/real")


# --- Rows: partitions, topics, replicas ----------------------------------------------------------


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


# --- The image's other parts: their history tables (the contract of lakehouse.tables.IMAGE_SCHEMAS) --------


def _spans(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [(*(r[c] for c in columns), r["valid_from_offset"], r["valid_to_offset"], r["cause_type"]) for r in rows]


def test_config_history_versions_and_removal_with_the_topic() -> None:
    h = reference_histories(image_parts_log(), "c1")
    rows = h["config_history"]
    assert rows[0] == {"cluster_id": "c1", "resource_type": 2, "resource_name": "orders", "name": "retention.ms",
                       "value": "604800000", "value_fingerprint": None, "valid_from_offset": 1,
                       "valid_to_offset": 5, "valid_from_time_ms": 1001, "valid_to_time_ms": 1005,
                       "cause_offset": 1, "cause_type": "ConfigRecord"}
    assert _spans(rows, "resource_type", "resource_name", "name", "value") == [
        (2, "orders", "retention.ms", "604800000", 1, 5, "ConfigRecord"),
        (2, "orders", "cleanup.policy", "compact", 2, 30, "ConfigRecord"),
        (4, "", "min.insync.replicas", "2", 3, None, "ConfigRecord"),
        (4, "1", "log.retention.ms", "1000", 4, 6, "ConfigRecord"),
        (2, "orders", "retention.ms", "86400000", 5, 30, "ConfigRecord"),
        (0, "r", "x", "y", 7, None, "ConfigRecord"),
        (2, "orders", "retention.ms", "1", 32, None, "ConfigRecord")]
    assert set(rows[0]) == {f.name for f in IMAGE_SCHEMAS[CONFIG_HISTORY]}


def test_a_restated_value_is_no_new_version_but_a_new_fingerprint_is() -> None:
    log = [LogEntry(offset=i, record=r, append_time_ms=1000 + i, secret_fingerprint=f) for i, (r, f) in enumerate([
        (config("retention.ms", "1"), None), (config("retention.ms", "1"), None),
        (config("ssl.key.password", "(redacted)"), "aa"), (config("ssl.key.password", "(redacted)"), "bb"),
        (scram("alice", SHA256, 4096), "cc"), (scram("alice", SHA256, 4096), "dd")])]
    h = reference_histories(log, "c1")
    assert _spans(h["config_history"], "name", "value_fingerprint") == [
        ("retention.ms", None, 0, None, "ConfigRecord"), ("ssl.key.password", "aa", 2, 3, "ConfigRecord"),
        ("ssl.key.password", "bb", 3, None, "ConfigRecord")]
    assert [(r["name"], r["mechanism"], r["iterations"], r["credential_fingerprint"], r["valid_from_offset"])
            for r in h["scram_history"]] == [("alice", 1, 4096, "cc", 4), ("alice", 1, 4096, "dd", 5)]


def test_client_quota_acl_scram_token_and_producer_id_history() -> None:
    h = reference_histories(image_parts_log(), "c1")
    assert [(r["entity"], r["key"], r["value"], r["valid_from_offset"], r["valid_to_offset"])
            for r in h["client_quota_history"]] == [
        ([{"entity_type": "client-id", "entity_name": None}, {"entity_type": "user", "entity_name": "alice"}],
         "producer_byte_rate", 1024.0, 8, 10),
        ([{"entity_type": "user", "entity_name": None}], "consumer_byte_rate", 2048.0, 9, None)]
    assert h["acl_history"][0] == {
        "cluster_id": "c1", "id": ACL1S, "resource_type": 2, "resource_name": "orders", "pattern_type": 3,
        "principal": "User:alice", "host": "*", "operation": 4, "permission_type": 3, "valid_from_offset": 11,
        "valid_to_offset": 13, "valid_from_time_ms": 1011, "valid_to_time_ms": 1013, "cause_offset": 11,
        "cause_type": "AccessControlEntryRecord"}
    assert _spans(h["acl_history"], "operation") == [
        (4, 11, 13, "AccessControlEntryRecord"), (3, 12, 14, "AccessControlEntryRecord"),
        (3, 13, None, "AccessControlEntryRecord"), (0, 16, None, "AccessControlEntryRecord")]
    assert _spans(h["scram_history"], "name", "mechanism", "iterations") == [
        ("alice", 1, 4096, 17, 19, "UserScramCredentialRecord"), ("alice", 2, 8192, 18, None,
                                                                   "UserScramCredentialRecord"),
        ("carol", 0, 1000, 21, None, "UserScramCredentialRecord")]
    assert h["delegation_token_history"][1] == {
        "cluster_id": "c1", "token_id": "tok1", "owner": "User:alice", "requester": "User:alice",
        "renewers": ["User:bob"], "issue_timestamp": 1000, "max_timestamp": 9000, "expiration_timestamp": 7000,
        "valid_from_offset": 23, "valid_to_offset": None, "valid_from_time_ms": 1023, "valid_to_time_ms": None,
        "cause_offset": 23, "cause_type": "DelegationTokenRecord"}
    assert _spans(h["delegation_token_history"], "token_id", "expiration_timestamp") == [
        ("tok1", 5000, 22, 23, "DelegationTokenRecord"), ("tok1", 7000, 23, None, "DelegationTokenRecord"),
        ("tok2", 6000, 24, 25, "DelegationTokenRecord")]
    assert _spans(h["producer_id_history"], "next_producer_id", "broker_id", "broker_epoch") == [
        (1000, 1, 5, 27, 28, "ProducerIdsRecord"), (2000, 2, 7, 28, None, "ProducerIdsRecord")]
    assert _spans([r for r in h["feature_history"] if r["feature"] == "zkMigrationState"], "level") == [
        (3, 29, None, "ZkMigrationStateRecord")]
    for table in IMAGE_SCHEMAS:
        assert all(set(r) == {f.name for f in IMAGE_SCHEMAS[table]} for r in h[table]), table


def test_zk_migration_state_none_is_no_feature_row() -> None:
    h = history(zk_migration(1), zk_migration(0), zk_migration(0))
    assert _spans(h["feature_history"], "feature", "level") == [
        ("zkMigrationState", 1, 0, 1, "ZkMigrationStateRecord")]


def test_image_parts_in_transactions_and_snapshots() -> None:
    """Committed together at the End, never when aborted; a snapshot base holds them as it holds the rest."""
    records = [marker("BeginTransactionRecord"), config("a", "1"), config("a", "2"),
               quota({"user": "u"}, "k", 1.0), marker("EndTransactionRecord"),
               marker("BeginTransactionRecord"), acl(ACL1), producer_ids(1, 1, 5000),
               make_record("AbortTransactionRecord", 0), token("t", 1)]
    h = history(*records)
    assert _spans(h["config_history"], "value", "cause_offset") == [("2", 2, 4, None, "ConfigRecord")]
    assert [r["valid_from_offset"] for r in h["client_quota_history"]] == [4]
    assert not h["acl_history"] and not h["producer_id_history"]
    assert [r["valid_from_offset"] for r in h["delegation_token_history"]] == [9]
    snapshot = (20, [config("a", "3"), producer_ids(2, 3, 7000), scram("bob", SHA256, 10)])
    tail = entries(*[topic()] * 21)[20:]
    h = reference_histories(tail, "c1", base_snapshot=snapshot)
    assert _spans(h["config_history"], "value") == [("3", 19, None, "ConfigRecord")]
    assert _spans(h["producer_id_history"], "next_producer_id") == [(7000, 19, None, "ProducerIdsRecord")]
    image = image_at(tail, 20, base_snapshot=snapshot)
    assert image.scram[("bob", SHA256)].iterations == 10 and image.producer_ids.next_producer_id == 7000


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


def configs_of(rows: list[dict[str, Any]], offset: int) -> list[tuple[int, str, str, str]]:
    return sorted((r["resource_type"], r["resource_name"], r["name"], r["value"]) for r in current_rows(rows, offset))


@pytest.mark.parametrize("name", sorted(REAL_IMAGE_PARTS))
def test_real_logs_configs_and_producer_ids(name: str) -> None:
    log = real(name)
    h = reference_histories(log, name)
    end = log[-1].offset
    configs, next_producer_id = REAL_IMAGE_PARTS[name]
    assert configs_of(h["config_history"], end) == configs
    assert all(r["value_fingerprint"] is None and r["valid_to_offset"] is None for r in h["config_history"])
    producer = [r["next_producer_id"] for r in current_rows(h["producer_id_history"], end)]
    assert producer == ([] if next_producer_id is None else [next_producer_id])
    image = image_at(log, end)
    assert sorted((*resource, key, v.value) for resource, keys in image.configs.items()
                  for key, v in keys.items()) == configs
    assert not (image.client_quotas or image.acls or image.scram or image.delegation_tokens)


def test_ldi_poc_producer_id_block_and_migration_state() -> None:
    """ldi-poc's one ProducerIdsRecord (offset 907: broker 1, epoch 8) and its ZkMigrationStateRecord NONE (offset
    3), which is no feature row."""
    log = real("ldi-poc")
    h = reference_histories(log, "ldi")
    assert _spans(h["producer_id_history"], "next_producer_id", "broker_id", "broker_epoch") == [
        (1000, 1, 8, 907, None, "ProducerIdsRecord")]
    assert log[3].type_name == "ZkMigrationStateRecord"
    assert not [r for r in h["feature_history"] if r["feature"] == "zkMigrationState"]
    assert [r["valid_from_offset"] for r in h["config_history"]] == [417, 418, 419]
