"""The seeded random mix: ``events`` operations of every kind, drawn with fixed weights."""

from __future__ import annotations

import random

from records.kafka_constants import NO_LEADER
from simulator.cluster_setup import ScenarioOptions, Steps, setup_cluster
from simulator.controller import ControllerSimulator
from simulator.model import Partition


def random_mix(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """``events`` seeded random operations of every kind on top of the initial cluster."""
    yield from setup_cluster(sim, options)
    rng = random.Random(options.seed * 7919 + 17)
    down: dict[int, int] = {}  # broker -> event index when it comes back
    shrunk: list[int] = []  # partitions with followers outside the ISR (candidates to expand)
    moving: list[int] = []
    recreate: list[str] = []
    counter = 0
    ops: list[tuple[str, float]] = [
        ("shrink", 30), ("expand", 30), ("crash", 3), ("restart", 3), ("create", 2), ("add", 1.5),
        ("delete", 1), ("reassign", 3), ("move-done", 3), ("preferred", 2), ("failover", 0.5),
        ("recover", 2), ("config", 1), ("unclean", 1), ("big-aborted", 0.2), ("unregister", 0.3),
    ]
    names = [n for n, _ in ops]
    weights = [w for _, w in ops]

    def pick_partition() -> Partition | None:
        for _ in range(8):
            key = rng.randrange(sim.next_partition_key)
            partition = sim.partitions.get(key)
            if partition is not None:
                return partition
        return None

    def min_active() -> int:
        return options.replication_factor + 1

    for index in range(options.events):
        sim.tick(rng.randint(20, 400))
        for broker_id in sorted(broker_id for broker_id, due in down.items() if due <= index):
            del down[broker_id]
            sim.register_broker(broker_id)
            sim.tick(rng.randint(200, 1000))
            sim.unfence(broker_id)
            sim.catch_up(broker_id)
            sim.preferred_election([broker_id])
            yield
        op = rng.choices(names, weights)[0]
        if op == "shrink":
            partition = pick_partition()
            if (partition is not None and partition.leader != NO_LEADER and len(partition.isr) > 1
                    and not (partition.adding_replicas or partition.removing_replicas)):
                follower = rng.choice([r for r in partition.isr if r != partition.leader])
                sim.shrink_isr(partition.topic.name, partition.partition_id, [follower])
                shrunk.append(partition.key)
        elif op == "expand" and shrunk:
            key = shrunk.pop(rng.randrange(len(shrunk)))
            partition = sim.partitions.get(key)
            if partition is not None and partition.leader != NO_LEADER:
                missing = [r for r in partition.replicas if r not in partition.isr and r in sim.active]
                if missing:
                    sim.expand_isr(partition.topic.name, partition.partition_id, missing)
        elif op == "crash" and len(sim.active) > min_active():
            broker_id = rng.choice(sorted(sim.active))
            sim.crash(broker_id)
            down[broker_id] = index + rng.randint(3, 25)
        elif op == "restart" and len(sim.active) > min_active():
            broker_id = rng.choice(sorted(sim.active))
            sim.restart_broker(broker_id, controlled=True, down_ms=rng.randint(3000, 20000))
        elif op == "create" and len(sim.active) >= options.replication_factor:
            name = recreate.pop(0) if recreate else f"rt-{counter}"
            counter += 1
            configs = {"cleanup.policy": "compact"} if rng.random() < 0.3 else None
            sim.create_topic(name, rng.randint(1, max(1, 2 * options.partitions_per_topic)),
                             options.replication_factor, configs)
        elif op == "add" and sim.topics and len(sim.active) >= options.replication_factor:
            name = rng.choice(sorted(sim.topics))
            sim.add_partitions(name, rng.randint(1, 4))
        elif op == "delete" and len(sim.topics) > 1:
            name = rng.choice(sorted(sim.topics))
            sim.delete_topic(name)
            moving = [k for k in moving if k in sim.partitions]
            if rng.random() < 0.5:
                recreate.append(name)
        elif op == "reassign":
            partition = pick_partition()
            if (partition is not None and partition.leader != NO_LEADER
                    and not (partition.adding_replicas or partition.removing_replicas)):
                spare = [b for b in sorted(sim.active) if b not in partition.replicas]
                if spare and all(r in sim.brokers for r in partition.replicas):
                    target = list(partition.replicas)
                    target[rng.randrange(len(target))] = rng.choice(spare)
                    sim.reassign(partition.topic.name, partition.partition_id, target)
                    if partition.adding_replicas or partition.removing_replicas:
                        moving.append(partition.key)
        elif op == "move-done" and moving:
            key = moving.pop(rng.randrange(len(moving)))
            partition = sim.partitions.get(key)
            if partition is not None and (partition.adding_replicas or partition.removing_replicas):
                ready = [r for r in partition.adding_replicas if r in sim.active]
                if rng.random() < 0.25 or partition.leader == NO_LEADER or len(ready) < len(partition.adding_replicas):
                    if [r for r in partition.isr if r not in partition.adding_replicas]:
                        sim.cancel_reassignment(partition.topic.name, partition.partition_id)
                else:
                    sim.expand_isr(partition.topic.name, partition.partition_id, ready)
        elif op == "preferred":
            sim.preferred_election()
        elif op == "failover":
            sim.controller_failover()
        elif op == "recover" and sim.recovering:
            key = rng.choice(sorted(sim.recovering))
            partition = sim.partitions[key]
            if partition.leader != NO_LEADER:
                sim.recover(partition.topic.name, partition.partition_id)
        elif op == "config" and sim.topics:
            name = rng.choice(sorted(sim.topics))
            sim.set_topic_config(name, "retention.ms", str(rng.randint(1, 168) * 3_600_000))
        elif op == "unclean" and sim.leaderless:
            key = rng.choice(sorted(sim.leaderless))
            partition = sim.partitions[key]
            if any(r in sim.active for r in partition.replicas):
                sim.elect_leaders(partition.topic.name, partition.partition_id, unclean=True)
        elif op == "big-aborted" and sim.mv.transactions and len(sim.facts.aborted_transactions) < 3:
            name = f"bulk-{counter}"
            counter += 1
            partitions = sim.config.max_records_per_batch + 1
            if len(sim.active) >= options.replication_factor:
                sim.create_topic(name, partitions, options.replication_factor, abort_after_batches=1)
        elif op == "unregister":
            gone = [broker_id for broker_id in sorted(down) if broker_id in sim.brokers]
            if gone and len(sim.brokers) > options.replication_factor + 2:
                broker_id = rng.choice(gone)
                sim.unregister_broker(broker_id)
                del down[broker_id]
        yield
