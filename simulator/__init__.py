"""A deterministic, seeded simulator of Kafka's KRaft controller: it writes ``__cluster_metadata`` logs
with Kafka's records, batches and rules, plus the facts (offsets of every injected incident)."""

from simulator.cluster_setup import restart_offset
from simulator.controller import (
    ControllerSimulator,
    Election,
    SimConfig,
    SimulationError,
)
from simulator.facts import ScenarioFacts
from simulator.output import whole_transactions, write_log
from simulator.scenarios import SCENARIOS, ScenarioOptions, ScenarioRun, run_scenario
from simulator.versions import MetadataVersion

__all__ = [
    "SCENARIOS",
    "ControllerSimulator",
    "Election",
    "MetadataVersion",
    "ScenarioFacts",
    "ScenarioOptions",
    "ScenarioRun",
    "SimConfig",
    "SimulationError",
    "restart_offset",
    "run_scenario",
    "whole_transactions",
    "write_log",
]
