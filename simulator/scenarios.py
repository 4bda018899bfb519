"""Named incident stories and a seeded random mix, each streaming its log and recording its facts.

A scenario is a generator over controller operations (:mod:`simulator.incidents`, :mod:`simulator.random_mix`);
:class:`ScenarioRun` drains the simulator after every step, so a run of any length keeps only the cluster state
in memory. ``run.facts`` fills in as the entries are consumed and is complete once the iterator is exhausted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from records.model import LogEntry
from simulator.cluster_setup import ScenarioOptions, Steps
from simulator.controller import ControllerSimulator, SimulationError
from simulator.facts import ScenarioFacts
from simulator.incidents import (
    aborted_transaction,
    controlled_shutdown,
    flapping_broker,
    image_changes,
    lost_last_isr_unclean,
    min_isr_change,
    rack_outage,
    reassignment_under_failure,
    rolling_restart,
    topic_recreate,
)
from simulator.random_mix import random_mix

__all__ = ["SCENARIOS", "ScenarioOptions", "ScenarioRun", "run_scenario"]

SCENARIOS: dict[str, Callable[[ControllerSimulator, ScenarioOptions], Steps]] = {
    "rolling-restart": rolling_restart,
    "rack-outage": rack_outage,
    "lost-last-isr-unclean": lost_last_isr_unclean,
    "flapping-broker": flapping_broker,
    "reassignment-under-failure": reassignment_under_failure,
    "controlled-shutdown": controlled_shutdown,
    "topic-recreate": topic_recreate,
    "aborted-transaction": aborted_transaction,
    "min-isr-change": min_isr_change,
    "image-changes": image_changes,
    "random": random_mix,
}


class ScenarioRun:
    """One scenario over one simulator: iterate :meth:`entries` once; then read :attr:`facts`."""

    def __init__(self, name: str, options: ScenarioOptions | None = None) -> None:
        if name not in SCENARIOS:
            raise SimulationError(f"unknown scenario {name!r} (expected one of {', '.join(SCENARIOS)})")
        self.name = name
        self.options = options or ScenarioOptions()
        self.facts = ScenarioFacts(scenario=name, seed=self.options.seed)
        self.sim = ControllerSimulator(self.options.sim_config(), facts=self.facts)

    def entries(self) -> Iterator[LogEntry]:
        sim = self.sim
        yield from sim.drain()
        for _ in SCENARIOS[self.name](sim, self.options):
            yield from sim.drain()
        sim.tick(sim.config.noop_interval_ms)  # the log ends on the controller's heartbeat cadence
        yield from sim.drain()


def run_scenario(name: str, options: ScenarioOptions | None = None) -> ScenarioRun:
    return ScenarioRun(name, options)
