"""Kafka's ``MetadataDelta.replay`` of one record (``replay/reference/metadata_delta.py``): each rule on a hand-built
log (a PartitionChangeRecord's merge, ClearElr, directories defaulting, refused fences and changes, invariants) and
the rule functions called directly with concrete values. Fold-level behaviour (transactions, snapshots, whole
logs, simulator scenarios) is tests/test_reference_fold.py."""

from __future__ import annotations

import pytest

from records.kafka_constants import LENGTHS, MIGRATING_DIR
from records.kafka_json import make_record
from records.model import LogEntry, uuid_to_str
from replay.reference.fold import image_at, reference_histories
from replay.reference.image import Anomaly, Broker, Changes, Image, Partition
from replay.reference.image_parts_delta import Refused
from replay.reference.metadata_delta import (
    MetadataDelta,
    clear_elr,
    get_broker_or_throw,
    merge,
    partition_registration,
)
from tests.bad_inputs_support import (
    BROKER_VERSIONS,
    CLUSTER,
    PARTITION_VERSIONS,
    REFUSALS,
    REPEATED,
    REPEATED_REPLICAS,
    REPEATED_VERSIONS,
    bad_inputs_log,
    broker_versions,
    partition_versions,
    refusals,
    repeated_replicas_log,
    replica_versions,
)
from tests.reference_fold_support import (
    D1,
    D2,
    D3,
    INC,
    T1,
    T1S,
    T2,
    T2S,
    anomalies,
    broker,
    change,
    elr_clears_log,
    history,
    part_rows,
    partition,
    topic,
)

# --- One record's rule on a hand-built log -------------------------------------------------------


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
    assert [(a["offset"], a["reason"]) for a in anomalies(h, "refused")] == [
        (8, "ClearElrRecord of unknown topic nope")]
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
    assert "unknown topic" in reasons[0] and "unknown partition" in reasons[1] and "unknown partition" in reasons[2]
    assert "unknown topic" in reasons[3] and "unknown broker 7" in reasons[4]
    assert "stale broker epoch 9 for broker 1 (current epoch 10)" in reasons[5]
    assert "stale broker epoch 3 for broker 1 (current epoch 10)" in reasons[6]
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


# --- Inputs no real controller writes (issue 18 item 5) -----------------------------------------


def test_the_reference_fold_refuses_what_kafka_refuses() -> None:
    tables = reference_histories(bad_inputs_log(), CLUSTER)
    assert refusals(tables["replay_anomalies"]) == REFUSALS
    assert partition_versions(tables["partition_history"]) == PARTITION_VERSIONS
    assert broker_versions(tables["broker_history"]) == BROKER_VERSIONS
    image = image_at(bad_inputs_log(), 11)
    assert image.partitions[(T1S, 0)].leader_recovery_state == 1
    assert (image.brokers[1].fenced, image.brokers[1].in_controlled_shutdown) == (False, True)


def test_the_reference_fold_keeps_repeated_replica_ids() -> None:
    tables = reference_histories(repeated_replicas_log(), REPEATED)
    assert refusals(tables["replay_anomalies"], REPEATED) == []
    assert partition_versions(tables["partition_history"], REPEATED) == REPEATED_VERSIONS
    assert replica_versions(tables["replica_history"]) == REPEATED_REPLICAS
    kept = image_at(repeated_replicas_log(), 3).partitions[(T1S, 0)]
    assert (kept.replicas, kept.isr, kept.directories) == ((2, 2, 3), (2, 3, 3), (MIGRATING_DIR,) * 3)


# --- The rule functions, called directly ---------------------------------------------------------


def image_with_partition(**fields: object) -> Image:
    """Topic t (T1) with partition 0 on replicas 1, 2, 3, leader 1, epochs 4 and 7, all directories MIGRATING."""
    values = {"topic_id": T1S, "partition_id": 0, "replicas": (1, 2, 3), "isr": (1, 2, 3), "removing_replicas": (),
              "adding_replicas": (), "leader": 1, "leader_recovery_state": 0, "leader_epoch": 4,
              "partition_epoch": 7, "directories": (MIGRATING_DIR,) * 3, "eligible_leader_replicas": (),
              "last_known_elr": ()}
    values.update(fields)
    registration = Partition(**values)  # type: ignore[arg-type]
    return Image(topics={T1S: "t"}, partitions={(T1S, 0): registration})


def registered_broker(broker_id: int = 1, epoch: int = 10) -> Broker:
    return Broker(broker_id=broker_id, broker_epoch=epoch, incarnation_id=uuid_to_str(INC), fenced=True,
                  in_controlled_shutdown=False, rack=None, endpoints=(), features=(), log_dirs=(),
                  is_migrating_zk_broker=False)


def test_merge_with_no_leader_change_keeps_the_leader_and_bumps_the_partition_epoch() -> None:
    merged = merge(image_with_partition(), change(leader=-2, isr=[1, 2]))
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (1, 4, 8)
    assert merged.isr == (1, 2) and merged.replicas == (1, 2, 3)


def test_merge_naming_a_leader_bumps_both_epochs() -> None:
    merged = merge(image_with_partition(), change(leader=3))
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (3, 5, 8)
    assert merged.isr == (1, 2, 3) and merged.leader_recovery_state == 0


def test_merge_leader_recovery_state_no_change_keeps_and_a_value_sets() -> None:
    image = image_with_partition(leader_recovery_state=1)
    assert merge(image, change(leaderRecoveryState=-1)).leader_recovery_state == 1
    assert merge(image, change(leaderRecoveryState=0)).leader_recovery_state == 0
    with pytest.raises(Refused, match=r"^Value 2 is not a valid leader recovery state$"):
        merge(image, change(leaderRecoveryState=2))


def test_merge_refuses_an_unknown_topic_or_partition() -> None:
    with pytest.raises(Refused, match=f"^PartitionChangeRecord of unknown partition {T2S}-0$"):
        merge(image_with_partition(), change(T2))
    with pytest.raises(Refused, match=f"^PartitionChangeRecord of unknown partition {T1S}-5$"):
        merge(image_with_partition(), change(pid=5))


def test_merge_refuses_directories_of_another_length_than_the_replicas() -> None:
    with pytest.raises(Refused, match=f"^PartitionChangeRecord of {T1S}-0: {LENGTHS}$"):
        merge(image_with_partition(), change(replicas=[1, 2, 3], directories=[D1, D2]))


def test_partition_registration_of_a_live_topic() -> None:
    image = Image(topics={T1S: "t"})
    registration = partition_registration(image, partition(replicas=(4, 5), leader=5, directories=[D1, D2]))
    assert (registration.topic_id, registration.partition_id, registration.replicas, registration.leader) == (
        T1S, 0, (4, 5), 5)
    assert registration.directories == (uuid_to_str(D1), uuid_to_str(D2))
    assert (registration.eligible_leader_replicas, registration.last_known_elr) == ((), ())
    with pytest.raises(Refused, match=rf"^PartitionRecord of unknown topic id {T2S} \(partition 0\)$"):
        partition_registration(image, partition(T2))
    with pytest.raises(Refused, match=f"^PartitionRecord of {T1S}-0: {LENGTHS}$"):
        partition_registration(image, partition(replicas=(4, 5), directories=[D3]))


def test_clear_elr_direct() -> None:
    image = image_with_partition(eligible_leader_replicas=(2,), last_known_elr=(3,))
    assert clear_elr(image, "t") == [(T1S, 0)]
    cleared = image.partitions[(T1S, 0)]
    assert (cleared.eligible_leader_replicas, cleared.last_known_elr, cleared.partition_epoch) == ((), (), 8)
    assert clear_elr(image, "") == []  # nothing left to clear: untouched
    assert image.partitions[(T1S, 0)].partition_epoch == 8
    with pytest.raises(Refused, match=r"^ClearElrRecord of unknown topic nope$"):
        clear_elr(image, "nope")


def test_get_broker_or_throw() -> None:
    image = Image(brokers={1: registered_broker(1, 10)})
    assert get_broker_or_throw(image, 1, 10) == registered_broker(1, 10)
    with pytest.raises(Refused, match=r"^stale broker epoch 9 for broker 1 \(current epoch 10\)$"):
        get_broker_or_throw(image, 1, 9)
    with pytest.raises(Refused, match=r"^unknown broker 2$"):
        get_broker_or_throw(image, 2, 10)


def test_metadata_delta_replay_notes_a_refusal_and_changes_nothing() -> None:
    delta = MetadataDelta()
    changes = Changes()
    for offset, record in enumerate([topic(), broker(1, 10)]):
        delta.replay(LogEntry(offset=offset, record=record, append_time_ms=0), changes)
    before = delta.image.copy()
    stale = make_record("UnfenceBrokerRecord", 0, id=1, epoch=9)
    delta.replay(LogEntry(offset=2, record=stale, append_time_ms=0), changes)
    assert changes.anomalies == [Anomaly(2, "UnfenceBrokerRecord", "refused",
                                         "stale broker epoch 9 for broker 1 (current epoch 10)")]
    assert delta.image == before and delta.image.brokers[1].fenced is True
    assert changes.topics == {T1S: (0, "TopicRecord")} and changes.brokers == {1: (1, "RegisterBrokerRecord")}
    assert changes.registered_topics == {T1S} and changes.registered_brokers == {1}


def test_every_record_kafkas_metadata_delta_replays_is_dispatched() -> None:
    """Kafka 4.4's ``MetadataDelta.replay`` switch (its bytecode: every metadata record type but the KIP-868 markers,
    which its loader takes, with NoOpRecord and ZkMigrationStateRecord doing nothing to its image) is ours: every
    other record type has a rule here or in replay.reference.image_parts_delta, UnregisterControllerRecord included."""
    from records.definitions import definitions
    from replay.reference.image_parts_delta import PART_REPLAYS

    metadata = {name for name, message in definitions().items() if not message.is_control}
    handled = set(MetadataDelta().replays) | set(PART_REPLAYS)
    assert metadata - handled == {"NoOpRecord", "BeginTransactionRecord", "EndTransactionRecord",
                                  "AbortTransactionRecord"}
    assert {"UnregisterControllerRecord", "ZkMigrationStateRecord", "ConfigRecord", "ProducerIdsRecord"} <= handled


def test_remove_topic_record_also_removes_its_configs() -> None:
    """``MetadataDelta.replay(RemoveTopicRecord)``: TopicsDelta gives the name, ConfigurationsDelta drops its configs;
    the other resources (a topic of another name, the cluster default) stay; a refused removal keeps them."""
    delta, changes = MetadataDelta(), Changes()
    records = [make_record("TopicRecord", 0, name="t", topicId=T1),
               make_record("ConfigRecord", 0, resourceType=2, resourceName="t", name="retention.ms", value="5"),
               make_record("ConfigRecord", 0, resourceType=2, resourceName="u", name="retention.ms", value="6"),
               make_record("ConfigRecord", 0, resourceType=4, resourceName="", name="min.insync.replicas", value="2"),
               make_record("RemoveTopicRecord", 0, topicId=T1), make_record("RemoveTopicRecord", 0, topicId=T1)]
    for offset, record in enumerate(records):
        delta.replay(LogEntry(offset=offset, record=record), changes)
    assert sorted(delta.image.configs) == [(2, "u"), (4, "")]
    assert changes.configs[(2, "t", "retention.ms")] == (4, "RemoveTopicRecord")
    assert [(a.offset, a.kind) for a in changes.anomalies] == [(5, "refused")]
