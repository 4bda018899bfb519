"""A metadata log with secrets in every place a log can hold them (issue 19, item 6), and what is secret in it.

Segments: password-type broker configs (one broker, the cluster default: BROKER with an empty name), a key the
topic ConfigDef does not know, an unknown broker key (a listener-prefixed password), GROUP and CLIENT_METRICS
configs (no ConfigDef in Kafka's schema: every key sensitive), an unknown resource type, SCRAM credentials of both
mechanisms, a secret inside a metadata transaction, a sensitive key's deletion (null: nothing secret), and
non-sensitive values that must stay readable. A snapshot restates configs and a SCRAM credential. A second
segment file (``conflicting``) holds another secret at an offset the first already has: ingest rejects it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

from records.kafka_json import make_record
from records.model import LogEntry, MetadataRecord
from records.writer import write_meta_properties, write_segments, write_snapshot

CLUSTER_ID = "SecretsCluster0000000A"
TOPIC_ID = bytes(range(1, 17))
BROKER, TOPIC, GROUP, CLIENT_METRICS = 4, 2, 32, 16
UNKNOWN_RESOURCE_TYPE = 99
SHA_256, SHA_512 = 1, 2  # ScramMechanism ids


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> MetadataRecord:
    return make_record("ConfigRecord", 0, resourceType=resource_type, resourceName=resource_name, name=name,
                       value=value)


def scram(name: str, mechanism: int, tag: str, iterations: int = 4096) -> MetadataRecord:
    return make_record("UserScramCredentialRecord", 0, name=name, mechanism=mechanism,
                       salt=f"SALT-{tag}".encode(), storedKey=f"STOREDKEY-{tag}".encode(),
                       serverKey=f"SERVERKEY-{tag}".encode(), iterations=iterations)


@dataclass
class SecretsLog:
    """Where the log is, and the secret values it holds (config values, SCRAM bytes) and the plain ones."""

    log_dir: Path
    snapshot: Path
    conflicting: Path
    secret_values: list[str] = field(default_factory=list)
    secret_bytes: list[bytes] = field(default_factory=list)
    plain_values: list[str] = field(default_factory=list)
    sensitive_offsets: list[int] = field(default_factory=list)  # log offsets of the records that are redacted

    def needles(self) -> list[bytes]:
        """Every form a secret could take in a file: UTF-8, raw bytes, and base64 (Kafka JSON's bytes)."""
        out = [value.encode() for value in self.secret_values]
        for raw in self.secret_bytes:
            out += [raw, base64.b64encode(raw)]
        return out


# (resource type, resource name, key, value, sensitive)
CONFIGS: list[tuple[int, str, str, str, bool]] = [
    (BROKER, "1", "ssl.keystore.password", "s3cret-keystore-broker1", True),
    (BROKER, "", "sasl.jaas.config", "s3cret-jaas-cluster-default", True),
    (BROKER, "1", "listener.name.internal.ssl.key.password", "s3cret-listener-key", True),
    (BROKER, "1", "num.io.threads", "17", False),
    (BROKER, "", "log.retention.ms", "86400017", False),
    (TOPIC, "orders", "retention.ms", "604800017", False),
    (TOPIC, "orders", "ssl.truststore.password", "s3cret-unknown-topic-key", True),
    (GROUP, "g1", "consumer.session.timeout.ms", "s3cret-group-config", True),
    (CLIENT_METRICS, "m1", "metrics", "s3cret-client-metrics", True),
    (UNKNOWN_RESOURCE_TYPE, "x", "anything", "s3cret-unknown-resource", True),
]


def write_secrets_log(directory: Path) -> SecretsLog:
    """The log (``__cluster_metadata-0`` with meta.properties and a snapshot) and its conflicting segment."""
    log_dir = directory / "__cluster_metadata-0"
    records: list[MetadataRecord] = [
        make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=27),
        make_record("TopicRecord", 0, name="orders", topicId=TOPIC_ID),
    ]
    out = SecretsLog(log_dir, log_dir, directory / "conflicting")
    for resource_type, name, key, value, sensitive in CONFIGS:
        if sensitive:
            out.sensitive_offsets.append(len(records))
            out.secret_values.append(value)
        else:
            out.plain_values.append(value)
        records.append(config(resource_type, name, key, value))
    for user, mechanism in (("alice", SHA_256), ("bob", SHA_512)):
        out.sensitive_offsets.append(len(records))
        records.append(scram(user, mechanism, f"{user}-{mechanism}"))
        out.secret_bytes += [f"{part}-{user}-{mechanism}".encode() for part in ("SALT", "STOREDKEY", "SERVERKEY")]
    # a secret inside a metadata transaction, and a sensitive key's deletion (null value)
    records.append(make_record("BeginTransactionRecord", 0, name="rotate"))
    out.sensitive_offsets.append(len(records))
    records.append(config(BROKER, "1", "ssl.keystore.password", "s3cret-in-transaction"))
    out.secret_values.append("s3cret-in-transaction")
    records.append(make_record("EndTransactionRecord", 0))
    records.append(config(BROKER, "1", "ssl.key.password", None))
    records.append(make_record("PartitionRecord", 0, partitionId=0, topicId=TOPIC_ID, replicas=[1], isr=[1],
                               leader=1, leaderEpoch=0, partitionEpoch=0))
    entries = [LogEntry(offset=offset, record=record, append_time_ms=1_700_000_000_000 + offset,
                        raft_leader_epoch=1, batch_base_offset=offset - offset % 4)
               for offset, record in enumerate(records)]
    write_segments(entries, log_dir)
    write_meta_properties(log_dir, cluster_id=CLUSTER_ID, node_id=1)
    snapshot_records = [make_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=27),
                        config(BROKER, "2", "ssl.truststore.password", "s3cret-in-snapshot"),
                        config(BROKER, "2", "num.io.threads", "9"), scram("carol", SHA_512, "carol-snapshot")]
    out.secret_values.append("s3cret-in-snapshot")
    out.secret_bytes += [f"{part}-carol-snapshot".encode() for part in ("SALT", "STOREDKEY", "SERVERKEY")]
    out.snapshot = write_snapshot(snapshot_records, log_dir, end_offset=4, epoch=1,
                                  last_contained_log_timestamp=1_700_000_000_003)
    # another record at offset 3 (the broker keystore password, another value): ingest rejects it as a conflict
    conflict = out.sensitive_offsets[0]
    write_segments([LogEntry(offset=conflict, record=config(BROKER, "1", "ssl.keystore.password",
                                                            "s3cret-conflicting"),
                             append_time_ms=1_700_000_000_000, raft_leader_epoch=1, batch_base_offset=conflict)],
                   out.conflicting)
    write_meta_properties(out.conflicting, cluster_id=CLUSTER_ID, node_id=1)
    out.secret_values.append("s3cret-conflicting")
    return out
