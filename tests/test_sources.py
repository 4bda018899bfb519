"""records.sources: which kind of input a path is, by name first and content when the name says nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from records.errors import RecordsError
from records.sources import detect_format


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("00000000000000000000.log", b"", "segment"),
    ("00000000000000004929-0000000007.checkpoint", b"", "snapshot"),
    ("bootstrap.checkpoint", b"", "snapshot"),
    ("export.bin", b"Obj\x01rest", "avro"),
    ("lines.txt", b'  {"offset": 0}\n', "jsonl"),
    ("dump.txt", b"Dumping /x/00000000000000000000.log\nLog starting offset: 0\n", "dump-log"),
    ("raw.bin", bytes(16) + b"\x02" + bytes(10), "segment"),  # byte 16: a v2 record batch's magic
])
def test_detect_format_by_name_then_content(tmp_path: Path, name: str, content: bytes, expected: str) -> None:
    (tmp_path / name).write_bytes(content)
    assert detect_format(tmp_path / name) == expected
    assert detect_format(tmp_path) == "directory"


def test_detect_format_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    producer_state = tmp_path / "00000000000000000188.snapshot"
    producer_state.write_bytes(b"")
    with pytest.raises(RecordsError) as info:
        detect_format(producer_state)
    assert str(info.value) == (
        f"{producer_state}: this is a Kafka producer-state snapshot (*.snapshot), not metadata; KRaft metadata "
        "snapshots end in .checkpoint. Point kraft-replay at the .log segments, a .checkpoint file or the "
        "__cluster_metadata-0 directory instead.")
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"hello\n")
    with pytest.raises(RecordsError) as info:
        detect_format(notes)
    assert str(info.value) == (
        f"{notes}: not a format kraft-replay reads (expected a .log segment, a .checkpoint snapshot, a "
        "__cluster_metadata-0 directory, kafka-dump-log output, JSON lines or an Avro container file)")
    with pytest.raises(RecordsError) as info:
        detect_format(tmp_path / "missing")
    assert str(info.value) == f"{tmp_path / 'missing'}: no such file or directory"
