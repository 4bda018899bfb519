"""The named incident stories (simulator.incidents): each records the facts its log shows."""

from __future__ import annotations

from records.model import uuid_to_str
from simulator import (
    ScenarioOptions,
)
from tests.simulator_fold import fold, generate


def test_scenario_lost_last_isr_unclean_facts() -> None:
    entries, run = generate("lost-last-isr-unclean", ScenarioOptions(seed=5))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    assert by_offset[k["leaderless_offset"]].record["leader"] == -1
    assert k["fence_offset"] > k["leaderless_offset"]  # same batch: partition changes, then fence
    fence_batch = by_offset[k["fence_offset"]].batch_base_offset
    assert fence_batch == by_offset[k["leaderless_offset"]].batch_base_offset
    rec = by_offset[k["unclean_offset"]].record
    assert rec["leader"] == k["unclean_leader"] != k["last_isr_member"]
    assert rec["isr"] == [k["unclean_leader"]]
    assert rec["leaderRecoveryState"] == 1 and k["unclean_epoch"] > k["leaderless_epoch"]
    assert by_offset[k["recovered_offset"]].record["leaderRecoveryState"] == 0
    assert [f.offset for f in run.facts.leaderless] == [k["leaderless_offset"]]
    assert [f.offset for f in run.facts.unclean_elections] == [k["unclean_offset"]]


def test_scenario_rolling_restart_facts() -> None:
    entries, run = generate("rolling-restart", ScenarioOptions(seed=3, metadata_version="3.7"))
    by_offset = {e.offset: e for e in entries}
    restarts = run.facts.key["restarts"]
    assert [r["broker"] for r in restarts] == [1, 2, 3, 4, 5, 6]
    for r in restarts:
        assert r["new_epoch"] > r["old_epoch"]
        assert by_offset[r["shutdown_offset"]].record["inControlledShutdown"] == 1
        assert by_offset[r["register_offset"]].record["brokerEpoch"] == r["register_offset"]
    assert not run.facts.leaderless
    assert all(p.leader == p.replicas[0] for p in run.sim.partitions.values())


def test_scenario_rack_outage_facts() -> None:
    _, run = generate("rack-outage", ScenarioOptions(seed=4))
    k = run.facts.key
    assert k["brokers"] == [2, 5] and [f.broker_id for f in run.facts.fenced] == [2, 5]
    assert not run.facts.leaderless  # replicas span racks: every partition kept a leader


def test_scenario_flapping_broker_facts() -> None:
    _, run = generate("flapping-broker", ScenarioOptions(seed=6))
    k = run.facts.key
    assert k["epochs"] == sorted(k["epochs"]) and len(set(k["epochs"])) == 6
    assert [f.offset for f in run.facts.fenced] == k["fence_offsets"]
    assert [f.broker_epoch for f in run.facts.fenced] == k["epochs"][:5]


def test_scenario_reassignment_under_failure_facts() -> None:
    _, run = generate("reassignment-under-failure", ScenarioOptions(seed=7))
    k = run.facts.key
    kinds = [(r.kind, r.partition, r.offset) for r in run.facts.reassignments]
    assert ("started", 0, k["a_started"]) in kinds and ("cancelled", 0, k["a_cancelled"]) in kinds
    assert ("completed", 1, k["b_completed"]) in kinds
    assert k["a_started"] < k["a_crash_offset"] < k["a_cancelled"] < k["b_started"] < k["b_crash_offset"]
    assert sorted(run.sim.partition("topic-0", 1).replicas) == sorted(k["b_target"])


def test_scenario_controlled_shutdown_facts() -> None:
    entries, run = generate("controlled-shutdown", ScenarioOptions(seed=8))
    k = run.facts.key
    batch = [e for e in entries if e.batch_base_offset == k["shutdown_offset"]]
    moved = {(run.facts.key["broker"], e.record["partitionId"]) for e in batch[1:] if e.record["leader"] >= 0}
    assert len(moved) == len([t for t in k["led_partitions"]]) or len(moved) >= 1
    assert run.facts.fenced[0].reason == "controlled-shutdown"
    assert run.facts.fenced[0].offset == k["fence_offset"]


def test_scenario_topic_recreate_facts() -> None:
    entries, run = generate("topic-recreate", ScenarioOptions(seed=9))
    k = run.facts.key
    assert k["first_id"] != k["second_id"]
    by_offset = {e.offset: e for e in entries}
    assert uuid_to_str(by_offset[k["deleted_offset"]].record["topicId"]) == k["first_id"]
    assert by_offset[k["recreated_offset"]].record["name"] == "orders"
    assert run.sim.topics["orders"].topic_id_str == k["second_id"]


def test_scenario_min_isr_change_clears_elrs() -> None:
    """Each min.insync.replicas change comes with a ClearElrRecord in its batch (KIP-966): the first finds no ELR,
    the second clears topic-0's, the third every other topic's; the simulator's partitions say the same."""
    entries, run = generate("min-isr-change", ScenarioOptions(seed=11, metadata_version="4.0", elr=True))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    clears = [(e.offset, e.record["topicName"]) for e in entries if e.type_name == "ClearElrRecord"]
    assert clears == [(k["cluster_min_isr_2_offset"] + 1, ""), (k["topic_min_isr_1_offset"] + 1, "topic-0"),
                      (k["cluster_min_isr_1_offset"] + 1, "")]
    for offset, _ in clears:
        assert by_offset[offset].batch_base_offset == by_offset[offset - 1].batch_base_offset  # one atomic batch
    f = fold(entries, elr=True)
    assert not any(p.elr or p.last_known_elr for p in f.parts.values())
    assert not any(p.eligible_leader_replicas or p.last_known_elr for p in run.sim.partitions.values())
    # ELRs there were to clear: the failed brokers were the last ISR members of some partitions
    elr_before = [e for e in entries if e.type_name == "PartitionChangeRecord" and e.record["eligibleLeaderReplicas"]]
    assert elr_before and {b for e in elr_before for b in e.record["eligibleLeaderReplicas"]} <= set(k["failed"])


def test_scenario_aborted_transaction_facts() -> None:
    entries, run = generate("aborted-transaction", ScenarioOptions(seed=10, max_records_per_batch=40))
    k = run.facts.key
    by_offset = {e.offset: e for e in entries}
    assert by_offset[k["aborted_begin"]].type_name == "BeginTransactionRecord"
    assert by_offset[k["failover_offset"]].type_name == "LeaderChangeMessage"
    assert by_offset[k["aborted_end"]].type_name == "AbortTransactionRecord"
    assert k["aborted_begin"] < k["failover_offset"] < k["aborted_end"]
    begin_epoch = by_offset[k["aborted_begin"]].raft_leader_epoch
    assert by_offset[k["aborted_end"]].raft_leader_epoch == begin_epoch + 1
    f = fold(entries)
    hidden = set(range(k["aborted_begin"], k["failover_offset"]))
    assert not hidden & f.visible_offsets  # aborted records never become visible
    assert list(f.topics.values()).count("bulk") == 1
    assert uuid_to_str(next(t for t, n in f.topics.items() if n == "bulk")) == k["committed_topic_id"]


def test_scenario_image_changes_facts() -> None:
    """Each of the operators' questions has its answer at the offset the facts name (seed 0, metadata.version 3.9:
    the docs' example log)."""
    entries, run = generate("image-changes", ScenarioOptions())
    k = run.facts.key
    data = {e.offset: (e.type_name, e.record.data) for e in entries}
    assert (k["orders_created_offset"], k["retention_offset"]) == (43, 171)
    assert data[k["orders_created_offset"] + 1] == ("ConfigRecord", {
        "resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "604800000"})
    assert data[171] == ("ConfigRecord", {"resourceType": 2, "resourceName": "orders", "name": "retention.ms",
                                          "value": "86400000"})
    # unclean election allowed by the topic's config, in the batch that unfences the stale replica
    assert (k["leaderless_offset"], k["unclean_config_offset"], k["unclean_election_offset"]) == (289, 351, 376)
    assert data[351] == ("ConfigRecord", {"resourceType": 2, "resourceName": "payments",
                                          "name": "unclean.leader.election.enable", "value": "true"})
    kind, change = data[376]
    assert kind == "PartitionChangeRecord" and change["leader"] == k["stale_replica"] == 4
    assert change["isr"] == [4] and change["leaderRecoveryState"] == 1
    assert data[375][0] == "BrokerRegistrationChangeRecord" and data[375][1]["brokerId"] == 4
    assert [(f.offset, f.topic) for f in run.facts.unclean_elections] == [(376, "payments")]
    # an ACL granted then revoked for alice
    assert (k["acl_granted_offset"], k["acl_revoked_offset"]) == (617, 858)
    kind, acl = data[617]
    assert kind == "AccessControlEntryRecord" and uuid_to_str(acl["id"]) == k["acl_id"]
    assert (acl["principal"], acl["resourceName"], acl["operation"], acl["permissionType"]) == (
        "User:alice", "orders", 4, 3)
    assert data[858] == ("RemoveAccessControlEntryRecord", {"id": acl["id"]})
    # a SCRAM user created and her password changed: same user and mechanism, new salt and keys
    created, changed = data[k["scram_created_offset"]][1], data[k["scram_changed_offset"]][1]
    assert (k["scram_created_offset"], k["scram_changed_offset"]) == (859, 1460)
    assert (created["name"], created["mechanism"], created["iterations"]) == ("alice", 2, 8192)
    assert (changed["name"], changed["mechanism"]) == ("alice", 2) and changed["storedKey"] != created["storedKey"]
    assert [data[k[name]][1]["value"] for name in ("keystore_set_offset", "keystore_changed_offset")] == [
        "keystore-secret-1", "keystore-secret-2"]
    assert data[k["cluster_default_deleted_offset"]][1] == {
        "resourceType": 4, "resourceName": "", "name": "log.cleaner.threads", "value": None}
    assert data[k["quota_offset"]][1]["entity"] == [{"entityType": "user", "entityName": "alice"}]
    token = data[k["token_renewed_offset"]][1]
    assert token["tokenId"] == k["token_id"] and token["owner"] == "User:alice"
    assert data[k["token_expired_offset"]] == ("RemoveDelegationTokenRecord", {"tokenId": k["token_id"]})
    assert data[k["producer_ids_offset"]][1]["nextProducerId"] == 1000
    assert len(entries) == 2124
    fold(entries)


def test_scenario_image_changes_before_scram_and_tokens() -> None:
    """Metadata version 3.0 knows neither SCRAM nor delegation tokens: their stories are left out (-1)."""
    _, run = generate("image-changes", ScenarioOptions(metadata_version="3.0"))
    k = run.facts.key
    assert (k["scram_created_offset"], k["scram_changed_offset"], k["token_id"]) == (-1, -1, "")
    assert k["retention_offset"] > 0 and k["unclean_election_offset"] > k["unclean_config_offset"]
