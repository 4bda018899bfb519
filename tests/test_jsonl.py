"""records.jsonl: JSON lines in and out; errors name file, line and offset."""

from __future__ import annotations

import io
import json

from records.decode import decode_metadata_value
from records.jsonl import entry_to_line, read_jsonl
from records.kafka_codec import uvarint_bytes
from records.model import ReadMode
from tests.jsonl_support import GOOD, TOPIC
from tests.jsonl_support import read_error as _error
from tests.jsonl_support import read_lines as _read


def test_good_lines_read() -> None:
    entries = _read([GOOD, {"offset": 8, "type": "PARTITION_CHANGE_RECORD", "version": 0,
                            "data": {"partitionId": 2, "topicId": TOPIC, "leader": -1}}])
    assert [e.offset for e in entries] == [7, 8]
    assert entries[0].record.data == {"id": 1, "epoch": 5}
    assert entries[1].record["leader"] == -1 and entries[1].record["isr"] is None


def test_non_increasing_offset() -> None:
    message = _error([GOOD, {**GOOD, "offset": 8}, {**GOOD, "offset": 8}])
    assert message == ("cluster.jsonl, line 3, offset 8: offset 8 does not increase (line 2 has "
                       "offset 8); expected offsets in strictly increasing order")


def test_not_json_and_missing_offset() -> None:
    assert _error([GOOD, "{not json"]) == ("cluster.jsonl, line 2: not valid JSON: Expecting "
                                           "property name enclosed in double quotes at column 2; "
                                           "expected one JSON object per line")
    message = _error([{k: v for k, v in GOOD.items() if k != "offset"}])
    assert message == ("cluster.jsonl, line 1: field offset: missing: every line needs 'offset' "
                       "(the record's log offset)")


def test_control_flag_must_match() -> None:
    message = _error([{**GOOD, "control": True}])
    assert "field control: FENCE_BROKER_RECORD is not a control record" in message


def test_newer_version_json_needs_best_effort() -> None:
    line = {"offset": 1, "type": "CLEAR_ELR_RECORD", "version": 1, "data": {"topicName": "t"}}
    assert "unsupported version 1 of ClearElrRecord (known versions 0)" in _error([line])
    (entry,) = _read([{**line, "readMode": "best-effort"}])
    assert entry.record.version == 1 and entry.record.data == {"topicName": "t"}


def test_raw_entries_survive_json_lines() -> None:
    value = uvarint_bytes(1) + uvarint_bytes(99) + uvarint_bytes(0) + b"\x00"
    record, mode, notes = decode_metadata_value(value)
    from records.model import LogEntry
    entry = LogEntry(offset=12, record=record, batch_base_offset=12, read_mode=mode, notes=notes)
    line = entry_to_line(entry)
    assert json.loads(line)["raw"] and json.loads(line)["readMode"] == "raw"
    back = list(read_jsonl(io.StringIO(line + "\n"), "raw.jsonl"))
    assert back[0].record == record and back[0].read_mode is ReadMode.RAW
    assert entry_to_line(back[0]) == line
