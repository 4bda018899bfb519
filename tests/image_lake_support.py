"""A lake holding every part of Kafka's image, for the questions of issue 19 (state sections, history, diff, the
change log): tests/test_image_query.py, tests/test_changes.py and tests/test_image_commands.py read it, built
once per run by the ``image_lake`` session fixture of tests/conftest.py.

The metadata_log is real: the simulator's cluster (3 brokers, topic ``orders``, ``retention.ms`` set twice, the
cluster-default ``min.insync.replicas``), then one batch per record of the other parts (a redacted keystore
password changed once, quotas with a default entity, ACLs, SCRAM, a token, producer-id blocks), as ingest stores
them (the secrets already redacted, their fingerprints given). The replay writes every table; ``image_rows`` says,
by hand, what its six image-part tables must hold (tests/test_image_query.py checks they do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lakehouse.lake import Lake
from lakehouse.log_rows import entries_frame
from lakehouse.tables import (
    ACL_HISTORY,
    CLIENT_QUOTA_HISTORY,
    CONFIG_HISTORY,
    DELEGATION_TOKEN_HISTORY,
    METADATA_LOG,
    PRODUCER_ID_HISTORY,
    SCRAM_HISTORY,
)
from records.model import LogEntry, MetadataRecord, uuid_to_str
from replay.store.runs import run_replay
from simulator import ControllerSimulator
from simulator.controller import SimConfig
from simulator.model import record

CLUSTER = "image"
RETENTION = "retention.ms"
MIN_ISR = "min.insync.replicas"
PASSWORD = "ssl.keystore.password"
REDACTED_TEXT = "(redacted)"  # what the ingest stores for a secret (records.redaction.REDACTED, issue 19)
FINGERPRINTS = {"keystore-1": "a1" * 32, "keystore-2": "b2" * 32, "scram-1": "c3" * 32, "scram-2": "d4" * 32}
ACL_WRITE_ID, ACL_READ_ID = bytes.fromhex("5a1e" * 8), bytes.fromhex("0b0e" * 8)  # the records' Uuids
ACL_WRITE, ACL_READ = uuid_to_str(ACL_WRITE_ID), uuid_to_str(ACL_READ_ID)  # as the tables keep them
TOKEN = "token-1"
ISSUED_MS = 1_767_225_600_000  # the token's issueTimestamp: 2026-01-01T00:00:00Z
DAY_MS, WEEK_MS = 86_400_000, 604_800_000
STEP_MS = 1000  # the hand-built batches are a second apart


@dataclass
class ImageLog:
    """The log and the offsets (``key``) and append times (``time``) of its records, by what they do."""

    entries: list[LogEntry]
    key: dict[str, int] = field(default_factory=dict)
    time: dict[int, int] = field(default_factory=dict)


def image_log() -> ImageLog:
    sim = ControllerSimulator(SimConfig(seed=11, metadata_version="3.9"))
    for broker in (1, 2, 3):
        sim.register_broker(broker)
    for broker in (1, 2, 3):
        sim.unfence(broker)
    sim.create_topic("orders", 1, 3)
    key = {"retention-1": sim.set_topic_config("orders", RETENTION, "604800000")}
    key["retention-2"] = sim.set_topic_config("orders", RETENTION, "86400000")
    key["min-isr"] = sim.set_cluster_config(MIN_ISR, "2")
    entries = sim.entries()
    offset, now, epoch = sim.next_offset, sim.now, sim.raft_epoch
    alice, default_user = [{"entityType": "user", "entityName": "alice"}], [{"entityType": "user",
                                                                            "entityName": None}]
    acl = {"resourceType": 2, "resourceName": "payments", "host": "*", "permissionType": 3}
    scram = {"name": "alice", "mechanism": 1, "salt": b"", "storedKey": b"", "serverKey": b""}
    steps: list[tuple[str, MetadataRecord, str | None]] = [
        ("keystore-1", record("ConfigRecord", 0, resourceType=4, resourceName="1", name=PASSWORD,
                              value=REDACTED_TEXT), FINGERPRINTS["keystore-1"]),
        ("quota-alice-1", record("ClientQuotaRecord", 0, entity=alice, key="producer_byte_rate",
                                 value=1048576.0, remove=False), None),
        ("quota-default", record("ClientQuotaRecord", 0, entity=default_user, key="consumer_byte_rate",
                                 value=2097152.0, remove=False), None),
        ("acl-write", record("AccessControlEntryRecord", 0, id=ACL_WRITE_ID, **acl, patternType=3,
                             principal="User:alice", operation=4), None),
        ("acl-read", record("AccessControlEntryRecord", 0, id=ACL_READ_ID, **acl, patternType=4,
                            principal="User:bob", operation=3), None),
        ("scram-1", record("UserScramCredentialRecord", 0, **scram, iterations=4096), FINGERPRINTS["scram-1"]),
        ("token", record("DelegationTokenRecord", 0, owner="User:alice", requester="User:alice",
                         renewers=["User:bob"], issueTimestamp=ISSUED_MS, maxTimestamp=ISSUED_MS + WEEK_MS,
                         expirationTimestamp=ISSUED_MS + DAY_MS, tokenId=TOKEN), None),
        ("pids-1", record("ProducerIdsRecord", 0, brokerId=1, brokerEpoch=5, nextProducerId=1000), None),
        ("keystore-2", record("ConfigRecord", 0, resourceType=4, resourceName="1", name=PASSWORD,
                              value=REDACTED_TEXT), FINGERPRINTS["keystore-2"]),
        ("quota-alice-2", record("ClientQuotaRecord", 0, entity=alice, key="producer_byte_rate",
                                 value=2097152.0, remove=False), None),
        ("acl-removed", record("RemoveAccessControlEntryRecord", 0, id=ACL_WRITE_ID), None),
        ("scram-2", record("UserScramCredentialRecord", 0, **scram, iterations=8192), FINGERPRINTS["scram-2"]),
        ("token-removed", record("RemoveDelegationTokenRecord", 0, tokenId=TOKEN), None),
        ("pids-2", record("ProducerIdsRecord", 0, brokerId=2, brokerEpoch=7, nextProducerId=2000), None),
        ("quota-alice-removed", record("ClientQuotaRecord", 0, entity=alice, key="producer_byte_rate",
                                       value=0.0, remove=True), None),
    ]
    for name, metadata_record, fingerprint in steps:
        now += STEP_MS
        key[name] = offset
        entries.append(LogEntry(offset, metadata_record, offset, epoch, now, secret_fingerprint=fingerprint))
        offset += 1
    return ImageLog(entries, key, {entry.offset: entry.append_time_ms for entry in entries
                                   if entry.append_time_ms is not None})


def _version(log: ImageLog, start: str, end: str | None, record_type: str, **values: Any) -> dict[str, Any]:
    """One version as the replay writes it: the values, then the interval from ``start``'s record to ``end``'s."""
    begin, until = log.key[start], log.key[end] if end is not None else None
    return {"cluster_id": CLUSTER, **values, "valid_from_offset": begin, "valid_to_offset": until,
            "valid_from_time_ms": log.time[begin], "valid_to_time_ms": log.time[until] if until is not None else None,
            "cause_offset": begin, "cause_type": record_type}


def image_rows(log: ImageLog) -> dict[str, list[dict[str, Any]]]:
    """The six tables of issue 19 for ``log``: one version per entry and visible offset, a removal closes the open
    version (Kafka's ``*Delta`` rules, written out by hand for this log)."""
    config, quota = "ConfigRecord", "ClientQuotaRecord"
    alice = [{"entity_type": "user", "entity_name": "alice"}]
    acl = {"resource_type": 2, "resource_name": "payments", "host": "*", "permission_type": 3}
    return {
        CONFIG_HISTORY: [
            _version(log, "retention-1", "retention-2", config, resource_type=2, resource_name="orders",
                     name=RETENTION, value="604800000", value_fingerprint=None),
            _version(log, "retention-2", None, config, resource_type=2, resource_name="orders", name=RETENTION,
                     value="86400000", value_fingerprint=None),
            _version(log, "min-isr", None, config, resource_type=4, resource_name="", name=MIN_ISR, value="2",
                     value_fingerprint=None),
            _version(log, "keystore-1", "keystore-2", config, resource_type=4, resource_name="1", name=PASSWORD,
                     value=REDACTED_TEXT, value_fingerprint=FINGERPRINTS["keystore-1"]),
            _version(log, "keystore-2", None, config, resource_type=4, resource_name="1", name=PASSWORD,
                     value=REDACTED_TEXT, value_fingerprint=FINGERPRINTS["keystore-2"])],
        CLIENT_QUOTA_HISTORY: [
            _version(log, "quota-alice-1", "quota-alice-2", quota, entity=alice, key="producer_byte_rate",
                     value=1048576.0),
            _version(log, "quota-alice-2", "quota-alice-removed", quota, entity=alice, key="producer_byte_rate",
                     value=2097152.0),
            _version(log, "quota-default", None, quota, entity=[{"entity_type": "user", "entity_name": None}],
                     key="consumer_byte_rate", value=2097152.0)],
        ACL_HISTORY: [
            _version(log, "acl-write", "acl-removed", "AccessControlEntryRecord", id=ACL_WRITE, **acl,
                     pattern_type=3, principal="User:alice", operation=4),
            _version(log, "acl-read", None, "AccessControlEntryRecord", id=ACL_READ, **acl, pattern_type=4,
                     principal="User:bob", operation=3)],
        SCRAM_HISTORY: [
            _version(log, "scram-1", "scram-2", "UserScramCredentialRecord", name="alice", mechanism=1,
                     iterations=4096, credential_fingerprint=FINGERPRINTS["scram-1"]),
            _version(log, "scram-2", None, "UserScramCredentialRecord", name="alice", mechanism=1,
                     iterations=8192, credential_fingerprint=FINGERPRINTS["scram-2"])],
        DELEGATION_TOKEN_HISTORY: [
            _version(log, "token", "token-removed", "DelegationTokenRecord", token_id=TOKEN, owner="User:alice",
                     requester="User:alice", renewers=["User:bob"], issue_timestamp=ISSUED_MS,
                     max_timestamp=ISSUED_MS + WEEK_MS, expiration_timestamp=ISSUED_MS + DAY_MS)],
        PRODUCER_ID_HISTORY: [
            _version(log, "pids-1", "pids-2", "ProducerIdsRecord", next_producer_id=1000, broker_id=1,
                     broker_epoch=5),
            _version(log, "pids-2", None, "ProducerIdsRecord", next_producer_id=2000, broker_id=2, broker_epoch=7)],
    }


def lake(spark: SparkSession, log: ImageLog, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """The log stored as ingest stores it, and replayed."""
    target = Lake(tmp_path_factory.mktemp("image-lake"))
    target.write(entries_frame(spark, log.entries, CLUSTER), METADATA_LOG, "append")
    run_replay(spark, target)
    return target
