"""The scenario runner (simulator.scenarios): every scenario at every metadata version keeps Kafka's invariants,
its facts match an independent audit of its log, and a run streams."""

from __future__ import annotations

import pytest

from simulator import (
    SCENARIOS,
    ScenarioOptions,
    SimulationError,
    run_scenario,
)
from tests.simulator_fold import MVS, check_batches, fold, generate, small


@pytest.mark.parametrize("mv", MVS)
@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2])
def test_every_scenario_keeps_kafka_invariants(name: str, mv: str, seed: int) -> None:
    options = small(name, mv, seed, unclean=(seed == 2))
    if name == "aborted-transaction" and mv in ("3.0", "3.3"):
        with pytest.raises(SimulationError, match="transactions"):
            generate(name, options)
        return
    if name == "min-isr-change" and not options.elr:
        with pytest.raises(SimulationError, match="eligible leader replicas"):
            generate(name, options)
        return
    entries, run = generate(name, options)
    check_batches(entries)
    f = fold(entries, elr=options.elr)
    facts = run.facts
    # the audit of the log finds exactly the incidents the simulator recorded
    assert [(x.offset, x.topic, x.partition) for x in facts.leaderless] == f.leaderless_at
    assert [(x.offset, x.broker_id) for x in facts.fenced] == f.fenced_at
    assert {(x.offset, x.topic, x.partition) for x in facts.unclean_elections} == set(f.unclean_at)
    # the simulator's own state is what the log says
    sim = run.sim
    for p in sim.partitions.values():
        q = f.parts[(p.topic.topic_id, p.partition_id)]
        assert (q.leader, q.isr, q.replicas, q.leader_epoch, q.partition_epoch) == (
            p.leader, p.isr, p.replicas, p.leader_epoch, p.partition_epoch)
    assert len(f.parts) == len(sim.partitions)
    # and so are the image's other parts
    topic_configs = {(2, name): topic.configs for name, topic in sim.topics.items() if topic.configs}
    broker_configs = {(4, name): configs for name, configs in sim.broker_configs.items()}
    cluster_default = {(4, ""): sim.cluster_configs} if sim.cluster_configs else {}
    assert f.configs == {**topic_configs, **broker_configs, **cluster_default}
    assert f.quotas == sim.client_quotas
    assert sorted(f.acls) == sorted(sim.acls)
    assert f.scram == sim.scram_credentials
    assert {token_id: token["expirationTimestamp"] for token_id, token in f.tokens.items()} == {
        token_id: token.expiration_timestamp for token_id, token in sim.delegation_tokens.items()}
    assert f.next_producer_id == sim.next_producer_id
    # record versions follow the metadata version
    versions = {(e.type_name, e.version) for e in entries}
    pc = 2 if options.elr else 1 if mv in ("3.9", "4.0") else 0
    assert all(v == pc for t, v in versions if t in ("PartitionRecord", "PartitionChangeRecord"))
    types = {t for t, _ in versions}
    assert ("NoOpRecord" in types) == (mv != "3.0")
    assert ("FenceBrokerRecord" in types or "UnfenceBrokerRecord" in types) == (mv == "3.0")
    assert ("BeginTransactionRecord" in types) == (mv not in ("3.0", "3.3"))
    assert ("RegisterControllerRecord" in types) == (mv in ("3.9", "4.0"))


def test_streaming_keeps_no_records() -> None:
    run = run_scenario("random", ScenarioOptions(seed=1, events=300))
    count = 0
    for _ in run.entries():
        count += 1
        assert len(run.sim._buffer) < 5000
    assert count > 1000
