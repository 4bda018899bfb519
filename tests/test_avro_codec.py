"""records.avro_codec: Avro payloads (older shapes under the merged schema) and container files."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.avro_codec import decode_payload, read_container, write_container
from records.avro_schema import record_schema
from records.definitions import definitions
from records.kafka_json import make_record
from records.model import LogEntry, ReadMode, uuid_from_str
from tests.avro_support import avro_shape as _avro_shape
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
