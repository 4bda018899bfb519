"""The seeded random mix: ``events`` operations of every kind, drawn with fixed weights."""

from __future__ import annotations

import random
from typing import Any

from records.kafka_constants import NO_LEADER
from simulator.cluster_setup import ScenarioOptions, Steps, setup_cluster
from simulator.controller import ControllerSimulator


def random_mix(sim: ControllerSimulator, o: ScenarioOptions) -> Steps:
    """``events`` seeded random operations of every kind on top of the initial cluster."""
    yield from setup_cluster(sim, o)
    rng = random.Random(o.seed * 7919 + 17)
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

    def pick_partition() -> Any:
        for _ in range(8):
            key = rng.randrange(sim.next_partition_key)
            p = sim.partitions.get(key)
            if p is not None:
                return p
        return None

    def min_active() -> int:
        return o.replication_factor + 1

    for index in range(o.events):
        sim.tick(rng.randint(20, 400))
        for b in sorted(b for b, due in down.items() if due <= index):
            del down[b]
            sim.register_broker(b)
            sim.tick(rng.randint(200, 1000))
            sim.unfence(b)
            sim.catch_up(b)
            sim.preferred_election([b])
            yield
        op = rng.choices(names, weights)[0]
        if op == "shrink":
            p = pick_partition()
            if p is not None and p.leader != NO_LEADER and len(p.isr) > 1 and not (p.adding_replicas or p.removing_replicas):
                follower = rng.choice([r for r in p.isr if r != p.leader])
                sim.shrink_isr(p.topic.name, p.partition_id, [follower])
                shrunk.append(p.key)
        elif op == "expand" and shrunk:
            key = shrunk.pop(rng.randrange(len(shrunk)))
            p = sim.partitions.get(key)
            if p is not None and p.leader != NO_LEADER:
                missing = [r for r in p.replicas if r not in p.isr and r in sim.active]
                if missing:
                    sim.expand_isr(p.topic.name, p.partition_id, missing)
        elif op == "crash" and len(sim.active) > min_active():
            b = rng.choice(sorted(sim.active))
            sim.crash(b)
            down[b] = index + rng.randint(3, 25)
        elif op == "restart" and len(sim.active) > min_active():
            b = rng.choice(sorted(sim.active))
            sim.restart_broker(b, controlled=True, down_ms=rng.randint(3000, 20000))
        elif op == "create" and len(sim.active) >= o.replication_factor:
            name = recreate.pop(0) if recreate else f"rt-{counter}"
            counter += 1
            configs = {"cleanup.policy": "compact"} if rng.random() < 0.3 else None
            sim.create_topic(name, rng.randint(1, max(1, 2 * o.partitions_per_topic)),
                             o.replication_factor, configs)
        elif op == "add" and sim.topics and len(sim.active) >= o.replication_factor:
            name = rng.choice(sorted(sim.topics))
            sim.add_partitions(name, rng.randint(1, 4))
        elif op == "delete" and len(sim.topics) > 1:
            name = rng.choice(sorted(sim.topics))
            sim.delete_topic(name)
            moving = [k for k in moving if k in sim.partitions]
            if rng.random() < 0.5:
                recreate.append(name)
        elif op == "reassign":
            p = pick_partition()
            if p is not None and p.leader != NO_LEADER and not (p.adding_replicas or p.removing_replicas):
                spare = [b for b in sorted(sim.active) if b not in p.replicas]
                if spare and all(r in sim.brokers for r in p.replicas):
                    target = list(p.replicas)
                    target[rng.randrange(len(target))] = rng.choice(spare)
                    sim.reassign(p.topic.name, p.partition_id, target)
                    if p.adding_replicas or p.removing_replicas:
                        moving.append(p.key)
        elif op == "move-done" and moving:
            key = moving.pop(rng.randrange(len(moving)))
            p = sim.partitions.get(key)
            if p is not None and (p.adding_replicas or p.removing_replicas):
                ready = [r for r in p.adding_replicas if r in sim.active]
                if rng.random() < 0.25 or p.leader == NO_LEADER or len(ready) < len(p.adding_replicas):
                    if [r for r in p.isr if r not in p.adding_replicas]:
                        sim.cancel_reassignment(p.topic.name, p.partition_id)
                else:
                    sim.expand_isr(p.topic.name, p.partition_id, ready)
        elif op == "preferred":
            sim.preferred_election()
        elif op == "failover":
            sim.controller_failover()
        elif op == "recover" and sim.recovering:
            key = rng.choice(sorted(sim.recovering))
            p = sim.partitions[key]
            if p.leader != NO_LEADER:
                sim.recover(p.topic.name, p.partition_id)
        elif op == "config" and sim.topics:
            name = rng.choice(sorted(sim.topics))
            sim.set_topic_config(name, "retention.ms", str(rng.randint(1, 168) * 3_600_000))
        elif op == "unclean" and sim.leaderless:
            key = rng.choice(sorted(sim.leaderless))
            p = sim.partitions[key]
            if any(r in sim.active for r in p.replicas):
                sim.elect_leaders(p.topic.name, p.partition_id, unclean=True)
        elif op == "big-aborted" and sim.mv.transactions and len(sim.facts.aborted_transactions) < 3:
            name = f"bulk-{counter}"
            counter += 1
            partitions = sim.config.max_records_per_batch + 1
            if len(sim.active) >= o.replication_factor:
                sim.create_topic(name, partitions, o.replication_factor, abort_after_batches=1)
        elif op == "unregister":
            gone = [b for b in sorted(down) if b in sim.brokers]
            if gone and len(sim.brokers) > o.replication_factor + 2:
                b = rng.choice(gone)
                sim.unregister_broker(b)
                del down[b]
        yield
