"""kafka-dump-log text → log entries: the real formats per Kafka version, clear errors, round trips.

Fixtures under tests/data/dumplog follow DumpLogSegments as Kafka prints it:
* kafka-3.7-segment.txt: Kafka 3.3-3.7 (core/src/main/scala/kafka/tools/DumpLogSegments.scala):
  LeaderChange shows only ``controlType: LEADER_CHANGE(2)``.
* kafka-4.1-segment.txt: Kafka 4.1 (tools/.../DumpLogSegments.java after KAFKA-19069, PR #19729):
  ``LeaderChange: {json}``, ``KRaftVersion {json}``, ``KRaftVoters {json}``; its control batch is
  the one pasted in PR #19729 (same size, crc and value sizes).
* kafka-3.7-snapshot.txt: a ``.checkpoint`` dump (KAFKA-13845, PR #12084, Kafka 3.3+):
  ``Snapshot end offset: N, epoch: E`` and SnapshotHeader / SnapshotFooter records.
"""

from __future__ import annotations

import base64
import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest

from records.dumplog import DumpLogReader, SkippedRecord, looks_like_dump_log, read_dump_log
from records.dumplog_format import format_dump_log
from records.errors import RecordsError, RecordValidationError
from records.kafka_json import make_record
from records.model import LogEntry

DATA = Path(__file__).parent / "data" / "dumplog"
TOPIC = "_3Hx0m1zQ4mBbPw_6E4vVw"
TOPIC_BYTES = base64.urlsafe_b64decode(TOPIC + "==")
SEGMENT = "/var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log"
BATCH = ("baseOffset: {base} lastOffset: {last} count: {count} baseSequence: -1 lastSequence: -1 "
         "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: {epoch} isTransactional: false "
         "isControl: {control} deleteHorizonMs: OptionalLong.empty position: {position} "
         "CreateTime: 1717000000000 size: 100 magic: 2 compresscodec: none crc: 1 isvalid: true")
RECORD = "| offset: {offset} CreateTime: 1717000000000 keySize: -1 valueSize: 30 sequence: -1 headerKeys: []"
FENCE = '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":1,"epoch":5}}'


def _batch(base: int, last: int | None = None, *, control: bool = False, epoch: int = 3,
           position: int = 0) -> str:
    last = base if last is None else last
    return BATCH.format(base=base, last=last, count=last - base + 1, epoch=epoch,
                        control=str(control).lower(), position=position)


def _record(offset: int, content: str = " payload: " + FENCE) -> str:
    return RECORD.format(offset=offset) + content


def _read(text: str, **kwargs: Any) -> list[LogEntry]:
    return list(read_dump_log(io.StringIO(text), "dump.txt", **kwargs))


def _error(text: str, **kwargs: Any) -> str:
    with pytest.raises(RecordValidationError) as info:
        _read(text, **kwargs)
    return str(info.value)


def _fixture(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


# -- real formats -------------------------------------------------------------------------------


def test_kafka_37_segment_multi_batch() -> None:
    skipped: list[SkippedRecord] = []
    entries = _read(_fixture("kafka-3.7-segment.txt"), cluster_id="MkU3OEVBNTcwNTJENDM2Qg", skipped=skipped)

    assert [e.offset for e in entries] == [1, 2, 3, 5]
    assert [e.type_name for e in entries] == ["RegisterBrokerRecord", "TopicRecord", "PartitionRecord",
                                             "PartitionChangeRecord"]
    # Kafka 3.7 prints LeaderChange without content: listed as skipped, never silently dropped.
    assert [(s.line, s.offset) for s in skipped] == [(4, 0), (11, 4)]
    assert "LEADER_CHANGE(2)" in skipped[0].reason and "dump.txt, line 4, offset 0" in str(skipped[0])

    broker, topic, partition, change = entries
    assert broker.version == 3 and not broker.is_control
    assert broker.record["brokerId"] == 1 and broker.record["brokerEpoch"] == 1
    assert broker.record["incarnationId"] == base64.urlsafe_b64decode("Lw2Y6nyQSvGZ8AkcXPFgIA==")
    assert broker.record["endPoints"] == [{"name": "PLAINTEXT", "host": "localhost", "port": 9092,
                                           "securityProtocol": 0}]
    assert broker.record["rack"] is None and broker.record["fenced"] is True
    assert broker.record["logDirs"] == [base64.urlsafe_b64decode("K5bEMmhYTXaMWnb3ck1rNw==")]
    assert (broker.batch_base_offset, broker.raft_leader_epoch, broker.append_time_ms,
            broker.position) == (1, 1, 1717000000123, 91)

    assert topic.record["name"] == "orders" and topic.record["topicId"] == TOPIC_BYTES
    assert (partition.batch_base_offset, partition.position,
            partition.append_time_ms) == (2, 265, 1717000005000)
    assert partition.record["replicas"] == [1, 2] and partition.record["leader"] == 1
    assert partition.record["leaderRecoveryState"] == 0  # tagged, absent → Kafka's default

    assert change.record["topicId"] == TOPIC_BYTES and len(change.record["topicId"]) == 16
    assert change.record["isr"] == [1, 2]
    assert change.record["leader"] == -2  # absent: Kafka's "no change" default
    assert change.record["replicas"] is None and change.record["leaderRecoveryState"] == -1
    assert (change.raft_leader_epoch, change.batch_base_offset,
            change.append_time_ms) == (2, 5, 1717000009000)

    assert all(e.cluster_id == "MkU3OEVBNTcwNTJENDM2Qg" and e.source == SEGMENT for e in entries)
    assert all(e.notes == () for e in entries)


def test_kafka_41_segment_control_records() -> None:
    reader = DumpLogReader(io.StringIO(_fixture("kafka-4.1-segment.txt")), "dump.txt")
    entries = list(reader)
    assert reader.skipped == []
    assert [e.offset for e in entries] == [0, 1, 2, 3, 4]
    assert [e.is_control for e in entries] == [True, True, True, False, False]

    leader, kraft_version, voters = entries[:3]
    assert leader.type_name == "LeaderChangeMessage" and leader.version == 0
    assert leader.record["leaderId"] == 1
    assert leader.record["voters"] == [{"voterId": 1}] and leader.record["grantingVoters"] == [{"voterId": 1}]
    assert kraft_version.type_name == "KRaftVersionRecord" and kraft_version.record["kRaftVersion"] == 1
    voter = voters.record["voters"][0]
    assert voters.type_name == "VotersRecord"
    assert voter["voterDirectoryId"] == base64.urlsafe_b64decode("tpx8pd1IQDqJwMfGzXj6GA==")
    assert voter["endpoints"] == [{"name": "CONTROLLER", "host": "localhost", "port": 9093}]
    assert voter["kRaftVersionFeature"] == {"minSupportedVersion": 0, "maxSupportedVersion": 1}
    assert {(e.batch_base_offset, e.raft_leader_epoch, e.append_time_ms, e.position)
            for e in entries[:3]} == {(0, 1, 1747299887693, 0)}

    change = entries[4]
    assert change.version == 2 and change.record["leader"] == 3 and change.record["isr"] == [2, 3]
    assert change.record["eligibleLeaderReplicas"] is None
    assert reader.files[0].path.endswith("00000000000000000000.log") and reader.files[0].log_start_offset == 0


def test_snapshot_dump() -> None:
    reader = DumpLogReader(io.StringIO(_fixture("kafka-3.7-snapshot.txt")), "snap.txt")
    entries = list(reader)
    assert [e.type_name for e in entries] == ["SnapshotHeaderRecord", "FeatureLevelRecord", "TopicRecord",
                                             "SnapshotFooterRecord"]
    assert entries[0].is_control and entries[0].record["lastContainedLogTimestamp"] == 1717000009000
    assert entries[1].record.data == {"name": "metadata.version", "featureLevel": 19}
    assert entries[3].record.data == {"version": 0}
    section = reader.files[0]
    assert (section.snapshot_end_offset, section.snapshot_epoch, section.bootstrap) == (6, 2, False)


def test_skip_record_metadata_both_tools() -> None:
    # Scala tool (< 4.0) prints " payload: …"; the Java tool (4.0+) prints "| payload: …";
    # both print a control record as an empty line.
    for prefix in (" ", "| "):
        skipped: list[SkippedRecord] = []
        text = "\n".join([
            "Dumping " + SEGMENT, "Log starting offset: 0",
            _batch(0, control=True, epoch=1), "",
            _batch(1, 2, epoch=1, position=80), prefix + "payload: " + FENCE, prefix + "payload: " + FENCE,
        ])
        entries = _read(text, skipped=skipped)
        assert [e.offset for e in entries] == [1, 2]
        assert entries[0].append_time_ms == 1717000000000 and entries[1].batch_base_offset == 1
        assert "--skip-record-metadata" in entries[0].notes[0]
        assert [s.offset for s in skipped] == [0]


def test_lines_without_batch_lines_and_stderr_noise() -> None:
    text = "\n".join([_record(10), _record(11), "Non-consecutive offsets in /x/0.log",
                      "  9 is followed by 10"])
    entries = _read(text)
    assert [e.offset for e in entries] == [10, 11]
    assert entries[0].batch_base_offset is None and entries[0].raft_leader_epoch is None
    assert entries[0].source == "dump.txt"


def test_trailing_bytes_are_listed() -> None:
    skipped: list[SkippedRecord] = []
    _read("\n".join([_batch(0), _record(0), "Found 17 invalid bytes at the end of 00000000000000000000.log"]),
          skipped=skipped)
    assert skipped[0].line == 3 and "17 bytes" in skipped[0].reason


def test_looks_like_dump_log() -> None:
    assert looks_like_dump_log(["Dumping /tmp/00000000000000000000.log", "Log starting offset: 0"])
    assert looks_like_dump_log(["\ufeff" + _batch(0)])
    assert looks_like_dump_log([_record(0)])
    assert not looks_like_dump_log(['{"offset": 0, "type": "TOPIC_RECORD"}', "hello"])
    assert not looks_like_dump_log([])


# -- errors -------------------------------------------------------------------------------------


def test_invalid_json_payload_names_file_line_offset() -> None:
    message = _error("\n".join([_batch(7), _record(7, ' payload: {"type":"FENCE_BROKER_RECORD",')]))
    assert message.startswith("dump.txt, line 2, offset 7: ")
    assert "not valid JSON" in message


def test_unknown_record_type() -> None:
    text = "\n".join([_batch(7), _record(7, ' payload: {"type":"SHINY_NEW_RECORD","version":0,"data":{}}')])
    message = _error(text)
    assert "dump.txt, line 2, offset 7" in message and "unknown record type 'SHINY_NEW_RECORD'" in message
    assert "skip_unparsable" in message
    skipped: list[SkippedRecord] = []
    assert _read(text, skip_unparsable=True, skipped=skipped) == []
    assert skipped[0].offset == 7 and "SHINY_NEW_RECORD" in skipped[0].reason


def test_kafka_decode_error_text() -> None:
    text = "\n".join([_batch(7), _record(7, " payload: Error at 7, skipping. Unknown metadata id 99")])
    assert "Error at 7, skipping. Unknown metadata id 99" in _error(text)
    skipped: list[SkippedRecord] = []
    _read(text, skip_unparsable=True, skipped=skipped)
    assert skipped[0].line == 2 and skipped[0].offset == 7


def test_bad_field_names_path() -> None:
    missing_epoch = ' payload: {"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":1}}'
    text = "\n".join([_batch(7), _record(7, missing_epoch)])
    message = _error(text)
    assert message.startswith("dump.txt, line 2, offset 7: field epoch: missing")


def test_non_increasing_offsets() -> None:
    message = _error("\n".join([_batch(5), _record(5), _batch(5, position=100), _record(5)]))
    assert "dump.txt, line 4, offset 5" in message
    assert "does not increase (line 2 has offset 5)" in message


def test_offset_outside_batch() -> None:
    assert "outside its batch (line 1: offsets 5..5)" in _error("\n".join([_batch(5), _record(6)]))


def test_batch_lines_only_needs_deep_iteration() -> None:
    # What kafka-dump-log prints without --deep-iteration / a decoder: batch lines only.
    with pytest.raises(RecordsError) as info:
        _read("\n".join(["Dumping " + SEGMENT, "Log starting offset: 0", _batch(0, 2),
                         _batch(3, position=200)]))
    message = str(info.value)
    assert message.startswith("dump.txt, line 3, offset 0: ")
    assert "--cluster-metadata-decoder" in message and "--deep-iteration --print-data-log" in message


def test_record_line_without_payload() -> None:
    message = _error("\n".join([_batch(0), _record(0, "")]))
    assert "dump.txt, line 2, offset 0" in message and "--cluster-metadata-decoder" in message


def test_batch_count_mismatch() -> None:
    message = _error("\n".join([_batch(0, 2), _record(0), _record(1), _batch(3), _record(3)]))
    assert "line 1 declares 3 records" in message and "2 record lines" in message


def test_control_flag_mismatch() -> None:
    message = _error("\n".join([_batch(0, control=True), _record(0)]))
    assert "dump.txt, line 2, offset 0" in message and "isControl: true" in message
    leader = ' LeaderChange: {"version":0,"leaderId":1,"voters":[],"grantingVoters":[]}'
    assert "a control record (LeaderChangeMessage)" in _error("\n".join([_batch(0), _record(0, leader)]))


def test_unknown_control_type_and_txn_marker() -> None:
    unknown = _error("\n".join([_batch(0, control=True), _record(0, " controlType: UNKNOWN(9)")]))
    assert "UNKNOWN(9)" in unknown and "line 2, offset 0" in unknown
    marker = " endTxnMarker: COMMIT coordinatorEpoch: 0"
    assert "__cluster_metadata" in _error("\n".join([_batch(0, control=True), _record(0, marker)]))


def test_unrecognised_line_and_old_magic() -> None:
    message = _error("\n".join([_batch(0), "hello world"]))
    assert "dump.txt, line 2: unrecognised line 'hello world'" in message
    old = "offset: 3 position: 0 CreateTime: 1 size: 70 magic: 1 compresscodec: none crc: 1 isvalid: true"
    assert "magic 0 or 1" in _error(old)


def test_snapshot_then_log_in_one_dump() -> None:
    text = _fixture("kafka-3.7-snapshot.txt") + _fixture("kafka-4.1-segment.txt")
    message = _error(text)
    assert "does not increase" in message and "dump snapshots (.checkpoint) on their own" in message


def test_streaming_yields_before_a_later_error() -> None:
    reader = read_dump_log(io.StringIO("\n".join([_batch(0), _record(0), _batch(1), _record(1, " bogus")])),
                           "dump.txt")
    assert next(reader).offset == 0
    with pytest.raises(RecordValidationError, match="line 4, offset 1: unrecognised record content"):
        next(reader)


# -- round trips --------------------------------------------------------------------------------


def _strip_source(entries: list[LogEntry]) -> list[LogEntry]:
    return [dataclasses.replace(e, source=None) for e in entries]


@pytest.mark.parametrize("fixture", ["kafka-4.1-segment.txt", "kafka-3.7-snapshot.txt"])
def test_round_trip_41(fixture: str) -> None:
    entries = _read(_fixture(fixture))
    text = "\n".join(format_dump_log(entries, path=entries[0].source or "", kafka_version="4.1"))
    assert _read(text) == entries
    assert text + "\n" == _fixture(fixture)


def test_round_trip_37() -> None:
    entries = _read(_fixture("kafka-3.7-segment.txt"))
    text = "\n".join(format_dump_log(entries, path=SEGMENT, kafka_version="3.7"))
    assert _read(text) == entries


def test_round_trip_37_leader_change_is_reported() -> None:
    """Kafka 3.7 prints no LeaderChange content, so the writer can't either: the reader lists it."""
    entries = _read(_fixture("kafka-4.1-segment.txt"))
    skipped: list[SkippedRecord] = []
    back = _read("\n".join(format_dump_log(entries, kafka_version="3.7")), skipped=skipped,
                 skip_unparsable=True)
    assert [e.offset for e in back] == [3, 4]
    assert [s.offset for s in skipped] == [0, 1, 2]  # 3.7 does not know KRaftVersion/KRaftVoters either
    assert _strip_source(back) == _strip_source(entries[3:])


def test_round_trip_built_entries() -> None:
    entries = [
        LogEntry(10, make_record("FenceBrokerRecord", 0, id=1, epoch=5), 10, 4, 1717000000000),
        LogEntry(11, make_record("PartitionChangeRecord", 0, partitionId=0,
                                 topicId=TOPIC_BYTES, leader=-1), 10, 4, 1717000000000),
        LogEntry(12, make_record("ClientQuotaRecord", 0, entity=[{"entityType": "user", "entityName": None}],
                                 key="producer_byte_rate", value=1048576.0, remove=False),
                 12, 4, 1717000000500),
    ]
    text = "\n".join(format_dump_log(entries, path="00000000000000000010.log"))
    assert text.splitlines()[1] == "Log starting offset: 10"
    back = _read(text)
    positions = (0, 0, back[2].position)  # the writer places batches one after another
    expected = [dataclasses.replace(e, position=p) for e, p in zip(entries, positions, strict=True)]
    assert _strip_source(back) == _strip_source(expected)
    assert back[1].record["leader"] == -1 and back[2].record["value"] == 1048576.0


@pytest.mark.parametrize(("value", "java"), [
    (10_485_760.0, "1.048576E7"), (1e7, "1.0E7"), (9_999_999.0, "9999999.0"), (1.5, "1.5"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (-2.5e-7, "-2.5E-7"), (0.0, "0.0"), (1.7976931348623157e308, "1.7976931348623157E308")])
def test_float_fields_print_as_kafka_does(value: float, java: str) -> None:
    """Kafka's JSON converters print a float64 (ClientQuotaRecord's value) with Java's Double.toString, as
    kafka-dump-log 4.4.0 and 3.9.2 showed (tests/test_kafka_dump_log.py); the text reads back to the same value."""
    import json

    from records.jsonl import entry_to_line, line_to_entry
    from records.kafka_json import java_double

    assert java_double(value) == java
    entry = LogEntry(3, make_record("ClientQuotaRecord", 0, entity=[{"entityType": "user", "entityName": "x"}],
                                    key="producer_byte_rate", value=value, remove=False))
    line = entry_to_line(entry)
    assert f'"value":{java},' in line
    assert line_to_entry(json.loads(line)).record == entry.record
    dumped = "\n".join(format_dump_log([entry]))
    assert f'"value":{java},' in dumped
    assert [e.record for e in read_dump_log(io.StringIO(dumped), "x.txt")] == [entry.record]
