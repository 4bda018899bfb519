"""Stories for the audit by the configs in force (replay/audit/effective_configs.py, replay/audit/election_configs.py,
the what-if): each a cluster of ONE lake, its log replayed (``config_history`` too: the election audit reads it).
tests/conftest.py builds the lake once per run (``audit_lake``) for test_effective_configs.py,
test_election_configs.py and test_whatif.py.

Unclean stories (metadata.version 3.9, three brokers, a topic ``t`` of one partition, replication factor 2): the
follower's broker fails, then the leader's (offline, its last ISR member kept), the follower's broker returns (not
in the ISR), a config may allow unclean election, and an admin's ElectLeaders UNCLEAN elects the returned replica.
ELR stories (metadata.version 4.0, ELR on, four brokers, ``e`` of replication factor 3): the last replica's broker
fails, then the leader's; min.insync.replicas 2 (the cluster default) or 1 (Kafka's default).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from records.kafka_constants import CONFIG_RESOURCE_BROKER
from records.kafka_topic_configs import MIN_IN_SYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE
from records.model import LogEntry
from replay.store.runs import run_replay
from simulator import ControllerSimulator
from simulator.controller import SimConfig


@dataclass
class AuditStory:
    entries: list[LogEntry]
    key: dict[str, Any] = field(default_factory=dict)


def _cluster(brokers: int, metadata_version: str, seed: int, **config: Any) -> ControllerSimulator:
    sim = ControllerSimulator(SimConfig(seed=seed, metadata_version=metadata_version, **config))
    for broker in range(1, brokers + 1):
        sim.register_broker(broker)
    for broker in range(1, brokers + 1):
        sim.unfence(broker)
    return sim


def _node_config(sim: ControllerSimulator, node: int, key: str, value: str) -> int:
    """A node's own dynamic config (``kafka-configs --entity-type brokers --entity-name <node>``)."""
    return sim._commit(sim._config_records(CONFIG_RESOURCE_BROKER, str(node), key, value))


def unclean_story(allow: str) -> AuditStory:
    """``allow``: "topic", "default", "node" (the active controller's node config, over a cluster default of
    false), "other-node" (a broker's node config: not the controller's, so not read) or "none"."""
    sim = _cluster(3, "3.9", seed=2)
    sim.create_topic("t", 1, 2)
    partition = sim.partition("t", 0)
    first, last = partition.replicas[1], partition.replicas[0]
    other = next(b for b in (1, 2, 3) if b not in (first, last))
    key: dict[str, Any] = {"first": first, "last": last, "other": other, "controller": sim.active_controller}
    sim.crash(first)
    key["fence_last"] = sim.crash(last)
    sim.register_broker(first)
    sim.unfence(first)
    key["after_back"] = sim.next_offset - 1
    if allow == "topic":
        key["config"] = sim.set_topic_config("t", UNCLEAN_LEADER_ELECTION_ENABLE, "true")
    elif allow == "default":
        key["config"] = sim.set_cluster_config(UNCLEAN_LEADER_ELECTION_ENABLE, "true")
    elif allow == "node":
        sim.set_cluster_config(UNCLEAN_LEADER_ELECTION_ENABLE, "false")
        key["config"] = _node_config(sim, sim.active_controller, UNCLEAN_LEADER_ELECTION_ENABLE, "true")
    elif allow == "other-node":
        key["config"] = _node_config(sim, other, UNCLEAN_LEADER_ELECTION_ENABLE, "true")
    key["unclean"] = sim.elect_leaders("t", 0, unclean=True)
    return AuditStory(sim.entries(), key)


def elr_story(min_isr: int | None, blind: bool = False) -> AuditStory:
    """``min_isr``: the cluster default min.insync.replicas (None: none set, Kafka's default 1); ``blind``: the
    controller runs with it, but as a static ``server.properties`` setting: the log has no ConfigRecord of it (nor
    the ClearElrRecord of its batch), so the audit, reading the log only, judges by Kafka's default."""
    sim = _cluster(4, "4.0", seed=5, elr=True)
    key: dict[str, Any] = {}
    if min_isr is not None:
        key["config"] = sim.set_cluster_config(MIN_IN_SYNC_REPLICAS, str(min_isr))
    sim.create_topic("e", 1, 3)
    partition = sim.partition("e", 0)
    leader, second, third = partition.replicas
    key.update(leader=leader, second=second, third=third)
    key["fence_third"] = sim.crash(third)
    key["before_leader_fails"] = sim.next_offset - 1
    key["fence_leader"] = sim.crash(leader)
    entries = list(sim.entries())
    if blind:
        batch = next(e.batch_base_offset for e in entries if e.offset == key["config"])
        entries = [e for e in entries if e.batch_base_offset != batch]
    return AuditStory(entries, key)


def stories() -> dict[str, AuditStory]:
    built = {f"unclean-{allow}": unclean_story(allow) for allow in ("topic", "default", "node", "other-node", "none")}
    built.update({"elr-2": elr_story(2), "elr-1": elr_story(None), "elr-2-blind": elr_story(2, blind=True)})
    return built


def lake(spark: SparkSession, built: dict[str, AuditStory], tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """Every story a cluster of one lake: its metadata_log, then the replay."""
    lake = Lake(tmp_path_factory.mktemp("audit-lake"))
    frames = [entries_frame(spark, story.entries, cluster) for cluster, story in built.items()]
    lake.write(functools.reduce(DataFrame.unionByName, frames), "metadata_log", "append")
    run_replay(spark, lake)
    return lake


def table(spark: SparkSession, lake: Lake, name: str, cluster: str) -> DataFrame:
    return lake.read(spark, name).where(F.col("cluster_id") == cluster)
