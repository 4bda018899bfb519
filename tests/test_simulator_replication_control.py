"""ReplicationControlManager (simulator.replication_control): reassignments completing and cancelled."""

from __future__ import annotations

from simulator import (
    ControllerSimulator,
    SimConfig,
)


def test_reassignment_complete_and_cancel() -> None:
    sim = ControllerSimulator(SimConfig(metadata_version="3.9"))
    for b in range(1, 6):
        sim.register_broker(b, rack="abc"[b % 3])
        sim.unfence(b)
    sim.create_topic("t", partitions=2, replication_factor=3)
    p = sim.partition("t", 0)
    old = list(p.replicas)
    spare = next(b for b in range(1, 6) if b not in old)
    target = [*old[1:], spare]
    sim.reassign("t", 0, target)
    assert p.replicas == [*target, old[0]] and p.adding_replicas == [spare] and p.removing_replicas == [old[0]]
    epoch = p.leader_epoch
    sim.expand_isr("t", 0, [spare])
    assert p.replicas == target and p.adding_replicas == [] and p.removing_replicas == [] and old[0] not in p.isr
    assert p.leader_epoch == epoch + 1  # replicas dropped: leader named (or changed), epoch bumped
    q = sim.partition("t", 1)
    before = list(q.replicas)
    spare = next(b for b in range(1, 6) if b not in before)
    sim.reassign("t", 1, [*before[:2], spare])
    sim.cancel_reassignment("t", 1)
    assert q.replicas == before and q.adding_replicas == [] and q.removing_replicas == []
    kinds = [r.kind for r in sim.facts.reassignments]
    assert kinds == ["started", "completed", "started", "cancelled"]
