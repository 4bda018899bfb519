"""records.kafka_codec: Kafka's binary encoding of a record body, both ways."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.definitions import definitions
from records.kafka_codec import decode_body, encode_body
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
