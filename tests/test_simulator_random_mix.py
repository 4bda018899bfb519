"""The seeded random mix (simulator.random_mix)."""

from __future__ import annotations

from simulator.cluster_setup import ScenarioOptions
from simulator.controller import ControllerSimulator
from simulator.random_mix import random_mix


def run_mix(options: ScenarioOptions) -> tuple[int, list[tuple[int, str, int]]]:
    sim = ControllerSimulator(options.sim_config())
    steps = sum(1 for _ in random_mix(sim, options))
    return steps, [(entry.offset, entry.type_name, entry.version) for entry in sim.entries()]


def test_the_same_options_give_the_same_log() -> None:
    options = ScenarioOptions(brokers=5, topics=2, partitions_per_topic=3, events=60, seed=4)
    first_steps, first_log = run_mix(options)
    assert run_mix(options) == (first_steps, first_log)
    assert first_steps >= 5 + 5 + 2 + 60  # the setup's steps, then one at least per event
    _, other_log = run_mix(ScenarioOptions(brokers=5, topics=2, partitions_per_topic=3, events=60, seed=5))
    assert other_log != first_log


def test_no_events_is_the_setup_alone() -> None:
    options = ScenarioOptions(brokers=4, topics=1, partitions_per_topic=2, events=0)
    steps, log = run_mix(options)
    assert steps == 4 + 4 + 1
    assert [name for _, name, _ in log].count("PartitionRecord") == 2
