"""Kafka judges what the simulator writes for the image's other parts: Kafka's own fold (MetadataBatchLoader,
MetadataDelta: ConfigurationsDelta, ClientQuotasDelta, AclsDelta, ScramDelta, DelegationTokenDelta,
ProducerIdsDelta) accepts a simulated log carrying every family, Kafka's kafka-dump-log decodes each of those records
to the values the simulator wrote, and Kafka's ScramFormatter derives the same SCRAM keys. JVM and Python only."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from lakehouse.jars import KAFKA_VERSIONS
from records.kafka_json import record_to_json
from records.model import LogEntry
from simulator import ScenarioOptions, run_scenario
from simulator.output import METADATA_DIR, write_log
from simulator.security_control import scram_credential
from tests.referee import RefereeUnavailable, compiled, kafka_classpath, kafka_fold
from tests.referee.dump_log import dump_log_classpath, kafka_dump_log, parse_dump

pytestmark = pytest.mark.kafka

FAMILIES = frozenset({
    "ConfigRecord", "ClientQuotaRecord", "AccessControlEntryRecord", "RemoveAccessControlEntryRecord",
    "UserScramCredentialRecord", "RemoveUserScramCredentialRecord", "DelegationTokenRecord",
    "RemoveDelegationTokenRecord", "ProducerIdsRecord", "RemoveTopicRecord"})
SCRAM_CHECK = Path(__file__).parent / "referee" / "ScramCheck.java"
# Every family, every branch: the docs' story and a random mix long enough to remove SCRAM users and expire tokens
LOGS = {"image-changes": ScenarioOptions(),
        "random": ScenarioOptions(brokers=8, topics=6, partitions_per_topic=4, events=2500, seed=4,
                                  max_records_per_batch=25)}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[LogEntry]]]:
    """Each log's ``__cluster_metadata-0`` directory and its entries (metadata.version 3.9, which both Kafkas know)."""
    out = {}
    for name, options in LOGS.items():
        run = run_scenario(name, options)
        entries = list(run.entries())
        root = tmp_path_factory.mktemp(name)
        write_log(entries, root, "segments", cluster_id=run.sim.cluster_id, node_id=3000)
        out[name] = (root / METADATA_DIR, entries)
    return out


def test_the_logs_carry_every_family(logs: dict[str, tuple[Path, list[LogEntry]]]) -> None:
    types = {entry.type_name for _, entries in logs.values() for entry in entries}
    assert types >= FAMILIES, FAMILIES - types


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
@pytest.mark.parametrize("name", list(LOGS))
def test_kafkas_fold_accepts_every_family(logs: dict[str, tuple[Path, list[LogEntry]]], name: str,
                                          version: str) -> None:
    try:
        compiled(version)
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka {version} as referee: {reason}")
    log_dir, entries = logs[name]
    run = kafka_fold(version, log_dir)
    assert run.faults == []
    assert run.end["records"] == sum(1 for entry in entries if not entry.is_control)


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_kafka_dump_log_reads_the_values_written(logs: dict[str, tuple[Path, list[LogEntry]]], version: str) -> None:
    """Each family record, as Kafka decodes it (type, version, every field), is the record the simulator wrote."""
    try:
        dump_log_classpath(version)
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka {version}'s kafka-dump-log: {reason}")
    compared = 0
    for log_dir, entries in logs.values():
        files = sorted(log_dir.glob("*.log"))
        dumps, failed = kafka_dump_log(version, files)
        assert not failed
        theirs = {record.offset: record.json for path in files
                  for batch in parse_dump(dumps[path.resolve()]).batches for record in batch.records}
        for entry in entries:
            if entry.type_name in FAMILIES:
                assert theirs[entry.offset] == record_to_json(entry.record), entry.offset
                compared += 1
    assert compared > 100


def test_kafkas_scram_formatter_derives_the_same_keys(logs: dict[str, tuple[Path, list[LogEntry]]]) -> None:
    """The docs' alice (SCRAM-SHA-512, 8192 iterations): Kafka's ScramFormatter, given her password and the salt in
    the log, computes the storedKey and serverKey the log holds."""
    try:
        classpath = kafka_classpath(KAFKA_VERSIONS[0]).classpath
    except RefereeUnavailable as reason:
        pytest.skip(f"Kafka's ScramFormatter: {reason}")
    _, entries = logs["image-changes"]
    created = next(e.record.data for e in entries if e.type_name == "UserScramCredentialRecord")
    assert created["name"] == "alice"
    salt = base64.b64encode(created["salt"]).decode()
    result = subprocess.run(["java", "-cp", classpath, str(SCRAM_CHECK), "SCRAM-SHA-512", "alice-password-1", salt,
                             str(created["iterations"])], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    stored_key, server_key = (base64.b64decode(text) for text in result.stdout.split())
    assert (stored_key, server_key) == (created["storedKey"], created["serverKey"])
    assert (stored_key, server_key) == scram_credential(2, "alice-password-1", created["salt"], 8192)
