"""Kafka-JSON → model → Avro → model → Kafka-JSON is the identity, for every type and version."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.avro_codec import decode_payload, encode_payload
from records.definitions import definitions
from records.kafka_json import make_record, record_from_json, record_to_json
from records.model import MetadataRecord, uuid_from_str
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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


