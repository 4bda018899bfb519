"""Writing kafka-dump-log text (records.dumplog_format) as a given Kafka version prints it; the round trips
through the reader are in tests/test_dumplog.py."""

from __future__ import annotations

from records.dumplog_format import format_dump_log
from tests.test_dumplog import _fixture, _read


def test_formatter_matches_real_kafka_41_output() -> None:
    """The control batch pasted in apache/kafka PR #19729 (Kafka 4.1), byte for byte."""
    lines = _fixture("kafka-4.1-segment.txt").splitlines()
    entries = _read("\n".join(lines))
    produced = list(format_dump_log(entries[:3], path=entries[0].source or "", kafka_version="4.1"))
    assert produced[2] == (
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1747299887693 size: 174 magic: 2 "
        "compresscodec: none crc: 3714449884 isvalid: true")
    assert produced[4] == ("| offset: 1 CreateTime: 1747299887693 keySize: 4 valueSize: 5 sequence: -1 "
                           'headerKeys: [] KRaftVersion {"version":0,"kRaftVersion":1}')
    assert "valueSize: 19" in produced[3] and "valueSize: 55" in produced[5]
