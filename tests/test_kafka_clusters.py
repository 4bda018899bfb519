"""Kafka itself as the referee, on real clusters: a KRaft cluster of Kafka 4.4.0 and one of 3.9.2 (one controller,
three brokers, each its own JVM: tests/kafka_cluster.py) go through scripted incidents over the Admin API
(kafka-python): topics created, brokers killed and restarted, a controlled shutdown, preferred elections, a
throttled reassignment, a feature upgrade, topic and broker configs (a PASSWORD-type one too), a topic deleted and
re-created under its name, ACLs, SCRAM users, client quotas, an unclean election after both replicas of a partition
died, and two brokers lost at once under ``min.insync.replicas=2`` (ELR on 4.4), while ``ingest --follow`` archives
the controller's log as it grows, rolls, snapshots and is trimmed. Then the cluster is stopped and every node's
``__cluster_metadata-0`` is read and folded, and every way must agree:

(a) Kafka's own fold (tests/referee) and our reference fold at every batch end, on every node's log as Kafka left
    it (the controller's starts from a snapshot: its first segments are gone) and on the brokers' logs from offset 0;
(b) ``kraft-replay ingest`` + ``replay`` + ``state --format json`` at the last offset and Kafka's image there, on the
    controller's trimmed log and on the lake ``ingest --follow`` filled (every offset from 0, exactly once; its
    election audit finds the unclean election);
    Every section: brokers, topics, partitions, features, controllers, configs, clientQuotas, acls,
    scramCredentials, delegationTokens, producerIds. A sensitive config's value (the PASSWORD-type one) is in the
    clear in Kafka's image and ``(redacted)`` in ours: Kafka's is compared redacted by ``records.redaction``'s
    rule, and its clear value is in no output of ours;
(c) the live cluster's own answers, taken just before the controller stopped, and our state at the last offset:
    describe topics, cluster and features (kafka-python); describe configs of every topic and broker, their
    dynamic values only (sources DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG: the
    log holds what was altered, not the static ``server.properties``), describe ACLs and the SCRAM users' names,
    mechanisms and iterations (kafka-python); the client quotas (Kafka's own ``Admin.describeClientQuotas``,
    ``tests/referee/DescribeClientQuotas.java``: kafka-python has no call for it);
(d) Kafka's ``kafka-dump-log --cluster-metadata-decoder`` and ``kraft-replay dump`` on every segment and snapshot of
    every node.

Every record of every node's log and snapshots decodes (no raw records), and the records the script makes Kafka
write (configs, ACLs, SCRAM credentials, quotas, a topic removal) are counted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from lakehouse.jars import KAFKA_VERSIONS
from records.kafka_constants import CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC
from records.kafka_topic_configs import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG
from records.log_dir import classify
from records.model import LogEntry, MetadataRecord, RawRecord
from records.redaction import REDACTED, is_sensitive, redact
from records.sources import read_entries
from replay.core.coverage import ClusterCoverage, LogRun, SnapshotId, history_coverage
from replay.query.image import NO_PRODUCER_ID
from replay.reference.fold import Image, fold
from tests.conftest import SUMMARY, run_dir
from tests.kafka_cluster import BROKER_IDS, CONTROLLER_ID, KafkaCluster, KafkaUnavailable, Node, wait_for
from tests.referee import (
    KEYS,
    Comparison,
    RefereeUnavailable,
    compare,
    compiled,
    features_as_kafka_shows,
    hashable,
    kafka_fold,
    kafkas_features,
)

pytestmark = pytest.mark.kafka

ORDERS, PAYMENTS, AUDIT, DOOMED = "orders", "payments", "audit", "doomed"
# (partitions, replication factor, topic configs)
TOPICS: dict[str, tuple[int, int, dict[str, str]]] = {
    ORDERS: (6, 3, {}), PAYMENTS: (3, 3, {"min.insync.replicas": "2"}), AUDIT: (3, 2, {}), DOOMED: (2, 3, {})}
# Records the script makes Kafka write (beyond brokers, topics and partitions): at least this many each.
SCRIPTED_RECORDS = {"ConfigRecord": 14, "AccessControlEntryRecord": 3, "RemoveAccessControlEntryRecord": 1,
                    "UserScramCredentialRecord": 4, "RemoveUserScramCredentialRecord": 1, "ClientQuotaRecord": 2}
# A PASSWORD-type dynamic broker config (ConfigDef.Type.PASSWORD) of broker 1: the log holds its value in the clear
PASSWORD_CONFIG = "listener.name.plaintext.scram-sha-256.sasl.jaas.config"
PASSWORD = "s3cret"
PASSWORD_VALUE = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
                  f'password="{PASSWORD}";')
# Kafka's own Admin client for what kafka-python's has no call for (compiled like KafkaFold, tests/referee)
DESCRIBE_CLIENT_QUOTAS = Path(__file__).parent / "referee" / "DescribeClientQuotas.java"
TALLY: dict[str, list[str]] = {}
TRIM_TIMEOUT = 90.0
# Each cluster starts at an older metadata.version (its log's first records are written in that version's record
# versions: no directories, no ELR) and the script upgrades every feature to the newest its brokers support.
FORMATTED_AT = {"4.4.0": "3.9", "3.9.2": "3.3"}
FOLLOW_INTERVAL = 3.0  # seconds between ingest --follow rounds
FOLLOW_START_TIMEOUT = 300.0  # the follower's driver JVM to start, on a loaded 2-core machine
FOLLOW_STOP_TIMEOUT = 300.0  # SIGTERM ends the round under way first, on a loaded 2-core machine
T = TypeVar("T")


# --- the scripted incidents ------------------------------------------------------------------------------------


@dataclass
class Script:
    """What the incidents did and saw, and the live cluster's own view at the end."""

    version: str
    cluster: KafkaCluster
    steps: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    elr_seen: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    unclean: tuple[str, int, int] | None = None  # (topic, partition, broker elected uncleanly)
    upgraded: dict[str, tuple[int, int]] = field(default_factory=dict)  # feature -> (level before, after)
    followed: Path | None = None  # the lake ``ingest --follow`` filled from the controller's log while it ran
    follow_rounds: int = 0
    view: dict[str, Any] = field(default_factory=dict)


def _partitions(admin: Any) -> dict[tuple[str, int], dict[str, Any]]:
    """(topic, partition) -> leader, leader epoch, replicas, isr, topic id, as a broker's metadata cache answers
    (internal topics left out)."""
    out = {}
    for topic in admin.describe_topics():
        if topic["error_code"] != 0 or topic["is_internal"]:
            continue
        for p in topic["partitions"]:
            out[(topic["name"], p["partition_index"])] = {
                "leader": p["leader_id"], "leader_epoch": p["leader_epoch"], "replicas": list(p["replica_nodes"]),
                "isr": sorted(p["isr_nodes"]), "topic_id": str(topic["topic_id"])}
    return out


def _settled(admin: Any, topics: set[str] | None = None, without: int | None = None) -> bool:
    """Every partition (of ``topics``) has a leader and its whole replica set in the ISR, or, with ``without``,
    the ISR and leader without that broker."""
    parts = _partitions(admin)
    if topics is not None and {t for t, _ in parts} & topics != topics:
        return False
    for (topic, _), p in parts.items():
        if topics is not None and topic not in topics:
            continue
        if without is not None:
            if p["leader"] in (-1, without) or without in p["isr"]:
                return False
        elif p["leader"] == -1 or sorted(p["replicas"]) != p["isr"]:
            return False
    return True


def _fenced(admin: Any, broker_id: int) -> bool:
    """The broker is not an unfenced broker of the cluster and leads no partition."""
    unfenced = {b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")}
    return broker_id not in unfenced and all(p["leader"] != broker_id for p in _partitions(admin).values())


def _retry(admin: Any, call: Callable[[], T]) -> T:
    """An idempotent admin call, again while it fails with a client error: kafka-python sends controller requests
    to the broker its metadata names as the controller, which may be one that has just restarted, and a request
    for one broker (DescribeConfigs of a broker) to that broker, which its metadata may not know since it came
    back (UnknownBrokerIdError)."""
    from kafka.errors import KafkaError

    deadline = time.monotonic() + 60
    while True:
        try:
            return call()
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            admin._controller_id = None  # kafka-python keeps it until a NotController error: ask again
            with contextlib.suppress(KafkaError):  # its metadata, refreshed every 5 minutes only: now
                admin._manager.run(admin._manager.cluster.refresh_metadata)
            time.sleep(1)


def first_segment_of(log_dir: Path) -> int:
    """The base offset of the first segment left: 0 until Kafka deleted segments behind a snapshot."""
    return min(int(p.name[:20]) for p in log_dir.glob("*.log"))


def _timed(script: Script, name: str, started: float) -> None:
    script.steps[name] = round(time.monotonic() - started, 1)


def _admin_client(cluster: KafkaCluster, broker_ids: Iterable[int]) -> Any:
    """kafka-python's admin client, bootstrapped from ``broker_ids``."""
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap(broker_ids), request_timeout_ms=20000,
                            client_id="kraft-replay-test")


def _upgrade_features(admin: Any) -> dict[str, tuple[int, int]]:
    """UpdateFeatures (``kafka-features upgrade``): every feature the brokers support beyond its finalized level, up
    to their newest, but ``kraft.version`` (a static quorum cannot change it); waits until the brokers report it."""
    supported = {name: f for name, f in admin.describe_features().items() if name != "kraft.version"}
    before = {name: f.get("finalized", (0, 0))[1] for name, f in supported.items()}
    target = {name: f["supported"][1] for name, f in supported.items() if f["supported"][1] > before[name]}
    assert "metadata.version" in target, supported
    result = _retry(admin, lambda: admin.update_features(target))
    assert all(r == "OK" for r in result.values()), result
    wait_for(f"features upgraded to {target}", lambda: all(
        admin.describe_features().get(name, {}).get("finalized", (0, 0))[1] == level for name, level in target.items()))
    return {name: (before[name], level) for name, level in target.items()}


def _alter_quotas(admin: Any, user: str, ops: dict[str, float | None]) -> None:
    """AlterClientQuotas through kafka-python's protocol classes (its admin client has no method for it)."""
    from kafka.protocol.admin import AlterClientQuotasRequest

    entry = AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name=user)],
        ops=[AlterClientQuotasRequest.EntryData.OpData(key=k, value=v or 0.0, remove=v is None)
             for k, v in ops.items()])
    response = admin._manager.run(admin._manager.send, AlterClientQuotasRequest(entries=[entry],
                                                                               validate_only=False))
    errors = [e.error_code for e in response.entries if e.error_code]
    assert not errors, f"AlterClientQuotas failed: {response}"


def _alter_configs(admin: Any, resource: Any) -> None:
    """IncrementalAlterConfigs of one resource, sent to the broker it names (kafka-python's ``alter_configs``
    refuses the cluster default, the empty broker name, and returns its errors instead of raising them)."""
    request = admin._alter_configs_request([resource], incremental=True)
    node = int(resource.name) if resource.name.isdigit() else None

    async def send() -> Any:
        return await admin._manager.send(request, node_id=node)

    response = admin._manager.run(send)
    results = admin._alter_configs_process_responses(response.responses)
    assert all(r == "OK" for kind in results.values() for r in kind.values()), results


def _described_configs(admin: Any, topics: Iterable[str]) -> dict[tuple[int, str, str], str]:
    """The dynamic configs the cluster reports (DescribeConfigs with synonyms), keyed as ``state``'s configs
    (resourceType, resourceName, name): each topic's DYNAMIC_TOPIC_CONFIG values; from each broker's synonyms its
    DYNAMIC_BROKER_CONFIG values and the cluster default's DYNAMIC_DEFAULT_BROKER_CONFIG ones (the empty broker
    name; every broker must report the same). A sensitive value, which Kafka never returns (null, isSensitive), is
    ``(redacted)``, as ours reads. Static ``server.properties`` and defaults are not in the log: left out."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resources = [ConfigResource(ConfigResourceType.TOPIC, topic) for topic in sorted(topics)]
    resources += [ConfigResource(ConfigResourceType.BROKER, str(broker_id)) for broker_id in BROKER_IDS]
    described = _retry(admin, lambda: admin.describe_configs(resources, include_synonyms=True, config_filter="all"))
    found: dict[tuple[int, str, str], str] = {}

    def add(key: tuple[int, str, str], value: str | None, sensitive: bool) -> None:
        assert (value is None) == sensitive, (key, value, sensitive)
        shown = REDACTED if sensitive else value
        assert found.setdefault(key, shown) == shown, (key, found[key], shown)

    for name, entries in described.get("topic", {}).items():
        for key, entry in entries.items():
            if entry["config_source"] == DYNAMIC_TOPIC_CONFIG:
                add((CONFIG_RESOURCE_TOPIC, name, key), entry["value"], entry["is_sensitive"])
    for name, entries in described.get("broker", {}).items():
        for key, entry in entries.items():
            for synonym in entry.get("synonyms") or [
                    {"name": key, "value": entry["value"], "source": entry["config_source"]}]:
                owner = {DYNAMIC_BROKER_CONFIG: name, DYNAMIC_DEFAULT_BROKER_CONFIG: ""}.get(synonym["source"])
                if owner is not None:
                    add((CONFIG_RESOURCE_BROKER, owner, synonym["name"]), synonym["value"],
                        entry["is_sensitive"])
    return found


def _described_acls(admin: Any) -> list[dict[str, Any]]:
    """Every ACL the cluster reports (DescribeAcls, a filter matching any), in ``state``'s fields but the id
    (Kafka's answer has none)."""
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    acls, _ = _retry(admin, lambda: admin.describe_acls(ACLFilter(
        None, None, ACLOperation.ANY, ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))))
    return [{"resourceType": int(acl.resource_pattern.resource_type),
             "resourceName": acl.resource_pattern.resource_name,
             "patternType": int(acl.resource_pattern.pattern_type), "principal": acl.principal, "host": acl.host,
             "operation": int(acl.operation), "permissionType": int(acl.permission_type)} for acl in acls]


def _described_scram_users(admin: Any) -> list[dict[str, Any]]:
    """Every SCRAM credential the cluster reports (DescribeUserScramCredentials of all users): name, mechanism,
    iterations, in ``state``'s fields."""
    described = _retry(admin, admin.describe_user_scram_credentials)
    assert not any(user["error"] for user in described.values()), described
    return [{"name": name, "mechanism": int(info["mechanism"]), "iterations": info["iterations"]}
            for name, user in described.items() for info in user["credential_infos"]]


def _described_client_quotas(cluster: KafkaCluster) -> list[dict[str, Any]]:
    """Every client quota the cluster reports, through Kafka's own ``Admin.describeClientQuotas``
    (``DescribeClientQuotas.java``), in ``state``'s fields."""
    classes = compiled(cluster.version, DESCRIBE_CLIENT_QUOTAS)
    command = ["java", "-Xmx128m", "-cp", os.pathsep.join([str(classes), cluster.cp]), DESCRIBE_CLIENT_QUOTAS.stem,
               ",".join(cluster.bootstrap())]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"DescribeClientQuotas failed:\n{result.stderr[-3000:]}"
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def run_script(cluster: KafkaCluster) -> Script:
    """The incidents, one after the other, each waited for until the cluster's metadata shows it."""
    from kafka import TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        AlterConfigOp,
        ConfigResource,
        ConfigResourceType,
        NewTopic,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    script = Script(cluster.version, cluster)
    new_kafka = not cluster.version.startswith("3.")
    admin = _admin_client(cluster, BROKER_IDS)
    try:
        t = time.monotonic()
        wait_for("3 brokers registered", lambda: len(admin.describe_cluster()["brokers"]) == 3)
        admin.create_topics([NewTopic(name, n, rf, topic_configs=configs)
                             for name, (n, rf, configs) in TOPICS.items()])
        wait_for("topics created, ISR full", lambda: _settled(admin, set(TOPICS)))
        _timed(script, "create topics", t)

        t = time.monotonic()
        cluster.kill(2)
        wait_for("broker 2 fenced: out of every ISR, leading nothing", lambda: _settled(admin, without=2))
        cluster.start(2)
        wait_for("broker 2 back in every ISR", lambda: _settled(admin))
        _timed(script, "kill -9 broker 2, restart", t)

        t = time.monotonic()
        _retry(admin, lambda: admin.elect_leaders(0))
        wait_for("preferred leaders", lambda: all(p["leader"] == p["replicas"][0]
                                                  for p in _partitions(admin).values()))
        _timed(script, "preferred election", t)

        t = time.monotonic()
        script.upgraded = _upgrade_features(admin)
        _timed(script, "feature upgrade", t)

        t = time.monotonic()
        code = cluster.stop(3)
        script.notes.append(f"broker 3 stopped by SIGTERM with exit code {code}")
        wait_for("broker 3 out of every ISR", lambda: _settled(admin, without=3))
        cluster.start(3)
        wait_for("broker 3 back in every ISR", lambda: _settled(admin))
        _retry(admin, lambda: admin.elect_leaders(0))
        wait_for("preferred leaders again", lambda: all(p["leader"] == p["replicas"][0]
                                                        for p in _partitions(admin).values()))
        _timed(script, "controlled shutdown of broker 3, restart, election", t)

        t = time.monotonic()
        current = _partitions(admin)[(AUDIT, 0)]["replicas"]
        target = [next(b for b in BROKER_IDS if b not in current), current[0]]
        # throttled as kafka-reassign-partitions --throttle does it: the moving replicas named in the topic's
        # throttled-replica configs, and a rate (here the cluster default: kafka-python sends a per-broker config to
        # that broker, which its metadata may not know yet after a restart); both removed once the move is done
        throttled = {"leader.replication.throttled.replicas": ",".join(f"0:{b}" for b in current),
                     "follower.replication.throttled.replicas": f"0:{target[0]}"}
        rates = {"leader.replication.throttled.rate": "1048576", "follower.replication.throttled.rate": "1048576"}
        _alter_configs(admin, ConfigResource(ConfigResourceType.TOPIC, AUDIT, configs=throttled))
        _alter_configs(admin, ConfigResource(ConfigResourceType.BROKER, "", configs=rates))
        _retry(admin, lambda: admin.alter_partition_reassignments({TopicPartition(AUDIT, 0): target}))
        wait_for(f"audit-0 reassigned to {target}",
                 lambda: _partitions(admin)[(AUDIT, 0)]["replicas"] == target
                 and not admin.list_partition_reassignments() and _settled(admin))
        _alter_configs(admin, ConfigResource(ConfigResourceType.TOPIC, AUDIT,
                                             configs={k: (AlterConfigOp.DELETE, None) for k in throttled}))
        _alter_configs(admin, ConfigResource(ConfigResourceType.BROKER, "",
                                             configs={k: (AlterConfigOp.DELETE, None) for k in rates}))
        _timed(script, "throttled reassignment", t)

        t = time.monotonic()
        _alter_configs(admin, ConfigResource(ConfigResourceType.TOPIC, ORDERS, configs={
            "retention.ms": "3600000", "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}))
        _alter_configs(admin, ConfigResource(ConfigResourceType.BROKER, "1", configs={
            "log.retention.ms": "7200000", PASSWORD_CONFIG: PASSWORD_VALUE}))  # a PASSWORD-type config too
        # the cluster-wide default (the empty broker name; on 4.4 with ELR a ClearElrRecord for every topic too)
        _alter_configs(admin, ConfigResource(ConfigResourceType.BROKER, "", configs={
            "log.retention.ms": "86400000", "min.insync.replicas": "1"}))
        _timed(script, "topic and broker configs", t)

        t = time.monotonic()
        admin.delete_topics([DOOMED])
        wait_for("doomed deleted", lambda: DOOMED not in {t for t, _ in _partitions(admin)})
        n, rf, configs = TOPICS[DOOMED]
        admin.create_topics([NewTopic(DOOMED, n, rf, topic_configs=configs)])
        wait_for("doomed re-created", lambda: _settled(admin, {DOOMED}))
        _timed(script, "delete and re-create a topic", t)

        t = time.monotonic()
        acls = [ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, ORDERS, ACLResourcePatternType.LITERAL)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, "billing-", ACLResourcePatternType.PREFIXED)),
                ACL("User:mallory", "*", ACLOperation.ALL, ACLPermissionType.DENY,
                    ResourcePattern(ResourceType.TOPIC, PAYMENTS, ACLResourcePatternType.LITERAL))]
        created = admin.create_acls(acls)
        assert not created["failed"], created
        deleted = admin.delete_acls([ACLFilter("User:mallory", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                               ResourcePatternFilter(ResourceType.TOPIC, PAYMENTS,
                                                                     ACLResourcePatternType.LITERAL))])
        assert deleted[0][1], deleted
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):  # one per user a request
            scram = admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion("alice", mechanism, "alice-secret", iterations=4096),
                UserScramCredentialUpsertion("bob", mechanism, "bob-secret", iterations=4096)])
            assert not any(scram.values()), scram
        removed = admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob",
                                                                                  ScramMechanism.SCRAM_SHA_256)])
        assert not any(removed.values()), removed
        _alter_quotas(admin, "alice", {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0})
        _alter_quotas(admin, "alice", {"consumer_byte_rate": None})
        _timed(script, "ACLs, SCRAM users, client quotas", t)

        # an unclean election: both replicas of audit-1 (RF 2) die, the one that left the ISR first comes back
        t = time.monotonic()
        _alter_configs(admin, ConfigResource(ConfigResourceType.TOPIC, AUDIT, configs={
            "unclean.leader.election.enable": "true"}))
        leader, follower = _partitions(admin)[(AUDIT, 1)]["replicas"]
        cluster.kill(follower)
        wait_for(f"broker {follower} fenced", lambda: _settled(admin, without=follower))
        # with one broker left, ask it alone: a client that knew the other two may find no node to ask (seen once:
        # "No node_id provided" for 90 s)
        alone = _admin_client(cluster, [b for b in BROKER_IDS if b not in (leader, follower)])
        try:
            cluster.kill(leader)
            wait_for("audit-1 leaderless", lambda: _partitions(alone)[(AUDIT, 1)]["leader"] == -1)
            cluster.start(follower)
            # the controller elects an out-of-ISR replica of a topic that allows it as soon as that broker unfences
            # (both releases do it by themselves; on 4.4 the ELR holds the lost leader, the ISR is empty)
            wait_for(f"audit-1 led by {follower} (unclean)",
                     lambda: _partitions(alone)[(AUDIT, 1)]["leader"] == follower)
        finally:
            alone.close()
        script.unclean = (AUDIT, 1, follower)
        cluster.start(leader)
        wait_for(f"broker {leader} back in every ISR", lambda: _settled(admin))
        _timed(script, "unclean election", t)

        # two brokers lost at once: payments (min.insync.replicas=2) falls below its minimum ISR; on 4.4 (ELR on
        # by default) the replicas that leave the ISR then become eligible leader replicas
        t = time.monotonic()
        cluster.kill(2)
        wait_for("broker 2 fenced", lambda: _settled(admin, without=2))
        cluster.kill(3)
        wait_for("broker 3 fenced", lambda: _fenced(admin, 3))
        if new_kafka:
            def elr() -> dict[tuple[str, int], list[int]]:
                found = {}
                for topic in admin.describe_topic_partitions([PAYMENTS])["topics"]:
                    for p in topic["partitions"]:
                        if p["eligible_leader_replicas"]:
                            found[(topic["name"], p["partition_index"])] = list(p["eligible_leader_replicas"])
                return found
            script.elr_seen = wait_for("ELR of payments", elr, timeout=30)
        cluster.start(2)
        cluster.start(3)
        wait_for("brokers 2 and 3 back in every ISR", lambda: _settled(admin))
        _timed(script, "two brokers lost at once (ELR), restart", t)

        # the cluster's own view, the same twice in a row (nothing moving)
        t = time.monotonic()

        def view() -> dict[str, Any]:
            described = admin.describe_cluster()
            brokers = sorted((b["broker_id"], b["host"], b["port"]) for b in described["brokers"]
                             if not b.get("is_fenced"))
            features = {name: f["finalized"][1] for name, f in admin.describe_features().items()
                        if f.get("finalized")}
            seen = {"partitions": _partitions(admin), "brokers": brokers, "features": features}
            if new_kafka:
                seen["elr"] = {(t["name"], p["partition_index"]): (list(p["eligible_leader_replicas"] or []),
                                                                   list(p["last_known_elr"] or []))
                               for t in admin.describe_topic_partitions(list(TOPICS))["topics"]
                               for p in t["partitions"]}
            return seen

        def stable() -> dict[str, Any] | None:
            first = view()
            time.sleep(1.5)
            return first if view() == first and len(first["brokers"]) == 3 else None

        script.view = wait_for("a stable view", stable)
        # the rest of the image as the cluster answers it (nothing changes it any more)
        script.view.update({"configs": _described_configs(admin, admin.list_topics()),
                            "acls": _described_acls(admin), "scramCredentials": _described_scram_users(admin),
                            "clientQuotas": _described_client_quotas(cluster)})
        _timed(script, "the cluster's view", t)
    finally:
        admin.close()
    return script


# --- fixtures ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def following(directory: Path, lake: Path, log: Path) -> Iterator[list[int]]:
    """``kraft-replay ingest --follow`` of ``directory`` into ``lake``, a process of its own (as an operator runs it,
    with its own Spark) while the body runs, stopped by SIGTERM after it; yields a list that then holds how many
    rounds ingested something. Its output goes to ``log``; its failure fails the body's caller."""
    command = [sys.executable, "-m", "kraft_replay.cli", "ingest", str(directory), "--lake", str(lake), "--follow",
               "--interval", str(FOLLOW_INTERVAL), "--quiet"]
    rounds: list[int] = []
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # its first round starts as it says it is following (its SIGTERM handler is set by then): the body runs
        # from there, so that it sees the log from its first segment and a stop request ends a round, not its start
        wait_for(f"ingest --follow of {directory} started", lambda: process.poll() is not None or re.search(
            r"^following ", log.read_text(errors="replace"), re.MULTILINE), timeout=FOLLOW_START_TIMEOUT)
        if process.poll() is not None:
            raise AssertionError(f"ingest --follow of {directory} exited with {process.returncode}:\n"
                                 f"{log.read_text(errors='replace')[-4000:]}")
        yield rounds
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=FOLLOW_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    printed = log.read_text(errors="replace")
    stopped = re.search(r"^stopped after (\d+) ingest round", printed, re.MULTILINE)
    if process.returncode != 0 or stopped is None:
        raise AssertionError(f"ingest --follow of {directory} failed (exit {process.returncode}):\n{printed[-4000:]}")
    rounds.append(int(stopped.group(1)))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def script(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Script:
    """A cluster of one Kafka version through the incidents, once per run: the tests of Kafka's fold and of
    its files run on the worker without a Spark session, the ingest and replay tests on the session's worker, and
    whichever asks first runs the cluster while the other waits for it (a lock in the run's directory), then both
    read what it left (the logs, the followed lake, the script's record)."""
    version: str = request.param
    shared = run_dir(tmp_path_factory)
    saved = shared / f"kafka-{version}.script.pickle"
    with _locked(shared / f"kafka-{version}.lock"):
        if not saved.exists():
            saved.write_bytes(pickle.dumps(_run_cluster(version, shared / f"kafka-{version}")))
        result: Script = pickle.loads(saved.read_bytes())
    return result


def _run_cluster(version: str, root: Path) -> Script:
    """The cluster through the incidents, then stopped (controller first: its log is the last word, the brokers'
    logs end at the same record), while ``ingest --follow`` archives the controller's log as it grows, rolls,
    snapshots and is trimmed. The logs and the followed lake stay under ``root``."""
    try:
        compiled(version)
        root.mkdir()
        cluster = KafkaCluster(version, root, FORMATTED_AT[version])
    except (RefereeUnavailable, KafkaUnavailable) as reason:
        pytest.skip(f"Kafka {version} cluster: {reason}")
    followed = cluster.root / "followed-lake"
    started = time.monotonic()
    try:
        cluster.format()
        cluster.start_all()
        with following(cluster.controller.metadata_log, followed, cluster.root / "follow.out") as rounds:
            result = _run_and_trim(cluster)
        # the controller has stopped: one more follower from scratch takes the tail (a restarted follower re-reads
        # what is there, the lake keeps every record once)
        with following(cluster.controller.metadata_log, followed, cluster.root / "follow-again.out") as last:
            time.sleep(FOLLOW_INTERVAL)
        result.followed, result.follow_rounds = followed, sum(rounds) + sum(last)
    except BaseException:
        for node_id in cluster.nodes:
            print(f"--- node {node_id} output:\n{cluster.output(node_id)}")
        raise
    finally:
        cluster.close()
    assert not cluster.running_pids()
    for node in cluster.nodes.values():
        node.process = None  # stopped: what is kept of the cluster is its directories
    result.steps = {**{k: round(v, 1) for k, v in cluster.timings.items()}, **result.steps,
                    "total": round(time.monotonic() - started, 1)}
    TALLY.setdefault(version, []).append(f"steps (s): {result.steps}")
    return result


def _run_and_trim(cluster: KafkaCluster) -> Script:
    """The script, then (the cleaner) the controller's log trimmed behind a snapshot, then every node stopped."""
    result = run_script(cluster)
    t = time.monotonic()
    # Kafka's raft client cleans the metadata log once a minute (a fixed 60 s): wait for the controller's first
    # segments to go, so that its log, the lake and the replay start from a snapshot
    try:
        wait_for("the controller's log trimmed behind a snapshot",
                 lambda: first_segment_of(cluster.controller.metadata_log) > 0, timeout=TRIM_TIMEOUT, every=1)
    except AssertionError as timeout:
        result.notes.append(str(timeout))
    result.steps["wait for the controller's log to be trimmed"] = round(time.monotonic() - t, 1)
    t = time.monotonic()
    cluster.stop(CONTROLLER_ID)
    for broker_id in BROKER_IDS:
        cluster.kill(broker_id)
    result.steps["stop"] = round(time.monotonic() - t, 1)
    return result


@pytest.fixture(scope="module", autouse=True)
def tally(request: pytest.FixtureRequest) -> Iterator[None]:
    """What was compared, one block per Kafka version at the end of the run."""
    yield
    lines = request.config.stash.setdefault(SUMMARY, [])
    for version, items in sorted(TALLY.items(), reverse=True):
        lines.append(f"Kafka {version} cluster (1 controller, 3 brokers):")
        lines.extend(f"  {item}" for item in items)


# --- folding a node's log ---------------------------------------------------------------------------------------


def latest_snapshot(log_dir: Path) -> tuple[int, list[MetadataRecord]] | None:
    """The snapshot Kafka's loader starts from (KafkaFold: the highest end offset) with its records."""
    snapshots = [f for f in map(classify, log_dir.iterdir()) if f.kind == "snapshot"]
    if not snapshots:
        return None
    best = min(snapshots, key=lambda f: (-(f.snapshot_end_offset or 0), f.snapshot_epoch or 0))
    records = [e.record for e in read_entries(best.path) if isinstance(e.record, MetadataRecord)]
    return best.snapshot_end_offset or 0, records


def without_snapshots(log_dir: Path, target: Path, keep: str | None = None) -> Path:
    """A copy of ``log_dir`` without its ``.checkpoint`` files but ``keep``: folded from offset 0, or from the
    snapshot ``keep``."""
    target.mkdir(parents=True)
    for path in log_dir.iterdir():
        if path.is_file() and (not path.name.endswith(".checkpoint") or path.name == keep):
            shutil.copy2(path, target / path.name)
    return target


def snapshot_ids(log_dir: Path) -> list[SnapshotId]:
    """Every ``.checkpoint`` of ``log_dir``, by end offset."""
    files = [f for f in map(classify, log_dir.iterdir()) if f.kind == "snapshot"]
    return sorted((SnapshotId(f.snapshot_end_offset or 0, f.snapshot_epoch or 0) for f in files),
                  key=lambda s: (s.end_offset, s.epoch))


def coverage_of(cluster_id: str, log_dir: Path) -> ClusterCoverage:
    """The replay's rule on a node's files: its log (one run: Kafka's log has no holes) from the first segment's
    base offset to its last offset, and its snapshots."""
    entries = list(read_entries(log_dir))
    return history_coverage(cluster_id, [LogRun(entries[0].offset, entries[-1].offset)], snapshot_ids(log_dir))


def snapshot_entries(log_dir: Path, snapshot: SnapshotId, key: bytes | None = None) -> list[LogEntry]:
    """The entries of ``snapshot``; with ``key``, redacted as the lake keeps them (with their secrets' fingerprints,
    which the reference fold's base keeps)."""
    return [redact(e, key) if key is not None else e for e in read_entries(log_dir / snapshot.file_name)]


def snapshot_records(log_dir: Path, snapshot: SnapshotId) -> list[MetadataRecord]:
    """The records of ``snapshot``."""
    return [e.record for e in snapshot_entries(log_dir, snapshot) if isinstance(e.record, MetadataRecord)]


def node_layout(node: Node) -> str:
    """Where the node's log starts: its first segment's base offset and its last offset, its snapshots' end offsets,
    and what Kafka trimmed (renamed ``*.deleted``, removed a minute later): segments, and snapshots below its log
    start offset (``KafkaMetadataLog.deleteBeforeSnapshot``; the log start offset is not on disk)."""
    log_dir = node.metadata_log
    trimmed = {kind: sorted(int(p.name[:20]) for p in log_dir.glob(f"*.{kind}.deleted"))
               for kind in ("log", "checkpoint")}
    return (f"first segment {first_segment_of(log_dir)}, last offset {max(e.offset for e in read_entries(log_dir))}, "
            f"snapshots ending at {[s.end_offset for s in snapshot_ids(log_dir)]}, trimmed segments "
            f"{trimmed['log']} and snapshots {trimmed['checkpoint']}")


def last_image(entries: list[LogEntry], base: tuple[int, list[MetadataRecord]] | None) -> Image:
    image = Image()
    for commit in fold(entries, base):
        image = commit.image
    return image


def kafka_image(version: str, log_dir: Path) -> KafkasImage:
    """Kafka's image at the last offset it published for ``log_dir``, entity by entity, and its features."""
    run = kafka_fold(version, log_dir)
    *_, (offset, image) = run.images()
    return KafkasImage(offset, image, run.changes[offset]["features"])


# --- (a) Kafka's fold and ours, at every batch end ---------------------------------------------------------------


def test_kafka_fold_is_reference_fold_on_every_node(script: Script, tmp_path: Path) -> None:
    """(a) on every node's log as Kafka left it (from its latest snapshot, as Kafka's loader starts), from offset 0
    while it starts there, else also from the base snapshot the replay's rule chooses (``history_coverage``):
    Kafka's loader given only that ``.checkpoint`` and the reference fold from the same ``(E, records)``."""
    cluster = script.cluster
    compared: list[tuple[str, Comparison, int]] = []
    for node_id, node in cluster.nodes.items():
        log_dir = node.metadata_log
        variants = [("as left", log_dir, latest_snapshot(log_dir))]
        if first_segment_of(log_dir) == 0:
            variants.append(("from offset 0", without_snapshots(log_dir, tmp_path / f"node-{node_id}"), None))
        else:
            base = coverage_of(cluster.cluster_id, log_dir).base
            assert base is not None, f"node {node_id}: {node_layout(node)}: no base snapshot"
            variants.append((f"from its base snapshot {base.file_name}",
                             without_snapshots(log_dir, tmp_path / f"node-{node_id}-base", keep=base.file_name),
                             (base.end_offset, snapshot_records(log_dir, base))))
        for label, directory, base_snapshot in variants:
            entries = list(read_entries(directory))
            comparison, run = compare(cluster.version, directory, entries, base_snapshot)
            shown = [f"offset {o}: {p}" for o, problems in list(comparison.mismatches.items())[:5]
                     for p in problems[:3]]
            assert not comparison.mismatches, (
                f"node {node_id} ({label}): Kafka {cluster.version} and the reference fold differ at "
                f"{len(comparison.mismatches)} of {comparison.offsets} offsets:\n" + "\n".join(shown))
            assert not run.faults, run.faults[:3]
            assert comparison.offsets == run.end["published"] > 0
            if base_snapshot is not None:  # Kafka published first the snapshot's image, then every batch after it
                assert min(run.changes) == base_snapshot[0] - 1, (label, min(run.changes), base_snapshot[0])
            start = base_snapshot[0] if base_snapshot else entries[0].offset
            compared.append((f"node {node_id} {label} (from {start})", comparison, entries[-1].offset))
    # The controller's log is trimmed behind a snapshot once its retention comes round; a broker restarted after
    # that fetches the controller's snapshot and its log starts there. Which logs still start at 0 varies by run.
    script.notes.append("layout per node: " + "; ".join(f"node {node_id}: {node_layout(node)}"
                                                       for node_id, node in cluster.nodes.items()))
    TALLY.setdefault(script.version, []).append(
        f"(a) Kafka's fold = reference fold on {len(compared)} logs: "
        f"{sum(c.offsets for _, c, _ in compared)} batch ends, {sum(c.records for _, c, _ in compared)} records; "
        + "; ".join(f"{label}: {c.offsets} batch ends to offset {last}" for label, c, last in compared))


# --- (b) ingest, replay, state: Kafka's image at the last offset ------------------------------------------------


def _state_json(lake: Path, *args: str) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(_cli("state", "--format", "json", "--lake", str(lake), *args))
    return state


def _cli(*args: str) -> str:
    """A ``kraft-replay`` command's output; it never holds the PASSWORD-type config's clear value."""
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output, f"kraft-replay {args[0]} printed the secret"
    return result.stdout


@dataclass
class KafkasImage:
    """Kafka's image at the last offset it published: its entities by section and key (``tests.referee.KEYS``),
    and its finalized features."""

    offset: int
    entities: dict[str, dict[Any, dict[str, Any]]]
    features: dict[str, int]


def _by_name(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: item["name"])


def _as_kafkas(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``state --format json``'s sections in KafkaFold's shapes, where the two truly differ: Kafka keeps listeners,
    supported features and a quota entity's parts in maps (printed sorted by name, by entity type), and its
    ProducerIdsImage is no entity at all while ``nextProducerId`` is -1 (ours says -1)."""
    sections = {section: state[section] for section in KEYS if section != "producerIds"}
    for section in ("brokers", "controllers"):
        sections[section] = [{**item, "endPoints": _by_name(item["endPoints"]), "features": _by_name(item["features"])}
                             for item in state[section]]
    sections["clientQuotas"] = [{**quota, "entity": sorted(quota["entity"], key=lambda part: part["entityType"])}
                                for quota in state["clientQuotas"]]
    next_id = state["producerIds"]["nextProducerId"]
    sections["producerIds"] = [] if next_id == NO_PRODUCER_ID else [state["producerIds"]]
    return sections


def _redacted(config: dict[str, Any]) -> dict[str, Any]:
    """A config of Kafka's image as ours holds it: a sensitive value (``records.redaction``) ``(redacted)``."""
    sensitive = config["value"] is not None and is_sensitive(config["resourceType"], config["name"])
    return {**config, "value": REDACTED} if sensitive else config


def assert_kafkas_image(state: dict[str, Any], kafka: KafkasImage, version: str, what: str) -> None:
    """``state --format json`` is Kafka's image, section by section, entity by entity: the features, and brokers,
    topics, partitions, controllers, configs, clientQuotas, acls, scramCredentials, delegationTokens, producerIds.
    Kafka's image holds the PASSWORD-type config's value in the clear; ours holds ``(redacted)``."""
    ours = features_as_kafka_shows(version, {f["name"]: f["featureLevel"] for f in state["features"]})
    theirs = kafkas_features(version, kafka.features, ours)
    assert ours == theirs, f"{what}: features at offset {state['offset']}: ours {ours} kafka {theirs}"
    expected = {**kafka.entities, "configs": {key: _redacted(config)
                                              for key, config in kafka.entities["configs"].items()}}
    for section, items in _as_kafkas(state).items():
        got = {tuple(hashable(item[k]) for k in KEYS[section]): item for item in items}
        assert got == expected[section], (f"{what}: {section} at offset {state['offset']}: ours {got} "
                                          f"kafka {expected[section]}")
    password = (CONFIG_RESOURCE_BROKER, str(BROKER_IDS[0]), PASSWORD_CONFIG)
    assert kafka.entities["configs"][password]["value"] == PASSWORD_VALUE
    assert expected["configs"][password]["value"] == REDACTED


@dataclass
class Replayed:
    """What the lake of one node's log answered, and what it held."""

    state: dict[str, Any]
    entries: list[LogEntry]
    records: int
    snapshots: int
    seconds: float


def _replay_node(spark: Any, cluster: KafkaCluster, node_id: int, lake: Path) -> Replayed:
    """``ingest`` the node's data directory into ``lake``, ``replay``, ``state --format json`` at the last offset:
    Kafka's image there (every section, field by field). The lake holds every record of the log, each decoded
    exactly, and the node's snapshots; nothing rejected."""
    from lakehouse.lake import Lake

    node = cluster.nodes[node_id]
    t = time.monotonic()
    _cli("ingest", str(node.data), "--lake", str(lake))
    _cli("replay", "--lake", str(lake))
    entries = list(read_entries(node.metadata_log))
    state = _state_json(lake, "--offset", str(entries[-1].offset))
    took = time.monotonic() - t
    kafka = kafka_image(cluster.version, node.metadata_log)
    assert state["offset"] == entries[-1].offset == kafka.offset, (state["offset"], entries[-1].offset, kafka.offset)
    assert_kafkas_image(state, kafka, cluster.version, f"node {node_id}'s lake")

    stored = Lake(lake)
    rows = stored.read(spark, "metadata_log").groupBy("record_type", "read_mode").count().collect()
    in_lake = Counter({r["record_type"]: r["count"] for r in rows})
    assert {r["read_mode"] for r in rows} == {"exact"}, rows
    assert in_lake == Counter(e.type_name for e in entries), (in_lake, Counter(e.type_name for e in entries))
    snapshots = stored.read(spark, "snapshots").select("snapshot_end_offset").distinct().count()
    assert snapshots >= 1
    if stored.table_exists("ingest_rejects"):
        assert stored.read(spark, "ingest_rejects").count() == 0
    return Replayed(state, entries, sum(in_lake.values()), snapshots, took)


def _assert_history_from_base(spark: Any, cluster: KafkaCluster, node_id: int, lake: Path,
                              entries: list[LogEntry]) -> str:
    """The replay of a node's lake starts from the base snapshot ``history_coverage`` chooses from the node's files:
    its history tables are the reference fold's from that snapshot, at every offset; the base's versions are caused
    by the snapshot (its name, at E-1); ``replay_coverage`` names the base, and every later snapshot was checked
    and none differs; ``state`` at the offset before the history refuses (exit 3)."""
    from typer.testing import CliRunner

    from kraft_replay.cli import app
    from lakehouse.fingerprint_key import fingerprint_key
    from lakehouse.lake import Lake
    from replay.reference.fold import reference_histories
    from replay.store.runs import ANOMALIES
    from tests.replay_tables_support import REFERENCE_TABLES, _assert_same, _lake_tables

    log_dir = cluster.nodes[node_id].metadata_log
    coverage = coverage_of(cluster.cluster_id, log_dir)
    base, stored = coverage.base, Lake(lake)
    later = [s for s in snapshot_ids(log_dir) if base is None or s.end_offset > base.end_offset]
    assert coverage.checks == tuple(later) and (base is None) == (entries[0].offset == 0), (coverage, later)
    assert coverage.first_offset == (base.end_offset - 1 if base else 0)
    rows = [r.asDict(recursive=True) for r in stored.read(spark, "replay_coverage").collect()]
    assert rows == [coverage.row(len(later), 0)], (rows, coverage)
    assert rows[0]["base_snapshot"] == (base.file_name.removesuffix(".checkpoint") if base else None)

    key = fingerprint_key(str(lake))
    want = reference_histories([redact(e, key) for e in entries], cluster.cluster_id,
                               base_snapshot=(base.end_offset, snapshot_entries(log_dir, base, key)) if base else None,
                               snapshot_epoch=base.epoch if base else None)
    got = _lake_tables(spark, stored)
    _assert_same(got, want, f"node {node_id}'s lake from {base.file_name if base else 'offset 0'}",
                 names=REFERENCE_TABLES)
    assert not [a for a in got[ANOMALIES] if a["kind"] == "snapshot-differs"]
    said = "from offset 0"
    if base is not None:
        from_snapshot = [(name, r["cause_offset"], r["cause_type"]) for name in REFERENCE_TABLES if name != ANOMALIES
                         for r in got[name] if r["valid_from_offset"] == base.end_offset - 1]
        assert len(from_snapshot) > 10 and {(o, t) for _, o, t in from_snapshot} == {
            (base.end_offset - 1, f"snapshot {base.file_name.removesuffix('.checkpoint')}")}, from_snapshot[:5]
        said = f"from its base snapshot {base.file_name} ({len(from_snapshot)} versions)"
    if coverage.first_offset >= 1:
        before = coverage.first_offset - 1
        refused = CliRunner().invoke(app, ["state", "--lake", str(lake), "--offset", str(before)])
        assert refused.exit_code == 3, (refused.exit_code, refused.output)
        assert f"offset {before} is before this lake's history (" in refused.output, refused.output
    return (f"history {said}: offsets {coverage.first_offset}..{coverage.last_offset} = the reference fold, "
            f"{len(later)} later snapshots checked, none differing")


@pytest.mark.spark
def test_ingest_replay_state_is_kafkas_image_and_the_clusters_view(script: Script, spark: Any, tmp_path: Path) -> None:
    """(b) and (c) on the controller's log as Kafka left it (trimmed: the replay starts from a snapshot; the lake
    ``ingest --follow`` filled while the cluster ran holds it from offset 0 and is replayed by the follow test)."""
    cluster = script.cluster
    replayed = _replay_node(spark, cluster, CONTROLLER_ID, tmp_path / "lake")
    state, entries = replayed.state, replayed.entries
    from_base = _assert_history_from_base(spark, cluster, CONTROLLER_ID, tmp_path / "lake", entries)

    # (c) the live cluster's answers just before it stopped = our state at the last offset
    view = script.view
    names = {t["topicId"]: t["name"] for t in state["topics"]}
    ours = {(names[p["topicId"]], p["partitionId"]): {"leader": p["leader"], "leader_epoch": p["leaderEpoch"],
                                                       "replicas": p["replicas"], "isr": sorted(p["isr"]),
                                                       "topic_id": p["topicId"]}
            for p in state["partitions"] if not names[p["topicId"]].startswith("__")}
    theirs = {k: {**v, "topic_id": _kafka_uuid(v["topic_id"])} for k, v in view["partitions"].items()}
    assert ours == theirs
    unfenced = sorted((b["brokerId"], e["host"], e["port"]) for b in state["brokers"] if not b["fenced"]
                      for e in b["endPoints"] if e["name"] == "PLAINTEXT")
    assert unfenced == view["brokers"]
    image = last_image(entries, latest_snapshot(cluster.controller.metadata_log))
    assert {k: v for k, v in image.features.items() if v} == view["features"]
    if "elr" in view:
        elr = {(names[p["topicId"]], p["partitionId"]): (p["eligibleLeaderReplicas"], p["lastKnownElr"])
               for p in state["partitions"] if names[p["topicId"]] in TOPICS}
        assert elr == view["elr"]
    configs = {(c["resourceType"], c["resourceName"], c["name"]): c["value"] for c in state["configs"]}
    assert configs == view["configs"]
    acls = [{name: value for name, value in acl.items() if name != "id"} for acl in state["acls"]]
    assert Counter(map(hashable, acls)) == Counter(map(hashable, view["acls"]))
    scram_divergence = _scram_divergence(cluster, state["scramCredentials"], view["scramCredentials"], tmp_path)
    if scram_divergence:
        script.notes.append(scram_divergence)
    quotas = _as_kafkas(state)["clientQuotas"]
    assert Counter(map(hashable, quotas)) == Counter(map(hashable, view["clientQuotas"]))
    assert_scripted_parts({**view, "scramCredentials": state["scramCredentials"]} if scram_divergence else view)
    TALLY.setdefault(script.version, []).append(
        f"(b) ingest + replay + state = Kafka's image at the last offset: the controller's log ({replayed.records} "
        f"records from offset {entries[0].offset}, {replayed.snapshots} snapshots, {replayed.seconds:.0f} s) at "
        f"offset {entries[-1].offset}: {parts_count(state)}; {from_base}; "
        f"(c) = the cluster's own view: {len(theirs)} partitions (leader, leader epoch, replicas, ISR"
        f"{', ELR' if 'elr' in view else ''}), {len(view['brokers'])} unfenced brokers, "
        f"{len(view['features'])} features, {len(view['configs'])} dynamic configs (describe configs; "
        f"{sum(v == REDACTED for v in view['configs'].values())} sensitive), {len(view['acls'])} ACLs, "
        f"{len(view['scramCredentials'])} SCRAM credentials of {len({c['name'] for c in view['scramCredentials']})} "
        f"users, {len(view['clientQuotas'])} client quotas (Admin.describeClientQuotas)")


def _scram_divergence(cluster: KafkaCluster, ours: list[dict[str, Any]], live: list[dict[str, Any]],
                      work: Path) -> str | None:
    """None when the live DescribeUserScramCredentials answer is our state. Otherwise the answering broker's image
    diverged from the log through Kafka's ScramDelta bug (tests/test_kafka_referee.py: a broker restarted before
    the SCRAM credentials were written reads them back in one delta and loses alice's SCRAM-SHA-256 one; seen on
    3.9.2 and 4.4.0): the answer must then be what Kafka's own loader makes of one broker's log caught up in one
    delta (``KafkaFold --catch-up``) from offset 0 or from one of its snapshots. The divergence is reported; ours
    is the log's, which the controller's own image and snapshots keep."""
    theirs, mine = Counter(map(hashable, live)), Counter(map(hashable, ours))
    if theirs == mine:
        return None
    caught_up = []
    for broker_id in BROKER_IDS:
        log_dir = cluster.nodes[broker_id].metadata_log
        starts: list[str | None] = sorted(p.name for p in log_dir.glob("*.checkpoint"))
        if first_segment_of(log_dir) == 0:
            starts.insert(0, None)
        for start in starts:
            copy = without_snapshots(log_dir, work / f"catch-up-{broker_id}-{start or 0}", keep=start)
            *_, (_end, image) = kafka_fold(cluster.version, copy, catch_up=True).images()
            held = [{k: c[k] for k in ("name", "mechanism", "iterations")} for c in image["scramCredentials"].values()]
            if Counter(map(hashable, held)) == theirs:
                caught_up.append((broker_id, int(start[:20]) if start else 0))
    assert caught_up, (f"SCRAM credentials: ours {sorted(mine)} the cluster's {sorted(theirs)}, and no broker's log "
                       "caught up in one delta by Kafka's loader gives the cluster's")
    return (f"Kafka {cluster.version}'s brokers diverged from their log (ScramDelta.apply): the live SCRAM answer is "
            f"Kafka's image of a broker's log caught up in one delta (broker, from offset) {caught_up}, without "
            f"{sorted(mine - theirs)} and with {sorted(theirs - mine)}")


def assert_scripted_parts(view: dict[str, Any]) -> None:
    """What the script altered is what the cluster answers at the end (and so our state): the topic, per-broker and
    cluster-default configs (the PASSWORD-type one sensitive; the re-created topic has none, the throttles were
    removed), the two ACLs left, alice's two SCRAM credentials and bob's SHA-512 one, alice's producer quota."""
    from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType, ScramMechanism

    configs = view["configs"]
    assert {key: configs.get(key) for key in [
        (CONFIG_RESOURCE_TOPIC, ORDERS, "retention.ms"), (CONFIG_RESOURCE_TOPIC, PAYMENTS, "min.insync.replicas"),
        (CONFIG_RESOURCE_TOPIC, AUDIT, "unclean.leader.election.enable"),
        (CONFIG_RESOURCE_BROKER, "1", "log.retention.ms"), (CONFIG_RESOURCE_BROKER, "1", PASSWORD_CONFIG),
        (CONFIG_RESOURCE_BROKER, "", "log.retention.ms"), (CONFIG_RESOURCE_BROKER, "", "min.insync.replicas"),
        (CONFIG_RESOURCE_BROKER, "", "leader.replication.throttled.rate"),
        (CONFIG_RESOURCE_TOPIC, AUDIT, "leader.replication.throttled.replicas")]} == {
        (CONFIG_RESOURCE_TOPIC, ORDERS, "retention.ms"): "3600000",
        (CONFIG_RESOURCE_TOPIC, PAYMENTS, "min.insync.replicas"): "2",
        (CONFIG_RESOURCE_TOPIC, AUDIT, "unclean.leader.election.enable"): "true",
        (CONFIG_RESOURCE_BROKER, "1", "log.retention.ms"): "7200000",
        (CONFIG_RESOURCE_BROKER, "1", PASSWORD_CONFIG): REDACTED,
        (CONFIG_RESOURCE_BROKER, "", "log.retention.ms"): "86400000",
        (CONFIG_RESOURCE_BROKER, "", "min.insync.replicas"): "1",
        (CONFIG_RESOURCE_BROKER, "", "leader.replication.throttled.rate"): None,
        (CONFIG_RESOURCE_TOPIC, AUDIT, "leader.replication.throttled.replicas"): None}
    assert not [key for key in configs if key[:2] == (CONFIG_RESOURCE_TOPIC, DOOMED)]
    user_alice = (int(ACLPermissionType.ALLOW), int(ACLOperation.READ), "User:alice", "*")
    assert sorted((acl["permissionType"], acl["operation"], acl["principal"], acl["host"], acl["resourceType"],
                   acl["resourceName"], acl["patternType"]) for acl in view["acls"]) == [
        (*user_alice, int(ResourceType.TOPIC), ORDERS, int(ACLResourcePatternType.LITERAL)),
        (*user_alice, int(ResourceType.GROUP), "billing-", int(ACLResourcePatternType.PREFIXED))]
    assert sorted((c["name"], c["mechanism"], c["iterations"]) for c in view["scramCredentials"]) == [
        ("alice", int(ScramMechanism.SCRAM_SHA_256), 4096), ("alice", int(ScramMechanism.SCRAM_SHA_512), 4096),
        ("bob", int(ScramMechanism.SCRAM_SHA_512), 4096)]
    assert view["clientQuotas"] == [{"entity": [{"entityType": "user", "entityName": "alice"}],
                                     "key": "producer_byte_rate", "value": 1048576.0}]


def parts_count(state: dict[str, Any]) -> str:
    """How many entities of each section ``state`` compared."""
    redacted = sum(c["value"] == REDACTED for c in state["configs"])
    return (", ".join(f"{len(state[section])} {section}" for section in KEYS if section != "producerIds")
            + f" ({redacted} configs redacted), {len(state['features'])} features, nextProducerId "
            f"{state['producerIds']['nextProducerId']}")


def _unclean_election(spark: Any, script: Script, lake: Path) -> str:
    """The election audit of ``lake`` (its log from offset 0): one ``unclean`` election of the script's partition,
    of the broker the cluster showed, from outside the ISR, into leader recovery (Kafka's
    LeaderRecoveryState.RECOVERING, 1), as the lake's PartitionChangeRecord there says."""
    from pyspark.sql import functions as F

    from lakehouse.lake import Lake

    assert script.unclean is not None
    topic, partition, broker = script.unclean
    rows = (Lake(lake).read(spark, "elections")
            .where((F.col("topic_name") == topic) & (F.col("partition_id") == partition)
                   & (F.col("leader") == broker) & (F.col("previous_leader") == -1)).collect())
    assert [r["election_type"] for r in rows] == ["unclean"], rows
    row = rows[0]
    assert broker not in row["previous_isr"] and row["isr"] == [broker] and row["leader_recovery_state"] == 1, row
    assert not row["deviation"], row
    record = Lake(lake).read(spark, "metadata_log").where(F.col("offset") == row["offset"]).first()
    assert record is not None and record["record_type"] == "PartitionChangeRecord", record
    assert json.loads(record["payload_json"])["leaderRecoveryState"] == 1, record["payload_json"]
    return (f"{topic}-{partition} led by broker {broker} at offset {row['offset']} (previous ISR "
            f"{row['previous_isr']})")


def _kafka_uuid(value: str) -> str:
    """kafka-python gives topic ids as ``uuid.UUID``; Kafka (and the replay) print them base64 URL-safe."""
    import base64
    import uuid

    return base64.urlsafe_b64encode(uuid.UUID(value).bytes).decode().rstrip("=")


# --- ingest --follow while the cluster ran ----------------------------------------------------------------------


@pytest.mark.spark
def test_ingest_follow_kept_every_record_the_controller_wrote(script: Script, spark: Any) -> None:
    """``ingest --follow`` of the controller's log while the cluster ran (segments rolled, snapshots taken, old
    segments deleted behind them) holds every offset from 0 to the end exactly once, each the record every node's
    log has there; its replay is Kafka's image at the end, and its election audit finds the script's unclean
    election (which the trimmed log no longer holds)."""
    from lakehouse.lake import Lake

    assert script.followed is not None
    cluster = script.cluster
    rows = Lake(script.followed).read(spark, "metadata_log").select("offset", "record_type", "read_mode").collect()
    offsets = sorted(r["offset"] for r in rows)
    end = list(read_entries(cluster.controller.metadata_log))
    assert offsets == list(range(end[-1].offset + 1)), (offsets[:5], offsets[-5:], len(offsets))
    assert {r["read_mode"] for r in rows} == {"exact"}
    entries: dict[int, LogEntry] = {}
    for node in cluster.nodes.values():  # every node's log, each from where it starts now
        entries.update({e.offset: e for e in read_entries(node.metadata_log)})
    followed = {r["offset"]: r["record_type"] for r in rows}
    assert {o: e.type_name for o, e in entries.items()} == {o: followed[o] for o in entries}
    deleted = first_segment_of(cluster.controller.metadata_log)

    _cli("replay", "--lake", str(script.followed))
    state = _state_json(script.followed, "--offset", str(end[-1].offset))
    kafka = kafka_image(cluster.version, cluster.controller.metadata_log)
    assert state["offset"] == kafka.offset
    assert_kafkas_image(state, kafka, cluster.version, "the followed lake")
    unclean = _unclean_election(spark, script, script.followed)
    # a history from offset 0: every snapshot the follower stored is a check of the fold, and Kafka's agree with it
    followed_lake = Lake(script.followed)
    (coverage,) = followed_lake.read(spark, "replay_coverage").collect()
    # (4.x also keeps the bootstrap snapshot 00000000000000000000-0000000000: the image at no offset, not a check)
    taken = (followed_lake.read(spark, "snapshots").where("snapshot_end_offset > 0")
             .select("snapshot_end_offset", "snapshot_epoch").distinct().count())
    assert (coverage["first_offset"], coverage["base_snapshot"], coverage["snapshots_checked"],
            coverage["snapshots_differing"]) == (0, None, taken, 0), (coverage, taken)
    assert taken > 0
    # the feature upgrade, as the followed lake's feature_history has it: each upgraded feature's level before, then
    # after (the levels the cluster reported)
    history = Lake(script.followed).read(spark, "feature_history").orderBy("valid_from_offset").collect()
    for name, (before, after) in script.upgraded.items():
        levels = [r["level"] for r in history if r["feature"] == name]
        assert levels == ([before] if before else []) + [after], (name, levels, script.upgraded)
    TALLY.setdefault(script.version, []).append(
        f"ingest --follow of the controller's log: {script.follow_rounds} rounds, {len(offsets)} records (offsets "
        f"0..{offsets[-1]}; the controller's log now starts at {deleted}); its replay = Kafka's image at offset "
        f"{kafka.offset} ({parts_count(state)}), each of its {taken} snapshots = the fold there; unclean election "
        f"audited: {unclean}; features upgraded (level "
        f"before, after): {script.upgraded}")


# --- record by record: Kafka's kafka-dump-log ------------------------------------------------------------------


def test_kafka_dump_log_is_kraft_replay_dump_on_every_file(script: Script) -> None:
    """Every segment and snapshot of every node, through the cluster's own release of ``kafka-dump-log
    --cluster-metadata-decoder`` and through ``kraft-replay dump``: every batch and record field the same."""
    from tests.test_kafka_dump_log import Counts, assert_same_dumps, dumps_of

    version = script.version
    files = [path for node in script.cluster.nodes.values()
             for path in sorted(node.metadata_log.glob("*.log")) + sorted(node.metadata_log.glob("*.checkpoint"))]
    dumps, counts = dumps_of(version, files), Counts()
    assert_same_dumps(dumps, counts)
    assert counts.files == len(files) > 0 and counts.records > 0 and not counts.newer
    # kafka-dump-log redacts nothing: the PASSWORD-type config's value is in its text as in the log
    assert any(PASSWORD_VALUE.replace('"', '\\"') in text for text in dumps.texts.values())
    TALLY.setdefault(version, []).append(
        f"kafka-dump-log = kraft-replay dump on {counts.files} files of {len(script.cluster.nodes)} nodes: "
        f"{counts.batches} batches, {counts.records} records; printed without content: "
        f"{counts.without_content or 'none'}")


# --- every record decodes; the script's records are there ------------------------------------------------------


def test_every_record_decodes_and_the_scripted_records_are_there(script: Script) -> None:
    """Every record of every node's log and snapshots decodes (no raw records); the records the script makes Kafka
    write (configs, ACLs, SCRAM credentials, quotas: ``SCRIPTED_RECORDS``) are there, the topic removal too, and
    (4.4) the ELR the cluster reported."""
    union: dict[int, str] = {}  # offset -> record type, over the logs of all nodes (each may be trimmed)
    in_snapshots: Counter[str] = Counter()
    first = 1 << 62
    for node_id, node in script.cluster.nodes.items():
        for path in sorted(node.metadata_log.glob("*.checkpoint")):
            for entry in read_entries(path):
                assert not isinstance(entry.record, RawRecord), f"{path}: undecoded record {entry.offset}"
                if path.name == max(p.name for p in node.metadata_log.glob("*.checkpoint")):
                    in_snapshots[entry.type_name] += 0 if entry.is_control else 1
        for entry in read_entries(node.metadata_log):
            assert not isinstance(entry.record, RawRecord), f"node {node_id}: undecoded record at {entry.offset}"
            first = min(first, entry.offset)
            if not entry.is_control:
                union[entry.offset] = entry.type_name
    counts = Counter(union.values())
    if first == 0:
        for kind, least in SCRIPTED_RECORDS.items():
            assert counts[kind] >= least, f"{kind}: {counts[kind]} < {least}"
        assert counts["RemoveTopicRecord"] == 1 and counts["TopicRecord"] == len(TOPICS) + 1
    else:  # every node trimmed: what is not in the logs any more is in the snapshots (the live entities)
        for kind in SCRIPTED_RECORDS:
            assert counts[kind] or in_snapshots[kind] or kind.startswith("Remove"), kind
    if not script.version.startswith("3."):
        assert script.elr_seen, "no ELR seen on Kafka 4.4"
    TALLY.setdefault(script.version, []).append(
        f"records by type (all nodes' logs, offsets {first}..{max(union)}): {dict(sorted(counts.items()))}; in the "
        f"latest snapshots: {dict(sorted(in_snapshots.items()))}; ELR seen: {script.elr_seen or 'n/a'}; notes: "
        f"{script.notes}")
