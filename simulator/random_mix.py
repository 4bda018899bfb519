"""The seeded random mix: ``events`` operations of every kind, drawn with fixed weights.

The weights keep a mix at any scale dominated by partition changes, as a real cluster's log is; configs, client
quotas, ACLs, SCRAM users, delegation tokens and producer-id blocks come at the rates of an operated cluster."""

from __future__ import annotations

import random

from records.kafka_constants import (
    NO_LEADER,
    OPERATION_DESCRIBE,
    OPERATION_READ,
    OPERATION_WRITE,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    PERMISSION_ALLOW,
    PERMISSION_DENY,
    RESOURCE_TYPE_GROUP,
    RESOURCE_TYPE_TOPIC,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
)
from records.standard_acl import StandardAcl
from simulator.client_control import QUOTA_KEYS, quota_entity
from simulator.cluster_setup import ScenarioOptions, Steps, setup_cluster
from simulator.configuration_control import UNCLEAN_KEY
from simulator.controller import ControllerSimulator
from simulator.model import Partition

# Topic configs the mix sets or deletes, each with a value maker
TOPIC_CONFIGS = {
    "retention.ms": lambda rng: str(rng.randint(1, 168) * 3_600_000),
    "max.message.bytes": lambda rng: str(rng.choice((1, 2, 4, 8)) * 1_048_588),
    "segment.bytes": lambda rng: str(rng.choice((256, 512, 1024)) * 1_048_576),
    UNCLEAN_KEY: lambda rng: rng.choice(("true", "false")),
}
# Broker configs (per broker or the cluster default): plain, PASSWORD-type, and a key Kafka does not define
BROKER_CONFIGS = {
    "num.io.threads": lambda rng: str(rng.choice((8, 16, 32))),
    "log.cleaner.threads": lambda rng: str(rng.randint(1, 4)),
    "ssl.keystore.password": lambda rng: f"keystore-{rng.getrandbits(48):012x}",
    "listener.name.internal.scram-sha-256.sasl.jaas.config": lambda rng: (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="broker" password="pw-{rng.getrandbits(48):012x}";'),
    "acme.audit.token": lambda rng: f"tok-{rng.getrandbits(32):08x}",
}
USERS = tuple(f"user-{index}" for index in range(12))
CLIENT_IDS = tuple(f"client-{index}" for index in range(8))


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
        ("broker-config", 0.3), ("quota", 0.4), ("acl", 0.4), ("scram", 0.2), ("token", 0.3), ("producer-ids", 1),
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

    restart_pending = options.cluster_restart_at > 0
    for index in range(options.events):
        sim.tick(rng.randint(20, 400))
        if restart_pending and sim.next_offset >= options.cluster_restart_at:
            restart_pending = False
            yield from whole_cluster_restart(sim, rng, down)
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
            config_key = rng.choice(sorted(TOPIC_CONFIGS))
            configs = sim.topics[name].configs
            delete = config_key in configs and rng.random() < 0.3
            value = None if delete else TOPIC_CONFIGS[config_key](rng)
            if value is None or configs.get(config_key) != value:
                sim.set_topic_config(name, config_key, value)
        elif op in FAMILY_OPS:
            FAMILY_OPS[op](sim, rng)
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


def whole_cluster_restart(sim: ControllerSimulator, rng: random.Random, down: dict[int, int]) -> Steps:
    """Every running broker shut down in id order (controlled: the last one's partitions are left without a leader),
    then after the outage every registered broker back (``down``: the crashed ones, which come back with them),
    unfenced in id order (the leaderless partitions elect it), caught up; preferred elections last."""
    for broker_id in sorted(b for b, broker in sim.brokers.items() if not broker.fenced):
        sim.controlled_shutdown(broker_id)
        sim.tick(rng.randint(200, 1500))
        yield
    sim.tick(rng.randint(20_000, 60_000))
    for broker_id in sorted(sim.brokers):
        down.pop(broker_id, None)
        sim.register_broker(broker_id)
        sim.tick(rng.randint(200, 1000))
        sim.unfence(broker_id)
        yield
    for broker_id in sorted(sim.brokers):
        sim.catch_up(broker_id)
        yield
    sim.preferred_election()
    yield


def broker_config(sim: ControllerSimulator, rng: random.Random) -> None:
    """A broker's dynamic config or the cluster default: set to a new value, or deleted when set."""
    broker_id = rng.choice([None, *sorted(sim.brokers)])
    configs = sim.cluster_configs if broker_id is None else sim.broker_configs.get(str(broker_id), {})
    key = rng.choice(sorted(BROKER_CONFIGS))
    value = None if key in configs and rng.random() < 0.3 else BROKER_CONFIGS[key](rng)
    if value is not None and configs.get(key) == value:
        return  # no change, no record
    if broker_id is None:
        sim._latency()
        sim.set_cluster_config(key, value)
    else:
        sim.set_broker_config(broker_id, key, value)


def client_quota(sim: ControllerSimulator, rng: random.Random) -> None:
    """A user's, a client id's, a user's on one client id, or a default entity's quota: set, or removed."""
    shape = rng.randrange(5)
    entity = (quota_entity(user=rng.choice(USERS)) if shape == 0
              else quota_entity(client_id=rng.choice(CLIENT_IDS)) if shape == 1
              else quota_entity(user=rng.choice(USERS), client_id=rng.choice(CLIENT_IDS)) if shape == 2
              else quota_entity(default_user=True) if shape == 3 else quota_entity(default_client_id=True))
    key = rng.choice(QUOTA_KEYS)
    set_now = key in sim.client_quotas.get(entity, {})
    if set_now and rng.random() < 0.4:
        sim.alter_client_quota(entity, key, None)
    elif key == "request_percentage":
        sim.alter_client_quota(entity, key, float(rng.randint(10, 200)))
    else:
        sim.alter_client_quota(entity, key, float(rng.choice((1, 2, 5, 10, 50)) * 1_048_576))


def acl(sim: ControllerSimulator, rng: random.Random) -> None:
    """An ACL granted (a topic literally or by prefix, a group) or, a third of the time, one revoked."""
    if sim.acls and rng.random() < 0.35:
        entry = sim.acls[rng.choice(sorted(sim.acls))]
        sim.delete_acls(entry)
        return
    principal = f"User:{rng.choice(USERS)}"
    if rng.random() < 0.25:
        resource_type, name, pattern = RESOURCE_TYPE_GROUP, f"group-{rng.randrange(6)}", PATTERN_LITERAL
        operation = OPERATION_READ
    elif rng.random() < 0.3 or not sim.topics:
        resource_type, name, pattern = RESOURCE_TYPE_TOPIC, rng.choice(("topic-", "rt-", "orders")), PATTERN_PREFIXED
        operation = rng.choice((OPERATION_READ, OPERATION_WRITE, OPERATION_DESCRIBE))
    else:
        resource_type, name, pattern = RESOURCE_TYPE_TOPIC, rng.choice(sorted(sim.topics)), PATTERN_LITERAL
        operation = rng.choice((OPERATION_READ, OPERATION_WRITE, OPERATION_DESCRIBE))
    permission = PERMISSION_DENY if rng.random() < 0.1 else PERMISSION_ALLOW
    sim.create_acl(StandardAcl(resource_type, name, pattern, principal, "*", operation, permission))


def scram(sim: ControllerSimulator, rng: random.Random) -> None:
    """A SCRAM user created or its password changed (SHA-256 or SHA-512), or, a quarter of the time, removed."""
    if not sim.mv.scram_supported:
        return
    if sim.scram_credentials and rng.random() < 0.25:
        name, mechanism = rng.choice(sorted(sim.scram_credentials))
        sim.delete_scram_credential(name, mechanism)
        return
    sim.upsert_scram_credential(rng.choice(USERS), rng.choice((SCRAM_SHA_256, SCRAM_SHA_512)),
                                f"secret-{rng.getrandbits(40):010x}", rng.choice((4096, 8192)))


def delegation_token(sim: ControllerSimulator, rng: random.Random) -> None:
    """The controller's sweep of expired tokens when one is due, else a token created, renewed or expired."""
    if not sim.mv.delegation_tokens or sim.sweep_expired_delegation_tokens() >= 0:
        return
    live = sorted(sim.delegation_tokens)
    choice = rng.random()
    if not live or choice < 0.5:
        owner = f"User:{rng.choice(USERS)}"
        renewers = (f"User:{rng.choice(USERS)}",) if rng.random() < 0.5 else ()
        sim.create_delegation_token(owner, renewers)
    elif choice < 0.85:
        sim.renew_delegation_token(rng.choice(live))
    else:
        sim.expire_delegation_token(rng.choice(live))


def producer_ids(sim: ControllerSimulator, rng: random.Random) -> None:
    """A broker's transaction coordinator takes the next block of producer ids."""
    if sim.active:
        sim.allocate_producer_ids(rng.choice(sorted(sim.active)))


FAMILY_OPS = {"broker-config": broker_config, "quota": client_quota, "acl": acl, "scram": scram,
              "token": delegation_token, "producer-ids": producer_ids}
