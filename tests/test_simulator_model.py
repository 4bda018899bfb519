"""The simulated controller's registrations and record maker (simulator.model)."""

from __future__ import annotations

from records.kafka_constants import NO_LEADER, UNASSIGNED_DIR
from records.model import uuid_to_str
from simulator.model import (
    RECOVERED,
    RECOVERING,
    UNASSIGNED_DIR_ID,
    Broker,
    Partition,
    SimConfig,
    Topic,
    record,
)


def test_record_takes_kafka_defaults_and_drops_fields_the_version_lacks() -> None:
    v0 = record("PartitionChangeRecord", 0, partitionId=3, isr=[1], eligibleLeaderReplicas=[2])
    assert v0.type_name == "PartitionChangeRecord" and v0.version == 0
    assert v0.data["partitionId"] == 3 and v0.data["isr"] == [1]
    assert "eligibleLeaderReplicas" not in v0.data  # a v2 field
    assert v0.data["leader"] == -2 and v0.data["replicas"] is None  # Kafka's defaults
    v2 = record("PartitionChangeRecord", 2, eligibleLeaderReplicas=[2])
    assert v2.data["eligibleLeaderReplicas"] == [2]


def test_record_never_shares_its_data_between_calls() -> None:
    first = record("ConfigRecord", 0, name="a")
    second = record("ConfigRecord", 0)
    assert first.data["name"] == "a" and second.data["name"] != "a"


def test_constants() -> None:
    assert (RECOVERED, RECOVERING) == (0, 1)
    assert uuid_to_str(UNASSIGNED_DIR_ID) == UNASSIGNED_DIR


def test_new_registrations_start_as_kafka_starts_them() -> None:
    broker = Broker(1, 10, b"\x01" * 16, "rack-0", b"\x02" * 16)
    assert (broker.fenced, broker.in_controlled_shutdown, broker.epoch, broker.rack) == (True, False, 10, "rack-0")
    topic = Topic("orders", bytes(range(1, 17)))
    assert topic.topic_id_str == uuid_to_str(bytes(range(1, 17))) and topic.partitions == [] and topic.configs == {}
    partition = Partition(7, topic, 2)
    assert (partition.key, partition.partition_id, partition.topic) == (7, 2, topic)
    assert (partition.leader, partition.leader_epoch, partition.partition_epoch) == (NO_LEADER, -1, -1)
    assert partition.leader_recovery_state == RECOVERED and partition.replicas == partition.isr == []


def test_sim_config_defaults() -> None:
    config = SimConfig()
    assert (config.metadata_version, config.seed, config.unclean, config.elr, config.min_insync_replicas) == (
        "3.9", 0, False, False, 1)
    assert config.controller_ids == (3000, 3001, 3002) and config.max_records_per_batch == 10000
