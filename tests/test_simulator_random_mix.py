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


def test_the_mix_writes_every_part_of_the_image_and_stays_dominated_by_partitions() -> None:
    """Configs (topic, broker, cluster default; set and deleted), client quotas, ACLs, SCRAM users, delegation tokens
    and producer-id blocks all appear, at the rates of an operated cluster: partition changes dominate."""
    options = ScenarioOptions(brokers=8, topics=6, partitions_per_topic=8, events=4000, seed=2)
    sim = ControllerSimulator(options.sim_config())
    counts: dict[str, int] = {}
    for _ in random_mix(sim, options):
        for entry in sim.drain():
            counts[entry.type_name] = counts.get(entry.type_name, 0) + 1
    families = ("ConfigRecord", "ClientQuotaRecord", "AccessControlEntryRecord", "RemoveAccessControlEntryRecord",
                "UserScramCredentialRecord", "RemoveUserScramCredentialRecord", "DelegationTokenRecord",
                "ProducerIdsRecord")
    assert all(counts.get(name, 0) > 0 for name in families), counts
    assert sum(counts[name] for name in families) * 10 < counts["PartitionChangeRecord"]
    changes = sim.facts.image_changes
    parts = {(change.part, change.kind) for change in changes}
    assert {("config", "set"), ("config", "removed"), ("client-quota", "set"), ("client-quota", "removed"),
            ("acl", "created"), ("acl", "removed"), ("scram", "upserted"), ("scram", "removed"),
            ("delegation-token", "created"), ("delegation-token", "renewed"),
            ("producer-ids", "allocated")} <= parts
    resource_names = {change.key[1] for change in changes if change.part == "config" and change.key[0] == 4}
    assert "" in resource_names and len(resource_names) > 1  # the cluster default and single brokers
    blocks = [change.value for change in changes if change.part == "producer-ids"]
    assert blocks == [1000 * (index + 1) for index in range(len(blocks))]
    assert sim.next_producer_id == blocks[-1]


def test_a_whole_cluster_restart_leaves_partitions_leaderless_then_brings_every_broker_back() -> None:
    """``cluster_restart_at``: once the log reaches that offset every broker is shut down (the last one's partitions
    left without a leader) before any comes back; then each is registered again and unfenced, in id order."""
    options = ScenarioOptions(brokers=3, topics=2, partitions_per_topic=4, events=300, seed=4, cluster_restart_at=80)
    sim = ControllerSimulator(options.sim_config())
    for _ in random_mix(sim, options):
        pass
    facts = sim.facts
    assert not [fence for fence in facts.fenced if fence.offset < 80]  # 3 brokers, replication 3: no crash before
    down = [fence for fence in facts.fenced if fence.offset >= 80][:3]
    back = [unfence for unfence in facts.unfenced if unfence.offset >= 80][:3]
    assert [fence.broker_id for fence in down] == [1, 2, 3]
    assert {fence.reason for fence in down} == {"controlled-shutdown"}
    assert [unfence.broker_id for unfence in back] == [1, 2, 3]
    assert down[-1].offset < back[0].offset  # the whole cluster was down at once
    leaderless = [p for p in facts.leaderless if down[0].offset <= p.offset < back[0].offset]
    assert len({(p.topic, p.partition) for p in leaderless}) == 8  # every partition, as its last replica left
    assert run_mix(options) == run_mix(options)  # seeded as the rest of the mix
    assert run_mix(ScenarioOptions(brokers=3, topics=2, partitions_per_topic=4, events=300, seed=4))[1][:40] == \
        run_mix(options)[1][:40]  # the same log before the restart
