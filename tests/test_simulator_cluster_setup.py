"""What every scenario shares (simulator.cluster_setup): options, racks and the starting cluster."""

from __future__ import annotations

import pytest

from simulator.cluster_setup import ScenarioOptions, rack_of, require_cluster, setup_cluster
from simulator.controller import ControllerSimulator
from simulator.model import SimConfig, SimulationError


def test_rack_of_spreads_brokers_round_robin() -> None:
    assert [rack_of(broker_id, 3) for broker_id in range(1, 7)] == [
        "rack-0", "rack-1", "rack-2", "rack-0", "rack-1", "rack-2"]
    assert rack_of(5, 0) == "rack-0"  # no racks: one


def test_sim_config_carries_the_scenario_switches() -> None:
    options = ScenarioOptions(seed=4, metadata_version="4.0", unclean=True, elr=True, max_records_per_batch=50)
    assert options.sim_config() == SimConfig(metadata_version="4.0", seed=4, unclean=True, elr=True,
                                             max_records_per_batch=50)


def test_setup_cluster_registers_unfences_and_creates_topics() -> None:
    sim = ControllerSimulator(SimConfig())
    options = ScenarioOptions(brokers=4, topics=2, partitions_per_topic=3, replication_factor=2, racks=2)
    steps = sum(1 for _ in setup_cluster(sim, options))
    assert steps == 4 + 4 + 2
    assert sorted(sim.brokers) == [1, 2, 3, 4] and sim.active == {1, 2, 3, 4}
    assert [sim.brokers[broker_id].rack for broker_id in (1, 2, 3, 4)] == ["rack-0", "rack-1", "rack-0", "rack-1"]
    assert sorted(sim.topics) == ["topic-0", "topic-1"]
    assert all(len(sim.topics[name].partitions) == 3 for name in sim.topics)


def test_setup_cluster_refuses_fewer_brokers_than_the_replication_factor() -> None:
    sim = ControllerSimulator(SimConfig())
    with pytest.raises(SimulationError, match=r"^2 brokers cannot host replication factor 3$"):
        next(setup_cluster(sim, ScenarioOptions(brokers=2, replication_factor=3)))


def test_require_cluster() -> None:
    require_cluster(ScenarioOptions(brokers=4), 4, "rolling-restart")
    with pytest.raises(SimulationError, match="scenario 'rolling-restart' needs at least 5 brokers"):
        require_cluster(ScenarioOptions(brokers=4), 5, "rolling-restart")
    with pytest.raises(SimulationError, match="and one topic with a partition"):
        require_cluster(ScenarioOptions(topics=0), 3, "any")
