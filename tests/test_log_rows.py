"""Log entries as ``metadata_log`` rows (lakehouse.log_rows), without Spark: a record's row, a raw record's,
an issue's, the Arrow batches and the Spark DDL they share."""

from __future__ import annotations

import pyarrow as pa

from lakehouse.log_rows import (
    LOG_ROW_DDL,
    LOG_ROW_SCHEMA,
    ROW_KIND_ERROR,
    ROW_KIND_ISSUE,
    ROW_KIND_RECORD,
    IssueRow,
    entry_row,
    issue_row,
    to_record_batches,
)
from records.avro_codec import decode_payload, schema_id
from records.kafka_json import make_record
from records.model import LogEntry, RawRecord
from records.redaction import fingerprint

TOPIC_ID = bytes(range(1, 17))


def topic_entry(**fields: object) -> LogEntry:
    record = make_record("TopicRecord", 0, name="orders", topicId=TOPIC_ID)
    return LogEntry(offset=5, record=record, **fields)  # type: ignore[arg-type]


def test_the_row_columns_and_their_spark_types() -> None:
    assert LOG_ROW_SCHEMA.names == [
        "row_kind", "cluster_id", "offset", "batch_base_offset", "raft_leader_epoch", "append_time_ms", "api_key",
        "control_type", "record_version", "record_type", "control", "read_mode", "schema_id", "payload",
        "payload_json", "source_file", "source_position", "secret_fingerprint", "message"]
    assert LOG_ROW_DDL.startswith("`row_kind` STRING, `cluster_id` STRING, `offset` BIGINT, ")
    assert "`raft_leader_epoch` INT" in LOG_ROW_DDL and "`payload` BINARY" in LOG_ROW_DDL
    assert "`control` BOOLEAN" in LOG_ROW_DDL and LOG_ROW_DDL.endswith("`message` STRING")


def test_entry_row_of_a_record_keeps_it_as_avro_and_as_kafka_json() -> None:
    entry = topic_entry(batch_base_offset=4, raft_leader_epoch=2, append_time_ms=99, source="seg.log",
                        position=12, notes=("first", "second"))
    row = entry_row(entry, "c1")
    assert {name: row[name] for name in row if name not in ("payload", "schema_id")} == {
        "row_kind": ROW_KIND_RECORD, "cluster_id": "c1", "offset": 5, "batch_base_offset": 4, "raft_leader_epoch": 2,
        "append_time_ms": 99, "api_key": 2, "control_type": None, "record_version": 0, "record_type": "TopicRecord",
        "control": False, "read_mode": "exact", "payload_json": '{"name":"orders","topicId":"AQIDBAUGBwgJCgsMDQ4PEA"}',
        "source_file": "seg.log", "source_position": 12, "secret_fingerprint": None, "message": "first; second"}
    assert row["schema_id"] == schema_id("TopicRecord")
    assert row["payload"] == b"\x0corders" + TOPIC_ID + b"\x00"
    assert decode_payload("TopicRecord", 0, row["payload"]).data == entry.record.data  # type: ignore[arg-type]


def test_entry_row_cluster_id_falls_back_to_the_entry() -> None:
    assert entry_row(topic_entry(cluster_id="from-entry"), None)["cluster_id"] == "from-entry"
    assert entry_row(topic_entry(cluster_id="from-entry"), "given")["cluster_id"] == "given"


def test_entry_row_of_a_raw_record_keeps_its_bytes() -> None:
    row = entry_row(LogEntry(offset=6, record=RawRecord(77, None, 0, b"xy", "unknown type")), None)
    assert (row["api_key"], row["control_type"], row["record_type"], row["payload"]) == (
        77, None, "UnknownRecord77", b"xy")
    assert (row["schema_id"], row["payload_json"], row["cluster_id"], row["message"]) == (None, None, None, None)


def test_issue_row_fills_its_columns_and_leaves_the_rest_null() -> None:
    row = issue_row(IssueRow(ROW_KIND_ISSUE, "seg.log", 7, 40, "skipped-corrupt: bad CRC"), "c1")
    assert list(row) == LOG_ROW_SCHEMA.names
    assert {name: value for name, value in row.items() if value is not None} == {
        "row_kind": ROW_KIND_ISSUE, "cluster_id": "c1", "offset": 40, "source_file": "seg.log",
        "source_position": 7, "message": "skipped-corrupt: bad CRC"}
    error = issue_row(IssueRow(ROW_KIND_ERROR, "seg.log", None, None, "not a log segment"), None)
    assert (error["row_kind"], error["offset"], error["source_position"]) == (ROW_KIND_ERROR, None, None)


def test_to_record_batches_cuts_at_max_rows() -> None:
    rows = [entry_row(LogEntry(offset=offset, record=RawRecord(77, None, 0, b"", "unknown")), "c1")
            for offset in range(5)]
    batches = list(to_record_batches(rows, max_rows=2))
    assert [batch.num_rows for batch in batches] == [2, 2, 1]
    assert all(batch.schema == LOG_ROW_SCHEMA for batch in batches)
    assert pa.Table.from_batches(batches).column("offset").to_pylist() == [0, 1, 2, 3, 4]
    assert list(to_record_batches([], max_rows=2)) == []


def test_entry_row_never_holds_a_secret() -> None:
    record = make_record("ConfigRecord", 0, resourceType=4, resourceName="1", name="ssl.keystore.password",
                         value="hunter2")
    key = bytes(range(32))
    row = entry_row(LogEntry(offset=8, record=record), "c1", key)
    assert row["payload_json"] == ('{"resourceType":4,"resourceName":"1","name":"ssl.keystore.password",'
                                   '"value":"(redacted)"}')
    assert b"hunter2" not in row["payload"] and b"(redacted)" in row["payload"]
    assert row["secret_fingerprint"] == fingerprint(key, b"hunter2")
    unkeyed = entry_row(LogEntry(offset=8, record=record), "c1")  # no key: redacted all the same
    assert (unkeyed["payload"], unkeyed["secret_fingerprint"]) == (row["payload"], None)
