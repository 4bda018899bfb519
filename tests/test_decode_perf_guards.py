"""Guards for the decoder's fast paths: they must agree with the checked code, byte for byte and error
for error, and the frozen model classes built through their twins must be ordinary frozen instances."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records.batch import BatchRecord, RecordBatch, iter_batches
from records.batch_writer import NewRecord, encode_batch
from records.decode import decode_control_value, decode_metadata_value, entries_from_batch
from records.definitions import definitions
from records.kafka_codec import encode_body, encode_control_key, encode_metadata_value
from records.model import LogEntry, MetadataRecord, ReadMode
from tests.decoder_support import mutations as _mutations
from tests.strategies import all_type_versions, record_data

TYPE_VERSIONS = all_type_versions()
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("type_name", "version"), [tv for tv in TYPE_VERSIONS
                                                    if definitions()[tv[0]].api_key is not None])
@FAST
@given(data=st.data())
def test_metadata_value_fast_path_matches_first_and_later_reads(type_name: str, version: int,
                                                                data: st.DataObject) -> None:
    """The per-header plan cache must not change what a value decodes to, cold or warm."""
    message = definitions()[type_name]
    value = encode_metadata_value(message, version, data.draw(record_data(message, version)))
    for candidate in _mutations(value, data):
        first = decode_metadata_value(candidate)
        assert decode_metadata_value(candidate) == first
        record, mode, _ = first
        if mode is ReadMode.EXACT:
            assert isinstance(record, MetadataRecord) and type(record) is MetadataRecord


def test_twins_build_ordinary_frozen_instances() -> None:
    noop = encode_metadata_value(definitions()["NoOpRecord"], 0, {})
    batch_bytes = encode_batch([NewRecord(None, noop, 5)], base_offset=7, partition_leader_epoch=3)
    (batch,) = iter_batches(io.BytesIO(batch_bytes), source="mem")
    (entry,) = entries_from_batch(batch, cluster_id="c")
    for obj in (batch, batch.records[0], entry, entry.record):
        assert type(obj) in (RecordBatch, BatchRecord, LogEntry, MetadataRecord)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, dataclasses.fields(obj)[0].name, 1)
        assert dataclasses.replace(obj) == obj
    assert entry == LogEntry(offset=7, record=MetadataRecord("NoOpRecord", 0, {}), batch_base_offset=7,
                             raft_leader_epoch=3, append_time_ms=5, cluster_id="c", source="mem", position=0)
    assert hash(batch.records[0]) == hash(dataclasses.replace(batch.records[0]))


def test_control_values_still_decode() -> None:
    message = definitions()["LeaderChangeMessage"]
    value = encode_body(message, 0, {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}],
                                     "grantingVoters": []})
    record, mode, notes = decode_control_value(encode_control_key(2), value)
    assert (record.type_name, mode, notes) == ("LeaderChangeMessage", ReadMode.EXACT, ())
