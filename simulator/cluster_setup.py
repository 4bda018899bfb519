"""What every scenario shares: its options, the cluster it starts from, and its step type."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from simulator.controller import ControllerSimulator, SimConfig, SimulationError

Steps = Iterator[None]


@dataclass(frozen=True)
class ScenarioOptions:
    """Cluster size and switches shared by every scenario."""

    brokers: int = 6
    topics: int = 3
    partitions_per_topic: int = 6
    replication_factor: int = 3
    events: int = 200
    seed: int = 0
    metadata_version: str = "3.9"
    unclean: bool = False
    elr: bool = False
    racks: int = 3
    max_records_per_batch: int = 10000
    # the random mix: the whole cluster restarts once the log reaches this offset (0: never), as a real cluster's
    # log of a maintenance window holds it (``restart_offset``)
    cluster_restart_at: int = 0

    def sim_config(self) -> SimConfig:
        return SimConfig(metadata_version=self.metadata_version, seed=self.seed, unclean=self.unclean,
                         elr=self.elr, max_records_per_batch=self.max_records_per_batch)


# where a real-like log of a few brokers restarts the whole cluster: this percent into its records (the first-answer
# benchmark's log and the resident server's warm-up log)
CLUSTER_RESTART_PERCENT = 60


def restart_offset(records: int) -> int:
    """The ``cluster_restart_at`` of a real-like log of ``records`` records."""
    return records * CLUSTER_RESTART_PERCENT // 100


def rack_of(broker_id: int, racks: int) -> str:
    return f"rack-{(broker_id - 1) % max(racks, 1)}"


def setup_cluster(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """Brokers 1..N register (spread over racks) and unfence, then topics topic-0.. are created."""
    if options.brokers < options.replication_factor:
        raise SimulationError(f"{options.brokers} brokers cannot host replication factor {options.replication_factor}")
    for broker_id in range(1, options.brokers + 1):
        sim.register_broker(broker_id, rack=rack_of(broker_id, options.racks))
        yield
    sim.tick(1000)
    for broker_id in range(1, options.brokers + 1):
        sim.unfence(broker_id)
        yield
    for topic_index in range(options.topics):
        sim.create_topic(f"topic-{topic_index}", options.partitions_per_topic, options.replication_factor)
        sim.tick(sim.rng.randint(10, 200))
        yield


def require_cluster(options: ScenarioOptions, brokers: int, scenario: str) -> None:
    if options.brokers < brokers or options.topics < 1 or options.partitions_per_topic < 1:
        raise SimulationError(f"scenario {scenario!r} needs at least {brokers} brokers and one topic "
                              "with a partition")
