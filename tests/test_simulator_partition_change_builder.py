"""PartitionChangeBuilder (simulator.partition_change_builder): leader epochs, unclean elections and ELR."""

from __future__ import annotations

import pytest

from tests.simulator_fold import scripted


@pytest.mark.parametrize(("mv", "bump"), [("3.5", True), ("3.6", False)])
def test_isr_shrink_bumps_leader_epoch_only_before_3_6(mv: str, bump: bool) -> None:
    sim = scripted(mv)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    epoch, leader = p.leader_epoch, p.leader
    sim.entries()
    follower = p.replicas[1]
    sim.shrink_isr("t", 0, [follower])
    rec = sim.entries()[-1].record
    assert rec.type_name == "PartitionChangeRecord" and follower not in rec["isr"]
    assert (rec["leader"] == leader) is bump and (rec["leader"] == -2) is not bump
    assert p.leader_epoch == epoch + (1 if bump else 0)
    sim.expand_isr("t", 0, [follower])
    assert sim.entries()[-1].record["leader"] == -2  # expansion never bumps


def test_last_isr_member_lost_then_unclean_election() -> None:
    sim = scripted("3.9")
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == -1 and p.isr == [last]  # the ISR keeps its last member
    epoch = p.leader_epoch
    sim.elect_leaders("t", 0, unclean=False)  # preferred: nobody eligible, no record
    sim.set_topic_config("t", "unclean.leader.election.enable", "true")
    sim.entries()
    sim.elect_leaders("t", 0, unclean=True)
    rec = sim.entries()[-1].record
    assert rec["leader"] == p.replicas[1] and rec["isr"] == [p.replicas[1]]
    assert rec["leaderRecoveryState"] == 1
    assert p.leader_epoch == epoch + 1 and p.leader_recovery_state == 1
    sim.recover("t", 0)
    rec = sim.entries()[-1].record
    assert rec["leaderRecoveryState"] == 0 and rec["leader"] == -2 and p.leader_recovery_state == 0


def test_unclean_cluster_default_elects_at_fence_time() -> None:
    sim = scripted("3.9", unclean=True)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == p.replicas[1] and p.isr == [p.leader] and p.leader_recovery_state == 1
    assert sim.facts.unclean_elections[-1].leader == p.leader and not sim.facts.leaderless


def test_elr_keeps_last_isr_member_eligible() -> None:
    sim = scripted("4.0", elr=True)
    sim.create_topic("t", partitions=1, replication_factor=3)
    p = sim.partition("t", 0)
    last = p.leader
    sim.alter_isr("t", 0, [last])
    sim.crash(last)
    assert p.leader == -1 and p.isr == [] and p.eligible_leader_replicas == [last]
    sim.register_broker(last)
    sim.unfence(last)
    assert p.leader == last and p.isr == [last] and p.eligible_leader_replicas == []
    versions = {e.version for e in sim.entries() if e.type_name == "PartitionChangeRecord"}
    assert versions == {2}
