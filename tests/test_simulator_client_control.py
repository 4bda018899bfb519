"""The simulated controller's client quotas and producer-id blocks (simulator.client_control): the records
AlterClientQuotas and AllocateProducerIds write, what Kafka refuses, and the state the replay keeps."""

from __future__ import annotations

import pytest

from simulator.client_control import quota_entity
from simulator.controller import ControllerSimulator
from simulator.model import SimulationError
from tests.simulator_fold import scripted


def written(sim: ControllerSimulator) -> list[tuple[int, str, dict[str, object]]]:
    return [(entry.offset, entry.type_name, dict(entry.record.data)) for entry in sim.entries()
            if entry.type_name != "NoOpRecord"]


def test_quota_entities_as_kafka_lists_them() -> None:
    assert quota_entity(user="alice") == (("user", "alice"),)
    assert quota_entity(client_id="etl") == (("client-id", "etl"),)
    # ClientQuotaControlManager's HashMap of entity types iterates "client-id" before "user"
    assert quota_entity(user="alice", client_id="etl") == (("client-id", "etl"), ("user", "alice"))
    assert quota_entity(default_user=True) == (("user", None),)
    assert quota_entity(user="alice", default_client_id=True) == (("client-id", None), ("user", "alice"))
    with pytest.raises(SimulationError, match="empty client quota entity"):
        quota_entity()
    with pytest.raises(SimulationError, match="Empty entity name"):
        quota_entity(user="")


def test_a_quota_set_changed_and_removed() -> None:
    sim = scripted()
    sim.entries()
    entity = quota_entity(user="alice", client_id="etl")
    offset = sim.alter_client_quota(entity, "producer_byte_rate", 1_048_576)
    assert written(sim) == [(offset, "ClientQuotaRecord", {
        "entity": [{"entityType": "client-id", "entityName": "etl"}, {"entityType": "user", "entityName": "alice"}],
        "key": "producer_byte_rate", "value": 1_048_576.0, "remove": False})]
    assert sim.alter_client_quota(entity, "producer_byte_rate", 1_048_576) == -1  # unchanged: no record
    assert sim.alter_client_quota(entity, "consumer_byte_rate", None) == -1  # not set: nothing to remove
    sim.alter_client_quota(entity, "request_percentage", 50)
    assert sim.client_quotas == {entity: {"producer_byte_rate": 1_048_576.0, "request_percentage": 50.0}}
    sim.entries()
    removed = sim.alter_client_quota(entity, "producer_byte_rate", None)
    [(at, kind, data)] = written(sim)
    assert (at, kind, data["remove"], data["key"]) == (removed, "ClientQuotaRecord", True, "producer_byte_rate")
    sim.alter_client_quota(entity, "request_percentage", None)
    assert sim.client_quotas == {}  # an entity left without quotas disappears
    default = quota_entity(default_user=True)
    sim.alter_client_quota(default, "consumer_byte_rate", 2_097_152)
    assert written(sim)[-1][2]["entity"] == [{"entityType": "user", "entityName": None}]
    assert [(c.kind, c.value) for c in sim.facts.changes_of("client-quota")] == [
        ("set", 1_048_576), ("set", 50), ("removed", None), ("removed", None), ("set", 2_097_152)]
    with pytest.raises(SimulationError, match="Invalid configuration key"):
        sim.alter_client_quota(default, "retention.ms", 1)


def test_producer_id_blocks_of_a_thousand() -> None:
    sim = scripted()
    sim.entries()
    first = sim.allocate_producer_ids(2)
    second = sim.allocate_producer_ids(3)
    assert written(sim) == [
        (first, "ProducerIdsRecord", {"brokerId": 2, "brokerEpoch": sim.brokers[2].epoch, "nextProducerId": 1000}),
        (second, "ProducerIdsRecord", {"brokerId": 3, "brokerEpoch": sim.brokers[3].epoch, "nextProducerId": 2000})]
    assert sim.next_producer_id == 2000
    with pytest.raises(SimulationError, match="not registered"):
        sim.allocate_producer_ids(9)


def test_a_producer_id_going_back_is_a_bug_the_replay_catches() -> None:
    sim = scripted()
    sim.allocate_producer_ids(1)
    with pytest.raises(SimulationError, match="monotonically"):
        sim._replay(sim.drain()[-1].record, sim.next_offset, None)
