"""Kafka-JSON → model → Avro → model → Kafka-JSON is the identity, for every type and version."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.avro_codec import decode_payload, encode_payload, read_container, write_container
from records.avro_schema import record_schema
from records.definitions import definitions
from records.kafka_codec import decode_body, encode_body
from records.kafka_json import make_record, record_from_json, record_to_json
from records.model import LogEntry, MetadataRecord, ReadMode, uuid_from_str, uuid_to_str
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_type_and_version_is_covered() -> None:
    # 27 metadata record types + 5 raft control records (Kafka 4.4.0), each with all of Kafka's versions.
    assert len(definitions()) == 32
    assert ("PartitionChangeRecord", 2) in TYPE_VERSIONS
    assert ("RegisterBrokerRecord", 4) in TYPE_VERSIONS and ("BrokerRegistrationChangeRecord", 3) in TYPE_VERSIONS
    assert ("ClearElrRecord", 0) in TYPE_VERSIONS and ("UnregisterControllerRecord", 0) in TYPE_VERSIONS
    assert ("LeaderChangeMessage", 1) in TYPE_VERSIONS
    assert len(TYPE_VERSIONS) == 44  # 38 metadata (type, version) pairs + 6 control


@pytest.mark.parametrize(("type_name", "version"), TYPE_VERSIONS)
@FAST
@given(data=st.data())
def test_json_model_avro_json_identity(type_name: str, version: int, data: st.DataObject) -> None:
    message = definitions()[type_name]
    model_data = data.draw(record_data(message, version))
    kafka_json = json.loads(json.dumps(record_to_json(MetadataRecord(type_name, version, model_data))))
    record = record_from_json(kafka_json)
    payload = encode_payload(record)
    back = decode_payload(type_name, version, payload)
    assert back == record
    assert record_to_json(back) == kafka_json


@pytest.mark.parametrize(("type_name", "version"), TYPE_VERSIONS)
@FAST
@given(data=st.data())
def test_kafka_binary_round_trip(type_name: str, version: int, data: st.DataObject) -> None:
    message = definitions()[type_name]
    model_data = data.draw(record_data(message, version))
    raw = encode_body(message, version, model_data)
    decoded, end = decode_body(message, version, raw)
    assert end == len(raw)
    assert decoded == model_data
    assert encode_body(message, version, decoded) == raw


@pytest.mark.parametrize(("type_name", "version"), TYPE_VERSIONS)
@FAST
@given(data=st.data())
def test_older_shape_decodes_under_merged_schema(type_name: str, version: int,
                                                 data: st.DataObject) -> None:
    """A payload written with one version's shape decodes under the merged schema, later fields
    taking Kafka's defaults (Avro schema resolution)."""
    message = definitions()[type_name]
    model_data = data.draw(record_data(message, version))
    writer_schema = record_schema(message, version)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer_schema), _avro_shape(model_data))
    back = decode_payload(type_name, version, buf.getvalue(), writer_schema=writer_schema)
    assert back.data == model_data


def _avro_shape(data: Any) -> Any:
    if isinstance(data, dict):
        out = {k: _avro_shape(v) for k, v in data.items() if k != "_unknownTaggedFields"}
        out["_unknownTaggedFields"] = [{"tag": t, "data": raw}
                                       for t, raw in data.get("_unknownTaggedFields", [])]
        return out
    if isinstance(data, list):
        return [_avro_shape(v) for v in data]
    return data


def test_v0_partition_record_read_with_merged_schema_gets_kafka_defaults() -> None:
    message = definitions()["PartitionRecord"]
    topic = uuid_from_str("_3Hx0m1zQ4mBbPw_6E4vVw")
    v0 = {"partitionId": 7, "topicId": topic, "replicas": [1, 2, 3], "isr": [1, 2],
          "removingReplicas": [], "addingReplicas": [], "leader": 2, "leaderRecoveryState": 0,
          "leaderEpoch": 4, "partitionEpoch": 9}
    writer = record_schema(message, 0)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), _avro_shape(v0))
    merged = fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), fastavro.parse_schema(writer),
                                        fastavro.parse_schema(record_schema(message)))
    assert merged["leader"] == 2 and merged["isr"] == [1, 2]
    assert merged["directories"] == []  # v1+ field: Kafka's default (empty array)
    assert merged["eligibleLeaderReplicas"] is None  # v2+ nullable field: Kafka's default null
    assert merged["lastKnownElr"] is None


def test_no_change_markers_are_preserved() -> None:
    """Kafka's "no change" values survive every conversion, never normalised away."""
    topic = uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ")
    record = make_record("PartitionChangeRecord", 0, partitionId=3, topicId=topic, isr=[1, 2])
    assert record["leader"] == -2 and record["replicas"] is None
    assert record["leaderRecoveryState"] == -1
    as_json = record_to_json(record)
    assert as_json == {"type": "PARTITION_CHANGE_RECORD", "version": 0,
                       "data": {"partitionId": 3, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "isr": [1, 2]}}
    back = decode_payload("PartitionChangeRecord", 0, encode_payload(record))
    assert back["leader"] == -2 and back["replicas"] is None and back["isr"] == [1, 2]
    assert back["leaderRecoveryState"] == -1


def test_uuid_text_form_matches_kafka() -> None:
    raw = bytes(range(16))
    assert uuid_to_str(raw) == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_from_str("AAECAwQFBgcICQoLDA0ODw") == raw


def test_container_file_round_trip(tmp_path: Any) -> None:
    topic = uuid_from_str("_3Hx0m1zQ4mBbPw_6E4vVw")
    entries = [
        LogEntry(offset=0, record=make_record("LeaderChangeMessage", 0, leaderId=1,
                                              voters=[{"voterId": 1}], grantingVoters=[{"voterId": 1}]),
                 batch_base_offset=0, raft_leader_epoch=1, append_time_ms=1_700_000_000_000),
        LogEntry(offset=1, record=make_record("FenceBrokerRecord", 0, id=3, epoch=17),
                 batch_base_offset=1, raft_leader_epoch=1, append_time_ms=1_700_000_000_001,
                 cluster_id="q1Sh-9_ISia_WKVeSn7PNQ"),
        LogEntry(offset=2, record=make_record("UnfenceBrokerRecord", 0, id=3, epoch=17),
                 batch_base_offset=1, raft_leader_epoch=1, append_time_ms=1_700_000_000_001),
        LogEntry(offset=3, record=make_record("PartitionChangeRecord", 0, partitionId=0, topicId=topic,
                                              leader=-1), batch_base_offset=3, raft_leader_epoch=2,
                 append_time_ms=1_700_000_000_009, read_mode=ReadMode.EXACT),
    ]
    path = tmp_path / "log.avro"
    assert write_container(path, entries) == 4
    back = list(read_container(path))
    assert back == entries
    # FenceBroker and UnfenceBroker have the same shape: the union branch keeps them apart.
    assert [e.type_name for e in back] == ["LeaderChangeMessage", "FenceBrokerRecord",
                                          "UnfenceBrokerRecord", "PartitionChangeRecord"]
    assert back[3].record["leader"] == -1 and back[3].record["isr"] is None
