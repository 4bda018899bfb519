"""records.redaction: Kafka's isSensitive rule from the generated ConfigDef table, redaction of a LogEntry, the
keyed fingerprint; Kafka's own RecordRedactor as the referee (tests/test_kafka_configs.py regenerates the table from
Kafka's jars)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kraft_replay.cli import app
from records.kafka_configs import kafka_configs
from records.kafka_json import make_record
from records.model import LogEntry, RawRecord, ReadMode
from records.redaction import (
    RAW_WITHHELD_NOTE,
    REDACTED,
    fingerprint,
    holds_secret,
    is_sensitive,
    redact,
)
from records.sources import ReadOptions, ReadReport, read_entries
from tests.referee import RefereeUnavailable
from tests.secrets_support import BROKER, CLIENT_METRICS, GROUP, TOPIC, config, scram, write_secrets_log

KEY = bytes(range(32))


def entry(record: object, offset: int = 7) -> LogEntry:
    return LogEntry(offset=offset, record=record)  # type: ignore[arg-type]


def test_the_table_names_its_kafka_and_holds_kafka_config_types() -> None:
    table = kafka_configs()
    assert table["kafkaVersion"] == "4.4.0"
    assert table["regenerate"] == "python -m tests.referee.kafka_configs"
    assert table["sensitiveTypes"] == ["PASSWORD"]
    by_name = {item["name"]: item for item in table["resourceTypes"]}
    assert {name: item["id"] for name, item in by_name.items()} == {
        "UNKNOWN": 0, "TOPIC": 2, "BROKER": 4, "BROKER_LOGGER": 8, "CLIENT_METRICS": 16, "GROUP": 32}
    # KafkaRaftServer.configSchema holds BROKER (KafkaConfig) and TOPIC (LogConfig) ConfigDefs only
    assert [name for name, item in by_name.items() if item["configDef"]] == ["BROKER", "TOPIC"]
    assert by_name["BROKER"]["keys"]["ssl.keystore.password"] == "PASSWORD"
    assert by_name["BROKER"]["keys"]["num.io.threads"] == "INT"
    assert by_name["TOPIC"]["keys"]["retention.ms"] == "LONG"
    assert by_name["TOPIC"]["keys"]["unclean.leader.election.enable"] == "BOOLEAN"


def test_is_sensitive_follows_kafka_config_schema() -> None:
    assert is_sensitive(BROKER, "ssl.keystore.password")  # a PASSWORD-type key
    assert is_sensitive(BROKER, "sasl.jaas.config")
    assert not is_sensitive(BROKER, "num.io.threads")  # known, not a password
    assert not is_sensitive(TOPIC, "retention.ms")
    assert is_sensitive(BROKER, "listener.name.internal.ssl.key.password")  # a key the ConfigDef does not know
    assert is_sensitive(TOPIC, "ssl.truststore.password")
    assert is_sensitive(GROUP, "consumer.session.timeout.ms")  # a type without a ConfigDef: every key
    assert is_sensitive(CLIENT_METRICS, "metrics")
    assert is_sensitive(8, "kafka.server")  # BROKER_LOGGER
    assert is_sensitive(0, "retention.ms")  # UNKNOWN
    assert is_sensitive(99, "retention.ms")  # an id ConfigResource.Type.forId does not know: UNKNOWN


def test_a_sensitive_config_value_is_redacted_and_fingerprinted() -> None:
    original = entry(config(BROKER, "1", "ssl.keystore.password", "hunter2"))
    redacted = redact(original, KEY)
    assert redacted.record.data == {"resourceType": 4, "resourceName": "1", "name": "ssl.keystore.password",
                                    "value": REDACTED}
    assert redacted.secret_fingerprint == hmac.new(KEY, b"\0\0\0\x07hunter2", hashlib.sha256).hexdigest()
    assert redacted.offset == 7 and not holds_secret(redacted)
    assert redact(original, KEY).secret_fingerprint == redacted.secret_fingerprint  # same key, same fingerprint
    assert redact(original, bytes(32)).secret_fingerprint != redacted.secret_fingerprint
    other = redact(entry(config(BROKER, "1", "ssl.keystore.password", "hunter3")), KEY)
    assert other.secret_fingerprint != redacted.secret_fingerprint  # a change stays visible
    assert redact(original, None).secret_fingerprint is None  # no key: redacted all the same
    assert redact(original, None).record.data["value"] == REDACTED


def test_what_holds_no_secret_is_left_as_it_is() -> None:
    plain = entry(config(TOPIC, "orders", "retention.ms", "1000"))
    assert redact(plain, KEY) is plain
    deletion = entry(config(BROKER, "1", "ssl.keystore.password", None))  # null deletes the key: kept null
    assert redact(deletion, KEY) is deletion
    already = redact(entry(config(BROKER, "1", "ssl.keystore.password", "x")), KEY)
    assert redact(already, KEY) is already  # idempotent
    topic = entry(make_record("TopicRecord", 0, name="t", topicId=bytes(16)))
    assert redact(topic, KEY) is topic


def test_scram_salt_and_keys_become_empty() -> None:
    original = entry(scram("alice", 1, "a", iterations=8192))
    redacted = redact(original, KEY)
    assert redacted.record.data == {"name": "alice", "mechanism": 1, "salt": b"", "storedKey": b"",
                                    "serverKey": b"", "iterations": 8192}
    assert redacted.secret_fingerprint == fingerprint(KEY, b"SALT-a", b"STOREDKEY-a", b"SERVERKEY-a")
    # length-prefixed: moving a byte from one part to the next changes the fingerprint
    assert fingerprint(KEY, b"ab", b"c") != fingerprint(KEY, b"a", b"bc")


def test_an_undecodable_record_of_a_secret_type_keeps_no_bytes() -> None:
    raw = LogEntry(offset=3, record=RawRecord(4, None, 0, b"\x01\x04\x00garbage-with-s3cret", "does not fit"),
                   read_mode=ReadMode.RAW)
    redacted = redact(raw, KEY)
    assert isinstance(redacted.record, RawRecord) and redacted.record.value == b""
    assert redacted.notes == (RAW_WITHHELD_NOTE,)
    assert redacted.secret_fingerprint == fingerprint(KEY, b"\x01\x04\x00garbage-with-s3cret")
    other = LogEntry(offset=4, record=RawRecord(5, None, 0, b"\x01\x05\x00x", "does not fit"))
    assert redact(other, KEY) is other  # not a secret-bearing type


def test_dump_and_export_print_redacted_unless_asked(tmp_path: Path) -> None:
    log = write_secrets_log(tmp_path)
    runner = CliRunner()
    dumped = runner.invoke(app, ["dump", str(log.log_dir)])
    assert dumped.exit_code == 0, dumped.output
    # 8 sensitive config values; the SCRAM salts and keys are empty bytes (base64 "")
    assert dumped.stdout.count(REDACTED) == 8
    assert dumped.stdout.count('"salt":"","storedKey":"","serverKey":""') == 2
    assert not any(needle.decode("latin-1") in dumped.output for needle in log.needles())
    for value in log.plain_values:
        assert value in dumped.stdout
    table = runner.invoke(app, ["dump", str(log.log_dir), "--format", "table"])
    assert table.exit_code == 0 and "s3cret" not in table.output and REDACTED in table.stdout
    kept = runner.invoke(app, ["dump", str(log.log_dir), "--keep-secrets"])
    assert kept.exit_code == 0 and "s3cret-keystore-broker1" in kept.stdout and REDACTED not in kept.stdout
    assert "warning: --keep-secrets" in kept.stderr

    out = tmp_path / "out.avro"
    exported = runner.invoke(app, ["export", str(log.log_dir), "--out", str(out), "--codec", "null"])
    assert exported.exit_code == 0, exported.output
    assert not any(needle in out.read_bytes() for needle in log.needles())
    back = runner.invoke(app, ["dump", str(out), "--keep-secrets"])
    assert "s3cret" not in back.stdout and back.stdout.count(REDACTED) == 8
    exported = runner.invoke(app, ["export", str(log.log_dir), "--out", str(out), "--codec", "null",
                                   "--keep-secrets"])
    assert exported.exit_code == 0 and b"s3cret-keystore-broker1" in out.read_bytes()
    assert "warning: --keep-secrets" in exported.stderr


def test_jsonl_input_is_redacted_too(tmp_path: Path) -> None:
    log = write_secrets_log(tmp_path)
    kept = CliRunner().invoke(app, ["dump", str(log.log_dir), "--keep-secrets"])
    source = tmp_path / "log.jsonl"
    source.write_text(kept.stdout)
    assert len(kept.stdout.splitlines()) == 19 and "s3cret-in-transaction" in kept.stdout
    dumped = CliRunner().invoke(app, ["dump", str(source)])
    assert dumped.exit_code == 0 and "s3cret" not in dumped.stdout and dumped.stdout.count(REDACTED) == 8


# --- Kafka as the referee ------------------------------------------------------------------------------------


def _kafka_or_skip() -> None:
    try:
        from tests.referee import kafka_classpath
        from tests.referee.kafka_configs import KAFKA_VERSION

        kafka_classpath(KAFKA_VERSION)
    except RefereeUnavailable as exc:
        pytest.skip(f"Kafka's jars are not here: {exc}")


def test_we_redact_exactly_what_kafka_record_redactor_redacts(tmp_path: Path) -> None:
    _kafka_or_skip()
    from tests.referee.kafka_configs import kafka_redactions

    log = write_secrets_log(tmp_path)
    files = sorted(path for path in log.log_dir.iterdir() if path.suffix in (".log", ".checkpoint"))
    kafka = kafka_redactions(files)
    ours = {(str(path), entry.offset): entry for path in files
            for entry in read_entries(path, ReadOptions(cluster_id="c"), ReadReport()) if not entry.is_control}
    assert sorted(kafka) == sorted(ours) and len(kafka) == 23  # 19 in the segment, 4 in the snapshot
    compared = 0
    for key, item in kafka.items():
        loggable = item["loggable"]
        original = ours[key]
        redacted = redact(original, KEY)
        if item["type"] == "ConfigRecord":
            kafka_redacted = f"value='{REDACTED}'" in loggable
            data = original.record.data
            assert kafka_redacted == is_sensitive(data["resourceType"], data["name"]), loggable
            if data["value"] is not None:  # a null value (a deletion) is kept null: nothing secret in it
                assert (redacted.record.data["value"] == REDACTED) == kafka_redacted, loggable
                assert (redacted.secret_fingerprint is not None) == kafka_redacted
            compared += 1
        elif item["type"] == "UserScramCredentialRecord":
            assert "salt=(redacted), storedKey=(redacted), serverKey=(redacted)" in loggable
            assert redacted.record.data["salt"] == b"" and redacted.secret_fingerprint is not None
            compared += 1
        else:
            assert redacted is original and REDACTED not in loggable
    assert compared == 17  # 12 + 2 config records, 2 + 1 SCRAM credentials


def test_an_error_about_a_malformed_secret_does_not_quote_it(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    line = ('{"offset": 0, "type": "USER_SCRAM_CREDENTIAL_RECORD", "version": 0, "data": {"name": "alice", '
            '"mechanism": 1, "salt": "s3cret!salt", "storedKey": "", "serverKey": "", "iterations": 4096}}\n'
            '{"offset": 1, "type": "CONFIG_RECORD", "version": 0, "data": {"resourceType": 4, "resourceName": "1", '
            '"name": "ssl.keystore.password", "value": 31337}}\n')
    for number, text in enumerate(line.splitlines()):
        source.write_text(text + "\n")
        result = CliRunner().invoke(app, ["dump", str(source), "--cluster-id", "c"])
        assert result.exit_code != 0
        assert "s3cret" not in result.output and "31337" not in result.output
        assert ("expected base64 bytes, got a string of 11 characters that is not base64" if number == 0
                else "expected a string, got an integer") in result.output
