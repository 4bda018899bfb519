"""Bad input gives a clear error naming file, line and offset — never a traceback, never a drop."""

from __future__ import annotations

import json
from pathlib import Path

from lakehouse.log_rows import entry_row
from records.avro_codec import entry_from_avro, entry_to_avro
from records.decode import decode_control_value, decode_metadata_value
from records.definitions import definitions
from records.jsonl import entry_to_line
from records.kafka_codec import encode_body, encode_control_key, encode_metadata_value, uvarint_bytes
from records.kafka_json import make_record, record_to_json
from records.model import LogEntry, MetadataRecord, RawRecord, ReadMode
from records.sources import read_entries
from records.writer import encode_entry, write_segments
from tests.jsonl_support import GOOD, TOPIC
from tests.jsonl_support import read_error as _error
from tests.jsonl_support import read_lines as _read


def test_unknown_record_type() -> None:
    message = _error([GOOD, {**GOOD, "offset": 8, "type": "FROB_RECORD"}])
    assert message.startswith("cluster.jsonl, line 2, offset 8: field type: unknown record type "
                              "'FROB_RECORD' (expected one of ")
    assert "PARTITION_CHANGE_RECORD" in message


def test_unsupported_version() -> None:
    message = _error([{**GOOD, "type": "PARTITION_CHANGE_RECORD", "version": 9,
                       "data": {"partitionId": 0, "topicId": TOPIC}}])
    assert message == ("cluster.jsonl, line 1, offset 7: field version: unsupported version 9 of "
                       "PartitionChangeRecord (known versions 0-2)")


def test_missing_required_field() -> None:
    message = _error([GOOD, {**GOOD, "offset": 9, "data": {"id": 1}}])
    assert message == ("cluster.jsonl, line 2, offset 9: field epoch: missing: epoch is mandatory in "
                       "FenceBrokerRecord version 0")


def test_missing_required_nested_field() -> None:
    broker = {"brokerId": 1, "incarnationId": TOPIC, "brokerEpoch": 4, "endPoints": [
        {"name": "PLAINTEXT", "host": "b1", "port": 9092, "securityProtocol": 0},
        {"name": "SSL", "host": "b1", "securityProtocol": 1}], "features": [], "rack": None,
        "fenced": True}
    message = _error([{"offset": 3, "type": "REGISTER_BROKER_RECORD", "version": 0, "data": broker}])
    assert message == ("cluster.jsonl, line 1, offset 3: field endPoints[1].port: missing: port is "
                       "mandatory in BrokerEndpoint version 0")


def test_wrong_type() -> None:
    message = _error([{**GOOD, "data": {"id": "one", "epoch": 5}}])
    assert message == "cluster.jsonl, line 1, offset 7: field id: expected int32, got a string ('one')"
    message = _error([{**GOOD, "type": "PARTITION_CHANGE_RECORD",
                       "data": {"partitionId": 0, "topicId": TOPIC, "leaderRecoveryState": 300}}])
    assert "field leaderRecoveryState: expected int8 in -128..127, got 300" in message
    message = _error([{**GOOD, "type": "TOPIC_RECORD", "data": {"name": "orders", "topicId": "nope"}}])
    assert "field topicId: expected a 22-character base64url Kafka Uuid, got 'nope'" in message
    message = _error([{**GOOD, "type": "PARTITION_RECORD", "data": {
        "partitionId": 0, "topicId": TOPIC, "replicas": None, "isr": [], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}}])
    assert "field replicas: is null, but Replicas is not nullable in version 0" in message


def test_field_of_a_later_version() -> None:
    message = _error([{**GOOD, "type": "PARTITION_CHANGE_RECORD", "version": 0,
                       "data": {"partitionId": 0, "topicId": TOPIC, "eligibleLeaderReplicas": [1]}}])
    assert message.endswith("field eligibleLeaderReplicas: PartitionChangeRecord version 0 has no "
                            "field eligibleLeaderReplicas (it exists in versions 2+)")


# --- newer than the definitions: kept, flagged, never dropped --------------------------------


def test_unknown_api_key_is_kept_raw() -> None:
    value = uvarint_bytes(1) + uvarint_bytes(99) + uvarint_bytes(0) + b"\x07\x00"
    record, mode, notes = decode_metadata_value(value)
    assert isinstance(record, RawRecord) and mode is ReadMode.RAW
    assert record.api_key == 99 and record.value == value
    assert notes == ("unknown metadata record api key 99 (version 0)",)


def _register_broker_v5() -> bytes:
    """A hand-encoded RegisterBrokerRecord v5, a version no definition knows yet: the v4 layout (the newest, with
    CordonedLogDirs) plus a tagged field 2 that v5 might add."""
    message = definitions()["RegisterBrokerRecord"]
    v4 = make_record("RegisterBrokerRecord", 4, brokerId=4, brokerEpoch=77, incarnationId=bytes(range(16)),
                     rack="r1", fenced=False, logDirs=[bytes([7] * 16)], cordonedLogDirs=[bytes([7] * 16)],
                     _unknownTaggedFields=[[2, b"\x02\x01"]])
    return uvarint_bytes(1) + uvarint_bytes(0) + uvarint_bytes(5) + encode_body(message, 4, v4.data)


def test_newer_version_read_best_effort_with_its_true_version(tmp_path: Path) -> None:
    """Read with the newest layout (v4), reported as v5, and written back as the same bytes, on every path."""
    value = _register_broker_v5()
    for _ in range(2):  # the checked path, then the plan it remembered for the header
        record, mode, notes = decode_metadata_value(value)
        assert isinstance(record, MetadataRecord) and mode is ReadMode.BEST_EFFORT
        assert record.version == 5 and record.layout_version == 4
        assert record.data["brokerEpoch"] == 77 and record.data["cordonedLogDirs"] == [bytes([7] * 16)]
        assert record.data["_unknownTaggedFields"] == [[2, b"\x02\x01"]]
        assert notes == ("RegisterBrokerRecord v5 is newer than the known versions 0-4; read with the v4 layout, "
                         "which consumed every byte",)
    entry = LogEntry(offset=3, record=record, batch_base_offset=3, read_mode=mode, notes=notes)
    assert encode_entry(entry) == (None, value)
    assert record_to_json(record)["version"] == 5
    assert entry_row(entry, "c")["record_version"] == 5
    # a segment (the batch reader's inlined plan), JSON lines and the Avro envelope keep v5
    segment = write_segments([entry], tmp_path / "log")[0]
    (read,) = read_entries(segment)
    assert read.record == record and read.read_mode is ReadMode.BEST_EFFORT and read.version == 5
    (line,) = _read([json.loads(entry_to_line(entry))])
    assert line.record == record and line.read_mode is ReadMode.BEST_EFFORT
    assert entry_from_avro(entry_to_avro(entry)).record == record


def test_newer_version_kept_raw_when_bytes_do_not_fit() -> None:
    message = definitions()["FenceBrokerRecord"]
    value = encode_metadata_value(message, 0, {"id": 1, "epoch": 2})
    value = value[:2] + uvarint_bytes(5) + value[3:] + b"\xff\xff"
    record, mode, notes = decode_metadata_value(value)
    assert isinstance(record, RawRecord) and mode is ReadMode.RAW
    assert record.version == 5 and record.value == value
    assert "bytes left over" in notes[0]


def test_unknown_control_type_is_kept_raw() -> None:
    record, mode, _ = decode_control_value(encode_control_key(42), b"\x00\x00\x00")
    assert isinstance(record, RawRecord) and record.control_type == 42 and mode is ReadMode.RAW


