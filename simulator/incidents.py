"""The named incident stories: each a generator over controller operations that records its key facts."""

from __future__ import annotations

from dataclasses import replace

from records.kafka_constants import (
    CLIENT_QUOTA_USER,
    OPERATION_WRITE,
    PATTERN_LITERAL,
    PERMISSION_ALLOW,
    RESOURCE_TYPE_TOPIC,
    SCRAM_SHA_512,
)
from records.standard_acl import StandardAcl
from simulator.cluster_setup import ScenarioOptions, Steps, require_cluster, setup_cluster
from simulator.controller import MIN_ISR_KEY, UNCLEAN_KEY, ControllerSimulator, SimulationError


def rolling_restart(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """Every broker in id order: controlled shutdown, fence, new incarnation, unfence, catch up,
    preferred elections. key["restarts"]: broker, old/new epoch, shutdown/fence/register/unfence offsets."""
    yield from setup_cluster(sim, options)
    restarts: list[dict[str, int]] = []
    for broker_id in sorted(sim.brokers):
        old = sim.brokers[broker_id].epoch
        shutdown = sim.controlled_shutdown(broker_id, complete=False)
        yield
        sim.tick(sim.rng.randint(200, 1500))
        fence = sim.fence(broker_id, reason="controlled-shutdown")
        yield
        sim.tick(sim.rng.randint(5000, 15000))
        new = sim.register_broker(broker_id)
        yield
        sim.tick(sim.rng.randint(500, 2000))
        unfence = sim.unfence(broker_id)
        sim.catch_up(broker_id)
        yield
        sim.preferred_election([broker_id])
        restarts.append({"broker": broker_id, "old_epoch": old, "new_epoch": new, "shutdown_offset": shutdown,
                         "fence_offset": fence, "register_offset": new, "unfence_offset": unfence})
        yield
    sim.facts.key["restarts"] = restarts


def rack_outage(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """All brokers of rack-1 stop at once and are fenced after the session timeout; later they come
    back. With racks >= replication factor no partition loses its leader. key: rack, brokers, fence
    offsets, outage start/end times."""
    require_cluster(options, 2, "rack-outage")
    racks = max(options.racks, 2)
    options = replace(options, racks=racks)
    yield from setup_cluster(sim, options)
    rack = "rack-1"
    down = [b for b in sorted(sim.brokers) if sim.brokers[b].rack == rack]
    start = sim.now
    sim.tick(sim.config.session_timeout_ms)
    fences = {}
    for broker_id in down:
        fences[broker_id] = sim.fence(broker_id)
        yield
    sim.tick(60_000)
    for broker_id in down:
        sim.register_broker(broker_id)
        yield
    for broker_id in down:
        sim.unfence(broker_id)
        sim.catch_up(broker_id)
        yield
    sim.preferred_election()
    sim.facts.key.update(rack=rack, brokers=down, fence_offsets=fences, outage_start_ms=start,
                         outage_end_ms=sim.now)
    yield


def lost_last_isr_unclean(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """topic-0 partition 0: followers drop out of the ISR, the last ISR member dies (leader -1), the
    operator enables unclean election and elects a stale replica (ISR = [leader], RECOVERING), which
    later recovers. key: topic, partition, shrink/leaderless/unclean/recovered offsets, epochs, leaders."""
    require_cluster(options, 3, "lost-last-isr-unclean")
    yield from setup_cluster(sim, options)
    if sim.cluster_configs.get(UNCLEAN_KEY) == "true":
        sim.set_cluster_config(UNCLEAN_KEY, "false")  # the story needs a clean-only election first
        yield
    topic, pid = "topic-0", 0
    partition = sim.partition(topic, pid)
    if len(partition.replicas) < 2:
        raise SimulationError("lost-last-isr-unclean needs replication factor >= 2")
    last = partition.leader
    shrink = sim.alter_isr(topic, pid, [last])
    yield
    sim.tick(sim.rng.randint(1000, 5000))
    fence = sim.crash(last)
    leaderless = next(fact for fact in sim.facts.leaderless if fact.topic == topic and fact.partition == pid)
    yield
    sim.tick(30_000)
    sim.set_topic_config(topic, UNCLEAN_KEY, "true")
    yield
    unclean = sim.elect_leaders(topic, pid, unclean=True)
    elected = sim.facts.unclean_elections[-1]
    yield
    sim.tick(sim.rng.randint(2000, 8000))
    recovered = sim.recover(topic, pid) if sim.mv.leader_recovery else -1
    yield
    sim.tick(10_000)
    sim.register_broker(last)
    sim.unfence(last)
    sim.catch_up(last)
    sim.preferred_election([last])
    yield
    sim.facts.key.update(topic=topic, partition=pid, topic_id=partition.topic.topic_id_str, last_isr_member=last,
                         shrink_offset=shrink, fence_offset=fence, leaderless_offset=leaderless.offset,
                         leaderless_epoch=leaderless.leader_epoch, unclean_offset=unclean,
                         unclean_leader=elected.leader, unclean_epoch=elected.leader_epoch,
                         recovered_offset=recovered)


def flapping_broker(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """Broker 1 crashes and comes back five times, each time with a new epoch and incarnation.
    key: broker, epochs (one per incarnation), fence_offsets."""
    require_cluster(options, 2, "flapping-broker")
    yield from setup_cluster(sim, options)
    broker_id = 1
    epochs = [sim.brokers[broker_id].epoch]
    fences = []
    for _ in range(5):
        fences.append(sim.crash(broker_id))
        yield
        sim.tick(sim.rng.randint(1000, 4000))
        epochs.append(sim.register_broker(broker_id))
        sim.tick(sim.rng.randint(300, 1200))
        sim.unfence(broker_id)
        sim.catch_up(broker_id, limit=sim.rng.randint(0, 3))
        yield
        sim.tick(sim.rng.randint(2000, 6000))
    sim.catch_up(broker_id)
    sim.preferred_election([broker_id])
    sim.facts.key.update(broker=broker_id, epochs=epochs, fence_offsets=fences)
    yield


def reassignment_under_failure(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """A: topic-0/0 gains a new replica that dies before catching up; the reassignment is cancelled.
    B: topic-0/1 moves off its leader, the leader dies mid-move, the move completes on the survivors.
    key: a_/b_ partition, target, started/cancelled/completed offsets, crashed brokers."""
    require_cluster(options, options.replication_factor + 2, "reassignment-under-failure")
    if options.partitions_per_topic < 2:
        raise SimulationError("reassignment-under-failure needs two partitions per topic")
    yield from setup_cluster(sim, options)
    topic = "topic-0"
    partition_a = sim.partition(topic, 0)
    newcomer = next(b for b in sorted(sim.active) if b not in partition_a.replicas)
    a_target = [*partition_a.replicas[:-1], newcomer]
    a_started = sim.reassign(topic, 0, a_target)
    yield
    sim.tick(2000)
    a_crash = sim.crash(newcomer)
    yield
    a_cancelled = sim.cancel_reassignment(topic, 0)
    yield
    partition_b = sim.partition(topic, 1)
    old_leader = partition_b.leader
    spare = next(b for b in sorted(sim.active) if b not in partition_b.replicas)
    b_target = [*[r for r in partition_b.replicas if r != old_leader], spare]
    b_started = sim.reassign(topic, 1, b_target)
    yield
    sim.tick(1500)
    b_crash = sim.crash(old_leader)
    yield
    b_completed = sim.expand_isr(topic, 1, [spare])
    yield
    for broker in (newcomer, old_leader):
        sim.tick(5000)
        sim.register_broker(broker)
        sim.unfence(broker)
        sim.catch_up(broker)
        yield
    sim.preferred_election()
    sim.facts.key.update(topic=topic, a_partition=0, a_target=a_target, a_started=a_started,
                         a_crashed=newcomer, a_crash_offset=a_crash, a_cancelled=a_cancelled,
                         b_partition=1, b_target=b_target, b_started=b_started, b_crashed=old_leader,
                         b_crash_offset=b_crash, b_completed=b_completed)
    yield


def controlled_shutdown(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """The broker leading the most partitions shuts down cleanly: the shutdown batch moves every
    leadership away first, then it is fenced; it restarts later. key: broker, led partitions,
    shutdown/fence offsets."""
    require_cluster(options, 2, "controlled-shutdown")
    yield from setup_cluster(sim, options)
    led: dict[int, list[tuple[str, int]]] = {}
    for partition in sim.partitions.values():
        led.setdefault(partition.leader, []).append((partition.topic.name, partition.partition_id))
    broker = max(sorted(sim.active), key=lambda b: len(led.get(b, [])))
    shutdown = sim.controlled_shutdown(broker, complete=False)
    yield
    sim.tick(sim.rng.randint(300, 1500))
    fence = sim.fence(broker, reason="controlled-shutdown")
    yield
    sim.tick(20_000)
    sim.register_broker(broker)
    sim.unfence(broker)
    sim.catch_up(broker)
    sim.preferred_election([broker])
    sim.facts.key.update(broker=broker, led_partitions=sorted(led.get(broker, [])),
                         shutdown_offset=shutdown, fence_offset=fence)
    yield


def topic_recreate(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """"orders" is created, deleted and created again under the same name with a new topic id.
    key: topic, first_id, second_id, created/deleted/recreated offsets."""
    require_cluster(options, 1, "topic-recreate")
    yield from setup_cluster(sim, options)
    name = "orders"
    rf = min(options.replication_factor, len(sim.active))
    sim.create_topic(name, options.partitions_per_topic, rf, {"retention.ms": "86400000"})
    created = sim.facts.topics[-1]
    yield
    sim.tick(30_000)
    deleted = sim.delete_topic(name)
    yield
    sim.tick(5_000)
    sim.create_topic(name, max(1, options.partitions_per_topic // 2), rf)
    recreated = sim.facts.topics[-1]
    yield
    sim.facts.key.update(topic=name, first_id=created.topic_id, second_id=recreated.topic_id,
                         created_offset=created.offset, deleted_offset=deleted,
                         recreated_offset=recreated.offset)


def aborted_transaction(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """Creating "bulk" needs more records than one batch, so it runs in a metadata transaction; the
    controller dies after the first batch, the new leader aborts it, and the client's retry commits.
    key: aborted begin/abort offsets and the aborted topic id (never visible), committed ids/offsets."""
    if not sim.mv.transactions:
        raise SimulationError(f"aborted-transaction needs metadata transactions (3.6+), not {sim.mv.name}")
    yield from setup_cluster(sim, options)
    partitions = sim.config.max_records_per_batch + 1
    rf = min(options.replication_factor, len(sim.active))
    aborted_id = sim.create_topic("bulk", partitions, rf, abort_after_batches=1)
    aborted = sim.facts.aborted_transactions[-1]
    yield
    sim.tick(3000)
    sim.create_topic("bulk", partitions, rf)
    committed = sim.facts.transactions[-1]
    sim.facts.key.update(topic="bulk", aborted_topic_id=aborted_id.hex(),
                         aborted_begin=aborted.begin_offset, aborted_end=aborted.end_offset,
                         failover_offset=sim.facts.failovers[-1].offset,
                         committed_topic_id=sim.topics["bulk"].topic_id_str,
                         committed_begin=committed.begin_offset, committed_end=committed.end_offset)
    yield


def min_isr_change(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """ELR (KIP-966) and the operator changing min.insync.replicas: with a cluster minimum of 2, two replicas of
    topic-0 partition 0 fail, so ISRs drop below 2 and their last members are kept as the ELR; then topic-0's
    minimum is lowered (the controller clears topic-0's ELRs: ClearElrRecord "topic-0") and later the cluster's
    (ClearElrRecord "": every topic); the brokers come back. key: failed brokers, the three config offsets."""
    if not sim.elr:
        raise SimulationError("min-isr-change needs eligible leader replicas (--elr, metadata version 4.0+)")
    require_cluster(options, 3, "min-isr-change")
    yield from setup_cluster(sim, options)
    raised = sim.set_cluster_config(MIN_ISR_KEY, "2")  # no ELR yet: its ClearElrRecord changes nothing
    yield
    failed = sim.partition("topic-0", 0).replicas[1:3]
    for broker in failed:
        sim.crash(broker)
        yield
    sim.tick(30_000)
    topic = sim.set_topic_config("topic-0", MIN_ISR_KEY, "1")
    yield
    sim.tick(30_000)
    cluster = sim.set_cluster_config(MIN_ISR_KEY, "1")
    yield
    sim.tick(10_000)
    for broker in failed:
        sim.register_broker(broker)
        sim.unfence(broker)
        sim.catch_up(broker)
        yield
    sim.preferred_election()
    sim.facts.key.update(failed=failed, cluster_min_isr_2_offset=raised, topic_min_isr_1_offset=topic,
                         cluster_min_isr_1_offset=cluster)
    yield


def image_changes(sim: ControllerSimulator, options: ScenarioOptions) -> Steps:
    """The questions operators ask of the image's other parts, one story each, every offset in ``facts.key``:
    retention.ms changed on "orders" (created with 7 days, lowered to 1 day); "payments" partition 0 loses every
    replica, unclean.leader.election.enable is turned on for the topic, and the stale replica coming back is
    elected uncleanly by that config (no admin request); an ACL granted then revoked for alice; a SCRAM user alice
    created and her password changed (3.5-IV2+, else -1); broker 1's keystore password changed; a cluster default
    set and deleted; a quota for alice set; a delegation token for alice created, renewed and expired (3.6-IV2+, else
    "");
    a producer-id block. Needs 4 brokers."""
    require_cluster(options, 4, "image-changes")
    yield from setup_cluster(sim, options)
    if sim.cluster_configs.get(UNCLEAN_KEY) == "true":
        sim.set_cluster_config(UNCLEAN_KEY, "false")  # the story needs the topic's own config to decide
        yield
    key = sim.facts.key
    sim.create_topic("orders", options.partitions_per_topic, 3, {"retention.ms": "604800000"})
    key["orders_created_offset"] = sim.facts.topics[-1].offset
    yield
    sim.tick(60_000)
    key["retention_offset"] = sim.set_topic_config("orders", "retention.ms", "86400000")
    yield
    sim.create_topic("payments", 1, 3)
    partition = sim.partition("payments", 0)
    leader, stale, third = partition.replicas
    sim.tick(5_000)
    sim.alter_isr("payments", 0, [leader])  # the followers fall behind
    yield
    for broker_id in (stale, third, leader):  # the last ISR member dies last: leaderless
        sim.tick(2_000)
        sim.crash(broker_id)
        yield
    key["leaderless_offset"] = sim.facts.leaderless[-1].offset
    sim.tick(30_000)
    key["unclean_config_offset"] = sim.set_topic_config("payments", UNCLEAN_KEY, "true")
    yield
    sim.tick(10_000)
    sim.register_broker(stale)
    sim.tick(1_000)
    sim.unfence(stale)  # the controller elects it: the topic's config allows an unclean election
    elected = sim.facts.unclean_elections[-1]
    key.update(unclean_election_offset=elected.offset, unclean_leader=elected.leader, stale_replica=stale)
    yield
    alice_writes = StandardAcl(RESOURCE_TYPE_TOPIC, "orders", PATTERN_LITERAL, "User:alice", "*",
                                      OPERATION_WRITE, PERMISSION_ALLOW)
    sim.tick(120_000)
    key["acl_granted_offset"] = sim.create_acl(alice_writes)
    key["acl_id"] = sim.facts.changes_of("acl")[-1].key
    yield
    sim.tick(120_000)
    key["acl_revoked_offset"] = sim.delete_acls(alice_writes)
    yield
    created = changed = -1
    if sim.mv.scram_supported:
        created = sim.upsert_scram_credential("alice", SCRAM_SHA_512, "alice-password-1", 8192)
        yield
        sim.tick(300_000)
        changed = sim.upsert_scram_credential("alice", SCRAM_SHA_512, "alice-password-2", 8192)
        yield
    key.update(scram_created_offset=created, scram_changed_offset=changed)
    key["keystore_set_offset"] = sim.set_broker_config(1, "ssl.keystore.password", "keystore-secret-1")
    sim.tick(60_000)
    key["keystore_changed_offset"] = sim.set_broker_config(1, "ssl.keystore.password", "keystore-secret-2")
    yield
    sim.tick(1_000)
    key["cluster_default_set_offset"] = sim.set_cluster_config("log.cleaner.threads", "2")
    sim.tick(60_000)
    key["cluster_default_deleted_offset"] = sim.set_cluster_config("log.cleaner.threads", None)
    yield
    key["quota_offset"] = sim.alter_client_quota(((CLIENT_QUOTA_USER, "alice"),), "producer_byte_rate", 1_048_576.0)
    yield
    token_id, renewed, expired = "", -1, -1
    if sim.mv.delegation_tokens:
        token_id = sim.create_delegation_token("User:alice")
        yield
        sim.tick(120_000)
        renewed = sim.renew_delegation_token(token_id)
        yield
        sim.tick(60_000)
        expired = sim.expire_delegation_token(token_id)
        yield
    key.update(token_id=token_id, token_renewed_offset=renewed, token_expired_offset=expired)
    key["producer_ids_offset"] = sim.allocate_producer_ids(sorted(sim.active)[0])
    yield
    for broker_id in (leader, third):
        sim.tick(5_000)
        sim.register_broker(broker_id)
        sim.unfence(broker_id)
        sim.catch_up(broker_id)
        yield
