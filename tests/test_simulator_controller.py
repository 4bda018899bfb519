"""The controller loop (simulator.controller): the start of the log and metadata transactions over batches."""

from __future__ import annotations

from simulator import (
    ControllerSimulator,
    SimConfig,
)
from tests.simulator_fold import scripted


def test_start_of_log() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="3.9"))
    entries = sim.entries()
    names = [e.type_name for e in entries]
    assert names[:6] == ["LeaderChangeMessage", "BeginTransactionRecord", "FeatureLevelRecord",
                         "ZkMigrationStateRecord", "EndTransactionRecord", "RegisterControllerRecord"]
    assert entries[0].is_control and entries[0].batch_base_offset == 0
    assert {e.batch_base_offset for e in entries[1:5]} == {1}
    assert entries[2].record["featureLevel"] == 21
    old = ControllerSimulator(SimConfig(metadata_version="3.3")).entries()
    assert [e.type_name for e in old] == ["LeaderChangeMessage", "FeatureLevelRecord"]
    assert [e.type_name for e in ControllerSimulator(SimConfig(metadata_version="3.0")).entries()] == [
        "LeaderChangeMessage"]


def test_big_topic_creation_is_a_transaction_over_batches() -> None:
    sim = scripted("3.9", max_records_per_batch=10)
    sim.entries()
    sim.create_topic("big", partitions=25, replication_factor=2)
    entries = sim.entries()
    assert entries[0].type_name == "BeginTransactionRecord"
    assert entries[-1].type_name == "EndTransactionRecord"
    assert len({e.batch_base_offset for e in entries}) == 4  # 27 records in batches of 10, then End
    assert len(sim.topics["big"].partitions) == 25
