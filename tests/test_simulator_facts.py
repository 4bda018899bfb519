"""What a simulation did (simulator.facts)."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.facts import BrokerFenced, ScenarioFacts, Transaction


def test_aborted_transactions_are_the_aborted_ones_in_log_order() -> None:
    facts = ScenarioFacts()
    committed = Transaction("Bootstrap records", 1, 4, False)
    first_abort = Transaction("bulk-1", 10, 30, True)
    second_abort = Transaction("bulk-2", 40, 60, True)
    facts.transactions.extend([committed, first_abort, second_abort])
    assert facts.aborted_transactions == [first_abort, second_abort]
    assert ScenarioFacts().aborted_transactions == []


def test_defaults_and_independent_lists() -> None:
    first, second = ScenarioFacts(), ScenarioFacts()
    assert (first.scenario, first.seed, first.metadata_version, first.key) == ("scripted", 0, "", {})
    first.fenced.append(BrokerFenced(5, 1, 3, "heartbeat-timeout"))
    assert second.fenced == []


def test_a_fact_is_frozen() -> None:
    fact = BrokerFenced(5, 1, 3, "controlled-shutdown")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fact.offset = 6  # type: ignore[misc]
