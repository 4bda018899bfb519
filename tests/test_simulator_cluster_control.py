"""ClusterControlManager (simulator.cluster_control): broker epochs, fencing and controlled shutdown batches."""

from __future__ import annotations

from tests.simulator_fold import scripted


def test_scripted_story_broker_epochs_and_fence_batch() -> None:
    sim = scripted()
    start = sim.entries()
    reg = [e for e in start if e.type_name == "RegisterBrokerRecord"]
    assert [e.record["brokerEpoch"] for e in reg] == [e.offset for e in reg]
    assert all(e.record["fenced"] for e in reg) and reg[0].version == 3
    sim.create_topic("t", partitions=2, replication_factor=3)
    p0 = sim.partition("t", 0)
    leader = p0.leader
    assert sorted(p0.replicas) == [1, 2, 3] and p0.isr == p0.replicas and leader == p0.replicas[0]
    sim.entries()
    fence_offset = sim.crash(leader)
    entries = sim.entries()
    batch = [e for e in entries if e.batch_base_offset == entries[-1].batch_base_offset]
    assert [e.type_name for e in batch][-1] == "BrokerRegistrationChangeRecord"
    assert batch[-1].offset == fence_offset and batch[-1].record["fenced"] == 1
    changes = [e.record for e in batch[:-1]]
    assert all(r.type_name == "PartitionChangeRecord" for r in changes) and len(changes) == 2
    for rec in changes:
        assert leader not in rec["isr"]
    assert sim.partition("t", 0).leader != leader
    # restart: new incarnation, epoch = offset, unfence, elections for leaderless partitions
    new_epoch = sim.register_broker(leader)
    assert new_epoch > batch[-1].record["brokerEpoch"]
    sim.unfence(leader)
    entries = sim.entries()
    unfence = next(e for e in entries if e.type_name == "BrokerRegistrationChangeRecord")
    assert unfence.record["fenced"] == -1 and unfence.record["brokerEpoch"] == new_epoch


def test_old_metadata_version_uses_fence_and_unfence_records() -> None:
    sim = scripted("3.0")
    sim.create_topic("t", partitions=1, replication_factor=3)
    sim.crash(2)
    names = [e.type_name for e in sim.entries()]
    assert "UnfenceBrokerRecord" in names and "FenceBrokerRecord" in names
    assert "NoOpRecord" not in names and "BrokerRegistrationChangeRecord" not in names


def test_controlled_shutdown_batch_comes_first() -> None:
    sim = scripted("3.9")
    sim.create_topic("t", partitions=3, replication_factor=2)
    sim.entries()
    led = [p.key for p in sim.partitions.values() if p.leader == 1]
    base = sim.controlled_shutdown(1, complete=False)
    entries = sim.entries()
    batch = [e for e in entries if e.batch_base_offset == base]
    assert batch[0].type_name == "BrokerRegistrationChangeRecord" and batch[0].version == 1
    assert batch[0].record["inControlledShutdown"] == 1
    assert all(e.type_name == "PartitionChangeRecord" for e in batch[1:])
    assert all(sim.partitions[k].leader != 1 for k in led)
