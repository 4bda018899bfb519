"""Kafka itself as the referee, on real clusters: a KRaft cluster of Kafka 4.4.0 and one of 3.9.2 (one controller,
three brokers, each its own JVM: tests/kafka_cluster.py) go through scripted incidents over the Admin API
(kafka-python): topics created, brokers killed and restarted, a controlled shutdown, preferred elections, a
reassignment, topic and broker configs, a topic deleted and re-created under its name, ACLs, SCRAM users, client
quotas, and two brokers lost at once under ``min.insync.replicas=2`` (ELR on 4.4). Then the cluster is stopped and
every node's ``__cluster_metadata-0`` is folded three ways, which must agree:

(a) Kafka's own fold (tests/referee) and our reference fold at every batch end, on every node's log as Kafka left
    it (the controller's starts from a snapshot: its first segments are gone) and on the brokers' logs from offset 0;
(b) ``kraft-replay ingest`` + ``replay`` + ``state --format json`` at the last offset and Kafka's image there;
(c) the live cluster's own answers (describe topics, cluster and features), taken just before the controller
    stopped, and our state at the last offset.

Configs, ACLs, SCRAM credentials and quotas are not replayed into state yet: their records must be decoded (no raw
records) and counted.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from lakehouse.jars import KAFKA_VERSIONS
from records.log_dir import classify
from records.model import LogEntry, MetadataRecord, RawRecord
from records.sources import read_entries
from replay.reference import Image, fold
from tests.conftest import SUMMARY
from tests.kafka_cluster import BROKER_IDS, CONTROLLER_ID, KafkaCluster, KafkaUnavailable, wait_for
from tests.referee import KEYS, Comparison, RefereeUnavailable, compare, compiled, kafka_fold

pytestmark = pytest.mark.kafka

ORDERS, PAYMENTS, AUDIT, DOOMED = "orders", "payments", "audit", "doomed"
# (partitions, replication factor, topic configs)
TOPICS: dict[str, tuple[int, int, dict[str, str]]] = {
    ORDERS: (6, 3, {}), PAYMENTS: (3, 3, {"min.insync.replicas": "2"}), AUDIT: (3, 2, {}), DOOMED: (2, 3, {})}
# Records the replay does not fold into state yet, which the script makes Kafka write: at least this many each.
NOT_REPLAYED = {"ConfigRecord": 6, "AccessControlEntryRecord": 3, "RemoveAccessControlEntryRecord": 1,
                "UserScramCredentialRecord": 4, "RemoveUserScramCredentialRecord": 1, "ClientQuotaRecord": 2}
TALLY: dict[str, list[str]] = {}
TRIM_TIMEOUT = 90.0
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
    to the broker its metadata names as the controller, which may be one that has just restarted."""
    from kafka.errors import KafkaError

    deadline = time.monotonic() + 60
    while True:
        try:
            return call()
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            admin._controller_id = None  # kafka-python keeps it until a NotController error: ask again
            time.sleep(1)


def first_segment_of(log_dir: Path) -> int:
    """The base offset of the first segment left: 0 until Kafka deleted segments behind a snapshot."""
    return min(int(p.name[:20]) for p in log_dir.glob("*.log"))


def _timed(script: Script, name: str, started: float) -> None:
    script.steps[name] = round(time.monotonic() - started, 1)


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


def run_script(cluster: KafkaCluster) -> Script:
    """The incidents, one after the other, each waited for until the cluster's metadata shows it."""
    from kafka import TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
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
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20000,
                             client_id="kraft-replay-test")
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
        _retry(admin, lambda: admin.alter_partition_reassignments({TopicPartition(AUDIT, 0): target}))
        wait_for(f"audit-0 reassigned to {target}",
                 lambda: _partitions(admin)[(AUDIT, 0)]["replicas"] == target
                 and not admin.list_partition_reassignments() and _settled(admin))
        _timed(script, "reassignment", t)

        t = time.monotonic()
        _alter_configs(admin, ConfigResource(ConfigResourceType.TOPIC, ORDERS, configs={
            "retention.ms": "3600000", "min.insync.replicas": "2", "unclean.leader.election.enable": "true"}))
        _alter_configs(admin, ConfigResource(ConfigResourceType.BROKER, "1", configs={"log.retention.ms": "7200000"}))
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
        wait_for("brokers 2 and 3 back in every ISR", lambda: _settled(admin), timeout=120)
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
        _timed(script, "the cluster's view", t)
    finally:
        admin.close()
    return script


# --- fixtures ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def script(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Script]:
    """A cluster of one Kafka version through the incidents, then stopped (controller first: its log is the last
    word, the brokers' logs end at the same record). The logs stay in the test's directory."""
    version: str = request.param
    try:
        compiled(version)
        cluster = KafkaCluster(version, tmp_path_factory.mktemp(f"kafka-{version}"))
    except (RefereeUnavailable, KafkaUnavailable) as reason:
        pytest.skip(f"Kafka {version} cluster: {reason}")
    started = time.monotonic()
    try:
        cluster.format()
        cluster.start_all()
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
    except BaseException:
        for node_id in cluster.nodes:
            print(f"--- node {node_id} output:\n{cluster.output(node_id)}")
        raise
    finally:
        cluster.close()
    assert not cluster.running_pids()
    result.steps = {**{k: round(v, 1) for k, v in cluster.timings.items()}, **result.steps,
                    "total": round(time.monotonic() - started, 1)}
    TALLY.setdefault(version, []).append(f"steps (s): {result.steps}")
    yield result


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


def without_snapshots(log_dir: Path, target: Path) -> Path:
    """A copy of ``log_dir`` without its ``.checkpoint`` files: folded from offset 0."""
    target.mkdir(parents=True)
    for path in log_dir.iterdir():
        if path.is_file() and not path.name.endswith(".checkpoint"):
            shutil.copy2(path, target / path.name)
    return target


def last_image(entries: list[LogEntry], base: tuple[int, list[MetadataRecord]] | None) -> Image:
    image = Image()
    for commit in fold(entries, base):
        image = commit.image
    return image


def kafka_image(version: str, log_dir: Path) -> tuple[int, dict[str, dict[Any, dict[str, Any]]]]:
    """Kafka's image at the last offset it published for ``log_dir``, entity by entity."""
    run = kafka_fold(version, log_dir)
    image: dict[str, dict[Any, dict[str, Any]]] = {section: {} for section in KEYS}
    for offset in sorted(run.changes):
        change = run.changes[offset]
        for section, key_fields in KEYS.items():
            for item in change[section]:
                image[section][tuple(item[k] for k in key_fields)] = item
            for gone in change["gone"][section]:
                image[section].pop(tuple(gone) if isinstance(gone, list) else (gone,), None)
    return max(run.changes), image


# --- (a) Kafka's fold and ours, at every batch end ---------------------------------------------------------------


def test_kafka_fold_is_reference_fold_on_every_node(script: Script, tmp_path: Path) -> None:
    cluster = script.cluster
    compared: list[tuple[str, Comparison, int]] = []
    for node_id, node in cluster.nodes.items():
        log_dir = node.metadata_log
        variants = [("as left", log_dir)]
        first_segment = min(int(p.name[:20]) for p in log_dir.glob("*.log"))
        if first_segment == 0:
            variants.append(("from offset 0", without_snapshots(log_dir, tmp_path / f"node-{node_id}")))
        for label, directory in variants:
            entries = list(read_entries(directory))
            base = latest_snapshot(directory)
            comparison, run = compare(cluster.version, directory, entries, base)
            shown = [f"offset {o}: {p}" for o, problems in list(comparison.mismatches.items())[:5]
                     for p in problems[:3]]
            assert not comparison.mismatches, (
                f"node {node_id} ({label}): Kafka {cluster.version} and the reference fold differ at "
                f"{len(comparison.mismatches)} of {comparison.offsets} offsets:\n" + "\n".join(shown))
            assert not run.faults, run.faults[:3]
            assert comparison.offsets == run.end["published"] > 0
            compared.append((f"node {node_id} {label} (from {base[0] if base else entries[0].offset})", comparison,
                             entries[-1].offset))
    # The controller's log is trimmed behind a snapshot once its retention comes round; a broker restarted after
    # that fetches the controller's snapshot and its log starts there. Which logs still start at 0 varies by run.
    starts = {node_id: first_segment_of(node.metadata_log) for node_id, node in cluster.nodes.items()}
    script.notes.append(f"first segment offset per node: {starts}")
    TALLY.setdefault(script.version, []).append(
        f"(a) Kafka's fold = reference fold on {len(compared)} logs: "
        f"{sum(c.offsets for _, c, _ in compared)} batch ends, {sum(c.records for _, c, _ in compared)} records; "
        + "; ".join(f"{label}: {c.offsets} batch ends to offset {last}" for label, c, last in compared))


# --- (b) ingest, replay, state: Kafka's image at the last offset ------------------------------------------------


def _state_json(lake: Path, *args: str) -> dict[str, Any]:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    result = CliRunner().invoke(app, ["state", "--format", "json", "--lake", str(lake), *args])
    assert result.exit_code == 0, result.output
    state: dict[str, Any] = json.loads(result.stdout)
    return state


def _cli(*args: str) -> str:
    from typer.testing import CliRunner

    from kraft_replay.cli import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@dataclass
class Replayed:
    """What the lake of one node's log answered, and what it held."""

    node_id: int
    state: dict[str, Any]
    entries: list[LogEntry]
    records: int
    snapshots: int
    seconds: float


def _replay_node(spark: Any, cluster: KafkaCluster, node_id: int, lake: Path) -> Replayed:
    """``ingest`` the node's data directory into ``lake``, ``replay``, ``state --format json`` at the last offset:
    Kafka's image there (brokers, topics, partitions, field by field). The lake holds every record of the log,
    each decoded exactly (also those not folded into state yet), and the node's snapshots; nothing rejected."""
    from lakehouse.lake import Lake

    node = cluster.nodes[node_id]
    t = time.monotonic()
    _cli("ingest", str(node.data), "--lake", str(lake))
    _cli("replay", "--lake", str(lake))
    entries = list(read_entries(node.metadata_log))
    state = _state_json(lake, "--offset", str(entries[-1].offset))
    took = time.monotonic() - t
    last, kafka = kafka_image(cluster.version, node.metadata_log)
    assert state["offset"] == entries[-1].offset == last, (state["offset"], entries[-1].offset, last)
    for b in state["brokers"]:
        for name in ("endPoints", "features"):
            b[name] = sorted(b[name], key=lambda item: item["name"])
    for section in ("brokers", "topics", "partitions"):
        key_fields = KEYS[section]
        got = {tuple(item[k] for k in key_fields): item for item in state[section]}
        assert got == kafka[section], f"node {node_id}: {section} at offset {last}: ours {got} kafka {kafka[section]}"

    stored = Lake(lake)
    rows = stored.read(spark, "metadata_log").groupBy("record_type", "read_mode").count().collect()
    in_lake = Counter({r["record_type"]: r["count"] for r in rows})
    assert {r["read_mode"] for r in rows} == {"exact"}, rows
    assert in_lake == Counter(e.type_name for e in entries), (in_lake, Counter(e.type_name for e in entries))
    snapshots = stored.read(spark, "snapshots").select("snapshot_end_offset").distinct().count()
    assert snapshots >= 1
    if stored.table_exists("ingest_rejects"):
        assert stored.read(spark, "ingest_rejects").count() == 0
    return Replayed(node_id, state, entries, sum(in_lake.values()), snapshots, took)


@pytest.mark.spark
def test_ingest_replay_state_is_kafkas_image_and_the_clusters_view(script: Script, spark: Any, tmp_path: Path) -> None:
    """(b) on the controller's log (trimmed: the replay starts from a snapshot) and on the first broker log that
    still starts at offset 0 (the replay folds it whole); (c) on the controller's."""
    cluster = script.cluster
    whole = [b for b in BROKER_IDS if first_segment_of(cluster.nodes[b].metadata_log) == 0][:1]
    done = [_replay_node(spark, cluster, node_id, tmp_path / f"lake-{node_id}") for node_id in [CONTROLLER_ID, *whole]]
    state, entries = done[0].state, done[0].entries

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
    TALLY.setdefault(script.version, []).append(
        "(b) ingest + replay + state = Kafka's image at the last offset: " + "; ".join(
            f"node {r.node_id}'s log ({r.records} records from offset {r.entries[0].offset}, {r.snapshots} snapshots, "
            f"{r.seconds:.0f} s) at offset {r.entries[-1].offset}: {len(r.state['brokers'])} brokers, "
            f"{len(r.state['topics'])} topics, {len(r.state['partitions'])} partitions" for r in done) + "; "
        f"(c) = the cluster's own view: {len(theirs)} partitions (leader, leader epoch, replicas, ISR"
        f"{', ELR' if 'elr' in view else ''}), {len(view['brokers'])} unfenced brokers, "
        f"{len(view['features'])} features")


def _kafka_uuid(value: str) -> str:
    """kafka-python gives topic ids as ``uuid.UUID``; Kafka (and the replay) print them base64 URL-safe."""
    import base64
    import uuid

    return base64.urlsafe_b64encode(uuid.UUID(value).bytes).decode().rstrip("=")


# --- records not replayed into state yet ------------------------------------------------------------------------


def test_records_not_replayed_are_decoded(script: Script) -> None:
    """Every record of every node's log and snapshots decodes (no raw records); the script's configs, ACLs, SCRAM
    credentials and quotas are there, the topic removal too, and (4.4) the ELR the cluster reported."""
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
        for kind, least in NOT_REPLAYED.items():
            assert counts[kind] >= least, f"{kind}: {counts[kind]} < {least}"
        assert counts["RemoveTopicRecord"] == 1 and counts["TopicRecord"] == len(TOPICS) + 1
    else:  # every node trimmed: what is not in the logs any more is in the snapshots (the live entities)
        for kind in NOT_REPLAYED:
            assert counts[kind] or in_snapshots[kind] or kind.startswith("Remove"), kind
    if not script.version.startswith("3."):
        assert script.elr_seen, "no ELR seen on Kafka 4.4"
    TALLY.setdefault(script.version, []).append(
        f"records by type (all nodes' logs, offsets {first}..{max(union)}): {dict(sorted(counts.items()))}; in the "
        f"latest snapshots: {dict(sorted(in_snapshots.items()))}; ELR seen: {script.elr_seen or 'n/a'}; notes: "
        f"{script.notes}")
