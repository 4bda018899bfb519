"""replay/store/snapshots.py: replaying from a snapshot gives exactly what the reference fold gives.

A simulated log whose segments before offset E are gone, plus a snapshot of the image at E-1 written the way
Kafka writes images; Spark (``replay()`` and ``run_replay``) equals
``reference_histories(tail, cluster, base_snapshot=(E, records))``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord, uuid_from_str
from replay.core.coverage import SnapshotId
from replay.fold.engine import replay
from replay.reference.fold import Image, image_at, reference_histories
from replay.store.runs import ANOMALIES, run_replay
from replay.store.snapshots import coverages, snapshot_input, with_snapshot_causes
from simulator import ScenarioOptions, run_scenario
from tests.replay_tables_support import (
    REFERENCE_TABLES,
    TABLES,
    _assert_same,
    _collect,
    _lake_tables,
    as_ingested,
)

pytestmark = pytest.mark.spark


def _uuid(text: str) -> bytes:
    return uuid_from_str(text)


def image_records(image: Image) -> list[MetadataRecord]:
    """The image as Kafka's ``MetadataImage.write`` emits it: features, brokers, controllers, topics with
    their partitions (a snapshot replaces the whole image)."""
    records = [make_record("FeatureLevelRecord", 0, name=n, featureLevel=level)
               for n, level in sorted(image.features.items())]
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        records.append(make_record(
            "RegisterBrokerRecord", 3, brokerId=b.broker_id, isMigratingZkBroker=b.is_migrating_zk_broker,
            incarnationId=_uuid(b.incarnation_id), brokerEpoch=b.broker_epoch,
            endPoints=[{"name": n, "host": h, "port": p, "securityProtocol": s} for n, h, p, s in b.endpoints],
            features=[{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in b.features],
            rack=b.rack, fenced=b.fenced, inControlledShutdown=b.in_controlled_shutdown,
            logDirs=[_uuid(d) for d in b.log_dirs]))
    for c in sorted(image.controllers.values(), key=lambda c: c.controller_id):
        records.append(make_record(
            "RegisterControllerRecord", 0, controllerId=c.controller_id, incarnationId=_uuid(c.incarnation_id),
            zkMigrationReady=c.zk_migration_ready,
            endPoints=[{"name": n, "host": h, "port": p, "securityProtocol": s} for n, h, p, s in c.endpoints],
            features=[{"name": n, "minSupportedVersion": lo, "maxSupportedVersion": hi} for n, lo, hi in c.features]))
    for tid, name in sorted(image.topics.items()):
        records.append(make_record("TopicRecord", 0, name=name, topicId=_uuid(tid)))
        for pid, p in sorted(image.topic_partitions(tid).items()):
            records.append(make_record(
                "PartitionRecord", 2, partitionId=pid, topicId=_uuid(tid), replicas=list(p.replicas),
                isr=list(p.isr), removingReplicas=list(p.removing_replicas), addingReplicas=list(p.adding_replicas),
                leader=p.leader, leaderRecoveryState=p.leader_recovery_state, leaderEpoch=p.leader_epoch,
                partitionEpoch=p.partition_epoch, directories=[_uuid(d) for d in p.directories],
                eligibleLeaderReplicas=list(p.eligible_leader_replicas), lastKnownElr=list(p.last_known_elr)))
    return records


def _snapshot_frame(spark: SparkSession, cluster: str, end: int, records: list[MetadataRecord]) -> DataFrame:
    entries = [LogEntry(offset=i, record=r) for i, r in enumerate(records)]
    return (entries_frame(spark, entries, cluster).withColumn("snapshot_end_offset", F.lit(end).cast("long"))
            .withColumn("snapshot_epoch", F.lit(1)))


SNAPSHOT_CASES = [  # (cluster, scenario, options, E)
    ("snap-random", "random", ScenarioOptions(seed=9, events=120, metadata_version="4.0", unclean=True, elr=True),
     None),
    ("snap-recreate", "topic-recreate", ScenarioOptions(seed=7), 112),  # right after the topic deletion at 111
    ("snap-reassign", "reassignment-under-failure", ScenarioOptions(seed=5, metadata_version="3.9"), 60),
]


@pytest.fixture(scope="module")
def snapshot_logs() -> dict[str, tuple[list[LogEntry], int, list[MetadataRecord]]]:
    cases = {}
    for cluster, name, options, end in SNAPSHOT_CASES:
        entries = as_ingested(run_scenario(name, options).entries())
        e = end if end is not None else entries[len(entries) * 2 // 3].offset
        records = image_records(image_at(entries, e - 1))
        cases[cluster] = ([x for x in entries if x.offset >= e], e, records)
    return cases


def test_replay_from_a_snapshot_equals_the_reference_fold(spark: SparkSession, snapshot_logs, tmp_path: Path
                                                           ) -> None:
    frames = [entries_frame(spark, tail, c) for c, (tail, _, _) in snapshot_logs.items()]
    snaps = [_snapshot_frame(spark, c, e, records) for c, (_, e, records) in snapshot_logs.items()]
    log, snapshots = frames[0], snaps[0]
    for frame, snap in zip(frames[1:], snaps[1:], strict=True):
        log, snapshots = log.unionByName(frame), snapshots.unionByName(snap)
    covered = coverages(log, snapshots)
    assert {c: (cov.base, cov.first_offset, cov.checks) for c, cov in covered.items()} == {
        c: (SnapshotId(e, 1), e - 1, ()) for c, (_, e, _) in snapshot_logs.items()}
    replay_input = snapshot_input(log, snapshots, covered)
    result = replay(replay_input.log, replay_input.base)
    got = {name: _collect(with_snapshot_causes(df, covered)) for name, df in result.tables.items()}
    got[ANOMALIES] = _collect(result.anomalies)
    want: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for cluster, (tail, e, records) in snapshot_logs.items():
        for name, rows in reference_histories(tail, cluster, base_snapshot=(e, records), snapshot_epoch=1).items():
            want.setdefault(name, []).extend(rows)
    _assert_same(got, want, "replay() from snapshots", names=REFERENCE_TABLES)
    # the snapshot's versions start at E-1 with no append time
    first = [r for r in got["partition_history"] if r["cluster_id"] == "snap-recreate"]
    assert min(r["valid_from_offset"] for r in first) == 111
    assert all(r["valid_from_time_ms"] is None for r in first if r["valid_from_offset"] == 111)
    assert {r["cause_type"] for r in first if r["valid_from_offset"] == 111} == {
        "snapshot 00000000000000000112-0000000001"}
    assert len(want["partition_history"]) > 100

    # the same through the store: metadata_log + snapshots tables in a lake, and an older snapshot
    # (before the first stored offset) that must not be chosen
    lake = Lake(tmp_path / "snap-lake")
    lake.write(log, "metadata_log", "overwrite")
    old = _snapshot_frame(spark, "snap-recreate", 50, snapshot_logs["snap-recreate"][2])
    lake.write(snapshots.unionByName(old), "snapshots", "overwrite")
    summary = run_replay(spark, lake)
    assert summary.mode == "full" and any(
        n.startswith("snap-recreate: history from offset 111: the snapshot 00000000000000000112-0000000001")
        for n in summary.notes), summary.notes
    _assert_same(_lake_tables(spark, lake), got, "run_replay from snapshots")


def test_the_image_parts_start_from_the_snapshot(spark: SparkSession) -> None:
    """A snapshot (end offset 10) holds a topic with a config, an ACL, a SCRAM credential (with the fingerprint of
    its redacted secret), a producer-id block, a quota, a token and the ZK migration state; the log tail removes
    or replaces each: every version starts at 9 with no time and ends at the record that changed it."""
    from tests.image_parts_support import (
        A1,
        A1S,
        acl,
        config,
        producer_ids,
        quota,
        remove_acl,
        remove_scram,
        scram,
        token,
        versions,
        with_fingerprints,
        zk_migration,
    )
    from tests.reference_fold_support import T1, topic

    records = [topic(T1, "orders"), config(2, "orders", "retention.ms", "5"), acl(A1), scram("alice", 1, 4096),
               producer_ids(1, 5, 3000), quota([("user", "alice")], "producer_byte_rate", 10.0),
               token("tok1", 1500), zk_migration(3)]
    tail = [make_record("RemoveAccessControlEntryRecord", 0, id=A1), make_record("RemoveTopicRecord", 0, topicId=T1),
            remove_scram("alice", 1), producer_ids(2, 6, 4000),
            make_record("RemoveDelegationTokenRecord", 0, tokenId="tok1"),
            quota([("user", "alice")], "producer_byte_rate", remove=True), remove_acl(A1)]
    log = entries_frame(spark, [LogEntry(offset=10 + i, record=r, append_time_ms=2000 + i)
                                for i, r in enumerate(tail)], "snap-parts")
    snapshots = with_fingerprints(_snapshot_frame(spark, "snap-parts", 10, records), {"snap-parts": {3: "snap-fp"}})
    replay_input = snapshot_input(log, snapshots, coverages(log, snapshots))
    result = replay(replay_input.log, replay_input.base)
    got = {name: _collect(result.tables[name]) for name in (
        "config_history", "acl_history", "scram_history", "producer_id_history", "client_quota_history",
        "delegation_token_history", "feature_history")}
    assert versions(got["acl_history"], "snap-parts", "id") == [(A1S, 9, 10, 9)]
    assert versions(got["config_history"], "snap-parts", "resource_name", "name", "value") == [
        ("orders", "retention.ms", "5", 9, 11, 9)]
    assert versions(got["scram_history"], "snap-parts", "name", "credential_fingerprint") == [
        ("alice", "snap-fp", 9, 12, 9)]
    assert versions(got["producer_id_history"], "snap-parts", "next_producer_id") == [
        (3000, 9, 13, 9), (4000, 13, None, 13)]
    assert versions(got["delegation_token_history"], "snap-parts", "token_id") == [("tok1", 9, 14, 9)]
    assert versions(got["client_quota_history"], "snap-parts", "key", "value") == [
        ("producer_byte_rate", 10.0, 9, 15, 9)]
    assert versions(got["feature_history"], "snap-parts", "feature", "level") == [("zkMigrationState", 3, 9, None, 9)]
    assert {r["valid_from_time_ms"] for rows in got.values() for r in rows if r["valid_from_offset"] == 9} == {None}
    # the ACL the snapshot held is gone at 10: removing it again (16) is refused
    assert [(a["offset"], a["record_type"]) for a in _collect(result.anomalies)] == [
        (16, "RemoveAccessControlEntryRecord")]
